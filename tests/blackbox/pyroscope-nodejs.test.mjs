// The real npm SDK @pyroscope/nodejs 0.6.4 pushing to a real kiln (issue 16;
// API: Push: POST /ingest (Pyroscope)). A small Node service
// (lib/pyro-node-app.mjs: recursion under the dynamic label handler=fib,
// allocation under handler=alloc, static tags env and region) runs as a child
// process for a few flush intervals and pushes its wall and heap profiles
// through a recording proxy in this process, which forwards every request to
// kiln unchanged and keeps what the SDK sent and what kiln answered.
//
// What the SDK 0.6.4 sends (its dist/esm/pyroscope-api-exporter.js): POST
// SERVER/ingest?format=pprof&from=S&name=APP{tags}&spyName=nodespy&until=S
// [&sampleRate=N on wall profiles], Content-Type application/octet-stream,
// a gzipped pprof body (no multipart, no Content-Encoding), Authorization:
// Bearer TOKEN with authToken, X-Scope-OrgID with tenantID. The name has no
// `.wall`/`.heap` suffix and no __name__: wall (samples:count,
// wall:nanoseconds) and heap (inuse_objects:count, inuse_space:bytes)
// pushes share it.
//
// Oracle: `go tool pprof -raw` of the recorded bodies (lib/pprof.mjs): wall
// types are window types, so the flame graph over all pushes is their sum;
// heap types are snapshots (API: Aggregation over time), so each heap push is
// checked alone in the one-second window of its `from`, where it is the only
// snapshot. Label filters: the tags (series labels) and the dynamic labels
// (pprof sample labels) against the same oracle restricted to the samples
// that carry them.
//
// Also here: X-Scope-OrgID (OPS: Trusting X-Scope-OrgID) — ignored by
// default, honoured on a listener with trustScopeOrgId, refused at start
// with auth required — driven by the SDK's tenantID and by plain requests.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { spawn, execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { KILN_BIN, TESTDATA, mkTemp, uniqueName } from './lib/env.mjs';
import { startServer, tail } from './lib/server.mjs';
import { getJson, get, wideWindow } from './lib/http.mjs';
import { pprofRaw, oracle } from './lib/pprof.mjs';
import { checkQueryAgainst, flameStats } from './lib/check.mjs';
import { createKey, postOtlpAs, otlpN, grpcClientAt, grpcExportMd, describeGrpcMd, brief } from './lib/s6.mjs';

const APP = path.join(path.dirname(fileURLToPath(import.meta.url)), 'lib', 'pyro-node-app.mjs');
const WALL_TYPES = ['samples:count', 'wall:nanoseconds'];
const HEAP_TYPES = ['inuse_objects:count', 'inuse_space:bytes'];
const FORWARDED = ['content-type', 'content-encoding', 'authorization', 'x-scope-orgid'];

