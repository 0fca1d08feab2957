// Retention (OPS: Retention; API: Frames) without test hooks: a server whose project
// `default` keeps 30 days takes pprofs dated 15 and 13 days ago (own
// services); after SIGTERM and a restart with the default 14 days, the
// cleaner (run at startup) deletes the 15-day partition, queries over that
// range return nothing, the 13-day profile still answers, and a new push
// older than the retention is refused. retention.days above
// retention.maxDays is a startup error.
// Both engines are judged by the API; on the embedded engine the partition
// files (DATA/default/YYYY-MM-DD.db, -wal, -shm) are checked as well.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { mkTemp, uniqueName, nowS } from './lib/env.mjs';
import { tail, embeddedOnly } from './lib/server.mjs';
import { todoUnless, stopAll, startTracked, configYaml, uploadAs, apiAs, brief, pprofN, sleep, DAY } from './lib/s6.mjs';

const todo = await todoUnless('retention');
const dataDir = mkTemp('retention');
const T = nowS();
const OLD = { svc: uniqueName('ret-15d'), from: T - 15 * DAY, n: 6 };
const KEEP = { svc: uniqueName('ret-13d'), from: T - 13 * DAY, n: 4 };
const dayOf = (s) => new Date(s * 1000).toISOString().slice(0, 10);
const partFiles = (day) => ['', '-wal', '-shm'].map((x) => path.join(dataDir, 'default', `${day}.db${x}`)).filter((f) => fs.existsSync(f));
let server;
after(stopAll);

const FILES = embeddedOnly('the partition files under DATA/default');

function range(p) { return { from: p.from - 60, until: p.from + 600 }; }
async function total(p) {
  const r = await apiAs(server, '/api/flamegraph', { service: p.svc, type: 'cpu:nanoseconds', ...range(p) });
  if (r.status === 404) return 0;
  assert.equal(r.status, 200, `/api/flamegraph ${p.svc}: ${brief(r)}`);
  return r.json.total ?? 0;
}

test('retention.days above retention.maxDays is a startup error naming maxDays', async () => {
  const e = await startTracked({ config: configYaml({ retention: { days: 30 } }), timeoutMs: 5000 }).then((s) => { s.stop(); return null; }, (x) => x);
  assert.ok(e, 'kiln serve started with retention.days 30 and the default maxDays 14');
  assert.match(e.message, /maxDays/, e.message);
  const e2 = await startTracked({ config: configYaml({ retention: { days: 10, maxDays: 20, projects: { big: 21 } } }), timeoutMs: 5000 }).then((s) => { s.stop(); return null; }, (x) => x);
  assert.ok(e2, 'kiln serve started with a project retention above maxDays');
  assert.match(e2.message, /maxDays/, e2.message);
});

test('with 30 days of retention, pprofs dated 15 and 13 days ago are stored in their day partitions; older than 30 days → 400', { todo }, async () => {
  server = await startTracked({ dataDir, config: configYaml({ retention: { days: 30, maxDays: 30 } }) });
  for (const p of [OLD, KEEP]) {
    const r = await uploadAs(server, pprofN(p.n, { tag: `d${p.n}_` }), { serviceName: p.svc, from: p.from, until: p.from + 10 });
    assert.equal(r.status, 200, `upload dated ${dayOf(p.from)}: ${brief(r)}`);
    assert.equal(await total(p), p.n, `${p.svc} answers before the restart`);
  }
  const tooOld = T - 31 * DAY;
  const r = await uploadAs(server, pprofN(2), { serviceName: uniqueName('ret-31d'), from: tooOld, until: tooOld + 10 });
  assert.equal(r.status, 400, `upload dated 31 days ago with 30 days of retention: ${brief(r)}`);
  assert.match(r.text, /retention|window|old/i, `the message says why: ${r.text}`);
  await server.stop();
  server = null;
});

test('the 15-day-old upload has its day partition file on disk', { todo, skip: FILES }, () => {
  assert.ok(partFiles(dayOf(OLD.from)).length > 0, `no partition file for ${dayOf(OLD.from)} under ${path.join(dataDir, 'default')}: ${fs.readdirSync(path.join(dataDir, 'default'))}`);
});

test('restart with the default 14 days: the 15-day partition is deleted, the 13-day one still answers', { todo }, async () => {
  if (server) await server.stop(); // left running by a failed step above
  const t0 = Date.now();
  server = await startTracked({ dataDir });
  // The cleaner runs at startup: allow it a few seconds.
  let old;
  for (;;) {
    old = await total(OLD);
    if (old === 0 || Date.now() - t0 > (todo ? 1000 : 10000)) break;
    await sleep(200);
  }
  assert.equal(old, 0, `the 15-day-old profile still answers ${Date.now() - t0} ms after the restart\n${tail(server.stderr(), 10)}`);
  assert.equal(await total(KEEP), KEEP.n, 'the 13-day-old profile still answers');
  const s = await apiAs(server, '/api/services', { from: T - 16 * DAY, until: T });
  assert.equal(s.status, 200, brief(s));
  const names = s.json.services.map((x) => x.name);
  assert.ok(!names.includes(OLD.svc), `/api/services over 16 days lists the expired ${OLD.svc}: ${names}`);
  assert.ok(names.includes(KEEP.svc), `/api/services over 16 days lacks ${KEEP.svc}: ${names}`);
  for (const route of ['/api/top', '/api/timeline']) {
    const r = await apiAs(server, route, { service: OLD.svc, type: 'cpu:nanoseconds', ...range(OLD), step: 60, limit: 10 });
    if (r.status === 404) continue;
    assert.equal(r.status, 200, `${route}: ${brief(r)}`);
    const empty = route === '/api/top' ? r.json.rows.length === 0 : r.json.points.every(([, v]) => v === 0);
    assert.ok(empty, `${route} over the expired range must be empty: ${brief(r)}`);
  }
});

test('after the restart, the 15-day partition files are gone and the 13-day one stays', { todo, skip: FILES }, () => {
  assert.deepEqual(partFiles(dayOf(OLD.from)), [], `partition files of ${dayOf(OLD.from)} still there after the cleaner removed the profile from queries`);
  assert.ok(partFiles(dayOf(KEEP.from)).some((f) => f.endsWith('.db')), `the 13-day partition ${dayOf(KEEP.from)}.db must stay: ${fs.readdirSync(path.join(dataDir, 'default'))}`);
});

test('with 14 days of retention, a push dated 15 days ago is refused with 400', { todo }, async () => {
  if (!server) server = await startTracked({ dataDir });
  const from = T - 15 * DAY;
  const svc = uniqueName('ret-late');
  const r = await uploadAs(server, pprofN(2), { serviceName: svc, from, until: from + 10 });
  assert.equal(r.status, 400, brief(r));
  assert.match(r.text, /retention|window|old/i, `the message says why: ${r.text}`);
  const s = await apiAs(server, '/api/services', { from: from - 3600, until: from + 3600 });
  assert.equal(s.status, 200, brief(s));
  assert.deepEqual(s.json.services.filter((x) => x.name === svc), [], `the refused push is listed: ${brief(s)}`);
  if (!FILES) assert.equal(partFiles(dayOf(from)).length, 0, 'a refused push creates no partition');
});
