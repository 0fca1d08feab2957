// A real Go program with a known shape (tests/go/cpusplit) is profiled
// through its own net/http/pprof; the five profiles are pushed to kiln.
// Each must read back exactly as go tool pprof reads the fetched file, and
// the known shape must be visible: hot:cold CPU ≈ 3:1, allocations in
// main.allocator, ≥ 37 goroutines parked in main.parked, mutex and block
// contention in main.mutexer / main.chanReceiver.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { uniqueName, mkTemp } from './lib/env.mjs';
import { startServer, tail } from './lib/server.mjs';
import { upload, getJson, wideWindow } from './lib/http.mjs';
import { oracleForFile } from './lib/pprof.mjs';
import { checkQueryAgainst, assertUploadReply } from './lib/check.mjs';
import { goBuild, startGoServer } from './lib/goprog.mjs';

const PARKED = 37;
let server;
let prog;
const dir = mkTemp('gosplit');
const fetched = {}; // kind → file

before(async () => {
  const [bin, srv] = await Promise.all([goBuild('cpusplit'), startServer()]);
  server = srv;
  // No async preemption: runtime.asyncPreempt would steal leaf samples from
  // main.hot/main.cold and blur the 3:1 split.
  prog = await startGoServer(bin, [`-parked=${PARKED}`], 10000, { GODEBUG: 'asyncpreemptoff=1' });
  // Let the workload run a moment so block/mutex/heap have content.
  await new Promise((r) => setTimeout(r, 500));
  const get = async (kind, q) => {
    const res = await fetch(`${prog.url}/debug/pprof/${kind}${q}`, { signal: AbortSignal.timeout(30000) });
    assert.equal(res.status, 200, `GET /debug/pprof/${kind}`);
    const f = path.join(dir, `${kind}.pb.gz`);
    fs.writeFileSync(f, Buffer.from(await res.arrayBuffer()));
    fetched[kind] = f;
  };
  await Promise.all([
    get('profile', '?seconds=3'),
    (async () => { await new Promise((r) => setTimeout(r, 1500)); await Promise.all([get('heap', '?gc=1'), get('goroutine', ''), get('block', ''), get('mutex', '')]); })(),
  ]);
});

after(async () => {
  if (prog) await prog.stop();
  if (server) await server.stop();
});

const svc = uniqueName('gosplit');
const svcFor = { profile: svc, heap: svc, goroutine: svc, block: `${svc}-block`, mutex: `${svc}-mutex` };

async function uploadAndCheck(kind) {
  const f = fetched[kind];
  const { prof, types } = await oracleForFile(f);
  const r = await upload(server, fs.readFileSync(f), { serviceName: svcFor[kind] });
  assert.equal(r.status, 200, `upload ${kind}: ${r.status} ${r.text}\n${tail(server.stderr())}`);
  assertUploadReply(r.json, prof, `upload ${kind} reply`);
  const results = {};
  for (const o of types) {
    results[o.typeName] = { o, ...(await checkQueryAgainst(server, svcFor[kind], o, wideWindow(), `go ${kind}`)) };
  }
  return results;
}

const row = (res, name) => res.all.rows.find((r) => r.name === name);

test('cpu: exact vs go tool pprof, and main.hot : main.cold ≈ 3 : 1', async (t) => {
  const res = await uploadAndCheck('profile');
  const cpu = res['cpu:nanoseconds'];
  assert.ok(cpu, 'cpu:nanoseconds type');
  assert.ok(res['samples:count'], 'samples:count type');
  const hot = row(cpu, 'main.hot');
  const cold = row(cpu, 'main.cold');
  assert.ok(hot && cold, `main.hot and main.cold in /api/top: ${JSON.stringify(cpu.all.rows.slice(0, 5))}`);
  const ratio = hot.self / cold.self;
  t.diagnostic(`main.hot self ${hot.self} ns, main.cold self ${cold.self} ns, ratio ${ratio.toFixed(2)}`);
  // The program's split is 3:1, but a CPU profile samples it on the kernel's
  // timer ticks: on a loaded VM the hot-hot-hot-cold rhythm can alias with
  // them (5.1 seen once under the ASan pass: 250 vs 49 samples). The exact
  // check is the one against go tool pprof above; this one only says the two
  // burners are told apart and in the right order, with the right weight.
  assert.ok(ratio >= 1.5 && ratio <= 8, `hot/cold self ratio ${ratio.toFixed(2)} (hot ${hot.self}, cold ${cold.self})`);
  // The two burners are the two biggest rows of the top-10.
  const top2 = cpu.top.rows.slice(0, 2).map((r) => r.name);
  assert.deepEqual(top2, ['main.hot', 'main.cold'], 'top-10 starts with main.hot, main.cold');
});

test('heap: four types, main.allocator on top of alloc_space and inuse_space', async () => {
  const res = await uploadAndCheck('heap');
  for (const t of ['alloc_objects:count', 'alloc_space:bytes', 'inuse_objects:count', 'inuse_space:bytes']) {
    assert.ok(res[t], `heap type ${t}`);
  }
  for (const t of ['alloc_space:bytes', 'inuse_space:bytes']) {
    assert.equal(res[t].top.rows[0]?.name, 'main.allocator', `${t}: first top row ${JSON.stringify(res[t].top.rows[0])}`);
  }
  const inuse = row(res['inuse_space:bytes'], 'main.allocator');
  assert.ok(inuse.self >= 8 << 20, `main.allocator keeps ~16 MiB in use, kiln says ${inuse.self}`);
});

test(`goroutine: ≥ ${PARKED} goroutines parked in main.parked`, async () => {
  const res = await uploadAndCheck('goroutine');
  const g = res['goroutine:count'];
  assert.ok(g, 'goroutine:count type');
  assert.ok(g.fg.total >= PARKED, `goroutine total ${g.fg.total}`);
  const p = row(g, 'main.parked');
  assert.ok(p && p.total >= PARKED, `main.parked total ${JSON.stringify(p)}`);
});

test('block: contentions:count and delay:nanoseconds, main.chanReceiver blocks', async () => {
  const res = await uploadAndCheck('block');
  for (const t of ['contentions:count', 'delay:nanoseconds']) {
    assert.ok(res[t], `block type ${t}`);
    assert.ok(res[t].fg.total > 0, `block ${t} total`);
  }
  assert.ok(row(res['contentions:count'], 'main.chanReceiver')?.total > 0, 'main.chanReceiver in block profile');
});

test('mutex: contentions:count and delay:nanoseconds, main.mutexer contends', async () => {
  const res = await uploadAndCheck('mutex');
  for (const t of ['contentions:count', 'delay:nanoseconds']) {
    assert.ok(res[t], `mutex type ${t}`);
    assert.ok(res[t].fg.total > 0, `mutex ${t} total`);
  }
  assert.ok(row(res['delay:nanoseconds'], 'main.mutexer')?.total > 0, 'main.mutexer in mutex profile');
});

test('services list: the cpu service ranks by cpu_nanoseconds', async () => {
  const j = await getJson(server.uiUrl, '/api/services', wideWindow());
  const e = j.services.find((s) => s.name === svc);
  assert.ok(e, `services lists ${svc}`);
  const { types } = await oracleForFile(fetched.profile);
  const cpu = types.find((o) => o.typeName === 'cpu:nanoseconds');
  assert.equal(e.cpu_nanoseconds, Number(cpu.total), 'cpu_nanoseconds of the service = its cpu total');
  for (let i = 1; i < j.services.length; i++) {
    assert.ok(j.services[i - 1].cpu_nanoseconds >= j.services[i].cpu_nanoseconds, 'services sorted busiest first');
  }
});
