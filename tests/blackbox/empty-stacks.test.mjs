// Empty stacks count (API: Flame graph): a pprof sample with no location —
// the goroutine profile of a real Go program (tests/go/cpusplit) has one —
// counts in the total at the root, as `go tool pprof -top` counts it (-raw
// does not list such a sample; lib/pprof.mjs adds it back from -top's
// total). Pushed through /profiling/upload, /ingest, OTLP/HTTP and OTLP/gRPC
// (an OTLP Sample on an empty Stack, stack_table[0] included), on the engine
// of the run: the flame graph's total and its root's self equal go tool
// pprof's, /api/top has no row for it but counts it in its total (as -top),
// the timeline point is the total, and /api/pprof read back by go tool pprof
// has the same total.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { uniqueName, mkTemp, nowS } from './lib/env.mjs';
import { tail } from './lib/server.mjs';
import { upload, get, getJson, wideWindow } from './lib/http.mjs';
import { oracleForFile, pprofRaw, oracle, topTotal } from './lib/pprof.mjs';
import { checkQueryAgainst } from './lib/check.mjs';
import { goBuild, startGoServer } from './lib/goprog.mjs';
import { startOtlpServer, sendPb, grpcClient, grpcExport, encodeRequest } from './lib/otlp.mjs';
import { readPprofFile, pprofToOtlp } from './lib/otlp-pprof.mjs';
import { expectRequest } from './lib/otlp-expect.mjs';
import { assertAccepted } from './lib/otlp-check.mjs';

const dir = mkTemp('empty-stacks');
let server;
let grpcC;
let real; // the goroutine profile as the Go program served it
let more; // the same with one more Sample with no location (value 2)

before(async () => {
  const [bin, srv] = await Promise.all([goBuild('cpusplit'), startOtlpServer()]);
  server = srv;
  grpcC = grpcClient(server);
  const prog = await startGoServer(bin, ['-parked=5', '-mutexers=0']);
  try {
    const res = await fetch(`${prog.url}/debug/pprof/goroutine`, { signal: AbortSignal.timeout(30000) });
    assert.equal(res.status, 200, 'GET /debug/pprof/goroutine');
    const gz = Buffer.from(await res.arrayBuffer());
    real = path.join(dir, 'goroutine.pb.gz');
    fs.writeFileSync(real, gz);
    // A repeated field appended to a message adds an element: Profile.sample
    // (field 2) = Sample{value (field 2, packed): [2]}, no location_id.
    more = path.join(dir, 'goroutine-more.pb');
    fs.writeFileSync(more, Buffer.concat([zlib.gunzipSync(gz), Buffer.from([0x12, 0x03, 0x12, 0x01, 0x02])]));
  } finally {
    await prog.stop();
  }
});
after(async () => { grpcC?.close(); if (server) await server.stop(); });

// The oracle of a goroutine file: {o: goroutine:count, empty: the value of
// its samples with no location}, checked against go tool pprof -top.
async function goroutineOracle(file) {
  const { prof, types } = await oracleForFile(file);
  assert.equal(types.length, 1, `${file}: one sample type`);
  const o = types[0];
  assert.equal(o.typeName, 'goroutine:count');
  assert.equal(o.total, await topTotal(file, 0, o.unit), `${file}: oracle total vs go tool pprof -top "of N total"`);
  const empty = prof.samples.filter((s) => s.locs.length === 0).reduce((a, s) => a + s.values[0], 0n);
  return { o, empty };
}

// Everything the query API says about (svc, goroutine:count) against o.
async function checkEmptyStacks(svc, o, empty, ctx) {
  const win = wideWindow();
  const { fg, all } = await checkQueryAgainst(server, svc, o, win, ctx);
  assert.equal(fg.root.self, Number(empty), `${ctx}: flame graph root self = the samples with no location`);
  // As go tool pprof -top: no row for them, but they are in the total.
  const named = all.rows.reduce((a, r) => a + r.self, 0);
  assert.equal(named, Number(o.total - empty), `${ctx}: /api/top rows' self sum = total - empty stacks`);
  assert.ok(!all.rows.some((r) => r.name === '' || r.name === 'total'), `${ctx}: /api/top has a row for the root: ${JSON.stringify(all.rows.slice(0, 5))}`);
  // One snapshot: every non-zero timeline point is the total.
  const tl = await getJson(server.uiUrl, '/api/timeline', { service: svc, type: o.typeName, ...win });
  const nonzero = tl.points.filter((p) => p[1] !== 0);
  assert.ok(nonzero.length >= 1, `${ctx}: timeline has no point`);
  for (const p of nonzero) assert.equal(p[1], Number(o.total), `${ctx}: timeline point ${JSON.stringify(p)}`);
  // The export: go tool pprof reads the same total, the root's self as a
  // sample with no location.
  const res = await get(server.uiUrl, '/api/pprof', { service: svc, type: o.typeName, ...win });
  assert.equal(res.status, 200, `${ctx}: /api/pprof ${res.status} ${res.text.slice(0, 200)}`);
  const f = path.join(dir, `${svc}-export.pb.gz`);
  fs.writeFileSync(f, res.buf);
  assert.equal(await topTotal(f, 0, o.unit), o.total, `${ctx}: export's go tool pprof -top total`);
  const back = await pprofRaw(f);
  const bo = oracle(back, 0);
  assert.equal(bo.total, o.total, `${ctx}: export's total (go tool pprof)`);
  const backEmpty = back.samples.filter((s) => s.locs.length === 0).reduce((a, s) => a + s.values[0], 0n);
  assert.equal(backEmpty, empty, `${ctx}: export's samples with no location`);
}