// An HTTP server that forwards every request to target (a kiln listener) and
// records {method, path, query, headers, body, status, text}.
async function startRecorder(target) {
  const records = [];
  const srv = http.createServer(async (req, res) => {
    const chunks = [];
    try {
      for await (const c of req) chunks.push(c);
    } catch {
      return; // the app exited mid-request: neither recorded nor forwarded
    }
    const body = Buffer.concat(chunks);
    const headers = {};
    for (const k of FORWARDED) if (req.headers[k] !== undefined) headers[k] = req.headers[k];
    let status = 502;
    let text = '';
    let ctype = 'text/plain';
    try {
      const r = await fetch(`${target}${req.url}`, {
        method: req.method, headers, body: req.method === 'POST' ? body : undefined, signal: AbortSignal.timeout(60000),
      });
      status = r.status;
      text = await r.text();
      ctype = r.headers.get('content-type') ?? ctype;
    } catch (e) {
      text = `recorder: ${e.message}`;
    }
    const u = new URL(req.url, 'http://x');
    records.push({ method: req.method, path: u.pathname, query: Object.fromEntries(u.searchParams), headers: req.headers, body, status, text });
    res.writeHead(status, { 'content-type': ctype });
    res.end(text);
  });
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${srv.address().port}`,
    records,
    close: () => new Promise((resolve) => { srv.closeAllConnections?.(); srv.close(resolve); }),
  };
}

// Runs the SDK app against server (the recorder's url) until enough() says
// the recorder has what the test needs (then it tells the app to stop; the
// SDK flushes once more) or 50 s passed; opts: app, flushMs, token, tenant.
// Under load kiln's answers take longer and the SDK skips a round while its
// previous export of that kind is in flight, so a run of fixed length may
// hold a single heap push.
function runApp(server, opts, enough) {
  return new Promise((resolve, reject) => {
    const env = {
      ...process.env, PYRO_SERVER: server, PYRO_APP: opts.app,
      PYRO_MAX_MS: '50000', PYRO_FLUSH_MS: String(opts.flushMs ?? 2000),
      ...(opts.token ? { PYRO_TOKEN: opts.token } : {}), ...(opts.tenant ? { PYRO_TENANT: opts.tenant } : {}),
    };
    const p = spawn(process.execPath, [APP], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    const poll = setInterval(() => {
      if (enough()) { clearInterval(poll); p.stdin.end('stop\n'); }
    }, 100);
    const timer = setTimeout(() => { p.kill('SIGKILL'); reject(new Error(`SDK app did not stop: ${out} ${err}`)); }, 90000);
    p.on('exit', (code) => {
      clearInterval(poll);
      clearTimeout(timer);
      if (code !== 0 || !out.startsWith('stopped true')) reject(new Error(`SDK app exit ${code}: ${out} ${err}`));
      else resolve();
    });
  });
}

// Two answered pushes of each kind (wall pushes carry sampleRate, heap ones not).
const twoOfEach = (records) => () => {
  const wall = records.filter((r) => r.query.sampleRate !== undefined).length;
  return wall >= 2 && records.length - wall >= 2;
};

// One run of the SDK through a recorder in front of target: the records, each
// with its decoded profile (prof), kind (wall | heap) and from/until seconds.
async function sdkRun(target, opts) {
  const rec = await startRecorder(target);
  try {
    await runApp(rec.url, opts, twoOfEach(rec.records));
  } finally {
    await rec.close();
  }
  const dir = mkTemp('pyro-sdk');
  let i = 0;
  for (const r of rec.records) {
    const f = path.join(dir, `push-${i++}.pb.gz`);
    fs.writeFileSync(f, r.body);
    r.prof = await pprofRaw(f);
    const types = r.prof.sampleTypes.map((t) => `${t.type}:${t.unit}`);
    r.kind = types.join() === WALL_TYPES.join() ? 'wall' : types.join() === HEAP_TYPES.join() ? 'heap' : `unknown ${types}`;
    r.from = Number(r.query.from);
    r.until = Number(r.query.until);
  }
  return rec.records;
}

// The SDK's requests are what its source says (see the top of this file).
function assertSdkRequests(records, app, ctx) {
  assert.ok(records.filter((r) => r.kind === 'wall').length >= 2, `${ctx}: at least two wall pushes (${records.map((r) => r.kind)})`);
  assert.ok(records.filter((r) => r.kind === 'heap').length >= 2, `${ctx}: at least two heap pushes (${records.map((r) => r.kind)})`);
  for (const r of records) {
    const what = `${ctx}: ${r.method} ${r.path}?${new URLSearchParams(r.query)}`;
    assert.equal(r.method, 'POST', what);
    assert.equal(r.path, '/ingest', what);
    assert.equal(r.query.format, 'pprof', what);
    assert.equal(r.query.spyName, 'nodespy', what);
    assert.match(r.query.from, /^\d{10}$/, `${what}: from in seconds`);
    assert.match(r.query.until, /^\d{10}$/, `${what}: until in seconds`);
    assert.ok(r.until >= r.from, what);
    assert.match(r.query.name, new RegExp(`^${app}\\{otel\\.scope\\.name=com\\.grafana\\.pyroscope/nodejs,otel\\.scope\\.version=0\\.6\\.4,process\\.runtime\\.name=nodejs,process\\.runtime\\.version=[0-9.]+,env=sdk-test,region=eu-1\\}$`), what);
    assert.equal(r.headers['content-type'], 'application/octet-stream', what);
    assert.equal(r.headers['content-encoding'], undefined, what);
    assert.equal(r.body.subarray(0, 2).toString('hex'), '1f8b', `${what}: a gzipped body`);
    assert.ok(!r.kind.startsWith('unknown'), `${what}: ${r.kind}`);
  }
}

// The sum of oracle(prof, index of typeName, filter) over records.
function summed(records, typeName, filter = null) {
  const out = { typeName, total: 0n, self: new Map(), cum: new Map(), hasNegative: false, unnamed: false };
  for (const r of records) {
    const ix = r.prof.sampleTypes.findIndex((t) => `${t.type}:${t.unit}` === typeName);
    const o = oracle(r.prof, ix, filter);
    out.unit = o.unit;
    out.total += o.total;
    out.hasNegative ||= o.hasNegative;
    out.unnamed ||= o.unnamed;
    for (const [m, k] of [[out.self, o.self], [out.cum, o.cum]]) for (const [n, v] of k) m.set(n, (m.get(n) ?? 0n) + v);
  }
  return out;
}

const span = (records) => ({ from: Math.min(...records.map((r) => r.from)), until: Math.max(...records.map((r) => r.until)) + 1 });
const handlerIs = (v) => (s) => s.labels?.handler === v;

// Every check of one SDK run against kiln's query API (no auth on the UI listener).
async function checkRun(server, records, app, ctx) {
  assertSdkRequests(records, app, ctx);
  for (const r of records) assert.deepEqual([r.status, r.text], [200, ''], `${ctx}: kiln's answer to a ${r.kind} push\n${tail(server.stderr(), 8)}`);
  const wall = records.filter((r) => r.kind === 'wall');
  const heap = records.filter((r) => r.kind === 'heap');
  const win = span(records);
  // Window types: the sum of every wall push.
  for (const t of WALL_TYPES) await checkQueryAgainst(server, app, summed(wall, t), win, `${ctx} all wall pushes`);
  // Dynamic labels (pprof sample labels) and tags (series labels).
  const fib = summed(wall, 'wall:nanoseconds', handlerIs('fib'));
  const alloc = summed(wall, 'wall:nanoseconds', handlerIs('alloc'));
  assert.ok(fib.total > 0n && alloc.total > 0n, `${ctx}: the SDK labelled samples fib (${fib.total}) and alloc (${alloc.total})`);
  await checkQueryAgainst(server, app, fib, { ...win, 'label.handler': 'fib' }, `${ctx} label.handler=fib`);
  await checkQueryAgainst(server, app, alloc, { ...win, 'label.handler': 'alloc' }, `${ctx} label.handler=alloc`);
  const allWall = summed(wall, 'wall:nanoseconds');
  for (const [k, v] of [['env', 'sdk-test'], ['region', 'eu-1'], ['otel.scope.name', 'com.grafana.pyroscope/nodejs'], ['process.runtime.name', 'nodejs']]) {
    const fg = await getJson(server.uiUrl, '/api/flamegraph', { service: app, type: 'wall:nanoseconds', ...win, [`label.${k}`]: v });
    assert.equal(fg.total, Number(allWall.total), `${ctx}: label.${k}=${v} (a tag) keeps every wall sample`);
  }
  const both = await getJson(server.uiUrl, '/api/flamegraph', { service: app, type: 'wall:nanoseconds', ...win, 'label.env': 'sdk-test', 'label.handler': 'fib' });
  assert.equal(both.total, Number(fib.total), `${ctx}: a tag and a dynamic label together`);
  for (const [k, v] of [['env', 'prod'], ['handler', 'nope']]) {
    const fg = await getJson(server.uiUrl, '/api/flamegraph', { service: app, type: 'wall:nanoseconds', ...win, [`label.${k}`]: v });
    assert.equal(fg.total, 0, `${ctx}: label.${k}=${v} matches nothing`);
  }
  const labels = await getJson(server.uiUrl, '/api/labels', { service: app, type: 'wall:nanoseconds', ...win });
  const byName = Object.fromEntries(labels.labels.map((l) => [l.name, l]));
  assert.deepEqual([byName.handler?.source, byName.handler?.values], ['sample', ['alloc', 'fib']], `${ctx}: ${JSON.stringify(labels)}`);
  assert.deepEqual([byName.env?.source, byName.env?.values], ['series', ['sdk-test']], `${ctx}: ${JSON.stringify(labels)}`);
  // Snapshot types: each heap push alone in the second of its from.
  const froms = heap.map((r) => r.from);
  assert.equal(new Set(froms).size, froms.length, `${ctx}: heap pushes one per second (${froms})`);
  for (const r of heap) {
    assert.ok(summed([r], 'inuse_space:bytes').total > 0n, `${ctx}: heap push from=${r.from} holds memory`);
    for (const t of HEAP_TYPES) {
      await checkQueryAgainst(server, app, summed([r], t), { from: r.from, until: r.from + 1 }, `${ctx} heap push from=${r.from}`);
    }
  }
  // Listed with exactly the types the SDK sent (SAMPLE:UNIT).
  const all = [...WALL_TYPES, ...HEAP_TYPES].sort();
  const list = await getJson(server.uiUrl, '/api/services', win);
  const entry = list.services.find((s) => s.name === app);
  assert.ok(entry, `${ctx}: /api/services lacks ${app}: ${JSON.stringify(list).slice(0, 300)}`);
  assert.deepEqual([...entry.types].sort(), all, `${ctx}: /api/services types`);
  const types = await getJson(server.uiUrl, '/api/types', { service: app, ...win });
  assert.deepEqual([...types.types].sort(), all, `${ctx}: /api/types`);
}

