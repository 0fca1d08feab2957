// Scale-out (issue 8, OPS: Roles and listeners, Storage): one ClickHouse database shared by
// two kiln processes with `role: ingestor` and two with `role: query`.
// Each role opens only its listeners (ingestor: upload, OTLP/HTTP,
// OTLP/gRPC; query: the UI/API); whatever either ingestor acknowledged is
// visible from the query processes right away, with exact totals (go tool
// pprof's reading of the fixture, or the numbers the test sent), usage
// counters of both ingestors add up, and both query processes answer alike.
// Keys live in ClickHouse too: one created once with `kiln keys create
// --config` works on every process of an `--auth required` pair within a
// couple of seconds (each re-reads the keys every second), and a revoked one
// stops working everywhere.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { TESTDATA, nowS } from './lib/env.mjs';
import { upload, getJson } from './lib/http.mjs';
import { oracleForFile } from './lib/pprof.mjs';
import { buildProfile } from './lib/pb.mjs';
import { buildRequest } from './lib/otlp-build.mjs';
import { encodeRequest } from './lib/otlp.mjs';
import { startClickHouse, chQuery } from './lib/clickhouse.mjs';
import { startServer, freshDatabase, tail } from './lib/server.mjs';
import { mkTemp } from './lib/env.mjs';
import { assertSameAnswer } from './lib/compare.mjs';
import { pushTo } from './lib/s6-push.mjs';
import { otlpN, sleep, createKey, revokeKey, uploadAs, apiAs, brief } from './lib/s6.mjs';

const FIB = path.join(TESTDATA, 'pprof', 'go-cpu-fib.pb.gz');
const RECEIVERS = ['otlp_grpc', 'otlp_http', 'upload'];
const LIMITS = 'limits: {samplesPerSecond: 1000000000}\n';
const TRACE = 'ee000000000000000000000000000001';
const SPAN = 'ef00000000000001';
const W = () => ({ from: nowS() - 3600, until: nowS() + 60 });
let ch;
let database;
const I = []; // ingestors
const Q = []; // query processes
let accepted = 0; // samples acknowledged by both ingestors, for /api/usage

async function startRole(role, listeners, opts = {}) {
  return startServer({
    engine: 'clickhouse', clickhouseUrl: ch.url, database,
    config: `role: ${role}\n${LIMITS}`, otlp: true, listeners, ...opts,
  });
}

before(async () => {
  ch = await startClickHouse();
  database = freshDatabase();
  I.push(await startRole('ingestor', RECEIVERS));
  I.push(await startRole('ingestor', RECEIVERS));
  Q.push(await startRole('query', ['ui']));
  Q.push(await startRole('query', ['ui']));
});
const keyed = [];
after(async () => {
  await Promise.all([...I, ...Q, ...keyed].map((s) => s.stop()));
  await ch?.destroy();
});

test('each role opens only its listeners: ingestors the receivers, query processes the UI/API', async () => {
  await sleep(300); // every listener is logged before serving; allow the last lines to arrive
  for (const s of I) {
    assert.match(s.stderr(), /msg=starting role=ingestor\b/, tail(s.stderr(), 5));
    assert.deepEqual(Object.keys(s.urls).sort(), RECEIVERS, `ingestor pid ${s.pid} listeners:\n${tail(s.stderr(), 8)}`);
  }
  for (const s of Q) {
    assert.match(s.stderr(), /msg=starting role=query\b/, tail(s.stderr(), 5));
    assert.deepEqual(Object.keys(s.urls), ['ui'], `query pid ${s.pid} listeners:\n${tail(s.stderr(), 8)}`);
    const h = await fetch(`${s.uiUrl}/healthz`);
    assert.equal(h.status, 200);
  }
});

