// Disk faults (issue 7). A store on a small tmpfs that fills up: pushes get
// 503 + Retry-After (gRPC UNAVAILABLE), queries keep working, nothing
// acknowledged is lost, and ingestion resumes by itself when space returns
// (the tmpfs is grown with mount -o remount; needs root for mount, skipped
// otherwise, saying so). Damaged partition files: found, reported once,
// skipped by queries and moved aside by the writer; never a crash.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { mkTemp, uniqueName } from './lib/env.mjs';
import { startServer, tail } from './lib/server.mjs';
import { upload, getJson, get } from './lib/http.mjs';
import { oracleForFile } from './lib/pprof.mjs';
import { TESTDATA } from './lib/env.mjs';
import { buildProfile } from './lib/pb.mjs';
import { grpcClient, grpcExport, describeGrpc } from './lib/otlp.mjs';
import { buildRequest, nowNs } from './lib/otlp-build.mjs';

const FRAMES = 400; // distinct frames per upload: each one grows the store by tens of KiB
let mnt, server;

function canMount() {
  if (process.getuid?.() !== 0) return 'not root';
  try {
    const d = mkTemp('mnt-probe');
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', d], { stdio: 'pipe' });
    execFileSync('umount', [d]);
    return null;
  } catch (e) { return `mount -t tmpfs failed: ${e.stderr ?? e.message}`; }
}
const cannot = canMount();

after(async () => {
  if (server) await server.stop();
  if (mnt) try { execFileSync('umount', ['-l', mnt]); } catch { /* already gone */ }
});

// Upload n: FRAMES leaves main.u<n>_<k> with value k+1, so its total is known.
function profileOf(n) {
  const samples = [];
  for (let k = 0; k < FRAMES; k++) samples.push({ stack: [`main.u${n}_${k}`, `main.batch${n}`, 'main.main'], values: [k + 1] });
  return buildProfile({ sampleTypes: [['samples', 'count']], periodType: ['samples', 'count'], period: 1, samples }).bytes;
}
const PER_UPLOAD = (FRAMES * (FRAMES + 1)) / 2;

test('a full disk: 503 + Retry-After and gRPC UNAVAILABLE, queries work, nothing acknowledged lost, resumes when space returns', { skip: cannot ?? false }, async (t) => {
  mnt = mkTemp('tmpfs');
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=3m', 'tmpfs', mnt]);
  server = await startServer({ dataDir: `${mnt}/data`, otlp: true, listeners: ['upload', 'ui', 'otlp_grpc'] });
  const svc = uniqueName('diskfull');
  const acked = [];
  let refused = null;
  for (let n = 0; n < 2000 && !refused; n++) {
    const r = await upload(server, profileOf(n), { serviceName: svc });
    if (r.status === 200) acked.push(n);
    else refused = r;
  }
  assert.ok(refused, `the 3 MiB store never filled after ${acked.length} uploads`);
  assert.ok(acked.length >= 3, `some uploads fit before the disk filled: ${acked.length}`);
  t.diagnostic(`${acked.length} uploads acknowledged before: ${refused.status} ${refused.text.trim()}`);
  assert.equal(refused.status, 503, refused.text);
  assert.equal(refused.headers.get('retry-after'), '5');
  assert.match(refused.json?.error ?? '', /full|space/i, refused.text);

  // gRPC: UNAVAILABLE while full.
  const client = grpcClient(server);
  try {
    const req = buildRequest({ resources: [{ attrs: { 'service.name': `${svc}-otlp` }, profiles: [{
      type: ['cpu', 'nanoseconds'], periodType: ['cpu', 'nanoseconds'], period: 10000000, timeNs: nowNs(-5), durationNs: 1000000000n,
      samples: Array.from({ length: FRAMES }, (_, k) => ({ stack: [`otlp.f${k}`, 'otlp.main'], values: [k + 1] })) }] }] });
    const g = await grpcExport(client, req);
    assert.equal(g.code, 14, `gRPC while full: ${describeGrpc(g)}`);
  } finally { client.close(); }

  // Queries keep working and return every acknowledged upload exactly. While
  // the disk is full, the embedded engine may hold the last acknowledged
  // uploads durable in its log but not yet in their partition (STORE:
  // Writing: the groups of the apply pass that failed and those waiting
  // behind it, at most 2 × LOCAL_APPLY_DEPTH (64), and the one being logged;
  // one upload each here, as the pushes are sequential); they appear once
  // space returns.
  const visible = async () => {
    const top = await getJson(server.uiUrl, '/api/top', { service: svc, type: 'samples:count', from: 'now-1h', limit: 0 });
    const batches = new Set(top.rows.filter((r) => r.name.startsWith('main.u')).map((r) => r.name.split('_')[0].slice(6)));
    return { total: top.total, list: [...batches].map(Number).sort((a, b) => a - b) };
  };
  const check = async (list) => {
    const v = await visible();
    assert.equal(v.total, list.length * PER_UPLOAD, 'total = the acknowledged uploads');
    assert.deepEqual(v.list, list);
  };
  const whileFull = await visible();
  const held = acked.length - whileFull.list.length;
  assert.ok(held >= 0 && held <= (server.engine === 'clickhouse' ? 0 : 2 * 64 + 1), `${held} acknowledged uploads not visible while full`);
  const kept = acked.slice(0, acked.length - held);
  assert.equal(whileFull.total, kept.length * PER_UPLOAD, 'total = the acknowledged uploads (while full)');
  assert.deepEqual(whileFull.list, kept);

  // Space returns: the next pushes succeed without a restart.
  execFileSync('mount', ['-o', 'remount,size=64m', mnt]);
  let ok = null;
  const deadline = Date.now() + 20000;
  for (let n = 5000; Date.now() < deadline; n++) {
    const r = await upload(server, profileOf(n), { serviceName: svc });
    if (r.status === 200) { ok = n; break; }
    assert.equal(r.status, 503, r.text);
    await new Promise((res) => setTimeout(res, 250));
  }
  assert.ok(ok !== null, `ingestion resumed after space returned\n${tail(server.stderr())}`);
  acked.push(ok);
  await check(acked);
  const e = await server.stop();
  server = null;
  assert.deepEqual(e, { code: 0, signal: null });
});

