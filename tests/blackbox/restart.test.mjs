// Durability (API: Push errors: "answered 200 only after its data is durable"):
// what got 200 survives kill -9, including uploads racing with the kill.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { TESTDATA, uniqueName, mkTemp } from './lib/env.mjs';
import { startServer, tail } from './lib/server.mjs';
import { upload, get, getJson, services, wideWindow, sleep } from './lib/http.mjs';
import { oracleForFile } from './lib/pprof.mjs';
import { checkQueryAgainst } from './lib/check.mjs';
import { buildProfile, expectedOf } from './lib/pb.mjs';

const PPROF_DIR = path.join(TESTDATA, 'pprof');
const running = new Set();
after(async () => { for (const s of running) await s.kill9(); });

async function start(dataDir) {
  const s = await startServer({ dataDir });
  running.add(s);
  return s;
}
async function kill9(s) { await s.kill9(); running.delete(s); }

test('uploads that got 200 survive kill -9 (testdata files, exact)', async () => {
  const dataDir = mkTemp('restart1');
  let s = await start(dataDir);
  const uploaded = [];
  for (const f of fs.readdirSync(PPROF_DIR).filter((x) => /\.pb(\.gz)?$/.test(x)).sort()) {
    const svc = uniqueName(`rs-${f.replace(/\W+/g, '-')}`);
    const r = await upload(s, fs.readFileSync(path.join(PPROF_DIR, f)), { serviceName: svc });
    assert.equal(r.status, 200, `${f}: ${r.text}`);
    uploaded.push({ f, svc, ...(await oracleForFile(path.join(PPROF_DIR, f))) });
  }
  await kill9(s);
  s = await start(dataDir);
  const names = new Set((await services(s)).map((x) => x.name));
  for (const u of uploaded) {
    assert.ok(names.has(u.svc), `after kill -9 and restart, /api/services lacks ${u.svc}`);
    for (const o of u.types) await checkQueryAgainst(s, u.svc, o, wideWindow(), `after restart ${u.f}`);
  }
  // And a clean restart (SIGTERM → exit 0) keeps it as well.
  const e = await s.stop();
  running.delete(s);
  assert.deepEqual(e, { code: 0, signal: null }, `SIGTERM should exit 0; stderr:\n${tail(s.stderr())}`);
  s = await start(dataDir);
  for (const u of uploaded) {
    const o = u.types[0];
    const fg = await getJson(s.uiUrl, '/api/flamegraph', { service: u.svc, type: o.typeName, ...wideWindow() });
    assert.equal(fg.total, Number(o.total), `after SIGTERM restart: ${u.f} ${o.typeName}`);
  }
  await kill9(s);
});

// A small random profile with two sample types; returns {bytes, total}.
function randomProfile(seed) {
  const rnd = () => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed; };
  const samples = [];
  const n = 3 + (rnd() % 20);
  for (let i = 0; i < n; i++) {
    const depth = 1 + (rnd() % 6);
    const stack = [`pkg.leaf${i}`]; // distinct stacks: rows stay rows
    for (let d = 0; d < depth; d++) stack.push(`pkg.f${rnd() % 15}`);
    const c = 1 + (rnd() % 50);
    samples.push({ stack, values: [c, c * 10_000_000] });
  }
  const spec = { sampleTypes: [['samples', 'count'], ['cpu', 'nanoseconds']], periodType: ['cpu', 'nanoseconds'], period: 10_000_000, samples };
  return { bytes: buildProfile(spec).bytes, total: expectedOf(spec, 1).total, rows: samples.length };
}

test('concurrent uploads racing kill -9: every 200 is there after restart, nothing partial', async (t) => {
  const dataDir = mkTemp('restart2');
  const acked = [];   // {svc, total}
  const unknown = []; // sent, no 200 seen (connection died): may or may not exist
  const errors = [];
  const ROUNDS = 4;
  const WORKERS = 6;
  for (let round = 0; round < ROUNDS; round++) {
    const s = await start(dataDir);
    let stop = false;
    let seq = 0;
    const worker = async (w) => {
      while (!stop) {
        const svc = uniqueName(`race-r${round}-w${w}-${seq++}`);
        const p = randomProfile(round * 100000 + w * 1000 + seq);
        let r;
        try {
          r = await upload(s, p.bytes, { serviceName: svc }, {}, { timeoutMs: 10000 });
        } catch {
          unknown.push({ svc, total: p.total });
          return; // the server is gone
        }
        if (r.status === 200) {
          acked.push({ svc, total: p.total, round });
          if (r.json?.profiles !== 2 || r.json?.samples !== 2 * p.rows) errors.push(`upload ${svc} reply ${r.text}, want profiles 2 samples ${2 * p.rows}`);
        } else {
          errors.push(`upload ${svc} → ${r.status} ${r.text}`);
          return;
        }
      }
    };
    const workers = Array.from({ length: WORKERS }, (_, w) => worker(w));
    await sleep(300 + Math.floor(Math.random() * 900));
    await kill9(s);
    stop = true;
    await Promise.all(workers);
  }
  assert.deepEqual(errors.slice(0, 5), [], `uploads refused while the server ran (${errors.length})`);
  assert.ok(acked.length >= ROUNDS * WORKERS, `too few uploads acknowledged before the kills (${acked.length}); is upload that slow?`);

  const s = await start(dataDir);
  const listed = new Map((await services(s)).map((x) => [x.name, x]));
  const missing = acked.filter((a) => !listed.has(a.svc));
  assert.deepEqual(missing.map((m) => m.svc), [], `${missing.length} of ${acked.length} acknowledged uploads are gone after kill -9`);
  // Every acknowledged upload: its cpu total via the services list (one
  // call); a sample of them also via the flame graph of both types.
  for (const a of acked) {
    assert.equal(listed.get(a.svc).cpu_nanoseconds, Number(a.total), `acknowledged upload ${a.svc} (round ${a.round}): cpu_nanoseconds after restart`);
  }
  const sampled = acked.filter((_, i) => i % Math.max(1, Math.floor(acked.length / 60)) === 0);
  for (const a of sampled) {
    const fg = await getJson(s.uiUrl, '/api/flamegraph', { service: a.svc, type: 'cpu:nanoseconds', ...wideWindow() });
    assert.equal(fg.total, Number(a.total), `acknowledged upload ${a.svc} (round ${a.round}): total after restart`);
    const c = await getJson(s.uiUrl, '/api/flamegraph', { service: a.svc, type: 'samples:count', ...wideWindow() });
    assert.equal(c.total * 10_000_000, Number(a.total), `acknowledged upload ${a.svc}: samples:count after restart`);
  }
  // Requests cut by the kill: either wholly there or not at all.
  let cutButStored = 0;
  for (const u of unknown) {
    if (!listed.has(u.svc)) continue;
    cutButStored++;
    const fg = await get(s.uiUrl, '/api/flamegraph', { service: u.svc, type: 'cpu:nanoseconds', ...wideWindow() });
    if (fg.status === 200 && fg.json.total !== 0) {
      assert.equal(fg.json.total, Number(u.total), `unacknowledged upload ${u.svc} stored partially`);
    }
  }
  t.diagnostic(`${ROUNDS} rounds: ${acked.length} uploads acknowledged, ${unknown.length} cut by kill -9 (${cutButStored} of those stored whole)`);
  await kill9(s);
});