test('a pprof pushed to either ingestor is visible from the query process at once, with go tool pprof\'s totals', async () => {
  const fib = await oracleForFile(FIB);
  const body = fs.readFileSync(FIB);
  for (const [k, s] of I.entries()) {
    const r = await upload(s, body, { serviceName: 'so-go', pod: `i${k}` });
    assert.equal(r.status, 200, `upload to ingestor ${k}: ${r.text}`);
    accepted += r.json.samples;
    // Visible at once from both query processes, with both uploads so far.
    for (const q of Q) {
      for (const o of fib.types) {
        const fg = await getJson(q.uiUrl, '/api/flamegraph', { service: 'so-go', type: o.typeName, ...W() });
        assert.equal(fg.total, Number(o.total) * (k + 1), `${o.typeName} via query pid ${q.pid} after the upload to ingestor ${k}`);
      }
    }
  }
  for (const o of fib.types) {
    for (const k of [0, 1]) {
      const fg = await getJson(Q[0].uiUrl, '/api/flamegraph', { service: 'so-go', type: o.typeName, 'label.k8s.pod.name': `i${k}`, ...W() });
      assert.equal(fg.total, Number(o.total), `${o.typeName} of pod i${k} alone`);
    }
  }
});

test('OTLP over HTTP to one ingestor and gRPC to the other: totals and the span are visible from the query process', async () => {
  const req = buildRequest({
    resources: [{
      attrs: { 'service.name': 'so-otlp' },
      profiles: [{
        type: ['cpu', 'nanoseconds'], period: 1,
        samples: [
          { stack: ['main.spanWork', 'main.main'], values: ['700'], link: { traceId: TRACE, spanId: SPAN } },
          { stack: ['main.other', 'main.main'], values: ['300'] },
          { stack: ['main.spanWork', 'main.main'], values: ['11'], link: { traceId: TRACE, spanId: SPAN } },
        ],
      }],
    }],
  });
  const h = await pushTo(I[0], 'otlp_http', 'so-otlp', {}, { body: encodeRequest(req) });
  assert.equal(h.status, 200, h.describe);
  accepted += 3;
  const g = await pushTo(I[1], 'otlp_grpc', 'so-grpc', {}, { body: otlpN('so-grpc', 25) });
  assert.equal(g.status, 200, g.describe);
  accepted += 25;
  const fo = await getJson(Q[1].uiUrl, '/api/flamegraph', { service: 'so-otlp', type: 'cpu:nanoseconds', ...W() });
  assert.equal(fo.total, 1011, JSON.stringify(fo).slice(0, 300));
  const fg = await getJson(Q[0].uiUrl, '/api/flamegraph', { service: 'so-grpc', type: 'cpu:nanoseconds', ...W() });
  assert.equal(fg.total, 25, JSON.stringify(fg).slice(0, 300));
  const sp = await getJson(Q[0].uiUrl, '/api/span', { trace_id: TRACE, span_id: SPAN });
  assert.equal(sp.total, 711, `/api/span via the query process: ${JSON.stringify(sp).slice(0, 300)}`);
  assert.equal(sp.service, 'so-otlp');
});

test('40 concurrent uploads spread over both ingestors: each one visible exactly once from the query process', async () => {
  const N = 40;
  const sent = await Promise.all(Array.from({ length: N }, async (_, i) => {
    const v = 1000 + i;
    const body = buildProfile({
      sampleTypes: [['cpu', 'nanoseconds']], periodType: ['cpu', 'nanoseconds'], period: 1,
      samples: [{ stack: [`main.spread${i}`, 'main.main'], values: [v] }],
    }).bytes;
    const r = await upload(I[i % 2], body, { serviceName: 'so-spread' });
    assert.equal(r.status, 200, `upload ${i} to ingestor ${i % 2}: ${r.text}`);
    accepted += r.json.samples;
    return [`main.spread${i}`, v];
  }));
  const top = await getJson(Q[0].uiUrl, '/api/top', { service: 'so-spread', type: 'cpu:nanoseconds', ...W(), limit: 0 });
  const got = Object.fromEntries(top.rows.filter((r) => r.self !== 0).map((r) => [r.name, r.self]));
  assert.deepEqual(got, Object.fromEntries(sent), '/api/top self per upload (each function belongs to one upload)');
});