let server;
before(async () => {
  server = await startServer();
});
after(async () => {
  if (server) await server.stop();
});

test('@pyroscope/nodejs 0.6.4 → the upload (:8028) and UI (:4040) listeners: wall and heap totals equal what the SDK sent; tags and wrapWithLabels labels filter; listed with its types', async () => {
  const apps = [uniqueName('sdk-node-upload'), uniqueName('sdk-node-ui')];
  const [viaUpload, viaUi] = await Promise.all([
    sdkRun(server.uploadUrl, { app: apps[0] }),
    sdkRun(server.uiUrl, { app: apps[1] }),
  ]);
  await checkRun(server, viaUpload, apps[0], 'upload listener');
  await checkRun(server, viaUi, apps[1], 'UI listener');
});

// The flame graph of params on the UI listener with a key.
async function flameAs(s, key, params) {
  const res = await fetch(`${s.uiUrl}/api/flamegraph?${new URLSearchParams(params)}`, { headers: { 'x-kiln-key': key } });
  assert.equal(res.status, 200);
  return res.json();
}

test('with auth required: the SDK\'s authToken (an ingest key) → 200 and stored exactly under the key\'s project; a query key → 403 and nothing stored', async () => {
  const dataDir = mkTemp('pyro-sdk-auth');
  const ingestKey = await createKey(dataDir, 'sdk-team', 'sdk-node-ingest', 'ingest');
  const queryKey = await createKey(dataDir, 'sdk-team', 'sdk-node-query', 'query');
  const s = await startServer({ dataDir, extraArgs: ['--auth', 'required'] });
  try {
    const app = uniqueName('sdk-node-auth');
    const refusedApp = uniqueName('sdk-node-refused');
    const [ok, refused] = await Promise.all([
      sdkRun(s.uiUrl, { app, token: ingestKey }),
      sdkRun(s.uploadUrl, { app: refusedApp, token: queryKey, flushMs: 1000 }),
    ]);
    assertSdkRequests(ok, app, 'auth');
    for (const r of ok) {
      assert.equal(r.headers.authorization, `Bearer ${ingestKey}`);
      assert.deepEqual([r.status, r.text], [200, ''], `auth: ${r.kind}\n${tail(s.stderr(), 8)}`);
    }
    assert.ok(refused.length >= 2, 'the refused SDK still pushed');
    for (const r of refused) {
      assert.equal(r.status, 403, r.text);
      assert.equal(JSON.parse(r.text).code, 'permission_denied', r.text);
    }
    const win = span(ok);
    for (const t of WALL_TYPES) {
      const exp = summed(ok.filter((r) => r.kind === 'wall'), t);
      const fg = await flameAs(s, queryKey, { service: app, type: t, ...win });
      assert.equal(fg.total, Number(exp.total), `auth: ${t} total`);
      const got = flameStats(fg.root);
      assert.deepEqual(got.bad, []);
      assert.deepEqual(new Map([...got.self].filter(([, v]) => v)), new Map([...exp.self].filter(([, v]) => v).map(([k, v]) => [k, Number(v)])), `auth: ${t} self per function`);
    }
    const fib = summed(ok.filter((r) => r.kind === 'wall'), 'wall:nanoseconds', handlerIs('fib'));
    assert.equal((await flameAs(s, queryKey, { service: app, type: 'wall:nanoseconds', ...win, 'label.handler': 'fib' })).total, Number(fib.total));
    const res = await fetch(`${s.uiUrl}/api/services?${new URLSearchParams(wideWindow())}`, { headers: { 'x-kiln-key': queryKey } });
    const names = (await res.json()).services.map((x) => x.name);
    assert.ok(names.includes(app), `${app} listed for the key's project: ${names}`);
    assert.ok(!names.includes(refusedApp), 'refused pushes stored');
  } finally {
    await s.stop();
  }
});

