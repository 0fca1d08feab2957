// Old data directories (STORE: Next version… §5 "Old data directories";
// issue 15 item 6): a directory written by the engine before the log
// (tests/data/store/v1-datadir.tar.gz, made by the kiln of commit e6803b3:
// format-1 day files, no DIR/_wal; tests/data/store/README.md) is read by
// this kiln as it was written, and written on: pushes into its old days and
// a new day, restarts (SIGTERM and kill -9), everything exact each time.
// Oracle: go tool pprof -raw of the pushed fixtures (lib/pprof.mjs), times
// the number of pushes of that fixture in the range; the usage the old
// binary answered (recorded in v1-datadir.json) plus what this test pushed.
// Embedded engine only: the fixture is a directory of SQLite files.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { TESTDATA, mkTemp, nowS } from './lib/env.mjs';
import { startServer, embeddedOnly, tail } from './lib/server.mjs';
import { flameStats } from './lib/check.mjs';
import { oracle, pprofRaw } from './lib/pprof.mjs';

const SKIP = embeddedOnly('the fixture is a data directory of the embedded engine');
const STORE = path.join(TESTDATA, 'store');
const M = JSON.parse(fs.readFileSync(path.join(STORE, 'v1-datadir.json'), 'utf8'));
const DAY = 86400;
const utcDay = (s) => new Date(s * 1000).toISOString().slice(0, 10);
const dayStart = (day) => Date.parse(`${day}T00:00:00Z`) / 1000;

// Profile times are fixed in the past: a retention of 3,650 days (the most
// the config takes; there is no "none" and no clock hook) keeps them
// readable until 2036. Past that the test says why instead of failing on totals.
const RETENTION = 3650;
const oldest = Math.min(...M.pushes.map((p) => p.from));
const TOO_LATE = nowS() - oldest > (RETENTION - 1) * DAY
  ? `the fixture's days (${M.days}) are older than ${RETENTION - 1} days, the longest retention kiln takes: regenerate tests/data/store/v1-datadir.tar.gz (README.md there)`
  : false;
const CONFIG = `limits: {samplesPerSecond: 1000000000}
retention: {days: ${RETENTION}, maxDays: ${RETENTION}}
listeners:
  upload: {trustScopeOrgId: true}
  ui: {trustScopeOrgId: true}
`;
const KEYED_CONFIG = `limits: {samplesPerSecond: 1000000000}\nretention: {days: ${RETENTION}, maxDays: ${RETENTION}}\n`;
const KEYED = M.key.project;

let dataDir;
const running = new Set();
after(async () => { for (const s of running) await s.kill9(); });

// Everything stored, as pushes: the manifest's, then this test's.
const pushes = M.pushes.map((p) => ({ ...p }));
// Usage of the key, per day: the old binary's answer, then what we add.
const usage = new Map(M.usage.answer.days.map((d) => [d.day, { ...d }]));
const oracles = new Map(); // fixture → {raw, types: [oracle]}

async function oracleOf(fixture) {
  if (!oracles.has(fixture)) {
    const raw = await pprofRaw(path.join(TESTDATA, 'pprof', fixture));
    oracles.set(fixture, { raw, types: raw.sampleTypes.map((_, i) => oracle(raw, i)) });
  }
  return oracles.get(fixture);
}

function headersFor(project, keyed) {
  if (keyed) return project === KEYED ? { 'x-kiln-key': M.key.secret } : {};
  return project === 'default' ? {} : { 'x-scope-orgid': project };
}

async function call(s, url, project, keyed, init = {}) {
  const r = await fetch(url, { ...init, headers: { ...(init.headers ?? {}), ...headersFor(project, keyed) }, signal: AbortSignal.timeout(60000) });
  const text = await r.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: r.status, text, json };
}

async function start(keyed) {
  const s = await startServer(keyed
    ? { dataDir, config: KEYED_CONFIG, extraArgs: ['--auth', 'required'] }
    : { dataDir, config: CONFIG });
  running.add(s);
  return s;
}
async function stopClean(s) {
  const e = await s.stop();
  running.delete(s);
  assert.deepEqual(e, { code: 0, signal: null }, `SIGTERM should exit 0; stderr:\n${tail(s.stderr())}`);
}
async function kill9(s) { await s.kill9(); running.delete(s); }

async function push(s, keyed, p) {
  const body = fs.readFileSync(path.join(TESTDATA, 'pprof', p.fixture));
  const q = new URLSearchParams({ serviceName: p.service, from: String(p.from), until: String(p.until) });
  const r = await call(s, `${s.uploadUrl}/profiling/upload?${q}`, p.project, keyed,
    { method: 'POST', body, headers: { 'content-type': 'application/octet-stream' } });
  assert.equal(r.status, 200, `push ${p.project}/${p.service} ${p.fixture} at ${utcDay(p.from)}: ${r.text}\n${tail(s.stderr(), 10)}`);
  // The new binary answers what the old one did for the same body.
  const old = M.pushes.find((o) => o.fixture === p.fixture);
  assert.deepEqual(r.json, old.reply, `push ${p.fixture}: reply differs from the old binary's`);
  pushes.push(p);
  if (keyed && p.project === KEYED) {
    const day = utcDay(nowS());
    const u = usage.get(day) ?? { day, key: M.key.name, accepted: 0, rejected: 0, rejected_by_reason: { rate_limited: 0, too_large: 0, invalid: 0, out_of_window: 0 } };
    u.accepted += r.json.samples;
    usage.set(day, u);
  }
}

