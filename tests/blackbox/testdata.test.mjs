// Every real pprof file of the shared test data, uploaded to a real kiln, must
// read back exactly as `go tool pprof -raw` reads the file (lib/pprof.mjs
// explains the oracle): per sample type, the flame graph and top totals, every
// function's self (pprof flat) and total (pprof cum), and the top-10.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { TESTDATA, uniqueName, nowS } from './lib/env.mjs';
import { startServer, tail } from './lib/server.mjs';
import { upload, getJson, get, services, wideWindow } from './lib/http.mjs';
import { oracleForFile, oracle } from './lib/pprof.mjs';
import { checkQueryAgainst, assertUploadReply } from './lib/check.mjs';

const PPROF_DIR = path.join(TESTDATA, 'pprof');
const files = fs.readdirSync(PPROF_DIR).filter((f) => /\.pb(\.gz)?$/.test(f)).sort();
const SNAPSHOT = /^(inuse_|goroutine)/;

let server;
const oracles = new Map(); // file → {prof, types}
const svcOf = new Map(); // file → service

before(async () => {
  assert.ok(files.length >= 6, `expected the pprof test data in ${PPROF_DIR}`);
  await Promise.all(files.map(async (f) => oracles.set(f, await oracleForFile(path.join(PPROF_DIR, f)))));
  server = await startServer();
});

after(async () => {
  if (server) await server.stop();
});

for (const f of files) {
  test(`testdata ${f}: upload, then every sample type equals go tool pprof`, async () => {
    const { prof, types } = oracles.get(f);
    const svc = uniqueName(`td-${f.replace(/\W+/g, '-')}`);
    svcOf.set(f, svc);
    const body = fs.readFileSync(path.join(PPROF_DIR, f));
    const r = await upload(server, body, { serviceName: svc });
    assert.equal(r.status, 200, `upload ${f} → ${r.status} ${r.text}\n${tail(server.stderr())}`);
    assertUploadReply(r.json, prof, `upload ${f}: reply should be {"profiles": sample types, "samples": rows × types}`);

    const win = wideWindow();
    const tj = await getJson(server.uiUrl, '/api/types', { service: svc, ...win });
    for (const o of types) assert.ok(tj.types.includes(o.typeName), `/api/types of ${f} lacks ${o.typeName}: ${JSON.stringify(tj)}`);

    const list = await services(server);
    const entry = list.find((s) => s.name === svc);
    assert.ok(entry, `/api/services does not list ${svc}`);
    for (const o of types) assert.ok(entry.types.includes(o.typeName), `/api/services entry of ${svc} lacks ${o.typeName}`);

    for (const o of types) {
      await checkQueryAgainst(server, svc, o, win, f);
      // A single upload: window types sum, snapshot types average over one
      // snapshot — both are the values themselves; the timeline must agree.
      const tl = await getJson(server.uiUrl, '/api/timeline', { service: svc, type: o.typeName, ...win });
      assert.ok(Array.isArray(tl.points), `${f} ${o.typeName}: timeline has no points`);
      const nonzero = tl.points.filter((p) => p[1] !== 0);
      if (SNAPSHOT.test(o.type)) {
        for (const p of nonzero) assert.equal(p[1], Number(o.total), `${f} ${o.typeName}: snapshot timeline point ${JSON.stringify(p)}`);
      } else {
        const sum = tl.points.reduce((a, p) => a + p[1], 0);
        assert.equal(sum, Number(o.total), `${f} ${o.typeName}: timeline points sum (window type) ${JSON.stringify(tl.points).slice(0, 300)}`);
      }
    }
  });
}

test('default range (no from/until) is the last hour and includes a fresh upload', async () => {
  const f = 'go-cpu-two-stacks.pb.gz';
  const o = oracles.get(f).types[0];
  const svc = uniqueName('td-default-range');
  const r = await upload(server, fs.readFileSync(path.join(PPROF_DIR, f)), { serviceName: svc });
  assert.equal(r.status, 200, r.text);
  const fg = await getJson(server.uiUrl, '/api/flamegraph', { service: svc, type: o.typeName });
  assert.equal(fg.total, Number(o.total), 'flamegraph total with default range');
});

test('gzip by magic bytes, by Content-Encoding, and raw: same result', async () => {
  const f = 'go-cpu-fib.pb.gz';
  const gz = fs.readFileSync(path.join(PPROF_DIR, f));
  const rawBody = zlib.gunzipSync(gz);
  const { types } = oracles.get(f);
  for (const [label, body, headers] of [
    ['raw', rawBody, {}],
    ['content-encoding', gz, { 'content-encoding': 'gzip' }],
  ]) {
    const svc = uniqueName(`td-enc-${label}`);
    const r = await upload(server, body, { serviceName: svc }, headers);
    assert.equal(r.status, 200, `${label}: ${r.text}`);
    for (const o of types) await checkQueryAgainst(server, svc, o, wideWindow(), `${f} as ${label}`);
  }
});

