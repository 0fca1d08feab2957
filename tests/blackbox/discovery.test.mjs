// Pod discovery (OPS: Discovery, Annotations, Port and container, Scrape log
// lines, Scrape attribution) and push attribution (API: Push attribution)
// end to end: the Kubernetes API stand-in (tests/k8s-standin) lists a
// Running pod whose podIP is 127.0.0.1 and whose annotations point at the Go
// program tests/go/cpusplit; kiln serve watches the stand-in (kubernetes:
// {apiServer, tokenFile, node}) and scrapes the pod's heap profile.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { mkTemp } from './lib/env.mjs';
import { startServer, tail } from './lib/server.mjs';
import { getJson, get, upload } from './lib/http.mjs';
import { startStandin, targets as scrapeTargets, logLines as scrapeLogLines, until as untilOf } from './lib/scrape.mjs';
import { goBuild, startGoServer } from './lib/goprog.mjs';
import { buildRequest, nowNs, encodeRequest } from './lib/otlp-build.mjs';
import { HTTP_PATH } from './lib/otlp.mjs';

const NODE = 'node-disc';
const NS = 'shop';
const POD = 'web-7d4b9c-x2x9z';
const KEY = `${NS}/${POD}/memory`;
let go, standin, kiln;
const logLines = (msg) => scrapeLogLines(kiln, msg);
const targets = () => scrapeTargets(kiln);
const until = (pred, what, ms) => untilOf(kiln, pred, what, ms);
const control = (...a) => standin.control(...a);

const pod = (annotations) => ({
  namespace: NS, name: POD, node: NODE, ip: '127.0.0.1', phase: 'Running', annotations,
  labels: { app: 'web', 'pod-template-hash': '7d4b9c' },
  owner: { kind: 'ReplicaSet', name: 'web-7d4b9c' },
  containers: [{ name: 'app', ports: [] }],
});

before(async () => {
  const bin = await goBuild('cpusplit');
  go = await startGoServer(bin, ['-parked=3'], 10000, { GODEBUG: 'asyncpreemptoff=1' });
  standin = await startStandin('disc-token');
  await control('POST', '/control/pods', pod({
    'profiles.kiln.dev/memory.scrape': 'true',
    'profiles.kiln.dev/memory.port': String(go.port),
  }));
  const tokenFile = path.join(mkTemp('token'), 'token');
  fs.writeFileSync(tokenFile, 'disc-token\n');
  kiln = await startServer({
    otlp: true,
    listeners: ['upload', 'ui', 'otlp_http'],
    config: `limits: {samplesPerSecond: 1000000000}
receivers: {profiles: {scrape: {enabled: true, interval: 10s}}}
kubernetes: {apiServer: "${standin.url}", tokenFile: "${tokenFile}", node: ${NODE}}
`,
  });
});

after(async () => {
  if (kiln) await kiln.stop();
  if (standin) standin.stop();
  if (go) await go.stop();
});

const win = () => ({ from: 'now-1h' });
async function total(service, type, labels) {
  const r = await getJson(kiln.uiUrl, '/api/flamegraph', { service, type, ...win(), ...labels });
  return r.total ?? 0;
}

test('an annotated pod is scraped under its workload with namespace and pod labels (OPS: Discovery, Scrape attribution)', async () => {
  const t = await until(async () => (await targets()).find((x) => x.key === KEY), `target ${KEY} in /api/targets`);
  assert.equal(t.namespace, NS);
  assert.equal(t.pod, POD);
  assert.equal(t.service, 'web');
  assert.match(t.url, new RegExp(`^http://127\\.0\\.0\\.1:${go.port}/debug/pprof/heap`));
  await until(async () => (await getJson(kiln.uiUrl, '/api/types', { service: 'web', from: 'now-1h' })).types.includes('inuse_space:bytes'),
    'the heap profile stored under service web', 25000);
  assert.ok(await total('web', 'inuse_space:bytes', { 'label.k8s.namespace.name': NS, 'label.k8s.pod.name': POD }) > 0);
  assert.equal(await total('web', 'inuse_space:bytes', { 'label.k8s.pod.name': 'other' }), 0);
});