// Every (project, service, UTC day) stored, each type of its fixture: the
// flame graph's total, root and self per function equal n × go tool pprof.
async function checkFlames(s, keyed, what) {
  const groups = new Map();
  for (const p of pushes) {
    if ((p.project === KEYED) !== keyed) continue;
    const k = `${p.project}\u0000${p.service}\u0000${utcDay(p.from)}`;
    const g = groups.get(k) ?? { ...p, day: utcDay(p.from), n: 0 };
    assert.equal(g.fixture, p.fixture, 'one fixture per service');
    g.n++;
    groups.set(k, g);
  }
  assert.ok(groups.size >= 2, `${what}: nothing to check`);
  for (const g of groups.values()) {
    const { types } = await oracleOf(g.fixture);
    for (const o of types) {
      const ctx = `${what}: ${g.project}/${g.service} ${g.day} ${o.typeName} (${g.n} × ${g.fixture})`;
      const q = new URLSearchParams({ service: g.service, type: o.typeName, from: String(dayStart(g.day)), until: String(dayStart(g.day) + DAY) });
      const r = await call(s, `${s.uiUrl}/api/flamegraph?${q}`, g.project, keyed);
      assert.equal(r.status, 200, `${ctx}: ${r.text.slice(0, 300)}\n${tail(s.stderr(), 10)}`);
      const n = BigInt(g.n);
      assert.equal(r.json.total, Number(o.total * n), `${ctx}: total`);
      assert.equal(r.json.root.total, Number(o.total * n), `${ctx}: root.total`);
      const fs2 = flameStats(r.json.root);
      assert.deepEqual(fs2.bad, [], `${ctx}: node totals`);
      if (!o.unnamed) {
        const want = Object.fromEntries([...o.self].filter(([, v]) => v !== 0n).map(([k, v]) => [k, Number(v * n)]).sort());
        const got = Object.fromEntries([...fs2.self].filter(([, v]) => v !== 0).sort());
        assert.deepEqual(got, want, `${ctx}: self per function (go tool pprof flat)`);
      }
    }
  }
  return groups.size;
}

// The span lookup: the span fixture's most frequent profile_id (Pyroscope's
// span label), its samples per go tool pprof, times the pushes of it.
async function checkSpan(s, what) {
  const sp = M.pushes.find((p) => p.fixture === 'go-cpu-span-labels.pb.gz');
  const { raw } = await oracleOf(sp.fixture);
  const counts = new Map();
  for (const x of raw.samples) if (x.labels?.profile_id) counts.set(x.labels.profile_id, (counts.get(x.labels.profile_id) ?? 0) + 1);
  const spanId = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0][0];
  const r = await call(s, `${s.uiUrl}/api/span?span_id=${encodeURIComponent(spanId)}`, sp.project, false);
  assert.equal(r.status, 200, `${what}: /api/span: ${r.text.slice(0, 300)}`);
  const n = BigInt(pushes.filter((p) => p.fixture === sp.fixture).length);
  const ti = raw.sampleTypes.findIndex((t) => `${t.type}:${t.unit}` === 'cpu:nanoseconds');
  const exp = oracle(raw, ti, (x) => x.labels?.profile_id === spanId);
  assert.ok(exp.total > 0n);
  assert.equal(r.json.service, sp.service, `${what}: span service`);
  assert.equal(r.json.type, 'cpu:nanoseconds', `${what}: span type`);
  assert.equal(r.json.total, Number(exp.total * n), `${what}: span ${spanId} total (${n} × go tool pprof of its samples)`);
  const want = Object.fromEntries([...exp.self].filter(([, v]) => v !== 0n).map(([k, v]) => [k, Number(v * n)]).sort());
  const got = Object.fromEntries([...flameStats(r.json.root).self].filter(([, v]) => v !== 0).sort());
  assert.deepEqual(got, want, `${what}: span ${spanId} self per function`);
  // Another project does not see it.
  const other = await call(s, `${s.uiUrl}/api/span?span_id=${encodeURIComponent(spanId)}`, 'default', false);
  assert.equal(other.status, 200, other.text);
  assert.equal(other.json.samples, 0, `${what}: project default sees beta's span: ${other.text.slice(0, 200)}`);
}