// --- X-Scope-OrgID (OPS: Trusting X-Scope-OrgID) ---------------------------

const FIXTURE = fs.readFileSync(path.join(TESTDATA, 'pprof', 'go-cpu-fib.pb.gz'));

async function postIngest(base, name, headers = {}) {
  const res = await fetch(`${base}/ingest?${new URLSearchParams({ name, format: 'pprof' })}`, { method: 'POST', body: FIXTURE, headers });
  return { status: res.status, text: await res.text() };
}

async function servicesOf(s, orgId) {
  const r = await fetch(`${s.uiUrl}/api/services?${new URLSearchParams(wideWindow())}`, { headers: orgId ? { 'x-scope-orgid': orgId } : {} });
  assert.equal(r.status, 200);
  return (await r.json()).services.map((x) => x.name);
}

test('X-Scope-OrgID: ignored by default; with trustScopeOrgId the SDK\'s tenantID picks the project on that listener only', async () => {
  const s = await startServer({ config: 'limits: {samplesPerSecond: 1000000000}\nlisteners: {ui: {trustScopeOrgId: true}}\n' });
  try {
    // The SDK with tenantID to the trusting UI listener, and to the upload listener, which ignores it.
    const [appTrusted, appIgnored] = [uniqueName('sdk-node-tenant'), uniqueName('sdk-node-notrust')];
    const [trusted, ignored] = await Promise.all([
      sdkRun(s.uiUrl, { app: appTrusted, tenant: 'team-a', flushMs: 1000 }),
      sdkRun(s.uploadUrl, { app: appIgnored, tenant: 'team-a', flushMs: 1000 }),
    ]);
    for (const r of [...trusted, ...ignored]) {
      assert.equal(r.headers['x-scope-orgid'], 'team-a', 'the SDK sends tenantID as X-Scope-OrgID');
      assert.deepEqual([r.status, r.text], [200, ''], r.text);
    }
    const teamA = await servicesOf(s, 'team-a');
    const dflt = await servicesOf(s);
    assert.ok(teamA.includes(appTrusted) && !dflt.includes(appTrusted), `trusting listener: project team-a (${teamA}) not default (${dflt})`);
    assert.ok(dflt.includes(appIgnored) && !teamA.includes(appIgnored), `upload listener ignores the header: project default (${dflt})`);
    // Queries on the trusting listener are scoped the same way, exactly.
    const wall = trusted.filter((r) => r.kind === 'wall');
    const exp = summed(wall, 'wall:nanoseconds');
    const q = new URLSearchParams({ service: appTrusted, type: 'wall:nanoseconds', ...span(wall) });
    const fgA = await (await fetch(`${s.uiUrl}/api/flamegraph?${q}`, { headers: { 'x-scope-orgid': 'team-a' } })).json();
    assert.equal(fgA.total, Number(exp.total), 'team-a reads back what the SDK sent');
    const fgDefault = await getJson(s.uiUrl, '/api/flamegraph', Object.fromEntries(q));
    assert.equal(fgDefault.total, 0, 'project default does not see team-a');

    // Plain requests: a header that is no project name is refused on the trusting listener, ignored elsewhere.
    const bad = uniqueName('tenant-bad');
    const r1 = await postIngest(s.uiUrl, bad, { 'x-scope-orgid': 'team/a' });
    assert.equal(r1.status, 400, r1.text);
    assert.deepEqual(JSON.parse(r1.text), { code: 'invalid_argument', message: 'X-Scope-OrgID "team/a" is not a project name: use 1 to 64 of A-Z a-z 0-9 _ . -' });
    const q1 = await fetch(`${s.uiUrl}/api/services`, { headers: { 'x-scope-orgid': 'x'.repeat(65) } });
    assert.equal(q1.status, 400);
    assert.match((await q1.json()).error, /^X-Scope-OrgID "x{64}" is not a project name/);
    const r2 = await postIngest(s.uploadUrl, bad, { 'x-scope-orgid': 'team/a' });
    assert.deepEqual([r2.status, r2.text], [200, ''], 'the upload listener does not look at the header');
    const empty = uniqueName('tenant-empty');
    const r3 = await postIngest(s.uiUrl, empty, { 'x-scope-orgid': '' });
    assert.deepEqual([r3.status, r3.text], [200, '']);
    const dflt2 = await servicesOf(s);
    assert.ok(dflt2.includes(bad) && dflt2.includes(empty), 'ignored or empty header: project default');
    // /profiling/upload on the trusting UI listener is not a route; on the upload listener the header is ignored.
    const up = await fetch(`${s.uploadUrl}/profiling/upload?serviceName=${uniqueName('tenant-up')}`, { method: 'POST', body: FIXTURE, headers: { 'x-scope-orgid': 'team-b' } });
    assert.equal(up.status, 200);
    assert.deepEqual(await servicesOf(s, 'team-b'), [], 'nothing in team-b');
  } finally {
    await s.stop();
  }
});

