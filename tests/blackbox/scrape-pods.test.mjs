// The sensor end to end on pods (OPS: Discovery through Scrape attribution;
// API: Aggregation over time, Push attribution): real Go
// programs (tests/go/cpusplit, net/http/pprof) listen on their own loopback
// addresses, 127.0.0.2 and 127.0.0.3, which the Kubernetes API stand-in lists
// as pod IPs; more pods on 127.0.0.20… exercise the port rules (their URLs in
// /api/targets tell which rule chose the port; nothing listens there).
// Two sensors watch the same node:
//   A: interval 10s, defaultPort 0, extraAnnotationPrefixes [a.example.com, b.example.com]
//   B: interval 20s (cpu is valid), defaultPort 7005, no extra prefixes
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { mkTemp } from './lib/env.mjs';
import { startServer, tail } from './lib/server.mjs';
import { getJson, get, sleep } from './lib/http.mjs';
import { goBuild, startGoServer } from './lib/goprog.mjs';
import { pprofRaw } from './lib/pprof.mjs';
import { startStandin, targets, target, waitTarget, logLines, until } from './lib/scrape.mjs';

const NODE = 'node-pods';
const NS = 'shop';
const WEB = 'web-5f7c9-abcde';
const DB = 'db-0';
const FLAKY = 'flaky-0';
let goBin, go1, go2, go3, standin, A, B;
let P; // the port go1 listens on at 127.0.0.2 (go2 and go3 use it on .3 and .4 too when free)

const pod = (name, ip, annotations, o = {}) => ({
  namespace: NS, name, node: NODE, ip, phase: 'Running', annotations,
  containers: [{ name: 'app', ports: [] }], ...o,
});
const ports = (...list) => list.map(([name, containerPort]) => ({ name, containerPort }));
const mem = (extra) => ({ 'profiles.kiln.dev/memory.scrape': 'true', ...extra });

// Port order (OPS: Port and container), one pod per step. expect: [port in A, port in B]; null = skipped.
const PORT_PODS = [
  { name: 'po-port', ip: '127.0.0.20', a: 7000, b: 7000, container: 'app',
    annotations: mem({ 'profiles.kiln.dev/memory.port': '7000', 'profiles.kiln.dev/memory.port_name': 'named', 'profiles.kiln.dev/service_name': 'custom-svc' }),
    containers: [{ name: 'app', ports: ports(['named', 7001], ['x-profiles', 7002], ['x-metrics', 7003], ['http2', 7004]) }] },
  { name: 'po-portname', ip: '127.0.0.21', a: 7001, b: 7001, container: 'sidecar',
    annotations: mem({ 'profiles.kiln.dev/memory.port_name': 'named' }),
    containers: [{ name: 'app', ports: ports(['x-profiles', 7002]) }],
    initContainers: [{ name: 'init', restartPolicy: undefined, ports: [] }, { name: 'sidecar', restartPolicy: 'Always', ports: ports(['named', 7001]) }] },
  { name: 'po-profiles', ip: '127.0.0.22', a: 7002, b: 7005, container: 'app',
    annotations: mem({}), containers: [{ name: 'app', ports: ports(['x-metrics', 7003], ['http2', 7004], ['debug-profiles', 7002]) }] },
  { name: 'po-metrics', ip: '127.0.0.23', a: 7003, b: 7005, container: 'app',
    annotations: mem({}), containers: [{ name: 'app', ports: ports(['http2', 7004], ['web-metrics', 7003]) }] },
  { name: 'po-http2', ip: '127.0.0.24', a: 7004, b: 7005, container: 'app',
    annotations: mem({}), containers: [{ name: 'app', ports: ports(['grpc', 7006], ['http2', 7004]) }] },
  { name: 'po-none', ip: '127.0.0.25', a: null, b: 7005, container: 'app',
    annotations: mem({}), containers: [{ name: 'app', ports: ports(['grpc', 7006]) }] },
  // An undeclared port on a pod of two containers: attributed to neither.
  { name: 'po-twoc', ip: '127.0.0.30', a: 7009, b: 7009, container: '',
    annotations: mem({ 'profiles.kiln.dev/memory.port': '7009' }),
    containers: [{ name: 'app', ports: [] }, { name: 'proxy', ports: ports(['envoy', 15000]) }] },
];