test('label filter label.K=V selects the samples with that pprof label', async () => {
  const f = 'go-cpu-span-labels.pb.gz';
  const { prof } = oracles.get(f);
  const svc = svcOf.get(f);
  assert.ok(svc, 'depends on the upload test of go-cpu-span-labels');
  for (const [k, v] of [['function', 'slow'], ['function', 'fast'], ['foo', 'bar']]) {
    for (let i = 0; i < prof.sampleTypes.length; i++) {
      const o = oracle(prof, i, (s) => s.labels?.[k] === v);
      assert.ok(o.total > 0n, `oracle: label ${k}=${v} selects samples`);
      await checkQueryAgainst(server, svc, o, { ...wideWindow(), [`label.${k}`]: v }, `${f} label.${k}=${v}`);
    }
  }
  // A label value nobody has selects nothing.
  const fg = await get(server.uiUrl, '/api/flamegraph', { service: svc, type: 'cpu:nanoseconds', ...wideWindow(), 'label.function': 'nope' });
  assert.ok(fg.status === 200 || fg.status === 404, `no-match label filter → ${fg.status} ${fg.text}`);
  if (fg.status === 200) assert.equal(fg.json.total, 0, 'no-match label filter total');
});

test('window types are summed and snapshot types averaged over uploads (API: Aggregation over time)', async () => {
  const f = 'go-heap-delta.pb.gz';
  const { types } = oracles.get(f);
  const body = fs.readFileSync(path.join(PPROF_DIR, f));
  const svc = uniqueName('td-heap-twice');
  for (let k = 0; k < 2; k++) {
    const r = await upload(server, body, { serviceName: svc });
    assert.equal(r.status, 200, r.text);
  }
  for (const o of types) {
    const fg = await getJson(server.uiUrl, '/api/flamegraph', { service: svc, type: o.typeName, ...wideWindow() });
    const want = SNAPSHOT.test(o.type) ? o.total : 2n * o.total;
    assert.equal(fg.total, Number(want), `${o.typeName} after two identical uploads (${SNAPSHOT.test(o.type) ? 'snapshot: averaged' : 'window: summed'})`);
  }
});

test('from/until on upload place the profile in time', async () => {
  const f = 'go-cpu-two-stacks.pb.gz';
  const o = oracles.get(f).types[0];
  const svc = uniqueName('td-from');
  const t0 = nowS() - 1800;
  const r = await upload(server, fs.readFileSync(path.join(PPROF_DIR, f)), { serviceName: svc, from: t0, until: t0 + 10 });
  assert.equal(r.status, 200, r.text);
  const inside = await getJson(server.uiUrl, '/api/flamegraph', { service: svc, type: o.typeName, from: t0 - 60, until: t0 + 60 });
  assert.equal(inside.total, Number(o.total), 'window around from');
  const outside = await get(server.uiUrl, '/api/flamegraph', { service: svc, type: o.typeName, from: t0 + 600, until: nowS() + 60 });
  assert.ok(outside.status === 200 || outside.status === 404, `window after the profile → ${outside.status} ${outside.text}`);
  if (outside.status === 200) assert.equal(outside.json.total, 0, 'window after the profile must be empty');
});

test('workload= names the service; namespace/pod/label.K=V are series labels to filter on', async () => {
  const two = oracles.get('go-cpu-two-stacks.pb.gz').types[0];
  const fib = oracles.get('go-cpu-fib.pb.gz').types.find((o) => o.typeName === 'cpu:nanoseconds');
  const svc = uniqueName('td-workload');
  const r1 = await upload(server, fs.readFileSync(path.join(PPROF_DIR, 'go-cpu-two-stacks.pb.gz')),
    { workload: svc, namespace: 'ns1', pod: 'pod-a', container: 'c1', 'label.env': 'blue' });
  assert.equal(r1.status, 200, r1.text);
  const r2 = await upload(server, fs.readFileSync(path.join(PPROF_DIR, 'go-cpu-fib.pb.gz')),
    { workload: svc, namespace: 'ns1', pod: 'pod-b', container: 'c1', 'label.env': 'green' });
  assert.equal(r2.status, 200, r2.text);
  const win = wideWindow();
  const all = await getJson(server.uiUrl, '/api/flamegraph', { service: svc, type: 'cpu:nanoseconds', ...win });
  assert.equal(all.total, Number(two.total + fib.total), 'both uploads under the workload name');
  await checkQueryAgainst(server, svc, two, { ...win, 'label.k8s.pod.name': 'pod-a' }, 'pod-a');
  await checkQueryAgainst(server, svc, fib, { ...win, 'label.k8s.pod.name': 'pod-b' }, 'pod-b');
  await checkQueryAgainst(server, svc, fib, { ...win, 'label.env': 'green' }, 'label.env=green');
  await checkQueryAgainst(server, svc, two, { ...win, 'label.env': 'blue', 'label.k8s.namespace.name': 'ns1' }, 'env=blue + namespace');
  const none = await getJson(server.uiUrl, '/api/flamegraph', { service: svc, type: 'cpu:nanoseconds', ...win, 'label.env': 'blue', 'label.k8s.pod.name': 'pod-b' });
  assert.equal(none.total, 0, 'all label filters must match');
});