test('X-Scope-OrgID: trustScopeOrgId on a listener with auth required stops kiln serve at start', async () => {
  const dir = mkTemp('pyro-tenant-cfg');
  for (const [config, extra] of [
    ['listeners: {ui: {auth: required, trustScopeOrgId: true}}\n', []],
    ['listeners: {upload: {trustScopeOrgId: true}}\n', ['--auth', 'required']],
  ]) {
    const f = path.join(dir, 'kiln.yaml');
    fs.writeFileSync(f, config);
    const r = await new Promise((resolve) => {
      execFile(KILN_BIN, ['serve', '--config', f, '--data', path.join(dir, 'data'), '--ui', '127.0.0.1:0', '--upload', '127.0.0.1:0',
        '--otlp-http', 'off', '--otlp-grpc', 'off', ...extra], { timeout: 15000 }, (err, stdout, stderr) => resolve({ code: err?.code ?? 0, stderr }));
    });
    const listener = config.includes('ui:') ? 'ui' : 'upload';
    assert.notEqual(r.code, 0, `${config}: kiln serve must not start`);
    assert.ok(r.stderr.includes(`listeners.${listener}.trustScopeOrgId needs auth: none (with auth required, the key names the project)`), r.stderr);
  }
});

test('X-Scope-OrgID on the OTLP listeners (HTTP header, gRPC metadata) with trustScopeOrgId: project from the header, bad names refused', async () => {
  const trust = '{trustScopeOrgId: true}';
  const s = await startServer({
    otlp: true, listeners: ['upload', 'ui', 'otlp_http', 'otlp_grpc'],
    config: `limits: {samplesPerSecond: 1000000000}\nlisteners: {otlp_http: ${trust}, otlp_grpc: ${trust}, ui: ${trust}}\n`,
  });
  const client = grpcClientAt(s.urls.otlp_grpc);
  try {
    const [viaHttp, viaGrpc] = [uniqueName('tenant-otlp-http'), uniqueName('tenant-otlp-grpc')];
    const h = await postOtlpAs(s, otlpN(viaHttp, 5), { headers: { 'content-type': 'application/x-protobuf', 'x-scope-orgid': 'team-o' } });
    assert.equal(h.status, 200, brief(h));
    const g = await grpcExportMd(client, otlpN(viaGrpc, 7), { 'x-scope-orgid': 'team-o' });
    assert.ok(g.ok, describeGrpcMd(g));
    for (const [svc, n] of [[viaHttp, 5], [viaGrpc, 7]]) {
      const q = new URLSearchParams({ service: svc, type: 'cpu:nanoseconds', ...wideWindow() });
      const fg = await (await fetch(`${s.uiUrl}/api/flamegraph?${q}`, { headers: { 'x-scope-orgid': 'team-o' } })).json();
      assert.equal(fg.total, n, `${svc} in team-o`);
      assert.equal((await getJson(s.uiUrl, '/api/flamegraph', Object.fromEntries(q))).total, 0, `${svc} not in default`);
    }
    const badHttp = await postOtlpAs(s, otlpN(uniqueName('tenant-otlp-bad'), 1), { headers: { 'content-type': 'application/x-protobuf', 'x-scope-orgid': 'a b' } });
    assert.equal(badHttp.status, 400, brief(badHttp));
    const badGrpc = await grpcExportMd(client, otlpN(uniqueName('tenant-otlp-bad'), 1), { 'x-scope-orgid': 'a b' });
    assert.equal(badGrpc.codeName, 'INVALID_ARGUMENT', describeGrpcMd(badGrpc));
    assert.equal(badGrpc.details, 'X-Scope-OrgID "a b" is not a project name: use 1 to 64 of A-Z a-z 0-9 _ . -');
    assert.deepEqual((await servicesOf(s)).filter((n) => n.startsWith('tenant-otlp')), [], 'nothing in default');
  } finally {
    client.close();
    await s.stop();
  }
});