before(async () => {
  goBin = await goBuild('cpusplit');
  go1 = await startGoServer(goBin, ['-parked=3', '-addr=127.0.0.2:0']);
  P = go1.port;
  go2 = await startGoServer(goBin, ['-parked=5', `-addr=127.0.0.3:${P}`]);
  standin = await startStandin('pods-token');
  const c = standin.control;
  await c('POST', '/control/pods', pod(WEB, '127.0.0.2', {
    ...mem({ 'profiles.kiln.dev/memory.port': String(P) }),
    'profiles.kiln.dev/cpu.scrape': 'true', 'profiles.kiln.dev/cpu.port': String(P),
    'profiles.kiln.dev/cpu.path': '/debug/pprof/profile?seconds=2',
  }, { labels: { app: 'web', 'pod-template-hash': '5f7c9' }, owner: { kind: 'ReplicaSet', name: 'web-5f7c9' },
    containers: [{ name: 'app', ports: ports(['pprof', P]) }, { name: 'istio-proxy', ports: ports(['http-envoy-prom', 15090]) }] }));
  await c('POST', '/control/pods', pod(DB, '127.0.0.3', mem({ 'profiles.kiln.dev/memory.port': String(P) }),
    { owner: { kind: 'StatefulSet', name: 'db' } }));
  // Nothing listens on 127.0.0.4:P until the cadence test starts go3 there.
  await c('POST', '/control/pods', pod(FLAKY, '127.0.0.4', mem({ 'profiles.kiln.dev/memory.port': String(P) })));
  for (const p of PORT_PODS) await c('POST', '/control/pods', pod(p.name, p.ip, p.annotations, { containers: p.containers, initContainers: p.initContainers }));
  // Skip reasons (OPS: Scrape log lines): invalid_port twice, invalid_target three times (two in B only).
  await c('POST', '/control/pods', pod('po-badport', '127.0.0.26', mem({ 'profiles.kiln.dev/memory.port': 'http' })));
  await c('POST', '/control/pods', pod('po-badport2', '127.0.0.27', mem({ 'profiles.kiln.dev/memory.port': '70000' })));
  await c('POST', '/control/pods', pod('po-badpath', '127.0.0.28', mem({ 'profiles.kiln.dev/memory.port': '7000', 'profiles.kiln.dev/memory.path': 'debug/pprof/heap' })));
  await c('POST', '/control/pods', pod('po-badcpu', '127.0.0.29', {
    'profiles.kiln.dev/cpu.scrape': 'true', 'profiles.kiln.dev/cpu.port': '7000', 'profiles.kiln.dev/cpu.path': '/debug/pprof/profile?seconds=16',
    'profiles.kiln.dev/block.scrape': 'true', 'profiles.kiln.dev/block.port': '7000', 'profiles.kiln.dev/block.path': '/debug/pprof/block?seconds=0' }));
  // Prefix precedence (OPS: Annotations): memory from a.example.com (before b.example.com),
  // goroutine from profiles.kiln.dev; settings do not carry over between types.
  await c('POST', '/control/pods', pod('po-prefix', '127.0.0.31', {
    'b.example.com/memory.scrape': 'true', 'b.example.com/memory.port': '7010',
    'a.example.com/memory.scrape': 'true', 'a.example.com/memory.port': '7011',
    'profiles.kiln.dev/goroutine.scrape': 'true', 'profiles.kiln.dev/goroutine.port': '7012',
    'a.example.com/goroutine.scrape': 'true', 'a.example.com/goroutine.port': '7013',
    'a.example.com/mutex.port': '7014', 'profiles.kiln.dev/mutex.scrape': 'true',
  }));
  // Ignored pods: not Running, no IP, another node.
  await c('POST', '/control/pods', pod('po-pending', '127.0.0.32', mem({ 'profiles.kiln.dev/memory.port': '7000' }), { phase: 'Pending' }));
  await c('POST', '/control/pods', pod('po-noip', undefined, mem({ 'profiles.kiln.dev/memory.port': '7000' })));
  await c('POST', '/control/pods', { ...pod('po-othernode', '127.0.0.33', mem({ 'profiles.kiln.dev/memory.port': '7000' })), node: 'elsewhere' });

  const tokenFile = path.join(mkTemp('token'), 'token');
  fs.writeFileSync(tokenFile, 'pods-token\n');
  const k8s = `kubernetes: {apiServer: "${standin.url}", tokenFile: "${tokenFile}", node: ${NODE}}\n`;
  [A, B] = await Promise.all([
    startServer({ config: `limits: {samplesPerSecond: 1000000000}
receivers: {profiles: {scrape: {enabled: true, interval: 10s, extraAnnotationPrefixes: [a.example.com, b.example.com]}}}
${k8s}` }),
    startServer({ config: `limits: {samplesPerSecond: 1000000000}
receivers: {profiles: {scrape: {enabled: true, interval: 20s, defaultPort: 7005}}}
${k8s}` }),
  ]);
});

