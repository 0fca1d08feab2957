// ClickHouse going away under load (issue 8: "writes are acknowledged only
// after ClickHouse accepted them; when ClickHouse is unreachable, pushes get
// 503 + Retry-After and nothing is lost or half-written"). A kiln on a
// ClickHouse of this test's own takes a steady stream of pushes over the
// pprof upload, OTLP/HTTP and OTLP/gRPC; ClickHouse is stopped mid-stream
// (SIGTERM, then in a second round SIGKILL) and started again on the same
// data directory and ports, without restarting kiln. While it is down every
// push gets 503 with a short Retry-After (gRPC UNAVAILABLE) and queries get
// 503 too; once it is back pushes succeed again; and in the end every push
// that got 200 is stored exactly once and none that was refused is: each
// push carries its own function name and value, so /api/top tells them
// apart. A kiln started while ClickHouse is down opens its listeners,
// refuses pushes with 503, and works once ClickHouse comes up; with
// --auth required it answers 503, not 401, until it could read the keys
// (which live in ClickHouse) once.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { nowS, mkTemp } from './lib/env.mjs';
import { get, getJson } from './lib/http.mjs';
import { buildProfile } from './lib/pb.mjs';
import { buildRequest } from './lib/otlp-build.mjs';
import { encodeRequest } from './lib/otlp.mjs';
import { startClickHouse } from './lib/clickhouse.mjs';
import { startServer, tail } from './lib/server.mjs';
import { pushTo } from './lib/s6-push.mjs';
import { sleep, createKey, apiAs, brief } from './lib/s6.mjs';

const LISTENERS = ['upload', 'otlp_http', 'otlp_grpc', 'ui'];
const SVC = 'chdown';
const TYPE = 'cpu:nanoseconds';
const RECOVERY_MS = 20000; // after ClickHouse answers again, pushes must succeed within this
const ANSWER_MS = 15000; // every push is answered within this, ClickHouse up or down
let ch;
let kiln;
let seq = 0;

before(async () => {
  ch = await startClickHouse({ own: true });
  kiln = await startServer({ engine: 'clickhouse', clickhouseUrl: ch.url, otlp: true, listeners: LISTENERS });
});
after(async () => {
  await kiln?.stop();
  await ch?.destroy();
});

// One push of a profile with one sample: function main.p<i>, value 1000+i.
function body(listener, i) {
  const fn = `main.p${i}`;
  const v = 1000 + i;
  if (listener === 'upload') {
    return buildProfile({
      sampleTypes: [['cpu', 'nanoseconds']], periodType: ['cpu', 'nanoseconds'], period: 1,
      samples: [{ stack: [fn, 'main.main'], values: [v] }],
    }).bytes;
  }
  return encodeRequest(buildRequest({
    resources: [{ attrs: { 'service.name': SVC }, profiles: [{ type: ['cpu', 'nanoseconds'], period: 1, samples: [{ stack: [fn, 'main.main'], values: [String(v)] }] }] }],
  }));
}

// The Retry-After of a 503 (HTTP) or null (gRPC UNAVAILABLE carries none).
function retryAfterOf(r) {
  return r.raw?.headers?.['retry-after'] ?? null;
}

// Pushes in a loop over the three receivers until stop() is called; every
// push is recorded with when it was sent and answered.
function stream(server, workers = 3) {
  const log = [];
  let stopping = false;
  const worker = async (w) => {
    const listener = ['upload', 'otlp_http', 'otlp_grpc'][w % 3];
    while (!stopping) {
      const i = seq++;
      const e = { i, fn: `main.p${i}`, v: 1000 + i, listener, sent: Date.now() };
      try {
        const r = await pushTo(server, listener, SVC, {}, { body: body(listener, i) });
        Object.assign(e, { status: r.status, retryAfter: retryAfterOf(r), describe: r.describe });
      } catch (err) {
        Object.assign(e, { status: 'error', describe: err.message });
      }
      e.done = Date.now();
      log.push(e);
      await sleep(20);
    }
  };
  const running = Array.from({ length: workers }, (_, w) => worker(w));
  return { log, async stop() { stopping = true; await Promise.all(running); } };
}