test('both query processes answer alike', async (t) => {
  // Each ingestor flushes its usage counters every second: without this
  // wait a flush can land between the two processes' /api/usage reads
  // (seen once: accepted 303 vs 280).
  await sleep(1500);
  const w = W();
  for (const [route, params] of [
    ['/api/services', w],
    ['/api/types', { service: 'so-go', ...w }],
    ['/api/flamegraph', { service: 'so-go', type: 'cpu:nanoseconds', ...w }],
    ['/api/top', { service: 'so-spread', type: 'cpu:nanoseconds', ...w, limit: 0 }],
    ['/api/timeline', { service: 'so-go', type: 'cpu:nanoseconds', ...w, step: 60 }],
    ['/api/labels', { service: 'so-go', type: 'cpu:nanoseconds', ...w }],
    ['/api/span', { trace_id: TRACE, span_id: SPAN }],
    ['/api/usage', { from: w.from - 86400, until: w.until }],
    ['/api/pprof', { service: 'so-otlp', type: 'cpu:nanoseconds', ...w }],
  ]) {
    await assertSameAnswer(Q[0], Q[1], route, params, ['query 0', 'query 1'], t);
  }
});

test('pushes and queries at the same time: no push refused, no query failed, and afterwards every push is counted', async () => {
  const n = 20;
  const pushes = Array.from({ length: n }, (_, i) => pushTo(I[i % 2], i % 2 ? 'otlp_grpc' : 'otlp_http', 'so-mixed', {}, { body: otlpN('so-mixed', 5) }));
  const reads = Array.from({ length: 10 }, (_, i) => getJson(Q[i % 2].uiUrl, '/api/flamegraph', { service: 'so-mixed', type: 'cpu:nanoseconds', ...W() }).catch((e) => e));
  for (const r of await Promise.all(pushes)) assert.equal(r.status, 200, r.describe);
  accepted += 5 * n;
  for (const r of await Promise.all(reads)) {
    assert.ok(!(r instanceof Error), String(r));
    assert.ok(r.total >= 0 && r.total <= 5 * n && r.total % 5 === 0, `a query during the pushes sees whole requests only: total ${r.total}`);
  }
  const fg = await getJson(Q[1].uiUrl, '/api/flamegraph', { service: 'so-mixed', type: 'cpu:nanoseconds', ...W() });
  assert.equal(fg.total, 5 * n);
});

test('/api/usage via a query process adds up what both ingestors accepted', async () => {
  await sleep(1500); // each ingestor flushes its counters every second
  const u = await getJson(Q[0].uiUrl, '/api/usage', { from: nowS() - 2 * 86400, until: nowS() + 60 });
  const sum = u.days.filter((d) => d.key === 'default').reduce((s, d) => s + d.accepted, 0);
  assert.equal(sum, accepted, `/api/usage accepted for key default: ${JSON.stringify(u)}`);
  const rejected = u.days.reduce((s, d) => s + d.rejected, 0);
  assert.equal(rejected, 0, JSON.stringify(u));
});

// What a refused write can leave behind: dictionary rows are inserted before
// the samples, so a write ClickHouse took half of (then deleted, docs/STORE.md)
// or never answered leaves series rows without samples. Queries reach series
// only through their chunks, so such rows must show nowhere.
test('series rows without samples (left by a refused write) show in no answer', async () => {
  const [project] = (await chQuery(ch.url, 'SELECT DISTINCT project FROM series FORMAT TSV', { database })).trim().split('\n');
  assert.ok(project, 'the uploads above wrote series rows');
  const today = Math.floor(nowS() / 86400);
  const row = (day, id, service) => `('${project}', ${day}, ${id}, '${service}', 'cpu:nanoseconds', 'cpu', 'nanoseconds', 10000000, 0, 0, ['orphan.label'], ['x'])`;
  await chQuery(ch.url, `INSERT INTO series (project, day, id, service, type, period_type, period_unit, period, aggregation, cpu_alias, keys, vals) VALUES ${[
    row(today, 4242424242, 'so-orphan'), row(today, 4242424243, 'so-go'), row(today - 3, 4242424244, 'so-orphan')].join(', ')}`, { database });
  for (const q of Q) {
    const names = (await getJson(q.uiUrl, '/api/services', W())).services.map((x) => x.name);
    assert.ok(names.includes('so-go') && !names.includes('so-orphan'), `services: ${names}`);
    const old = await getJson(q.uiUrl, '/api/services', { from: (today - 3) * 86400, until: (today - 2) * 86400 });
    assert.deepEqual(old.services, [], 'a day with nothing but orphan series rows');
    assert.deepEqual((await getJson(q.uiUrl, '/api/types', { service: 'so-orphan', ...W() })).types, []);
    const labels = await getJson(q.uiUrl, '/api/labels', { service: 'so-go', type: 'cpu:nanoseconds', ...W() });
    assert.ok(!JSON.stringify(labels).includes('orphan.label'), `labels of so-go: ${JSON.stringify(labels).slice(0, 400)}`);
    const fg = await getJson(q.uiUrl, '/api/flamegraph', { service: 'so-orphan', type: 'cpu:nanoseconds', ...W() });
    assert.equal(fg.total, 0);
  }
  // And so-go's own answers are what they were: one go-cpu-fib per ingestor.
  const fib = await oracleForFile(FIB);
  const cpu = fib.types.find((o) => o.typeName === 'cpu:nanoseconds');
  const fg = await getJson(Q[0].uiUrl, '/api/flamegraph', { service: 'so-go', type: 'cpu:nanoseconds', ...W() });
  assert.equal(fg.total, Number(cpu.total) * 2);
});

