// deploy/kubernetes (issue 5 item 7) and its scale-out variant (issue 8 item
// 4): every manifest is parsed by the real kubectl offline, the objects carry
// what docs/OPERATIONS.md (Roles and listeners, Discovery, Annotations) and
// docs/API.md (Push attribution) ask for, and the kiln configs inside the
// ConfigMaps start the real binary.
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
import { parseLogfmt } from './lib/server.mjs';
import { buildProfile } from './lib/pb.mjs';

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

// The YAML files of paths (files, or directories: their *.yaml, not recursive
// like kubectl -f DIR), in the order kubectl applies them.
const yamlFiles = (paths) => paths.flatMap((p) => (fs.statSync(p).isDirectory()
  ? fs.readdirSync(p).filter((f) => f.endsWith('.yaml')).sort().map((f) => path.join(p, f)) : [p]));

// The objects kubectl parses from paths() (read when a test first needs
// them), each with the file it came from (relative to deploy/kubernetes),
// and find(kind, name) on them.
function manifests(paths, what) {
  let objects = null;
  const load = () => {
    if (objects) return objects;
    const all = [];
    for (const f of yamlFiles(paths())) {
      const r = kubectl(['label', '--local', '-f', f, 'kiln.dev/parsed=true', '-o', 'json']);
      assert.equal(r.status, 0, `kubectl could not parse ${f}: ${r.stderr}`);
      const objs = splitJson(r.stdout);
      assert.ok(objs.length > 0, `${f}: no objects`);
      for (const o of objs) all.push({ file: path.relative(DIR, f), ...o });
    }
    return (objects = all);
  };
  const find = (kind, name) => {
    const o = load().find((x) => x.kind === kind && x.metadata?.name === name);
    assert.ok(o, `${kind}/${name} not found in ${what}`);
    return o;
  };
  return { paths, load, find };
}

// What `kubectl apply -f P1 -f P2 …` would create: the names kubectl prints,
// and the objects themselves pass the checks every manifest must.
function applyNames(m, want) {
  const fargs = m.paths().flatMap((p) => ['-f', p]);
  const r = kubectl(['apply', '--dry-run=client', '--validate=false', '--server=http://127.0.0.1:1', ...fargs, '-o', 'name']);
  let names;
  if (r.status === 0) {
    names = r.stdout.trim().split('\n');
  } else {
    // kubectl needs API discovery for apply even with --dry-run=client.
    assert.match(r.stderr, /127\.0\.0\.1:1|connection refused|unable to recognize/, `kubectl apply failed for another reason: ${r.stderr}`);
    const l = kubectl(['label', '--local', ...fargs, 'kiln.dev/parsed=true', '-o', 'name']);
    assert.equal(l.status, 0, `kubectl label --local ${fargs.join(' ')}: ${l.stderr}`);
    names = l.stdout.trim().split('\n');
  }
  for (const n of want) assert.ok(names.includes(n), `${n} missing from kubectl output:\n${names.join('\n')}`);
  for (const o of m.load()) {
    assert.ok(o.apiVersion && o.kind && o.metadata?.name, `${o.file}: apiVersion, kind, metadata.name`);
    if (!['Namespace', 'ClusterRole', 'ClusterRoleBinding'].includes(o.kind)) assert.ok(o.metadata.namespace, `${o.file}: ${o.kind}/${o.metadata.name} names its namespace`);
  }
  return names;
}

// The objects both variants need: the namespace, the sensor's RBAC and the
// three Services (shared files, so the scale-out variant does not copy them).
const SHARED_NAMES = ['namespace/kiln', 'serviceaccount/kiln-sensor', 'clusterrole.rbac.authorization.k8s.io/kiln-sensor',
  'clusterrolebinding.rbac.authorization.k8s.io/kiln-sensor', 'service/kiln-sensor', 'service/kiln-query', 'service/kiln-ingestor'];

const embedded = manifests(() => [DIR], 'deploy/kubernetes');
const find = embedded.find;