test('a real Go goroutine profile: /profiling/upload counts its samples with no location at the root', async () => {
  // Go's runtime usually serves one such sample (a goroutine with no stack
  // yet or any more), but not always: on a loaded machine some fetches have
  // none, so this test takes what the fetch gave; the next ones add their own.
  const { o, empty } = await goroutineOracle(real);
  const svc = uniqueName('es-real');
  const r = await upload(server, fs.readFileSync(real), { serviceName: svc });
  assert.equal(r.status, 200, `${r.text}\n${tail(server.stderr())}`);
  await checkEmptyStacks(svc, o, empty, 'real goroutine profile');
});

test('two samples with no location, /profiling/upload and /ingest (Pyroscope)', async () => {
  const { o, empty } = await goroutineOracle(more);
  const before = (await goroutineOracle(real)).empty;
  assert.equal(empty, before + 2n, `the built profile has the added sample of value 2: ${empty}`);
  const svc = uniqueName('es-upload');
  const r = await upload(server, fs.readFileSync(more), { serviceName: svc });
  assert.equal(r.status, 200, `${r.text}\n${tail(server.stderr())}`);
  await checkEmptyStacks(svc, o, empty, '/profiling/upload');

  const app = uniqueName('es-ingest');
  const t = nowS() - 120;
  const q = new URLSearchParams({ name: `${app}{env=prod}`, from: `${t}`, until: `${t + 10}`, format: 'pprof' });
  const res = await fetch(`${server.uploadUrl}/ingest?${q}`, { method: 'POST', body: zlib.gzipSync(fs.readFileSync(more)), signal: AbortSignal.timeout(60000) });
  assert.equal(res.status, 200, `/ingest: ${await res.text()}\n${tail(server.stderr())}`);
  await checkEmptyStacks(app, o, empty, '/ingest');
});

test('OTLP/HTTP and OTLP/gRPC: a Sample on an empty Stack counts at the root', async () => {
  const { o, empty } = await goroutineOracle(more);
  const svcHttp = uniqueName('es-otlp-http');
  const svcGrpc = uniqueName('es-otlp-grpc');
  const convert = (svc) => pprofToOtlp(readPprofFile(more), { serviceName: svc, timeUnixNano: BigInt(Date.now() - 30000) * 1000000n });
  // The converter puts the empty location list in a stack_table entry of
  // its own; over gRPC those samples use stack_table[0], the zero Stack.
  const http = convert(svcHttp);
  const grpcReq = convert(svcGrpc);
  const st = grpcReq.dictionary.stackTable;
  let moved = 0;
  for (const s of grpcReq.resourceProfiles[0].scopeProfiles[0].profiles[0].samples) {
    if ((st[s.stackIndex].locationIndices ?? []).length === 0 && s.stackIndex !== 0) { s.stackIndex = 0; moved++; }
  }
  // At least the added one: the live profile may or may not carry its own (see the first test).
  assert.ok(moved >= 1, `samples moved to stack_table[0]: ${moved}`);
  for (const [svc, req] of [[svcHttp, http], [svcGrpc, grpcReq]]) {
    const exp = expectRequest(req).get(svc).get('goroutine:count');
    assert.equal(exp.total, o.total, `${svc}: the OTLP request's total (computed in JS) vs go tool pprof`);
  }
  assertAccepted(await sendPb(server, encodeRequest(http), 'gzip'), 'OTLP/HTTP', server);
  assertAccepted(await grpcExport(grpcC, grpcReq), 'OTLP/gRPC', server);
  await checkEmptyStacks(svcHttp, o, empty, 'OTLP/HTTP');
  await checkEmptyStacks(svcGrpc, o, empty, 'OTLP/gRPC (stack_table[0])');
});
