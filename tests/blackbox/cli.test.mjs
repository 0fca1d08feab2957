// The client subcommands against a running server: kiln upload / top / export.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { TESTDATA, uniqueName, mkTemp } from './lib/env.mjs';
import { startServer } from './lib/server.mjs';
import { getJson, serviceNames, wideWindow } from './lib/http.mjs';
import { oracleForFile, oracle, pprofRaw, sortedSelf } from './lib/pprof.mjs';
import { assertOracleEqual, assertUploadReply } from './lib/check.mjs';
import { runKiln } from './lib/cli.mjs';

const FIB = path.join(TESTDATA, 'pprof', 'go-cpu-fib.pb.gz');
const PY = path.join(TESTDATA, 'pprof', 'python-pyspy-not-gzipped.pb');
let server;
let fib;
const svc = uniqueName('cli');

before(async () => {
  [server, fib] = await Promise.all([startServer(), oracleForFile(FIB)]);
});
after(async () => { if (server) await server.stop(); });

test('kiln upload FILE --service NAME --url: prints the JSON reply, exit 0, data queryable', async () => {
  const r = await runKiln(['upload', FIB, '--service', svc, '--url', server.uploadUrl]);
  assert.equal(r.code, 0, `exit ${r.code}; stderr: ${r.stderr}`);
  let reply;
  try { reply = JSON.parse(r.stdout.toString().trim()); } catch { assert.fail(`stdout is not the JSON reply: ${r.stdout}`); }
  assertUploadReply(reply, fib.prof, 'kiln upload stdout');
  for (const o of fib.types) {
    const fg = await getJson(server.uiUrl, '/api/flamegraph', { service: svc, type: o.typeName, ...wideWindow() });
    assert.equal(fg.total, Number(o.total), `${o.typeName} after kiln upload`);
  }
});

test('kiln upload of a raw (not gzipped) file works too', async () => {
  const s = uniqueName('cli-py');
  const r = await runKiln(['upload', PY, '--service', s, '--url', server.uploadUrl]);
  assert.equal(r.code, 0, `exit ${r.code}; stderr: ${r.stderr}`);
  const o = (await oracleForFile(PY)).types[0];
  const fg = await getJson(server.uiUrl, '/api/flamegraph', { service: s, type: o.typeName, ...wideWindow() });
  assert.equal(fg.total, Number(o.total));
});

test('kiln upload failures: non-zero exit with a message, nothing stored', async () => {
  const dir = mkTemp('cli');
  const garbage = path.join(dir, 'garbage.pb');
  fs.writeFileSync(garbage, Buffer.from([0x12, 0x7f, 0x01]));
  const bad = uniqueName('cli-bad');
  const cases = [
    ['missing file', ['upload', path.join(dir, 'nope.pb.gz'), '--service', bad, '--url', server.uploadUrl], /nope\.pb\.gz|no such file|not found|cannot open/i],
    ['malformed pprof (server says 400)', ['upload', garbage, '--service', bad, '--url', server.uploadUrl], /400|truncat|malformed|length/i],
    ['no --service', ['upload', FIB, '--url', server.uploadUrl], /service/i],
    ['unreachable server', ['upload', FIB, '--service', bad, '--url', 'http://127.0.0.1:1'], /connect|refused|127\.0\.0\.1:1/i],
  ];
  for (const [what, args, re] of cases) {
    const r = await runKiln(args);
    assert.notEqual(r.code, 0, `${what}: exit code should be non-zero (stdout ${r.stdout})`);
    assert.match(r.stderr + r.stdout.toString(), re, `${what}: message`);
  }
  assert.ok(!(await serviceNames(server)).has(bad), 'failed uploads stored nothing');
});

test('kiln top --service --type: a table with the top functions in go tool pprof order', async () => {
  const o = fib.types.find((x) => x.typeName === 'cpu:nanoseconds');
  const r = await runKiln(['top', '--service', svc, '--type', o.typeName, '--url', server.uiUrl]);
  assert.equal(r.code, 0, `exit ${r.code}; stderr: ${r.stderr}`);
  const out = r.stdout.toString();
  const lines = out.split('\n');
  // The 5 biggest self values in the file are distinct; their functions must
  // appear in this order, one per line.
  const top5 = sortedSelf(o).slice(0, 5).map(([n]) => n);
  let last = -1;
  for (const n of top5) {
    const ix = lines.findIndex((l) => l.includes(n));
    assert.ok(ix > last, `kiln top: "${n}" should appear after line ${last}:\n${out.slice(0, 2000)}`);
    last = ix;
  }
  // Same rows as the API.
  const api = await getJson(server.uiUrl, '/api/top', { service: svc, type: o.typeName, limit: 5 });
  assert.deepEqual(api.rows.map((x) => x.name), top5, '/api/top order');
});

test('kiln export --service --type: gzip pprof that go tool pprof reads back', async () => {
  const o = fib.types.find((x) => x.typeName === 'samples:count');
  const r = await runKiln(['export', '--service', svc, '--type', o.typeName, '--url', server.uiUrl]);
  assert.equal(r.code, 0, `exit ${r.code}; stderr: ${r.stderr}`);
  const f = path.join(mkTemp('cli-export'), 'out.pb.gz');
  fs.writeFileSync(f, r.stdout);
  const prof = await pprofRaw(f);
  const ix = prof.sampleTypes.findIndex((s) => `${s.type}:${s.unit}` === o.typeName);
  assert.ok(ix >= 0, `export has ${o.typeName}`);
  assertOracleEqual(oracle(prof, ix), o, 'kiln export vs uploaded file');
});