after(async () => {
  for (const s of [A, B]) if (s) await s.stop();
  if (standin) standin.stop();
  for (const g of [go1, go2, go3]) if (g) await g.stop();
});

const portOf = (t) => Number(new URL(t.url).port);
const hostOf = (t) => new URL(t.url).hostname;

test('port order: .port, .port_name, defaultPort, *-profiles, *-metrics, http2; the declaring container, native sidecars included (OPS: Port and container)', async () => {
  for (const [server, col] of [[A, 'a'], [B, 'b']]) {
    await until(server, async () => (await targets(server)).some((t) => t.pod === 'po-twoc'), 'the pods listed');
    const all = await targets(server);
    for (const p of PORT_PODS) {
      const t = all.find((x) => x.key === `${NS}/${p.name}/memory`);
      if (p[col] === null) {
        assert.equal(t, undefined, `${p.name} in ${col}: skipped`);
        continue;
      }
      assert.ok(t, `${p.name} in ${col}: ${JSON.stringify(all.map((x) => x.key))}`);
      assert.equal(hostOf(t), p.ip, `${p.name}: the pod IP`);
      assert.equal(portOf(t), p[col], `${p.name} in ${col}: port`);
      assert.equal(t.url, `http://${p.ip}:${p[col]}/debug/pprof/heap`);
      // An undeclared port (defaultPort) of a one-container pod is that container's.
      assert.equal(t.container, p.container, `${p.name} in ${col}: container`);
    }
    const custom = all.find((x) => x.key === `${NS}/po-port/memory`);
    assert.equal(custom.service, 'custom-svc', 'service_name annotation');
    const ignored = all.filter((x) => ['po-pending', 'po-noip', 'po-othernode'].includes(x.pod));
    assert.deepEqual(ignored, [], 'pods not Running, without an IP or on another node are not targets');
  }
});