test('a push from the pod IP without namespace/pod is attributed to the pod (API: Push attribution)', async () => {
  const heap = await get(go.url, '/debug/pprof/heap');
  assert.equal(heap.status, 200);
  const r = await upload(kiln, heap.buf, { serviceName: 'pushed-web' });
  assert.equal(r.status, 200, r.text);
  await until(async () => (await total('pushed-web', 'inuse_space:bytes', { 'label.k8s.pod.name': POD, 'label.k8s.namespace.name': NS, 'label.workload': 'web', 'label.k8s.container.name': 'app' })) > 0,
    'the push attributed to the pod', 10000);
  // A request that names its pod keeps it.
  const named = await upload(kiln, heap.buf, { serviceName: 'named-web', namespace: 'elsewhere', pod: 'mine' });
  assert.equal(named.status, 200, named.text);
  await until(async () => (await total('named-web', 'inuse_space:bytes', { 'label.k8s.pod.name': 'mine' })) > 0, 'the named push', 10000);
  assert.equal(await total('named-web', 'inuse_space:bytes', { 'label.k8s.pod.name': POD }), 0);
});

test('an OTLP push from the pod IP is attributed to the pod unless its resource names one (API: Push attribution)', async () => {
  const req = (svc, attrs) => buildRequest({ resources: [{ attrs: { 'service.name': svc, ...attrs }, profiles: [{
    type: ['cpu', 'nanoseconds'], periodType: ['cpu', 'nanoseconds'], period: 10000000, timeNs: nowNs(-5), durationNs: 1000000000n,
    samples: [{ stack: ['leaf', 'main'], values: [7], timestamps: [nowNs(-4)] }] }] }] });
  const post = async (body) => {
    const r = await fetch(`${kiln.urls.otlp_http}${HTTP_PATH}`, { method: 'POST', body: encodeRequest(body), headers: { 'content-type': 'application/x-protobuf' } });
    assert.equal(r.status, 200, await r.text());
  };
  await post(req('otlp-web', {}));
  await post(req('otlp-named', { 'k8s.namespace.name': 'elsewhere', 'k8s.pod.name': 'mine' }));
  const cpu = 'cpu:nanoseconds';
  await until(async () => (await total('otlp-web', cpu, { 'label.k8s.pod.name': POD, 'label.k8s.namespace.name': NS, 'label.workload': 'web', 'label.k8s.container.name': 'app' })) > 0,
    'the OTLP push attributed to the pod', 10000);
  await until(async () => (await total('otlp-named', cpu, { 'label.k8s.pod.name': 'mine' })) > 0, 'the named OTLP push', 10000);
  assert.equal(await total('otlp-named', cpu, { 'label.k8s.pod.name': POD }), 0);
});

test('an annotation change takes effect without restart: no port → skipped no_port (OPS: Port and container, Scrape log lines)', async () => {
  await control('POST', '/control/pods', pod({ 'profiles.kiln.dev/memory.scrape': 'true' }));
  const [line] = await until(async () => { const l = logLines('profile scrape targets skipped').filter((x) => x.reason === 'no_port'); return l.length && l; },
    'profile scrape targets skipped reason=no_port', 10000);
  assert.equal(line.namespace, NS);
  assert.equal(line.pod, POD);
  assert.equal(line.type, 'memory');
  assert.equal(line.count, '1');
  await until(async () => !(await targets()).some((x) => x.key === KEY), 'the target gone after the port annotation was removed', 10000);
});

test('deleting the pod removes its target (OPS: Discovery)', async () => {
  await control('POST', '/control/pods', pod({ 'profiles.kiln.dev/memory.scrape': 'true', 'profiles.kiln.dev/memory.port': String(go.port) }));
  await until(async () => (await targets()).some((x) => x.key === KEY), 'the target back after the port annotation returned', 10000);
  await control('DELETE', `/control/pods/${NS}/${POD}`);
  await until(async () => !(await targets()).some((x) => x.key === KEY), 'the target gone after the pod was deleted', 10000);
});

test('kiln stops cleanly with the watch running (SIGTERM → exit 0)', async () => {
  const e = await kiln.stop();
  assert.deepEqual(e, { code: 0, signal: null }, tail(kiln.stderr()));
  assert.doesNotMatch(kiln.stderr(), /AddressSanitizer|LeakSanitizer|runtime error/);
});
