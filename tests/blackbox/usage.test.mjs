// Usage (OPS: Usage): samples accepted and rejected per key, UTC day and
// reason (rate_limited, too_large, invalid, out_of_window), as
// GET /api/usage and `kiln usage` show them, equal what this test sent —
// and they survive a restart (flushed every second).
// Sent: pprof uploads of n value-1 rows ("samples" = n), OTLP requests of n
// sample points, a 10,001-row pprof (413) and a pprof with a missing
// location id (400) — each counts as 1, having no decoded sample count —, a pprof dated 20 days ago (400, out of window), an OTLP request
// with 2 of 5 samples 20 days old (200, partial), and pushes past a 2000/s
// limit (429).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkTemp, uniqueName, nowS } from './lib/env.mjs';
import { tail, cliStoreArgs } from './lib/server.mjs';
import { runKiln } from './lib/cli.mjs';
import { buildProfile, encodeProfile } from './lib/pb.mjs';
import { manyRows } from './lib/badcases.mjs';
import { todoUnless, stopAll, startTracked, createKey, startS6, configYaml, apiAs, brief, pprofN, otlpN, sleep, DAY } from './lib/s6.mjs';
import { pushTo } from './lib/s6-push.mjs';

const R = 2000;
const todo = await todoUnless('keys', 'auth', 'ratelimit', 'usage', 'retention', 'usageExact');
const dataDir = mkTemp('usage');
const config = configYaml({ limits: { samplesPerSecond: R } });
const K = {};
let server;
const REASONS = ['rate_limited', 'too_large', 'invalid', 'out_of_window'];
// expected[keyName] = {accepted, rate_limited, too_large, invalid, out_of_window}
const expected = {};
const days = new Set();
const utcDay = (ms) => new Date(ms).toISOString().slice(0, 10);

function count(key, what, n) {
  expected[key] ??= { accepted: 0, rate_limited: 0, too_large: 0, invalid: 0, out_of_window: 0 };
  expected[key][what] += n;
}

before(async () => {
  if (todo) return;
  K.main = await createKey(dataDir, 'pu', 'us-main', 'both');
  K.other = await createKey(dataDir, 'pu', 'us-other', 'ingest');
  K.foreign = await createKey(dataDir, 'pv', 'us-foreign', 'both');
  server = await startS6({ dataDir, extraArgs: ['--auth', 'required'], config });
});
after(stopAll);

async function send(what, l, key, opts, wantStatus) {
  days.add(utcDay(Date.now()));
  const r = await pushTo(server, l, uniqueName(`us-${what}`), { key }, opts);
  days.add(utcDay(Date.now()));
  assert.equal(r.status, wantStatus, `${what} via ${l}: ${r.describe}\n${tail(server.stderr(), 5)}`);
  return r;
}

async function usageOf(key) {
  const r = await apiAs(server, '/api/usage', { from: nowS() - 3 * DAY, until: nowS() + 60 }, { key });
  assert.equal(r.status, 200, `/api/usage: ${brief(r)}`);
  assert.ok(Array.isArray(r.json?.days), `/api/usage: no "days": ${brief(r)}`);
  return r.json;
}

// Sums /api/usage rows per key, checking each row's shape.
function sumRows(u) {
  const got = {};
  for (const d of u.days) {
    assert.match(d.day, /^\d{4}-\d{2}-\d{2}$/, `day "YYYY-MM-DD": ${JSON.stringify(d)}`);
    assert.ok(days.has(d.day), `a usage row for ${d.day}, a day no request was sent on (${[...days]}): ${JSON.stringify(d)}`);
    assert.equal(typeof d.key, 'string', JSON.stringify(d));
    const rb = d.rejected_by_reason;
    assert.ok(rb && typeof rb === 'object', `rejected_by_reason missing: ${JSON.stringify(d)}`);
    for (const k of REASONS) assert.equal(typeof rb[k], 'number', `rejected_by_reason.${k}: ${JSON.stringify(d)}`);
    assert.equal(d.rejected, REASONS.reduce((s, k) => s + rb[k], 0), `rejected = sum of rejected_by_reason: ${JSON.stringify(d)}`);
    const g = (got[d.key] ??= { accepted: 0, rate_limited: 0, too_large: 0, invalid: 0, out_of_window: 0 });
    g.accepted += d.accepted;
    for (const k of REASONS) g[k] += rb[k];
  }
  return got;
}

let mine;

