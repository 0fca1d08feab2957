// Merged hours of the embedded engine (docs/STORE.md "Merged hours"; issue
// 15 item 7): a kiln whose compactor runs every 200 ms with no margin
// (KILN_TEST_HOURS_MS, KILN_TEST_HOURS_MARGIN_S) merges every past hour of
// 30 hours of pushes (two UTC days at least) into DAY.db.hours; the merged
// rows then cover every stored chunk (sqlite3 on the derived files), and
// flame graphs and tops over whole and ragged ranges equal n × go tool pprof
// of the pushed fixture, where n is the pushes in the range; again right
// after a late push into an already merged hour, and once the compactor has
// merged that hour again.
// Embedded engine only: ClickHouse sums with its own GROUP BY.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { TESTDATA, nowS } from './lib/env.mjs';
import { startServer, embeddedOnly, tail } from './lib/server.mjs';
import { checkQueryAgainst } from './lib/check.mjs';
import { oracle, pprofRaw } from './lib/pprof.mjs';
import { sleep } from './lib/http.mjs';

const SKIP = embeddedOnly('merged hours are the embedded engine\'s');
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

// Waits until every day file has merged hours whose rows cover `chunks` chunks in all.
async function awaitMerged(chunks, what) {
  let got = -1;
  for (let i = 0; i < 300; i++) {
    const files = dayFiles();
    if (files.every((f) => fs.existsSync(`${f}.hours`))) {
      got = files.reduce((a, f) => {
        try { return a + Number(sql(`${f}.hours`, 'SELECT coalesce(sum(n), 0) FROM hours') || 0); } catch { return a; }
      }, 0);
      if (got === chunks) return;
    }
    await sleep(100);
  }
  assert.fail(`${what}: merged hours cover ${got} chunks, want ${chunks}\n${tail(server.stderr(), 10)}`);
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

test('flame graphs over merged hours equal n × go tool pprof, before and after a late push', { skip: SKIP }, async (t) => {
  if (!haveSqlite) { t.skip('sqlite3 CLI not found'); return; }
  const raw = await pprofRaw(FIXTURE);
  const types = raw.sampleTypes.map((_, i) => oracle(raw, i));
  server = await startServer({
    config: 'limits: {samplesPerSecond: 1000000000}\n',
    env: { KILN_TEST_HOURS_MS: '200', KILN_TEST_HOURS_MARGIN_S: '0' },
  });
  for (const x of times) await push(x);
  // A 200 is durable in the store's log; the day files are written behind it.
  for (let i = 0; i < 200 && dayFiles().length < 2; i++) await sleep(50);
  assert.ok(dayFiles().length >= 2, 'the pushes span two UTC days');
  // One chunk per push and sample type.
  await awaitMerged(times.length * types.length, 'after the pushes');
  await checkRanges(types, times, 'merged');

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