test('kubectl dry-run accepts every manifest in deploy/kubernetes', () => {
  assert.ok(yamlFiles([DIR]).length >= 8, `manifests: ${yamlFiles([DIR])}`);
  applyNames(embedded, [...SHARED_NAMES, 'configmap/kiln-sensor-config', 'daemonset.apps/kiln-sensor',
    'deployment.apps/kiln-query', 'deployment.apps/kiln-ingestor', 'daemonset.apps/otel-ebpf-profiler',
    'configmap/otel-ebpf-profiler-config']);
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

test('example app: profiles.kiln.dev annotations (OPS: Annotations) on the pod template, the named port exists', () => {
  const d = find('Deployment', 'example-go-app');
  const a = d.spec.template.metadata.annotations;
  const re = /^profiles\.kiln\.dev\/(?:(cpu|memory|goroutine|block|mutex)\.(scrape|port|port_name|path|scheme|sample_types)|service_name)$/;
  for (const k of Object.keys(a)) assert.match(k, re, `annotation key ${k} is not one that OPS: Annotations defines`);
  for (const t of ['cpu', 'memory', 'goroutine']) assert.equal(a[`profiles.kiln.dev/${t}.scrape`], 'true', `${t}.scrape`);
  assert.ok(a['profiles.kiln.dev/service_name']);
  const ports = d.spec.template.spec.containers.flatMap((c) => c.ports ?? []);
  if (a['profiles.kiln.dev/cpu.port_name']) assert.ok(ports.some((p) => p.name === a['profiles.kiln.dev/cpu.port_name']));
  assert.ok(ports.some((p) => p.name.endsWith('-profiles')), 'a *-profiles port for the types without .port');
});

// Starts the real binary (args: `serve --config FILE …`, addresses
// overridden to loopback port 0, no NODE_NAME so pod discovery stays off), waits for the listening lines of its role, runs
// during({url of each listener}, log so far), then expects a clean SIGTERM
// exit. Returns the whole log. opts.cwd: its working directory.
async function runKiln(args, role, listeners, during = async () => {}, opts = {}) {
  const env = { ...process.env };
  delete env.NODE_NAME; delete env.KUBERNETES_SERVICE_HOST; delete env.KUBERNETES_SERVICE_PORT;
  const p = spawn(KILN_BIN, [...args, '--ui', '127.0.0.1:0', '--upload', '127.0.0.1:0', '--otlp-http', '127.0.0.1:0', '--otlp-grpc', '127.0.0.1:0'],
  { env, cwd: opts.cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  const exited = new Promise((res) => p.on('exit', (code, signal) => res({ code, signal })));
  const urls = {};
  try {
    await new Promise((res, rej) => {
      const t = setTimeout(() => rej(new Error(`${role}: no listening lines for ${listeners} in 15 s:\n${err}`)), 15000);
      p.stderr.on('data', (d) => {
        err += d;
        for (const line of err.split('\n').slice(0, -1)) {
          const f = parseLogfmt(line);
          if (f.msg === 'listening' && f.listener && f.addr) urls[f.listener] = `http://127.0.0.1:${f.addr.slice(f.addr.lastIndexOf(':') + 1)}`;
        }
        if (listeners.every((l) => urls[l])) { clearTimeout(t); res(); }
      });
      exited.then((x) => { clearTimeout(t); rej(new Error(`${role}: exited ${JSON.stringify(x)}:\n${err}`)); });
    });
    await new Promise((r) => setTimeout(r, 300));
    await during(urls, () => err);
  } finally {
    p.kill('SIGTERM');
  }
  const x = await exited;
  assert.deepEqual(x, { code: 0, signal: null }, `${role}: SIGTERM exit:\n${err}`);
  assert.match(err, new RegExp(`msg=starting role=${role} `));
  for (const l of ['ui', 'upload', 'otlp_http', 'otlp_grpc']) {
    if (!listeners.includes(l)) assert.ok(!err.includes(`listener=${l} `), `${role} must not open ${l}:\n${err}`);
  }
  return err;
}

// The same on a config from a ConfigMap of the embedded variant.
function runConfig(yamlText, role, listeners) {
  const file = path.join(mkTemp('deploy-cfg'), 'kiln.yaml');
  fs.writeFileSync(file, yamlText);
  return runKiln(['serve', '--config', file, '--data', mkTemp('deploy-data')], role, listeners);
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

// ---- The scale-out variant (issue 8): deploy/kubernetes/scale-out/ plus the
// shared files, applied with the command README.md gives, every role on
// ClickHouse. Each workload is also run as its pod would run: its volumes
// are laid out here (ConfigMap and Secret keys as files, emptyDirs empty),
// the paths its command and config name are mapped onto them, and the real
// kiln starts with store.url pointing at a loopback port nobody listens on.

// The -f paths of README.md's `kubectl apply` command for the scale-out variant.
function readmeScaleOutPaths() {
  const md = fs.readFileSync(path.join(DIR, 'README.md'), 'utf8').replace(/\\\n\s*/g, ' ');
  const cmd = md.split('\n').find((l) => /^\s*kubectl apply\b/.test(l) && l.includes('deploy/kubernetes/scale-out/'));
  assert.ok(cmd, 'README.md: a kubectl apply command with -f deploy/kubernetes/scale-out/');
  return [...cmd.matchAll(/-f\s+(\S+)/g)].map((m) => path.join(REPO, m[1]));
}
const scaleOut = manifests(readmeScaleOutPaths, 'the scale-out variant (README.md apply command)');

const RECEIVERS = ['upload', 'otlp_http', 'otlp_grpc'];
const PORT = { upload: 8028, otlp_http: 4318, otlp_grpc: 4317, ui: 4040 };
const WORKLOADS = [
  { kind: 'DaemonSet', name: 'kiln-sensor', role: 'sensor', listeners: RECEIVERS },
  { kind: 'Deployment', name: 'kiln-ingestor', role: 'ingestor', listeners: RECEIVERS },
  { kind: 'Deployment', name: 'kiln-query', role: 'query', listeners: ['ui'] },
];
const UNREACHABLE_URL = 'http://127.0.0.1:1';
const PASSWORD = `pw-${process.pid}-"it's: #1"\n`; // a mounted Secret may end in a newline

const reEscape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const podOf = (wl) => scaleOut.find(wl.kind, wl.name).spec.template.spec;
const argOf = (cmd, flag) => cmd[cmd.indexOf(flag) + 1];
// The absolute paths a kiln config names (data, passwordFile, tls files).
const configPaths = (yaml) => [...yaml.matchAll(/^\s*[\w]+:\s+['"]?(\/[^\s'"#]*)/gm)].map((m) => m[1]);

// Lays out wl's pod: every volume a dir under a temp root (secret: values
// replacing the Secret's, or removing them when undefined), and a map of its
// main container's mount paths onto them. A PVC fails the test.
function layOutPod(wl, secret = {}) {
  const pod = podOf(wl);
  const root = mkTemp('deploy-pod');
  const dirs = {};
  for (const v of pod.volumes) {
    const d = dirs[v.name] = path.join(root, v.name);
    fs.mkdirSync(d);
    let data = {};
    if (v.configMap) data = scaleOut.find('ConfigMap', v.configMap.name).data;
    else if (v.secret) {
      const s = scaleOut.find('Secret', v.secret.secretName);
      const b64 = Object.fromEntries(Object.entries(s.data ?? {}).map(([k, x]) => [k, Buffer.from(x, 'base64').toString()]));
      data = { ...b64, ...s.stringData, ...secret };
    } else assert.ok(v.emptyDir, `${wl.name}: volume ${v.name} is a configMap, secret or emptyDir (no PVC)`);
    for (const [k, x] of Object.entries(data)) if (x !== undefined) fs.writeFileSync(path.join(d, k), x);
  }
  const main = pod.containers[0];
  const mounts = main.volumeMounts.map((m) => ({ ...m, re: new RegExp(`(^|[\\s=:'"])${reEscape(m.mountPath)}(?=/|$|[\\s'"])`, 'gm'), dir: dirs[m.name] }));
  const local = (s) => mounts.reduce((x, m) => x.replace(m.re, `$1${m.dir}`), s);
  const mountOf = (p) => mounts.find((m) => p === m.mountPath || p.startsWith(`${m.mountPath}/`));
  return { pod, main, root, dirs, local, mountOf };
}

// Starts kiln as wl's pod would: its command, on its config with every path
// mapped onto the laid-out volumes, store.url replaced by url (and
// store.database by database, when given).
function podCommand(wl, { secret, url = UNREACHABLE_URL, database } = {}) {
  const p = layOutPod(wl, secret);
  const cmd = p.main.command.map(p.local);
  const file = argOf(cmd, '--config');
  const yaml = fs.readFileSync(file, 'utf8');
  let moved = p.local(yaml).replace(/^(\s+url:\s*)\S+/m, `$1${url}`);
  assert.notEqual(moved, p.local(yaml), `${wl.name}: store.url in the config`);
  if (database) moved = moved.replace(/^(\s+database:\s*)\S+/m, `$1${database}`);
  fs.writeFileSync(file, moved);
  for (const a of [...cmd.slice(1).filter((a) => a.startsWith('/')), ...configPaths(moved)]) {
    assert.ok(a.startsWith(p.root), `${wl.name}: ${a} is not on a volume the container mounts`);
  }
  return { ...p, cmd, yaml };
}

test('scale-out: the README apply command parses with kubectl; shared objects are applied, not copied; no PVC', () => {
  const paths = scaleOut.paths();
  assert.ok(paths.some((p) => path.resolve(p) === path.join(DIR, 'scale-out')), `paths: ${paths}`);
  applyNames(scaleOut, [...SHARED_NAMES, 'secret/kiln-clickhouse', 'configmap/kiln-scale-out-config',
    'daemonset.apps/kiln-sensor', 'deployment.apps/kiln-ingestor', 'deployment.apps/kiln-query']);
  // What the scale-out variant takes from deploy/kubernetes is the embedded
  // variant's own files, and no object is defined twice.
  const own = new Set(yamlFiles([DIR]));
  for (const f of yamlFiles(paths)) if (!f.startsWith(path.join(DIR, 'scale-out'))) assert.ok(own.has(f), `${f} is a deploy/kubernetes file`);
  const seen = new Map();
  for (const o of scaleOut.load()) {
    const k = `${o.kind}/${o.metadata.name}`;
    assert.ok(!seen.has(k), `${k} is in both ${seen.get(k)} and ${o.file}`);
    seen.set(k, o.file);
    assert.notEqual(o.kind, 'PersistentVolumeClaim', `${o.file}: the scale-out variant keeps profiles in ClickHouse`);
  }
});

test('scale-out workloads: --role per workload, replicas, ports, probes; each Service selects its own pods', () => {
  const labelsOf = (wl) => scaleOut.find(wl.kind, wl.name).spec.template.metadata.labels;
  const selects = (sel, labels) => Object.entries(sel).every(([k, v]) => labels[k] === v);
  for (const wl of WORKLOADS) {
    const o = scaleOut.find(wl.kind, wl.name);
    for (const [k, v] of Object.entries(o.spec.selector.matchLabels)) assert.equal(labelsOf(wl)[k], v, `${wl.name}: selector ${k}`);
    const { main } = layOutPod(wl);
    assert.equal(main.image, 'kiln:latest');
    assert.deepEqual(main.command.slice(0, 3), ['kiln', 'serve', '--config']);
    assert.equal(argOf(main.command, '--role'), wl.role, `${wl.name}: ${main.command.join(' ')}`);
    assert.deepEqual(main.ports.map((p) => p.containerPort).sort(), wl.listeners.map((l) => PORT[l]).sort(), `${wl.name}: ports`);
    // Its Service: ports reach the container, and it selects this workload only.
    const svc = scaleOut.find('Service', wl.name);
    assert.ok(selects(svc.spec.selector, labelsOf(wl)), `Service ${wl.name} selects the ${wl.role} pods`);
    for (const other of WORKLOADS) if (other !== wl) assert.ok(!selects(svc.spec.selector, labelsOf(other)), `Service ${wl.name} must not select ${other.name}`);
    assert.deepEqual(svc.spec.ports.map((p) => p.targetPort).sort(), main.ports.map((p) => p.containerPort).sort(), `Service ${wl.name}: ports`);
  }
  const sensor = podOf(WORKLOADS[0]);
  assert.equal(sensor.serviceAccountName, 'kiln-sensor');
  assert.equal(sensor.containers[0].env.find((e) => e.name === 'NODE_NAME')?.valueFrom?.fieldRef?.fieldPath, 'spec.nodeName');
  assert.equal(scaleOut.find('Service', 'kiln-sensor').spec.internalTrafficPolicy, 'Local');
  for (const wl of WORKLOADS.slice(0, 2)) {
    const c = podOf(wl).containers[0];
    assert.equal(c.readinessProbe.tcpSocket.port, 8028, `${wl.name}: readiness by TCP on 8028 (no UI in this role)`);
    assert.equal(c.livenessProbe.tcpSocket.port, 8028);
  }
  const ing = scaleOut.find('Deployment', 'kiln-ingestor');
  assert.ok(ing.spec.replicas >= 2, `ingestor replicas ${ing.spec.replicas}`);
  const q = scaleOut.find('Deployment', 'kiln-query');
  assert.equal(q.spec.replicas, 2);
  for (const probe of ['readinessProbe', 'livenessProbe']) {
    assert.deepEqual(q.spec.template.spec.containers[0][probe].httpGet, { path: '/healthz', port: 4040 }, `query ${probe}`);
  }
});

test('scale-out config and Secret: store.engine clickhouse, passwordFile on the mounted Secret', () => {
  const s = scaleOut.find('Secret', 'kiln-clickhouse');
  assert.deepEqual(Object.keys({ ...s.data, ...s.stringData }), ['password']);
  for (const wl of WORKLOADS) {
    const { pod, main, mountOf } = layOutPod(wl);
    const cfgMount = mountOf(argOf(main.command, '--config'));
    const cfgVol = pod.volumes.find((v) => v.name === cfgMount?.name);
    assert.ok(cfgVol?.configMap, `${wl.name}: the config comes from a ConfigMap`);
    const yaml = scaleOut.find('ConfigMap', cfgVol.configMap.name).data[path.basename(argOf(main.command, '--config'))];
    assert.ok(yaml, `${wl.name}: the ConfigMap has the file ${argOf(main.command, '--config')}`);
    assert.match(yaml, /^store:\n(?:[ #].*\n)*? {2}engine: clickhouse\b/m, `${wl.name}: store.engine clickhouse:\n${yaml}`);
    assert.doesNotMatch(yaml, /^\s+password:/m, 'no password in a ConfigMap');
    assert.doesNotMatch(yaml, /^\s+url:.*\/\/[^/\s]*@/m, 'no credentials in store.url');
    // passwordFile: a key of the Secret, mounted in the container.
    const pwFile = yaml.match(/^\s+passwordFile:\s*(\S+)/m)?.[1];
    const pwVol = pod.volumes.find((v) => v.name === mountOf(pwFile ?? '/-')?.name);
    assert.equal(pwVol?.secret?.secretName, 'kiln-clickhouse', `${wl.name}: passwordFile ${pwFile} on the Secret`);
    assert.ok(path.basename(pwFile) in { ...s.data, ...s.stringData }, `${wl.name}: the Secret has the key ${path.basename(pwFile)}`);
    assert.ok(!(main.env ?? []).some((e) => e.valueFrom?.secretKeyRef) && !(main.envFrom ?? []).length, `${wl.name}: no Secret in the environment`);
  }
});

test('scale-out pods start the real kiln with ClickHouse unreachable: their listeners, pushes 503, /healthz 200, no disk', async () => {
  const body = buildProfile({ sampleTypes: [['cpu', 'nanoseconds']], samples: [{ stack: ['main.work', 'main.main'], values: [10_000_000] }] }).bytes;
  for (const wl of WORKLOADS) {
    const { cmd, root } = podCommand(wl, { secret: { password: PASSWORD } });
    const before = fs.readdirSync(root, { recursive: true }).sort();
    const cwd = mkTemp('deploy-cwd');
    const log = await runKiln(cmd.slice(1), wl.role, wl.listeners, async (urls, logNow) => {
      if (urls.upload) {
        const res = await fetch(`${urls.upload}/profiling/upload?serviceName=deploy-scale-out`, { method: 'POST', body, signal: AbortSignal.timeout(30000) });
        const text = await res.text();
        assert.equal(res.status, 503, `${wl.role}: a push while ClickHouse is unreachable: ${res.status} ${text}\n${logNow()}`);
        assert.match(res.headers.get('retry-after') ?? '', /^\d+$/, `${wl.role}: Retry-After`);
        assert.ok(!text.includes(PASSWORD.trim()), `${wl.role}: the password in the 503 answer`);
      }
      if (urls.ui) {
        // The liveness probe: a ClickHouse outage must not restart the query pods.
        const res = await fetch(`${urls.ui}/healthz`, { signal: AbortSignal.timeout(10000) });
        assert.equal(res.status, 200, `${wl.role}: /healthz while ClickHouse is unreachable: ${res.status} ${await res.text()}`);
      }
    }, { cwd });
    assert.match(log, /msg="clickhouse not ready" url=http:\/\/127\.0\.0\.1:1\//, `${wl.role}: the store is ClickHouse:\n${log}`);
    assert.ok(!log.includes(PASSWORD.trim().slice(0, 12)), `${wl.role}: the password is in the log:\n${log}`);
    assert.equal(/msg="profile scraping started"/.test(log), wl.role === 'sensor', `${wl.role}: only the sensor scrapes:\n${log}`);
    // The pods have no volume to write to: kiln on ClickHouse writes nothing.
    assert.deepEqual(fs.readdirSync(cwd), [], `${wl.role}: files in the working directory`);
    assert.deepEqual(fs.readdirSync(root, { recursive: true }).sort(), before, `${wl.role}: files in the pod's volumes`);
  }
});

test('scale-out: a Secret without the password key stops kiln at start, naming the file', async () => {
  const { cmd } = podCommand(WORKLOADS[1], { secret: { password: undefined } });
  const r = spawnSync(KILN_BIN, [...cmd.slice(1), '--upload', '127.0.0.1:0', '--otlp-http', 'off', '--otlp-grpc', 'off'],
    { encoding: 'utf8', timeout: 15000 });
  assert.notEqual(r.status, 0, `kiln must not start without its password:\n${r.stderr}`);
  assert.match(r.stderr, /passwordFile \S+\/password: No such file/, r.stderr);
  assert.doesNotMatch(r.stderr, /msg=listening/);
});

test('scale-out: a password file kiln would have to cut (over 1,023 bytes, or with a NUL byte) stops kiln at start', async () => {
  for (const [password, why] of [['p'.repeat(1024) + '\n', /passwordFile \S+\/password: longer than 1023 bytes/], ['ab\0cd\n', /passwordFile \S+\/password: contains a NUL byte/]]) {
    const { cmd } = podCommand(WORKLOADS[1], { secret: { password } });
    const r = spawnSync(KILN_BIN, [...cmd.slice(1), '--upload', '127.0.0.1:0', '--otlp-http', 'off', '--otlp-grpc', 'off'],
      { encoding: 'utf8', timeout: 15000 });
    assert.notEqual(r.status, 0, `kiln must not start with a cut password:\n${r.stderr}`);
    assert.match(r.stderr, why, r.stderr);
    assert.doesNotMatch(r.stderr, /msg=listening/);
  }
  // 1,023 bytes and a CRLF are fine: kiln starts (ClickHouse unreachable is not fatal).
  const { cmd } = podCommand(WORKLOADS[1], { secret: { password: 'p'.repeat(1023) + '\r\n' } });
  const log = await runKiln(cmd.slice(1), WORKLOADS[1].role, WORKLOADS[1].listeners, async () => {});
  assert.doesNotMatch(log, /passwordFile/, log);
});

// With a real ClickHouse (tests/run-blackbox.sh's clickhouse pass sets
// KILN_TEST_CLICKHOUSE_URL), the pods as shipped, the Secret's empty
// password included, share one database: what two ingestors and a sensor
// acknowledge, the query pod shows.
test('scale-out pods on a real ClickHouse: two ingestors and a sensor write, the query pod reads', {
  skip: !process.env.KILN_TEST_CLICKHOUSE_URL && 'no ClickHouse (KILN_TEST_CLICKHOUSE_URL unset)',
}, async () => {
  const opts = { url: process.env.KILN_TEST_CLICKHOUSE_URL, database: `kiln_deploy_${process.pid}` };
  const [sensor, ingestor, query] = WORKLOADS;
  const pushed = [];
  const push = async (urls, name) => {
    const body = buildProfile({ sampleTypes: [['cpu', 'nanoseconds']], samples: [{ stack: [`main.${name}`, 'main.main'], values: [10_000_000] }] }).bytes;
    const res = await fetch(`${urls.upload}/profiling/upload?serviceName=deploy-${name}`, { method: 'POST', body, signal: AbortSignal.timeout(30000) });
    assert.equal(res.status, 200, `push to ${name}: ${await res.text()}`);
    pushed.push(`deploy-${name}`);
  };
  const run = (wl, during) => runKiln(podCommand(wl, opts).cmd.slice(1), wl.role, wl.listeners, during);
  await run(ingestor, (a) => run(ingestor, (b) => run(sensor, (s) => run(query, async (q) => {
    await push(a, 'ingestor-a');
    await push(b, 'ingestor-b');
    await push(s, 'sensor');
    const res = await fetch(`${q.ui}/api/services?from=now-1h`, { signal: AbortSignal.timeout(30000) });
    const names = (await res.json()).services.map((x) => x.name).sort();
    assert.deepEqual(names, pushed.sort(), 'the query pod sees every acknowledged push');
  }))));
  // README.md: a key created in one pod (kiln keys … --config /etc/kiln/kiln.yaml) is listed in another.
  const keys = (wl, ...args) => {
    const { cmd } = podCommand(wl, opts);
    const r = spawnSync(KILN_BIN, ['keys', ...args, '--config', argOf(cmd, '--config')], { encoding: 'utf8', timeout: 30000 });
    assert.equal(r.status, 0, `kiln keys ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  assert.match(keys(query, 'create', '--project', 'team-a', '--name', 'ci-collector', '--scope', 'ingest'), /^kiln_\S+\n$/);
  assert.match(keys(ingestor, 'list'), /^ci-collector\s+team-a\s+ingest\b/m);
});