test('usage counts what was sent, per key and reason, in /api/usage', { todo }, async () => {
  // accepted
  let r = await send('ok-pprof', 'upload', K.main, { n: 30 }, 200);
  assert.equal(r.samples, 30, r.describe);
  count('us-main', 'accepted', 30);
  await send('ok-grpc', 'otlp_grpc', K.main, { n: 20 }, 200);
  count('us-main', 'accepted', 20);
  await send('ok-http', 'otlp_http', K.other, { n: 9 }, 200);
  count('us-other', 'accepted', 9);
  await send('ok-foreign', 'upload', K.foreign, { n: 11 }, 200);
  count('us-foreign', 'accepted', 11);

  // too_large: 10,001 rows (the row limit), one type. A request that could
  // not be decoded has no known sample count and counts as 1
  // (docs/OPERATIONS.md "Usage").
  await send('too-large', 'upload', K.main, { body: manyRows(10001) }, 413);
  count('us-main', 'too_large', 1);

  // invalid: 4 rows, one with a location id that does not exist
  const bad = buildProfile({
    sampleTypes: [['cpu', 'nanoseconds']], periodType: ['cpu', 'nanoseconds'], period: 1,
    samples: Array.from({ length: 4 }, (_, i) => ({ stack: [`main.bad${i}`, 'main.main'], values: [1] })),
  }).tables;
  bad.samples[0].locationIds = [999];
  await send('invalid', 'upload', K.main, { body: encodeProfile(bad) }, 400);
  count('us-main', 'invalid', 1); // not decoded: counts as 1 (docs/OPERATIONS.md)

  // out_of_window: a pprof dated 20 days ago (retention 14 days)
  const from = nowS() - 20 * DAY;
  await send('old-pprof', 'upload', K.main, { n: 8, params: { from, until: from + 10 } }, 400);
  count('us-main', 'out_of_window', 8);
  // OTLP: 2 of 5 sample points 20 days old → dropped, the rest stored
  const oldNs = BigInt(Date.now() - 20 * DAY * 1000) * 1000000n;
  const nowNs = BigInt(Date.now() - 20000) * 1000000n;
  const partial = otlpN('us-partial', 5, { sample: (i) => ({ timestamps: [i < 2 ? oldNs : nowNs] }) });
  await send('partial-otlp', 'otlp_http', K.main, { body: partial }, 200);
  count('us-main', 'accepted', 3);
  count('us-main', 'out_of_window', 2);

  // rate_limited: with a full bucket (R), a request of 2R passes and leaves a
  // debt of R, so the next R*3/4 needs 1.75 s of refill: refused however
  // slowly this machine sends it
  await sleep(1100);
  await send('rate-ok', 'upload', K.other, { n: 2 * R }, 200);
  count('us-other', 'accepted', 2 * R);
  await send('rate-429', 'upload', K.other, { n: 1500 }, 429);
  count('us-other', 'rate_limited', 1500);

  await sleep(1300); // flushed every second
  const u = await usageOf(K.main);
  const got = sumRows(u);
  mine = { 'us-main': expected['us-main'], 'us-other': expected['us-other'] };
  assert.deepEqual(got, mine, `/api/usage (project pu) per key: ${JSON.stringify(u)}`);
  const uf = sumRows(await usageOf(K.foreign));
  assert.deepEqual(uf, { 'us-foreign': expected['us-foreign'] }, '/api/usage (project pv) per key');
});

test('`kiln usage` prints the same numbers, while serving and after SIGTERM', { todo }, async () => {
  // kiln usage: a table with a line per (day, key) holding the numbers.
  const check = (out, ctx) => {
    for (const [key, e] of Object.entries(expected)) {
      const lines = out.split('\n').filter((l) => l.includes(key));
      assert.ok(lines.length > 0, `${ctx}: no line for ${key}:\n${out}`);
      const nums = lines.flatMap((l) => (l.match(/\d[\d,]*/g) ?? []).map((s) => Number(s.replace(/,/g, ''))));
      for (const [what, n] of Object.entries(e)) {
        if (n > 0) assert.ok(nums.includes(n), `${ctx}: ${key} ${what} ${n} not in its line(s):\n${lines.join('\n')}`);
      }
    }
  };
  let k = await runKiln(['usage', ...cliStoreArgs(dataDir)]);
  assert.equal(k.code, 0, `kiln usage while serving: ${k.stderr}`);
  check(k.stdout.toString(), 'kiln usage (server running)');

  await server.stop();
  k = await runKiln(['usage', ...cliStoreArgs(dataDir)]);
  assert.equal(k.code, 0, `kiln usage after stop: ${k.stderr}`);
  check(k.stdout.toString(), 'kiln usage (server stopped)');
});

test('usage is durable: after SIGTERM and a restart /api/usage shows the same numbers', { todo }, async () => {
  await server.stop(); // (already stopped by the `kiln usage` test)
  server = await startS6({ dataDir, extraArgs: ['--auth', 'required'], config });
  assert.deepEqual(sumRows(await usageOf(K.main)), mine, '/api/usage after a restart');
});

test('usage survives kill -9 after the 1 s flush', { todo }, async () => {
  const before9 = sumRows(await usageOf(K.main));
  await send('k9', 'upload', K.main, { n: 17 }, 200);
  count('us-main', 'accepted', 17);
  await sleep(2000);
  await server.kill9();
  server = await startS6({ dataDir, extraArgs: ['--auth', 'required'], config });
  const got = sumRows(await usageOf(K.main));
  assert.equal(got['us-main'].accepted, before9['us-main'].accepted + 17, `accepted after kill -9: ${JSON.stringify(got)}`);
});

test('counts not yet flushed when SIGTERM comes are written before kiln exits 0', { todo }, async () => {
  const before = sumRows(await usageOf(K.main));
  await send('term', 'upload', K.main, { n: 19 }, 200);
  count('us-main', 'accepted', 19);
  const stopped = server;
  const e = await stopped.stop(); // at once: well within the 1 s flush interval
  server = await startS6({ dataDir, extraArgs: ['--auth', 'required'], config });
  assert.deepEqual(e, { code: 0, signal: null }, `exit after SIGTERM right after a push; stderr:\n${tail(stopped.stderr(), 30)}`);
  const got = sumRows(await usageOf(K.main));
  assert.equal(got['us-main'].accepted, before['us-main'].accepted + 19, `accepted after SIGTERM: ${JSON.stringify(got)}`);
});

test('/api/usage: bad from/until → 400', { todo }, async () => {
  const r = await apiAs(server, '/api/usage', { from: 'yesterday-ish', until: nowS() }, { key: K.main });
  assert.equal(r.status, 400, brief(r));
});