// The old key: pushes and queries work with it (checkFlames, push), none
// without it; its usage is the old binary's plus this test's pushes.
async function checkKey(s, what) {
  const q = new URLSearchParams({ from: String(M.usage.from), until: String(Math.max(M.usage.until, nowS() + DAY)) });
  const none = await fetch(`${s.uiUrl}/api/usage?${q}`);
  assert.equal(none.status, 401, `${what}: /api/usage without the key`);
  const r = await call(s, `${s.uiUrl}/api/usage?${q}`, KEYED, true);
  assert.equal(r.status, 200, `${what}: /api/usage with the old key: ${r.text}`);
  const want = [...usage.values()].sort((a, b) => (a.day < b.day ? -1 : 1));
  assert.deepEqual(r.json.days, want, `${what}: usage of key ${M.key.name}`);
  const bad = await fetch(`${s.uiUrl}/api/services?from=${dayStart(M.days[0])}&until=${nowS() + 60}`, { headers: { 'x-kiln-key': `${M.key.secret.slice(0, -1)}x` } });
  assert.equal(bad.status, 401, `${what}: a key one character off`);
}

async function checkOpen(s, what) {
  const n = await checkFlames(s, false, what);
  await checkSpan(s, what);
  return n;
}
async function checkKeyed(s, what) {
  const n = await checkFlames(s, true, what);
  await checkKey(s, what);
  return n;
}

const sql = (file, q) => execFileSync('sqlite3', ['-readonly', file, q], { encoding: 'utf8' }).trim();
let haveSqlite = true;
try { execFileSync('sqlite3', ['-version']); } catch { haveSqlite = false; }

test('a data directory of the engine before the log: read exactly, written on, restarted (SIGTERM and kill -9)', { skip: SKIP || TOO_LATE }, async (t) => {
  dataDir = path.join(mkTemp('olddir'), 'data');
  execFileSync('tar', ['-xzf', path.join(STORE, 'v1-datadir.tar.gz'), '-C', path.dirname(dataDir)]);
  assert.ok(!fs.existsSync(path.join(dataDir, '_wal')), 'the fixture has no log');
  const before = new Map();
  for (const p of ['default', 'beta', 'team-a']) {
    for (const f of fs.readdirSync(path.join(dataDir, p))) before.set(`${p}/${f}`, fs.statSync(path.join(dataDir, p, f)).size);
  }

  // 1. As written by the old binary.
  let s = await start(false);
  await checkOpen(s, 'old dir, first start');
  await stopClean(s);
  s = await start(true);
  await checkKeyed(s, 'old dir, first start, keyed');

  // 2. The key pushes into an old day and a new one; kill -9 once usage
  // had its flush (OPS: Usage: a kill -9 loses at most the last second of
  // counts; the profiles' durability is step 3's).
  const now = nowS();
  const py = M.pushes.find((p) => p.project === KEYED && p.fixture === 'python-pyspy-not-gzipped.pb');
  await push(s, true, { ...py, from: py.from + 600, until: py.until + 600 });
  await push(s, true, { ...py, from: now - 120, until: now - 110 });
  await new Promise((r) => setTimeout(r, 2500));
  await kill9(s);
  s = await start(true);
  await checkKeyed(s, 'after pushes and kill -9, keyed');
  await stopClean(s);

  // 3. The open projects: into both old days and a new one; kill -9 right
  // after the 200s (what got 200 is in the log: replay puts it in the old files).
  s = await start(false);
  for (const p of M.pushes.filter((x) => x.project !== KEYED && x.service !== 'node')) {
    await push(s, false, { ...p, from: p.from + 900, until: p.until + 900 });
  }
  await push(s, false, { project: 'default', service: 'fresh', fixture: 'go-cpu-fib.pb.gz', from: now - 60, until: now - 50 });
  await kill9(s);
  s = await start(false);
  await checkOpen(s, 'after pushes and kill -9');
  await stopClean(s);

  // 4. Clean restarts, both configurations.
  s = await start(true);
  await checkKeyed(s, 'after SIGTERM, keyed');
  await stopClean(s);
  s = await start(false);
  const groups = await checkOpen(s, 'after SIGTERM');
  await stopClean(s);
  t.diagnostic(`${pushes.length} pushes (${M.pushes.length} by the old binary), ${groups} open (service, day) groups checked per type`);

  // 5. On disk: the log exists; old day files written on carry applied_lsn
  // and stay format 1; the ones not written on are untouched.
  assert.ok(fs.existsSync(path.join(dataDir, '_wal')) && fs.statSync(path.join(dataDir, '_wal')).isDirectory(), 'DIR/_wal after the new binary ran');
  if (!haveSqlite) { t.diagnostic('sqlite3 CLI not found: meta checks skipped'); return; }
  const written = new Set(pushes.slice(M.pushes.length).map((p) => `${p.project}/${utcDay(p.from)}.db`));
  for (const rel of before.keys()) {
    const f = path.join(dataDir, rel);
    assert.equal(sql(f, "SELECT value FROM meta WHERE key = 'format'"), '1', `${rel}: format`);
    const lsn = sql(f, "SELECT value FROM meta WHERE key = 'applied_lsn'");
    if (written.has(rel)) assert.match(lsn, /^[1-9][0-9]*$/, `${rel}: written on by the new binary, meta applied_lsn`);
    else assert.equal(lsn, '', `${rel}: not written on, yet has applied_lsn`);
  }
});