test('skip reasons are logged once each with an example pod and the count (OPS: Scrape log lines)', async () => {
  const want = {
    A: { no_port: ['po-none'], invalid_port: ['po-badport', 'po-badport2'], invalid_target: ['po-badpath'] },
    // B: po-none gets defaultPort; the cpu seconds=16 and block seconds=0 are invalid (B scrapes cpu and block? block's
    // 40 s timeout exceeds B's 20 s interval, so only cpu counts).
    B: { invalid_port: ['po-badport', 'po-badport2'], invalid_target: ['po-badpath', 'po-badcpu'] },
  };
  for (const [name, server] of [['A', A], ['B', B]]) {
    const lines = await until(server, async () => {
      const l = logLines(server, 'profile scrape targets skipped');
      return l.length >= Object.keys(want[name]).length && l;
    }, `${name}: skip lines`);
    const byReason = {};
    for (const l of lines) {
      assert.equal(byReason[l.reason], undefined, `${name}: reason ${l.reason} logged once: ${tail(server.stderr())}`);
      byReason[l.reason] = l;
    }
    assert.deepEqual(Object.keys(byReason).sort(), Object.keys(want[name]).sort(), `${name}: reasons`);
    for (const [reason, podsWith] of Object.entries(want[name])) {
      const l = byReason[reason];
      assert.equal(l.namespace, NS);
      assert.ok(podsWith.includes(l.pod), `${name} ${reason}: example pod ${l.pod} is one of ${podsWith}`);
      assert.equal(l.count, String(podsWith.length), `${name} ${reason}: count`);
      assert.ok(['memory', 'cpu'].includes(l.type), `${name} ${reason}: type ${l.type}`);
    }
  }
  assert.equal(logLines(B, 'profile types with invalid scrape settings are not scraped')[0]?.types, 'block,mutex');
});

test('prefix precedence: first prefix used wins per type, settings never mix across prefixes or types (OPS: Annotations)', async () => {
  const all = await targets(A);
  const mine = (type) => all.find((x) => x.key === `${NS}/po-prefix/${type}`);
  assert.equal(portOf(mine('memory')), 7011, 'memory from a.example.com (listed before b.example.com)');
  assert.equal(portOf(mine('goroutine')), 7012, 'goroutine from profiles.kiln.dev (always first)');
  // mutex.scrape under profiles.kiln.dev, its port only under a.example.com: no port
  // (mutex at 10s is not scraped at all in A; B reads profiles.kiln.dev only).
  assert.equal(mine('mutex'), undefined);
  const inB = (await targets(B)).filter((x) => x.pod === 'po-prefix').map((x) => [x.type, portOf(x)]);
  assert.deepEqual(inB, [['goroutine', 7012]], 'B reads profiles.kiln.dev only');
});

test('pods on their own loopback IPs are scraped as their workload with namespace, pod and container (OPS: Discovery, Scrape attribution)', async () => {
  const web = await waitTarget(A, `${NS}/${WEB}/memory`, (t) => t.results.ok >= 1, 'a heap scrape of the web pod');
  assert.equal(web.url, `http://127.0.0.2:${P}/debug/pprof/heap`);
  assert.deepEqual([web.namespace, web.pod, web.container, web.service], [NS, WEB, 'app', 'web']);
  const db = await waitTarget(A, `${NS}/${DB}/memory`, (t) => t.results.ok >= 1, 'a heap scrape of the db pod');
  assert.equal(db.url, `http://127.0.0.3:${P}/debug/pprof/heap`);
  assert.deepEqual([db.namespace, db.pod, db.container, db.service], [NS, DB, 'app', 'db']);
  // Each pod's profile is its own program's: go2 parks 5 goroutines more than… go1 parks 3.
  const inuse = async (svc, podName) => (await getJson(A.uiUrl, '/api/flamegraph', {
    service: svc, type: 'inuse_space:bytes', from: 'now-1h', 'label.k8s.pod.name': podName, 'label.workload': svc,
    'label.k8s.namespace.name': NS, 'label.k8s.container.name': 'app' })).total;
  await until(A, async () => (await inuse('web', WEB)) > 0 && (await inuse('db', DB)) > 0, 'both pods stored with their labels');
  assert.equal(await inuse('web', DB), 0);
  assert.equal(await inuse('db', WEB), 0);
});