// Every acknowledged push stored exactly once, no refused one stored.
async function checkStored(acked, refused, ctx) {
  const top = await getJson(kiln.uiUrl, '/api/top', { service: SVC, type: TYPE, from: nowS() - 3600, until: nowS() + 60, limit: 0 });
  const got = new Map(top.rows.filter((r) => r.self !== 0).map((r) => [r.name, r.self]));
  const missing = acked.filter((e) => got.get(e.fn) === undefined).map((e) => `${e.fn} (${e.listener})`);
  const twice = acked.filter((e) => got.has(e.fn) && got.get(e.fn) !== e.v).map((e) => `${e.fn}: ${got.get(e.fn)} for ${e.v}`);
  const iso = (ms) => new Date(ms).toISOString();
  // kiln's log lines written while a push was in flight (what it saw from ClickHouse).
  const logOf = (e) => kiln.stderr().split('\n').filter((l) => {
    const ts = /^ts=(\S+)/.exec(l)?.[1];
    return ts && ts >= iso(e.sent - 50) && ts <= iso(e.done + 50);
  }).slice(0, 5).join('\n      ');
  const stored = refused.filter((e) => got.has(e.fn)).map((e) => `${e.fn} (${e.listener} → ${e.describe}, sent ${iso(e.sent)}, answered after ${e.done - e.sent} ms); kiln meanwhile:\n      ${logOf(e)}`);
  assert.deepEqual(missing, [], `${ctx}: acknowledged pushes missing (${missing.length} of ${acked.length})`);
  assert.deepEqual(twice, [], `${ctx}: acknowledged pushes stored with another value (more than once?)`);
  if (stored.length) assert.fail(`${ctx}: ${stored.length} refused pushes stored (a client that retries them stores them twice):\n  ${stored.join('\n  ')}`);
}

for (const how of ['SIGTERM', 'SIGKILL']) {
  test(`ClickHouse stopped with ${how} mid-stream: 503 + Retry-After while down, recovery without restarting kiln, exactly the acknowledged pushes stored`, async (t) => {
    const s = stream(kiln);
    // Enough pushes answered before the stop, however slow the machine is.
    for (const t0 = Date.now(); s.log.filter((e) => e.status === 200).length < 8 && Date.now() - t0 < 30000;) await sleep(100);
    const downAt = Date.now();
    if (how === 'SIGTERM') await ch.stop(); else await ch.kill();
    const goneAt = Date.now(); // ClickHouse's process has exited
    await sleep(3000);

    // Queries while ClickHouse is down: temporary trouble, not 500 or a hang.
    const q = await get(kiln.uiUrl, '/api/flamegraph', { service: SVC, type: TYPE }, { timeoutMs: ANSWER_MS });
    const health = await get(kiln.uiUrl, '/healthz');

    const upAgainStart = Date.now();
    await ch.restart();
    const upAt = Date.now(); // ClickHouse answers SELECT 1 again
    // Wait for pushes to succeed again, then stream on a little.
    let firstOk = null;
    while (Date.now() - upAt < RECOVERY_MS) {
      firstOk = s.log.find((e) => e.sent >= upAt && e.status === 200);
      if (firstOk) break;
      await sleep(100);
    }
    await sleep(1500);
    await s.stop();

    const log = s.log;
    const before = log.filter((e) => e.done < downAt);
    const down = log.filter((e) => e.sent > goneAt && e.done < upAgainStart);
    const after = firstOk ? log.filter((e) => e.sent > firstOk.done) : [];
    const between = log.filter((e) => !before.includes(e) && !down.includes(e) && !after.includes(e));
    const slowest = Math.max(0, ...between.map((e) => e.done - e.sent));
    t.diagnostic(`${log.length} pushes: ${before.length} before the stop, ${between.length} while ClickHouse stopped (${goneAt - downAt} ms; slowest answer ${slowest} ms) or started again, ${down.length} while down, ${after.length} after the first success again (${firstOk ? firstOk.done - upAt : 'none'} ms after ClickHouse was back)`);

    assert.ok(before.length >= 6, `too few pushes before the stop: ${before.length}`);
    assert.deepEqual(before.filter((e) => e.status !== 200).map((e) => `${e.listener}: ${e.describe}`), [], 'pushes while ClickHouse was up');
    assert.ok(down.length >= 6, `too few pushes while ClickHouse was down: ${down.length}`);
    const badDown = down.filter((e) => e.status !== 503 || (e.listener !== 'otlp_grpc' && !/^[1-9]\d*$/.test(String(e.retryAfter))) || Number(e.retryAfter) > 60 || e.done - e.sent > ANSWER_MS);
    assert.deepEqual(badDown.map((e) => `${e.listener} → ${e.describe} (retry-after ${e.retryAfter}, ${e.done - e.sent} ms)`).slice(0, 10), [],
      `while ClickHouse was down every push must get 503 with Retry-After of 1..60 s (gRPC UNAVAILABLE) within ${ANSWER_MS} ms\n${tail(kiln.stderr(), 10)}`);
    assert.ok(firstOk, `no push succeeded within ${RECOVERY_MS} ms after ClickHouse was back\n${tail(kiln.stderr(), 15)}`);
    assert.ok(after.length >= 6, `too few pushes after recovery: ${after.length}`);
    assert.deepEqual(after.filter((e) => e.status !== 200).map((e) => `${e.listener}: ${e.describe}`).slice(0, 10), [], 'pushes after the first success again');
    for (const l of ['upload', 'otlp_http', 'otlp_grpc']) {
      assert.ok(after.some((e) => e.listener === l), `no ${l} push after recovery`);
      assert.ok(down.some((e) => e.listener === l), `no ${l} push while down`);
    }

    assert.equal(q.status, 503, `a query while ClickHouse is down: ${q.status} ${q.text}`);
    assert.match(q.headers.get('retry-after') ?? '', /^[1-9]\d*$/, 'Retry-After on the query 503');
    assert.ok(q.json?.error, `{"error"} body: ${q.text}`);
    assert.equal(health.status, 200, '/healthz while ClickHouse is down');

    // Exactly the acknowledged pushes, over the whole stream.
    await checkStored(log.filter((e) => e.status === 200), log.filter((e) => e.status !== 200 && e.status !== 'error'), `after ClickHouse ${how} and restart`);
  });
}

