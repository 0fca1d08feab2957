// Merged hours (docs/STORE.md "Merged hours" and, for ClickHouse, "Summed
// hours"; issue 15 items 7 and 8): a kiln whose compactor runs every 200 ms
// with no margin (KILN_TEST_HOURS_MS, KILN_TEST_HOURS_MARGIN_S) sums every
// past hour of 30 hours of pushes (two UTC days at least): into DAY.db.hours
// (embedded engine) or the `summed` table (ClickHouse). The summed rows
// then cover every stored chunk (sqlite3 on the derived files, or SQL on
// ClickHouse), and flame graphs and tops over whole and ragged ranges equal
// n × go tool pprof of the pushed fixture, where n is the pushes in the
// range, and add summed rows (kiln_store_hours_used_total grows); again
// right after a late push into an already summed hour, and once the
// compactor has summed that hour again.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { TESTDATA, nowS } from './lib/env.mjs';
import { startServer, tail, TEST_ENGINE } from './lib/server.mjs';
import { chQuery } from './lib/clickhouse.mjs';
import { checkQueryAgainst } from './lib/check.mjs';
import { oracle, pprofRaw } from './lib/pprof.mjs';
import { sleep } from './lib/http.mjs';

const CH = TEST_ENGINE === 'clickhouse';
const FIXTURE = path.join(TESTDATA, 'pprof', 'go-cpu-fib.pb.gz');
const SERVICE = 'hours-fib';
const HOUR = 3600;
// 60 pushes, one every 30 min, from 30 h before the current hour.
const BASE = Math.floor(nowS() / HOUR) * HOUR - 30 * HOUR;
const times = Array.from({ length: 60 }, (_, k) => BASE + k * 1800 + 60);
const LATE = BASE + 2 * HOUR + 999; // in an hour merged before it arrives

let haveSqlite = true;
try { execFileSync('sqlite3', ['-version']); } catch { haveSqlite = false; }
const sql = (file, q) => execFileSync('sqlite3', ['-readonly', file, q], { encoding: 'utf8' }).trim();

let server;
after(async () => { if (server) await server.kill9(); });

async function push(t) {
  const q = new URLSearchParams({ serviceName: SERVICE, from: String(t), until: String(t + 10) });
  const r = await fetch(`${server.uploadUrl}/profiling/upload?${q}`, {
    method: 'POST', body: fs.readFileSync(FIXTURE), headers: { 'content-type': 'application/octet-stream' },
  });
  assert.equal(r.status, 200, `push at ${t}: ${await r.text()}\n${tail(server.stderr(), 10)}`);
}

// The day files of the service's project and their merged hours.
function dayFiles() {
  const dir = path.join(server.dataDir, 'default');
  return fs.readdirSync(dir).filter((n) => /^\d{4}-\d\d-\d\d\.db$/.test(n)).map((n) => path.join(dir, n));
}

// Chunks the summed rows cover: their latest version per (project, day, series, hour).
async function chSummedChunks() {
  const q = `SELECT sum(n) FROM (SELECT argMax(n, made) AS n FROM summed WHERE hours = 1 AND exact = 1
    GROUP BY project, day, series, hour)`;
  return Number((await chQuery(server.clickhouseUrl, q, { database: server.database })).trim() || 0);
}

// Chunks the merged hours of every day file cover.
function localMergedChunks() {
  const files = dayFiles();
  if (!files.every((f) => fs.existsSync(`${f}.hours`))) return -1;
  return files.reduce((a, f) => {
    try { return a + Number(sql(`${f}.hours`, 'SELECT coalesce(sum(n), 0) FROM hours') || 0); } catch { return a; }
  }, 0);
}

// Waits until the merged (summed) hours cover `chunks` chunks in all.
async function awaitMerged(chunks, what) {
  let got = -1;
  for (let i = 0; i < 300; i++) {
    got = CH ? await chSummedChunks() : localMergedChunks();
    if (got === chunks) return;
    await sleep(100);
  }
  assert.fail(`${what}: merged hours cover ${got} chunks, want ${chunks}\n${tail(server.stderr(), 10)}`);
}

async function metric(name) {
  const text = await (await fetch(`${server.uiUrl}/metrics`)).text();
  const m = text.match(new RegExp(`^${name} (\\d+)$`, 'm'));
  assert.ok(m, `${name} on /metrics`);
  return Number(m[1]);
}

function scaled(o, n) {
  const m = (map) => new Map([...map].map(([k, v]) => [k, v * BigInt(n)]));
  return { ...o, total: o.total * BigInt(n), self: m(o.self), cum: m(o.cum) };
}

// Every type of the fixture over [from, until): n × go tool pprof, n the pushes in range.
async function checkRanges(types, pushed, what) {
  const ranges = [
    [BASE - HOUR, BASE + 31 * HOUR],            // everything, whole hours
    [BASE + 1234, BASE + 20 * HOUR + 777],      // ragged edges, across midnight or not
    [BASE + 2 * HOUR, BASE + 3 * HOUR],         // the hour the late push lands in
    [BASE + 2 * HOUR + 1000, BASE + 9 * HOUR],  // starting inside it, after the late push
  ];
  for (const [from, until] of ranges) {
    const n = pushed.filter((t) => t >= from && t < until).length;
    assert.ok(n > 0, 'a range without pushes checks nothing');
    for (const o of types) {
      await checkQueryAgainst(server, SERVICE, scaled(o, n), { from, until },
        `${what} [BASE${from - BASE >= 0 ? '+' : ''}${from - BASE}, BASE+${until - BASE}) ${n} pushes`);
    }
  }
}

