// deploy/kubernetes (issue 5 item 7): every manifest is parsed by the real
// kubectl offline, the objects carry what SPEC S1, S2.1a, S3.2 and S3.3 ask
// for, and the kiln configs inside the ConfigMaps start the real binary.
//
// No cluster exists here. `kubectl apply --dry-run=client` still asks a
// server for API discovery, so it is tried first and, when no server
// answers, kubectl parses the files with `label --local` (no server at all),
// and the checks below run on the objects kubectl printed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO, KILN_BIN, mkTemp } from './lib/env.mjs';

const DIR = path.join(REPO, 'deploy/kubernetes');
const tmp = mkTemp('deploy');
const kubeconfig = path.join(tmp, 'kubeconfig');
fs.writeFileSync(kubeconfig, '');
const kenv = { ...process.env, KUBECONFIG: kubeconfig };

function kubectl(args) {
  const r = spawnSync('kubectl', args, { env: kenv, encoding: 'utf8', timeout: 60000 });
  if (r.error) throw new Error(`kubectl ${args.join(' ')}: ${r.error.message} (install Debian kubernetes-client: bash scripts/deps.sh)`);
  return r;
}

// kubectl -o json prints one JSON object per resource, back to back.
function splitJson(text) {
  const out = [];
  let depth = 0, inStr = false, esc = false, start = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inStr) { if (esc) esc = false; else if (c === '\\') esc = true; else if (c === '"') inStr = false; continue; }
    if (c === '"') inStr = true;
    else if (c === '{') { if (depth++ === 0) start = i; }
    else if (c === '}') { if (--depth === 0) out.push(JSON.parse(text.slice(start, i + 1))); }
  }
  return out;
}

const files = fs.readdirSync(DIR).filter((f) => f.endsWith('.yaml')).sort();
let objects = null;
function loadObjects() {
  if (objects) return objects;
  objects = [];
  for (const f of files) {
    const r = kubectl(['label', '--local', '-f', path.join(DIR, f), 'kiln.dev/parsed=true', '-o', 'json']);
    assert.equal(r.status, 0, `kubectl could not parse ${f}: ${r.stderr}`);
    const objs = splitJson(r.stdout);
    assert.ok(objs.length > 0, `${f}: no objects`);
    for (const o of objs) objects.push({ file: f, ...o });
  }
  return objects;
}
const find = (kind, name) => {
  const o = loadObjects().find((x) => x.kind === kind && x.metadata?.name === name);
  assert.ok(o, `${kind}/${name} not found in deploy/kubernetes`);
  return o;
};

test('kubectl dry-run accepts every manifest in deploy/kubernetes', () => {
  assert.ok(files.length >= 8, `manifests: ${files}`);
  const r = kubectl(['apply', '--dry-run=client', '--validate=false', '--server=http://127.0.0.1:1', '-f', DIR, '-o', 'name']);
  let names;
  if (r.status === 0) {
    names = r.stdout.trim().split('\n');
  } else {
    // kubectl needs API discovery for apply even with --dry-run=client.
    assert.match(r.stderr, /127\.0\.0\.1:1|connection refused|unable to recognize/, `kubectl apply failed for another reason: ${r.stderr}`);
    const l = kubectl(['label', '--local', '-f', DIR, 'kiln.dev/parsed=true', '-o', 'name']);
    assert.equal(l.status, 0, `kubectl label --local -f deploy/kubernetes: ${l.stderr}`);
    names = l.stdout.trim().split('\n');
  }
  for (const n of ['namespace/kiln', 'serviceaccount/kiln-sensor', 'clusterrole.rbac.authorization.k8s.io/kiln-sensor',
    'clusterrolebinding.rbac.authorization.k8s.io/kiln-sensor', 'configmap/kiln-sensor-config', 'daemonset.apps/kiln-sensor',
    'service/kiln-sensor', 'deployment.apps/kiln-query', 'service/kiln-query', 'deployment.apps/kiln-ingestor',
    'service/kiln-ingestor', 'daemonset.apps/otel-ebpf-profiler', 'configmap/otel-ebpf-profiler-config']) {
    assert.ok(names.includes(n), `${n} missing from kubectl output:\n${names.join('\n')}`);
  }
  for (const o of loadObjects()) {
    assert.ok(o.apiVersion && o.kind && o.metadata?.name, `${o.file}: apiVersion, kind, metadata.name`);
    if (!['Namespace', 'ClusterRole', 'ClusterRoleBinding'].includes(o.kind)) assert.ok(o.metadata.namespace, `${o.file}: ${o.kind}/${o.metadata.name} names its namespace`);
  }
});