// POST to the upload listener from a chosen local address (a pod IP).
function uploadFrom(localAddress, server, body, params) {
  const u = new URL(`${server.uploadUrl}/profiling/upload?${new URLSearchParams(params)}`);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method: 'POST', localAddress,
      headers: { 'content-type': 'application/octet-stream', 'content-length': body.length } }, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('a push from 127.0.0.2 is attributed to the pod with that IP, one from 127.0.0.3 to the other (API: Push attribution)', async () => {
  const heap = (await get(go1.url.replace('127.0.0.1', '127.0.0.2'), '/debug/pprof/heap')).buf;
  for (const [ip, podName, workload] of [['127.0.0.2', WEB, 'web'], ['127.0.0.3', DB, 'db']]) {
    const svc = `pushed-${workload}`;
    const r = await uploadFrom(ip, A, heap, { serviceName: svc });
    assert.equal(r.status, 200, r.text);
    const total = async (pn) => (await getJson(A.uiUrl, '/api/flamegraph', { service: svc, type: 'inuse_space:bytes', from: 'now-1h',
      'label.k8s.pod.name': pn, 'label.k8s.namespace.name': NS, 'label.workload': workload })).total;
    await until(A, async () => (await total(podName)) > 0, `the push from ${ip} attributed to ${podName}`, 10000);
    assert.equal(await total(podName === WEB ? DB : WEB), 0, `not attributed to the other pod (${ip})`);
  }
  // From 127.0.0.1 (no pod has it): no pod labels.
  const r = await uploadFrom('127.0.0.1', A, heap, { serviceName: 'pushed-nopod' });
  assert.equal(r.status, 200, r.text);
  const labels = await until(A, async () => {
    const j = await getJson(A.uiUrl, '/api/labels', { service: 'pushed-nopod', type: 'inuse_space:bytes', from: 'now-1h' });
    return j.labels && j;
  }, 'labels of the unattributed push', 10000);
  assert.deepEqual(labels.labels.filter((l) => l.source === 'series'), []);
});

// Holds the Go target's CPU profiler with a 60 s profile of our own. Go
// answers at once (500) when a profile is already running — kiln's own
// 2 s scrape may be — so try until the request stays open.
async function holdCpuProfile(url) {
  for (let i = 0; i < 20; i++) {
    const ctl = new AbortController();
    let settled = false;
    const done = fetch(url, { signal: ctl.signal })
      .then((r) => r.arrayBuffer())
      .catch(() => {})
      .finally(() => { settled = true; });
    await sleep(500);
    if (!settled) return { stop: async () => { ctl.abort(); await done; } };
    await sleep(1000);
  }
  assert.fail(`could not start a CPU profile at ${url}`);
}

test('target_busy: a cpu scrape while another CPU profile is running (Go answers 500)', async () => {
  const key = `${NS}/${WEB}/cpu`;
  const hold = await holdCpuProfile(`http://127.0.0.2:${P}/debug/pprof/profile?seconds=60`);
  try {
    const t = await waitTarget(B, key, (x) => x.last_result === 'target_busy', 'target_busy', 45000);
    assert.equal(t.results.target_busy >= 1, true);
    const line = logLines(B, 'profile scrape failed').find((l) => l.key === key);
    assert.ok(line, tail(B.stderr()));
    assert.deepEqual([line.result, line.namespace, line.pod, line.type, line.consecutive], ['target_busy', NS, WEB, 'cpu', '1']);
  } finally {
    await hold.stop();
  }
  assert.ok(!logLines(A, 'profile scrape failed').some((l) => l.type === 'cpu'), 'A does not scrape cpu at 10s');
});