// Day partition file of project default for unix second t.
const dayFile = (dataDir, t) => path.join(dataDir, 'default', `${new Date(t * 1000).toISOString().slice(0, 10)}.db`);

test('damaged partitions: reported once, skipped by queries (the other days answer), moved aside on the next write', async () => {
  const file = path.join(TESTDATA, 'pprof', 'go-cpu-fib.pb.gz');
  const body = fs.readFileSync(file);
  const { prof, types } = await oracleForFile(file);
  const ti = prof.sampleTypes.findIndex((t) => t.type === 'cpu');
  const one = Number(types[ti].total);
  const svc = uniqueName('damaged');
  const now = Math.floor(Date.now() / 1000);
  const days = [0, 1, 2].map((d) => now - d * 86400); // today, yesterday, the day before
  let s = await startServer();
  for (const t of days) {
    const r = await upload(s, body, { serviceName: svc, from: t - 10, until: t });
    assert.equal(r.status, 200, r.text);
  }
  const dataDir = s.dataDir;
  assert.deepEqual(await s.stop(), { code: 0, signal: null });
  // Yesterday: not a database any more (header overwritten). The day before:
  // every page after the first overwritten with random bytes.
  const y = dayFile(dataDir, days[1]);
  const fd = fs.openSync(y, 'r+');
  fs.writeSync(fd, Buffer.from('this is not a sqlite database file'), 0, 34, 0);
  fs.closeSync(fd);
  const d2 = dayFile(dataDir, days[2]);
  const size = fs.statSync(d2).size;
  assert.ok(size > 4096, `${d2} is ${size} bytes`);
  const fd2 = fs.openSync(d2, 'r+');
  fs.writeSync(fd2, crypto.randomBytes(size - 4096), 0, size - 4096, 4096);
  fs.closeSync(fd2);
  for (const f of [y, d2]) for (const x of ['-wal', '-shm']) fs.rmSync(f + x, { force: true });

  s = await startServer({ dataDir });
  server = s;
  const q = { service: svc, type: 'cpu:nanoseconds', from: now - 3 * 86400, until: now + 60 };
  const top = await getJson(s.uiUrl, '/api/top', q);
  assert.equal(top.total, one, 'only today answers; the two damaged days are skipped');
  const tl = await getJson(s.uiUrl, '/api/timeline', { ...q, step: '1d' });
  assert.equal(tl.points.reduce((a, [, v]) => a + v, 0), one);
  const svcs = await getJson(s.uiUrl, '/api/services', { from: q.from, until: q.until });
  assert.ok(svcs.services.some((x) => x.name === svc));
  // Reported once per file, however often read.
  await getJson(s.uiUrl, '/api/top', q);
  const lines = s.stderr().split('\n').filter((l) => l.includes('msg="store partition is damaged"'));
  const files = lines.map((l) => /file=(\S+)/.exec(l)[1]).sort();
  assert.deepEqual(files, [y, d2].sort(), tail(s.stderr()));
  assert.ok(lines.every((l) => l.includes('action=skipped')), lines.join('\n'));
  const m = /^kiln_store_partitions_damaged_total (\d+)$/m.exec((await get(s.uiUrl, '/metrics')).text);
  assert.equal(m?.[1], '2');

  // A write to yesterday moves the damaged file aside and starts the day afresh.
  const r = await upload(s, body, { serviceName: svc, from: days[1] - 10, until: days[1] });
  assert.equal(r.status, 200, r.text);
  // The 200 comes once the write is in the store's log; the partition is
  // written just after, and a query waits for that (STORE: Writing).
  assert.equal((await getJson(s.uiUrl, '/api/top', q)).total, 2 * one, 'today and the new yesterday');
  const moved = fs.readdirSync(path.dirname(y)).filter((n) => n.startsWith(`${path.basename(y)}.damaged-`));
  assert.equal(moved.length, 1, fs.readdirSync(path.dirname(y)).join(' '));
  assert.deepEqual(await s.stop(), { code: 0, signal: null });
  server = null;
});