test('with engine clickhouse, nothing is written under --data (docs/OPERATIONS.md: keys, usage and profiles live in ClickHouse)', () => {
  for (const s of [...I, ...Q]) {
    const files = fs.readdirSync(s.dataDir, { recursive: true });
    assert.deepEqual(files, [], `files under --data ${s.dataDir} of ${s.engine} pid ${s.pid}`);
  }
});

// Polls until push() answers want (or timeoutMs passes); → [reply, ms].
async function until(want, push, timeoutMs = 5000) {
  const t0 = Date.now();
  for (;;) {
    const r = await push();
    if (r.status === want || Date.now() - t0 > timeoutMs) return [r, Date.now() - t0];
    await sleep(100);
  }
}

test('a key created once (kiln keys create --config) works on every process; revoked, it stops working on every process', async (t) => {
  // Processes of their own, with --auth required, on a database of their own.
  const dataDir = mkTemp('so-keys');
  const auth = { extraArgs: ['--auth', 'required'], dataDir };
  const ing = [await startRole('ingestor', RECEIVERS, auth), await startRole('ingestor', RECEIVERS, auth)];
  const qry = await startRole('query', ['ui'], auth);
  keyed.push(...ing, qry);
  const key = await createKey(dataDir, 'so-team', 'so-ci', 'both');
  const body = buildProfile({ sampleTypes: [['cpu', 'nanoseconds']], periodType: ['cpu', 'nanoseconds'], period: 1, samples: [{ stack: ['main.keyed', 'main.main'], values: [42] }] }).bytes;
  for (const [k, s] of ing.entries()) {
    const [r, ms] = await until(200, () => uploadAs(s, body, { serviceName: 'so-keyed' }, { key }));
    assert.equal(r.status, 200, `ingestor ${k} with the new key: ${brief(r)}\n${tail(s.stderr(), 5)}`);
    assert.ok(ms <= 3000, `ingestor ${k} took ${ms} ms to accept a new key (re-read every second)`);
    t.diagnostic(`ingestor ${k} accepted the new key after ${ms} ms`);
  }
  const [q] = await until(200, () => apiAs(qry, '/api/flamegraph', { service: 'so-keyed', type: 'cpu:nanoseconds', ...W() }, { key }));
  assert.equal(q.status, 200, brief(q));
  assert.equal(q.json.total, 84, `both uploads via the query process: ${brief(q)}`);
  const none = await apiAs(qry, '/api/flamegraph', { service: 'so-keyed', type: 'cpu:nanoseconds', ...W() });
  assert.equal(none.status, 401, `the query process without a key: ${brief(none)}`);

  await revokeKey(dataDir, 'so-ci');
  for (const [k, s] of ing.entries()) {
    const [r, ms] = await until(401, () => uploadAs(s, body, { serviceName: 'so-keyed' }, { key }));
    assert.equal(r.status, 401, `ingestor ${k} with the revoked key: ${brief(r)}`);
    assert.ok(ms <= 3000, `ingestor ${k} took ${ms} ms to refuse a revoked key`);
  }
  const [rq] = await until(401, () => apiAs(qry, '/api/services', W(), { key }));
  assert.equal(rq.status, 401, `query process with the revoked key: ${brief(rq)}`);
  // What the revoked key pushed before is kept; nothing pushed after the refusals.
  const after = await getJson(Q[0].uiUrl, '/api/services', W());
  assert.ok(!after.services.some((x) => x.name === 'so-keyed'), 'project so-team\'s data is not visible to the default project');
});