test('heap deltas across a restart of the target: the first scrape after the reset stores no alloc_*, none is negative (API: Aggregation over time)', async () => {
  const key = `${NS}/${WEB}/memory`;
  const q = { service: 'web', from: 'now-1h', 'label.k8s.pod.name': WEB };
  await waitTarget(A, key, (t) => t.results.ok >= 2, 'two heap scrapes', 30000);
  await until(A, async () => (await getJson(A.uiUrl, '/api/types', q)).types.includes('alloc_space:bytes'), 'alloc_space after two scrapes', 10000);
  await go1.stop();
  const restartedAt = Date.now() / 1000;
  go1 = await startGoServer(goBin, ['-parked=3', `-addr=127.0.0.2:${P}`]);
  const okBefore = (await target(A, key)).results.ok;
  await waitTarget(A, key, (t) => t.results.ok >= okBefore + 2, 'two heap scrapes after the restart', 40000);
  // A scrape of the old process may have been in flight at the kill: wait
  // for a delta of the new one (it comes with the second scrape after it).
  await until(A, async () => {
    const tl = await getJson(A.uiUrl, '/api/timeline', { ...q, type: 'alloc_space:bytes', step: '1s' });
    return tl.points.some(([t, v]) => t >= restartedAt && v > 0);
  }, 'an alloc_space delta after the restart', 25000);
  for (const type of ['alloc_space:bytes', 'alloc_objects:count']) {
    const tl = await getJson(A.uiUrl, '/api/timeline', { ...q, type, step: '1s' });
    const neg = tl.points.filter(([, v]) => v < 0);
    assert.deepEqual(neg, [], `${type}: no negative point`);
    const after = tl.points.filter(([t]) => t >= restartedAt);
    const allocAfter = after.reduce((s, [, v]) => s + v, 0);
    assert.ok(allocAfter > 0, `${type}: a delta after the restart`);
    // Oracle: the new process's own cumulative count (read after the scrapes) bounds the deltas stored since.
    const file = path.join(mkTemp('heap'), 'heap.pb.gz');
    fs.writeFileSync(file, (await get(`http://127.0.0.2:${P}`, '/debug/pprof/heap')).buf);
    const raw = await pprofRaw(file);
    const ti = raw.sampleTypes.findIndex((s) => `${s.type}:${s.unit}` === type);
    const cumulative = raw.samples.reduce((s, x) => s + Number(x.values[ti]), 0);
    assert.ok(allocAfter <= cumulative, `${type}: ${allocAfter} stored since the restart ≤ ${cumulative} allocated by the new process`);
    const fg = await getJson(A.uiUrl, '/api/flamegraph', { ...q, type });
    const negNodes = [];
    const walk = (n) => { if (n.self < 0 || n.total < 0) negNodes.push(n.name); (n.children ?? []).forEach(walk); };
    walk(fg.root);
    assert.deepEqual(negNodes, [], `${type}: no negative node over the hour`);
  }
});

test('log cadence: failed on the 1st and 10th consecutive failure, then recovered (OPS: Scrape log lines)', async () => {
  const key = `${NS}/${FLAKY}/memory`;
  const failed = () => logLines(A, 'profile scrape failed').filter((l) => l.key === key);
  await until(A, async () => failed().some((l) => l.consecutive === '10'), 'the 10th consecutive failure logged', 130000);
  assert.deepEqual(failed().map((l) => [l.result, l.consecutive, l.pod, l.type]),
    [['connection_error', '1', FLAKY, 'memory'], ['connection_error', '10', FLAKY, 'memory']]);
  const t = await target(A, key);
  assert.ok(t.consecutive_failures >= 10 && t.consecutive_failures < 20, JSON.stringify(t));
  go3 = await startGoServer(goBin, ['-parked=1', `-addr=127.0.0.4:${P}`]);
  await waitTarget(A, key, (x) => x.last_result === 'ok', 'recovery', 25000);
  const rec = logLines(A, 'profile scrape target recovered').filter((l) => l.key === key);
  assert.equal(rec.length, 1, tail(A.stderr()));
  assert.deepEqual([rec[0].namespace, rec[0].pod, rec[0].type], [NS, FLAKY, 'memory']);
  assert.equal((await target(A, key)).consecutive_failures, 0);
});