test('RBAC: the sensor service account may get/list/watch pods, cluster-wide', () => {
  const sa = find('ServiceAccount', 'kiln-sensor');
  assert.equal(sa.metadata.namespace, 'kiln');
  const role = find('ClusterRole', 'kiln-sensor');
  const rule = role.rules.find((r) => r.resources.includes('pods'));
  assert.ok(rule && rule.apiGroups.includes(''), 'a rule on core pods');
  assert.deepEqual([...rule.verbs].sort(), ['get', 'list', 'watch']);
  const b = find('ClusterRoleBinding', 'kiln-sensor');
  assert.deepEqual(b.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kiln-sensor' });
  assert.ok(b.subjects.some((s) => s.kind === 'ServiceAccount' && s.name === 'kiln-sensor' && s.namespace === 'kiln'));
});

test('sensor DaemonSet: NODE_NAME from spec.nodeName, ports, tcp probes, config mounted', () => {
  const ds = find('DaemonSet', 'kiln-sensor');
  const pod = ds.spec.template.spec;
  assert.equal(pod.serviceAccountName, 'kiln-sensor');
  const c = pod.containers[0];
  assert.equal(c.image, 'kiln:latest');
  assert.deepEqual(c.command, ['kiln', 'serve', '--config', '/etc/kiln/kiln.yaml']);
  const node = c.env.find((e) => e.name === 'NODE_NAME');
  assert.equal(node?.valueFrom?.fieldRef?.fieldPath, 'spec.nodeName');
  assert.deepEqual(c.ports.map((p) => p.containerPort).sort(), [4317, 4318, 8028]);
  // The sensor role has no UI listener: probes are TCP on the upload port.
  assert.equal(c.readinessProbe.tcpSocket.port, 8028);
  assert.equal(c.livenessProbe.tcpSocket.port, 8028);
  const m = c.volumeMounts.find((v) => v.mountPath === '/etc/kiln');
  assert.equal(pod.volumes.find((v) => v.name === m.name).configMap.name, 'kiln-sensor-config');
  const sel = ds.spec.selector.matchLabels;
  for (const [k, v] of Object.entries(sel)) assert.equal(ds.spec.template.metadata.labels[k], v);
});

test('sensor Service: internalTrafficPolicy Local, ports 8028/4318/4317, selects the DaemonSet', () => {
  const s = find('Service', 'kiln-sensor');
  assert.equal(s.spec.internalTrafficPolicy, 'Local');
  assert.deepEqual(s.spec.ports.map((p) => p.port).sort(), [4317, 4318, 8028]);
  const labels = find('DaemonSet', 'kiln-sensor').spec.template.metadata.labels;
  for (const [k, v] of Object.entries(s.spec.selector)) assert.equal(labels[k], v, `selector ${k}`);
});

test('query and ingestor: Deployments + Services; query probes /healthz on the UI port', () => {
  const q = find('Deployment', 'kiln-query').spec.template.spec.containers[0];
  assert.equal(q.readinessProbe.httpGet.path, '/healthz');
  assert.equal(q.readinessProbe.httpGet.port, 4040);
  assert.equal(q.livenessProbe.httpGet.path, '/healthz');
  assert.deepEqual(find('Service', 'kiln-query').spec.ports.map((p) => p.port), [4040]);
  find('Deployment', 'kiln-ingestor');
  assert.deepEqual(find('Service', 'kiln-ingestor').spec.ports.map((p) => p.port).sort(), [4317, 4318, 8028]);
});

test('eBPF profiler: privileged, hostPID, profiles feature gate, exports to the sensor Service', () => {
  const ds = find('DaemonSet', 'otel-ebpf-profiler');
  const pod = ds.spec.template.spec;
  assert.equal(pod.hostPID, true);
  const c = pod.containers[0];
  assert.equal(c.securityContext.privileged, true);
  assert.ok(c.args.includes('--feature-gates=service.profilesSupport'), `args: ${c.args}`);
  const cfg = find('ConfigMap', 'otel-ebpf-profiler-config').data['ebpf.yaml'];
  assert.match(cfg, /include_env_vars:\s*OTEL_SERVICE_NAME/);
  assert.match(cfg, /endpoint:\s*kiln-sensor\.kiln\.svc[\w.]*:4317/);
  assert.match(cfg, /receivers:\s*\[profiling\]/);
});

test('example app: S3.3 annotations on the pod template, the named port exists', () => {
  const d = find('Deployment', 'example-go-app');
  const a = d.spec.template.metadata.annotations;
  const re = /^profiles\.kiln\.dev\/(?:(cpu|memory|goroutine|block|mutex)\.(scrape|port|port_name|path|scheme|sample_types)|service_name)$/;
  for (const k of Object.keys(a)) assert.match(k, re, `annotation key ${k} is not one SPEC S3.3 defines`);
  for (const t of ['cpu', 'memory', 'goroutine']) assert.equal(a[`profiles.kiln.dev/${t}.scrape`], 'true', `${t}.scrape`);
  assert.ok(a['profiles.kiln.dev/service_name']);
  const ports = d.spec.template.spec.containers.flatMap((c) => c.ports ?? []);
  if (a['profiles.kiln.dev/cpu.port_name']) assert.ok(ports.some((p) => p.name === a['profiles.kiln.dev/cpu.port_name']));
  assert.ok(ports.some((p) => p.name.endsWith('-profiles')), 'a *-profiles port for the types without .port');
});

// Starts the real binary on a config from a ConfigMap (addresses overridden
// to loopback port 0, no NODE_NAME so pod discovery stays off) and expects
// the listening lines of its role, then a clean SIGTERM exit.
async function runConfig(yamlText, role, listeners) {
  const file = path.join(mkTemp('deploy-cfg'), 'kiln.yaml');
  fs.writeFileSync(file, yamlText);
  const env = { ...process.env };
  delete env.NODE_NAME; delete env.KUBERNETES_SERVICE_HOST; delete env.KUBERNETES_SERVICE_PORT;
  const p = spawn(KILN_BIN, ['serve', '--config', file, '--data', mkTemp('deploy-data'),
    '--ui', '127.0.0.1:0', '--upload', '127.0.0.1:0', '--otlp-http', '127.0.0.1:0', '--otlp-grpc', '127.0.0.1:0'],
  { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  const exited = new Promise((res) => p.on('exit', (code, signal) => res({ code, signal })));
  const want = listeners.map((l) => `msg=listening listener=${l} `);
  await new Promise((res, rej) => {
    const t = setTimeout(() => rej(new Error(`${role}: no listening lines for ${listeners} in 15 s:\n${err}`)), 15000);
    p.stderr.on('data', (d) => { err += d; if (want.every((w) => err.includes(w))) { clearTimeout(t); res(); } });
    exited.then((x) => { clearTimeout(t); rej(new Error(`${role}: exited ${JSON.stringify(x)}:\n${err}`)); });
  });
  await new Promise((r) => setTimeout(r, 300));
  p.kill('SIGTERM');
  const x = await exited;
  assert.deepEqual(x, { code: 0, signal: null }, `${role}: SIGTERM exit:\n${err}`);
  assert.match(err, new RegExp(`msg=starting role=${role} `));
  for (const l of ['ui', 'upload', 'otlp_http', 'otlp_grpc']) {
    if (!listeners.includes(l)) assert.ok(!err.includes(`listener=${l} `), `${role} must not open ${l}:\n${err}`);
  }
  return err;
}

test('the sensor ConfigMap is a config the real kiln accepts: role sensor, scraping every 1m, no UI', async () => {
  const cfg = find('ConfigMap', 'kiln-sensor-config').data['kiln.yaml'];
  const log = await runConfig(cfg, 'sensor', ['upload', 'otlp_http', 'otlp_grpc']);
  assert.match(log, /msg="profile scraping started" interval=60s/);
  assert.match(log, /msg="pod discovery is off"/, 'without NODE_NAME discovery stays off');
});

test('the query, ingestor and all-in-one configs start the real kiln in their roles', async () => {
  const data = find('ConfigMap', 'kiln-server-config').data;
  await runConfig(data['query.yaml'], 'query', ['ui']);
  const ing = await runConfig(data['ingestor.yaml'], 'ingestor', ['upload', 'otlp_http', 'otlp_grpc']);
  assert.ok(!ing.includes('profile scraping started'), 'the ingestor never scrapes');
  const all = await runConfig(data['all.yaml'], 'all', ['ui', 'upload', 'otlp_http', 'otlp_grpc']);
  assert.match(all, /msg="profile scraping started" interval=60s/);
});