test('flame graphs over merged hours equal n × go tool pprof, before and after a late push', async (t) => {
  if (!CH && !haveSqlite) { t.skip('sqlite3 CLI not found'); return; }
  const raw = await pprofRaw(FIXTURE);
  const types = raw.sampleTypes.map((_, i) => oracle(raw, i));
  server = await startServer({
    config: 'limits: {samplesPerSecond: 1000000000}\n',
    env: { KILN_TEST_HOURS_MS: '200', KILN_TEST_HOURS_MARGIN_S: '0' },
  });
  for (const x of times) await push(x);
  if (!CH) {
    // A 200 is durable in the store's log; the day files are written behind it.
    for (let i = 0; i < 200 && dayFiles().length < 2; i++) await sleep(50);
    assert.ok(dayFiles().length >= 2, 'the pushes span two UTC days');
  }
  // One chunk per push and sample type.
  await awaitMerged(times.length * types.length, 'after the pushes');
  const written = await metric('kiln_store_hours_summed_total');
  assert.ok(written >= 30, `the compactor wrote ${written} rows for 30 hours of pushes`);
  const used0 = await metric('kiln_store_hours_used_total');
  await checkRanges(types, times, 'merged');
  const used1 = await metric('kiln_store_hours_used_total');
  // Each range with whole hours adds rows rather than reading their chunks.
  assert.ok(used1 > used0, `queries used no summed rows (${used0} → ${used1})`);

  // A late chunk in a merged hour: exact at once (its hour is read from
  // chunks), and once the compactor merged that hour again.
  await push(LATE);
  const pushed = [...times, LATE];
  await checkRanges(types, pushed, 'late push');
  await awaitMerged(pushed.length * types.length, 'after the late push');
  await checkRanges(types, pushed, 'merged again');
  const e = await server.stop();
  assert.deepEqual(e, { code: 0, signal: null }, `SIGTERM should exit 0; stderr:\n${tail(server.stderr())}`);
});

// ClickHouse: data written before head rows existed (an older Kiln) has
// entries without head rows. Simulated by deleting the head rows of pushes
// that no compactor has summed yet (its pass is a day away): every range is
// read from the entries, exact; after a restart with the compactor every
// 200 ms, it sums those hours and marks them inexact (exact = 0: entries
// without head rows), no summed row is used, and the answers stay exact.
test('ClickHouse: profiles without head rows (written before them) are read from their entries, never from summed rows', { skip: CH ? false : 'ClickHouse only: head rows are that engine\'s' }, async () => {
  const raw = await pprofRaw(FIXTURE);
  const types = raw.sampleTypes.map((_, i) => oracle(raw, i));
  const config = 'limits: {samplesPerSecond: 1000000000}\n';
  server = await startServer({ config, env: { KILN_TEST_HOURS_MS: '86400000' } });
  const dataDir = server.dataDir;
  const pushed = times.slice(0, 20);
  for (const x of pushed) await push(x);
  const ch = (q) => chQuery(server.clickhouseUrl, q, { database: server.database });
  assert.equal((await ch('SELECT count() FROM summed')).trim(), '0', 'nothing summed before the head rows go');
  await ch('ALTER TABLE samples DELETE WHERE series = 0');
  for (let i = 0; i < 100 && Number((await ch('SELECT count() FROM samples WHERE series = 0')).trim()) > 0; i++) await sleep(100);
  assert.equal((await ch('SELECT count() FROM samples WHERE series = 0')).trim(), '0', 'head rows deleted');
  await checkRanges(types, pushed, 'without head rows');
  await server.stop();

  server = await startServer({ config, env: { KILN_TEST_HOURS_MS: '200', KILN_TEST_HOURS_MARGIN_S: '0' }, dataDir });
  // The start's pass looks at every day: no head rows, no series to sum.
  await sleep(1500);
  assert.equal((await ch('SELECT count() FROM summed WHERE n > 0')).trim(), '0', 'summed rows claim chunks without head rows');
  await checkRanges(types, pushed, 'without head rows, after a restart');
  assert.equal(await metric('kiln_store_hours_used_total'), 0, 'summed rows used');
  // A new push into one of those hours: the hour has a head row now, and
  // entries without one, so its row is written inexact and never used.
  await push(LATE);
  const hour = Math.floor(LATE / HOUR);
  let rows = '';
  for (let i = 0; i < 100 && rows === ''; i++) {
    rows = (await ch(`SELECT exact, n FROM summed WHERE hours = 1 AND hour = ${hour} AND n > 0 ORDER BY made DESC LIMIT 1 FORMAT TSV`)).trim();
    if (rows === '') await sleep(100);
  }
  assert.equal(rows, '0\t1', `the row of the hour with old and new profiles (exact, n): ${rows}`);
  await checkRanges(types, [...pushed, LATE], 'old and new profiles in one hour');
  const e = await server.stop();
  assert.deepEqual(e, { code: 0, signal: null }, `SIGTERM should exit 0; stderr:\n${tail(server.stderr())}`);
});
