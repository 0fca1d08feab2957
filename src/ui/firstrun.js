// What the Profiles screen shows on an empty store: how to send the first
// profile (pprof upload, OpenTelemetry Collector, pod annotations), with
// commands to copy. Ports are Kiln's defaults (upload :8028, OTLP :4317/:4318).
import { h, copyBlock } from './dom.js';
import { rangePicker } from './profiles.js';

export function firstRun(s, onRange) {
  const host = location.hostname || 'localhost';
  const upload = `curl -s -o cpu.pb.gz 'http://localhost:6060/debug/pprof/profile?seconds=10'
curl --data-binary @cpu.pb.gz 'http://${host}:8028/profiling/upload?serviceName=checkout'`;
  const collector = `# otelcol-contrib --config collector.yaml --feature-gates=service.profilesSupport
receivers:
  otlp:
    protocols:
      grpc: {endpoint: 0.0.0.0:4317}
      http: {endpoint: 0.0.0.0:4318}
exporters:
  otlp/kiln:                      # OTLP/gRPC → Kiln :4317
    endpoint: ${host}:4317
    tls: {insecure: true}
    compression: gzip
  otlphttp/kiln:                  # OTLP/HTTP → Kiln :4318
    endpoint: http://${host}:4318
    compression: gzip
service:
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [otlp/kiln]      # or [otlphttp/kiln]`;
  const annotations = `spec:
  template:
    metadata:
      annotations:
        profiles.kiln.dev/cpu.scrape: "true"
        profiles.kiln.dev/cpu.port: "6060"
        profiles.kiln.dev/memory.scrape: "true"
        profiles.kiln.dev/memory.port: "6060"`;
  return h('section', { class: 'firstrun', 'aria-labelledby': 'fr-title' },
    h('h2', { id: 'fr-title' }, 'No profiles yet — send your first one'),
    h('p', {}, 'Kiln has no profiles in this time range. ', rangePicker(s, onRange),
      ' Send data one of these three ways, then reload this page.'),
    h('h3', {}, '1. Upload a pprof file'),
    h('p', {}, 'Any Go program importing net/http/pprof serves one; the upload listener is on port 8028 by default.'),
    copyBlock(upload, 'the upload commands'),
    h('h3', {}, '2. From an OpenTelemetry Collector (OTLP profiles, both exporters)'),
    h('p', {}, 'Tested with Collector 0.161.0; start it with --feature-gates=service.profilesSupport.'),
    copyBlock(collector, 'the Collector config'),
    h('h3', {}, '3. Let Kiln scrape your Kubernetes pods'),
    h('p', {}, 'Annotate the pod template (types cpu, memory, goroutine, block, mutex); Kiln\'s sensor scrapes their Go pprof endpoints.'),
    copyBlock(annotations, 'the pod annotations'));
}