test('a kiln started while ClickHouse is down opens its listeners, refuses pushes with 503, and works once ClickHouse is up', async () => {
  await ch.stop();
  const k = await startServer({ engine: 'clickhouse', clickhouseUrl: ch.url, otlp: true, listeners: LISTENERS, checkStore: false });
  try {
    const refused = [];
    for (const l of ['upload', 'otlp_http', 'otlp_grpc']) {
      const i = seq++;
      const r = await pushTo(k, l, SVC, {}, { body: body(l, i) });
      assert.equal(r.status, 503, `${l} with ClickHouse down since before kiln started: ${r.describe}\n${tail(k.stderr(), 5)}`);
      if (l !== 'otlp_grpc') assert.match(String(retryAfterOf(r)), /^[1-9]\d*$/, `${l}: Retry-After`);
      refused.push({ i, fn: `main.p${i}`, listener: l, status: r.status });
    }
    await ch.restart();
    const t0 = Date.now();
    const acked = [];
    for (const l of ['upload', 'otlp_http', 'otlp_grpc']) {
      for (;;) {
        const i = seq++;
        const r = await pushTo(k, l, SVC, {}, { body: body(l, i) });
        if (r.status === 200) { acked.push({ i, fn: `main.p${i}`, v: 1000 + i, listener: l }); break; }
        assert.equal(r.status, 503, `${l} while kiln reconnects: ${r.describe}`);
        refused.push({ i, fn: `main.p${i}`, listener: l, status: r.status });
        assert.ok(Date.now() - t0 < RECOVERY_MS, `${l}: no 200 within ${RECOVERY_MS} ms after ClickHouse came up\n${tail(k.stderr(), 15)}`);
        await sleep(200);
      }
    }
    const db = await ch.query(`SELECT count() FROM system.databases WHERE name = '${k.database}'`);
    assert.equal(db.trim(), '1', `database ${k.database} created once ClickHouse was up`);
    // This kiln has a database of its own: only its pushes are there.
    const top = await getJson(k.uiUrl, '/api/top', { service: SVC, type: TYPE, from: nowS() - 3600, until: nowS() + 60, limit: 0 });
    const got = Object.fromEntries(top.rows.filter((r) => r.self !== 0).map((r) => [r.name, r.self]));
    assert.deepEqual(got, Object.fromEntries(acked.map((e) => [e.fn, e.v])), `only the acknowledged pushes (refused: ${refused.map((e) => e.fn)})`);
  } finally {
    await k.stop();
  }
});

test('with --auth required and ClickHouse down since before kiln started: 503 (not 401) for known and unknown keys until the keys could be read, then 200 and 401', async () => {
  if (!ch.running()) await ch.restart();
  const dataDir = mkTemp('chdown-keys');
  const store = { engine: 'clickhouse', clickhouseUrl: ch.url };
  const key = await createKey(dataDir, 'down', 'down-key', 'both', store);
  await ch.stop();
  const k = await startServer({ ...store, dataDir, extraArgs: ['--auth', 'required'], otlp: true, listeners: LISTENERS, checkStore: false });
  try {
    for (const [what, auth] of [['the key', { key }], ['an unknown key', { key: 'kiln_not_a_key_0123456789abcdef' }]]) {
      for (const l of ['upload', 'otlp_http', 'otlp_grpc']) {
        const r = await pushTo(k, l, SVC, auth, { body: body(l, seq++) });
        assert.equal(r.status, 503, `${l} with ${what}, keys never read: ${r.describe}`);
        if (l !== 'otlp_grpc') assert.match(String(retryAfterOf(r)), /^[1-9]\d*$/, `${l}: Retry-After`);
      }
      const q = await apiAs(k, '/api/services', {}, auth);
      assert.equal(q.status, 503, `a query with ${what}, keys never read: ${brief(q)}`);
    }
    await ch.restart();
    const t0 = Date.now();
    let r;
    do {
      await sleep(200);
      r = await pushTo(k, 'upload', SVC, { key }, { body: body('upload', seq++) });
    } while (r.status === 503 && Date.now() - t0 < RECOVERY_MS);
    assert.equal(r.status, 200, `the key once ClickHouse is back: ${r.describe}\n${tail(k.stderr(), 10)}`);
    const bad = await pushTo(k, 'otlp_http', SVC, { key: 'kiln_not_a_key_0123456789abcdef' }, { body: body('otlp_http', seq++) });
    assert.equal(bad.status, 401, `an unknown key once the keys were read: ${bad.describe}`);
  } finally {
    await k.stop();
  }
});
