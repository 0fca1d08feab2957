// Crash safety (issue 7): sustained ingest from several clients while the
// server is killed with SIGKILL — at random moments, and inside a group
// commit (strace injects SIGKILL at the writer's K-th fsync/fdatasync, after
// SQLite wrote the transaction and before it is durable). After every
// restart, every upload answered 200 is fully queryable, no upload is half
// there, and every partition passes SQLite's integrity check.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { mkTemp, uniqueName } from './lib/env.mjs';
import { startServer, tail } from './lib/server.mjs';
import { getJson, get, sleep } from './lib/http.mjs';
import { buildProfile } from './lib/pb.mjs';

const CLIENTS = 4;
const RANDOM_ROUNDS = 20;
const COMMIT_ROUNDS = 10;
const PARTS = 3; // frames per upload: main.u<id>_p<k> with value k + 1
const svc = uniqueName('crash');
const dataDir = mkTemp('crash-data');
let server;

after(async () => { if (server) await server.kill9(); });

function profileOf(id) {
  const samples = [];
  for (let k = 0; k < PARTS; k++) samples.push({ stack: [`main.u${id}_p${k}`, 'main.main'], values: [k + 1] });
  return buildProfile({ sampleTypes: [['samples', 'count']], periodType: ['samples', 'count'], period: 1, samples }).bytes;
}

// Clients upload until stopped; returns {acked: Set, unknown: Set} of ids.
function startClients(srv, round) {
  const acked = new Set();
  const unknown = new Set();
  let stop = false;
  const loops = [];
  for (let c = 0; c < CLIENTS; c++) {
    loops.push((async () => {
      for (let i = 0; !stop; i++) {
        const id = `${round}x${c}x${i}`;
        unknown.add(id);
        try {
          const r = await fetch(`${srv.uploadUrl}/profiling/upload?serviceName=${svc}`, { method: 'POST', body: profileOf(id) });
          await r.arrayBuffer();
          if (r.status === 200) { acked.add(id); unknown.delete(id); } else if (r.status < 500) unknown.delete(id);
        } catch { return; } // the server died: id's outcome is unknown
      }
    })());
  }
  return { acked, unknown, stop: async () => { stop = true; await Promise.all(loops); } };
}

// Kills srv inside a group commit: strace attaches to every thread and turns
// the k-th fsync/fdatasync into SIGKILL.
async function killInCommit(srv, k) {
  let stderr = '';
  const st = spawn('strace', ['-f', '-qq', '-p', String(srv.proc.pid), '-e', 'trace=fsync,fdatasync',
    '-e', `inject=fsync,fdatasync:signal=SIGKILL:when=${k}`, '-o', '/dev/null'], { stdio: ['ignore', 'ignore', 'pipe'] });
  st.stderr.on('data', (d) => { stderr += d; });
  const timer = new Promise((r) => setTimeout(r, 20000, null));
  const e = await Promise.race([srv.exited, timer]);
  st.kill('SIGKILL');
  if (!e) {
    await srv.kill9();
    assert.fail(`strace did not kill kiln within 20 s (ptrace not allowed here?) ${stderr}`);
  }
  return e;
}

function checkIntegrity() {
  const files = [];
  const walk = (d) => { for (const n of fs.readdirSync(d)) { const p = path.join(d, n); if (fs.statSync(p).isDirectory()) walk(p); else if (n.endsWith('.db')) files.push(p); } };
  walk(dataDir);
  for (const f of files) {
    const out = execFileSync('sqlite3', [f, 'PRAGMA integrity_check;'], { encoding: 'utf8' }).trim();
    assert.equal(out, 'ok', `${f}: ${out}`);
  }
  return files.length;
}

async function verify(srv, acked, unknown) {
  const top = await getJson(srv.uiUrl, '/api/top', { service: svc, type: 'samples:count', from: 'now-1h', limit: 0 });
  const byUpload = new Map();
  for (const r of top.rows) {
    const m = /^main\.u(\S+)_p(\d+)$/.exec(r.name);
    if (!m) continue;
    if (!byUpload.has(m[1])) byUpload.set(m[1], new Map());
    byUpload.get(m[1]).set(Number(m[2]), r.self);
  }
  const missing = [...acked].filter((id) => !byUpload.has(id));
  assert.deepEqual(missing, [], `acknowledged uploads missing after the crash (${missing.length} of ${acked.size})`);
  for (const [id, parts] of byUpload) {
    assert.ok(acked.has(id) || unknown.has(id), `upload ${id} stored but never sent`);
    const want = new Map(Array.from({ length: PARTS }, (_, k) => [k, k + 1]));
    assert.deepEqual(parts, want, `upload ${id} stored whole, exactly once`);
  }
  return byUpload.size;
}

test(`SIGKILL at random moments (${RANDOM_ROUNDS} rounds) and inside group commits (${COMMIT_ROUNDS}): nothing acknowledged lost, nothing half stored, no partition damaged`, async (t) => {
  const acked = new Set();
  const unknown = new Set();
  let inCommit = 0;
  for (let round = 0; round < RANDOM_ROUNDS + COMMIT_ROUNDS; round++) {
    server = await startServer({ dataDir });
    const clients = startClients(server, round);
    let e;
    if (round < RANDOM_ROUNDS) {
      await sleep(100 + Math.floor(Math.random() * 500));
      e = await server.kill9();
    } else {
      await sleep(50);
      e = await killInCommit(server, 1 + Math.floor(Math.random() * 20));
      if (e.signal === 'SIGKILL') inCommit++;
    }
    assert.equal(e.signal, 'SIGKILL', `round ${round}: ${JSON.stringify(e)}\n${tail(server.stderr())}`);
    await clients.stop();
    for (const id of clients.acked) acked.add(id);
    for (const id of clients.unknown) unknown.add(id);
    server = null;
    checkIntegrity();
  }
  server = await startServer({ dataDir });
  const stored = await verify(server, acked, unknown);
  const damaged = /^kiln_store_partitions_damaged_total (\d+)$/m.exec((await get(server.uiUrl, '/metrics')).text);
  assert.equal(damaged?.[1], '0');
  const files = checkIntegrity();
  t.diagnostic(`${acked.size} uploads acknowledged, ${unknown.size} in flight at a kill, ${stored} stored; ` +
    `${inCommit} kills inside a commit; ${files} partition files checked`);
  assert.ok(acked.size >= (RANDOM_ROUNDS + COMMIT_ROUNDS) * 2, `uploads were acknowledged in most rounds: ${acked.size}`);
  assert.equal(inCommit, COMMIT_ROUNDS);
  assert.deepEqual(await server.stop(), { code: 0, signal: null });
  server = null;
});
