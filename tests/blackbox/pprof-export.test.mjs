// /api/pprof and `kiln export` must produce a gzip pprof that go tool pprof
// reads back with the same numbers as /api/flamegraph for the same query and
// as go tool pprof's reading of what was uploaded.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { TESTDATA, uniqueName, mkTemp } from './lib/env.mjs';
import { startServer } from './lib/server.mjs';
import { upload, get, getJson, wideWindow } from './lib/http.mjs';
import { oracleForFile, oracle, pprofRaw } from './lib/pprof.mjs';
import { assertOracleEqual } from './lib/check.mjs';
import { runKiln } from './lib/cli.mjs';

const PPROF_DIR = path.join(TESTDATA, 'pprof');
const dir = mkTemp('export');
let server;

before(async () => { server = await startServer(); });
after(async () => { if (server) await server.stop(); });

// Reads an exported pprof with go tool pprof and returns the oracle of its
// one sample type (an export is of one type: the one queried).
async function readExport(buf, name, typeName) {
  assert.ok(buf.length > 2 && buf[0] === 0x1f && buf[1] === 0x8b, `${name}: export is not gzip (first bytes ${buf.subarray(0, 4).toString('hex')})`);
  const f = path.join(dir, `${name}.pb.gz`);
  fs.writeFileSync(f, buf);
  let prof;
  try {
    prof = await pprofRaw(f);
  } catch (e) {
    assert.fail(`${name}: go tool pprof cannot read the export: ${e.message}`);
  }
  const ix = prof.sampleTypes.findIndex((s) => `${s.type}:${s.unit}` === typeName);
  assert.ok(ix >= 0, `${name}: export has no sample type ${typeName} (has ${prof.sampleTypes.map((s) => `${s.type}:${s.unit}`)})`);
  return { prof, o: oracle(prof, ix) };
}

for (const f of ['go-cpu-fib.pb.gz', 'go-heap-delta.pb.gz', 'nodejs-wall.pb.gz']) {
  test(`/api/pprof of ${f}: go tool pprof reads the same totals and functions`, async () => {
    const src = await oracleForFile(path.join(PPROF_DIR, f));
    const svc = uniqueName('exp');
    const r = await upload(server, fs.readFileSync(path.join(PPROF_DIR, f)), { serviceName: svc });
    assert.equal(r.status, 200, r.text);
    for (const want of src.types) {
      const q = { service: svc, type: want.typeName, ...wideWindow() };
      const fg = await getJson(server.uiUrl, '/api/flamegraph', q);
      const res = await get(server.uiUrl, '/api/pprof', q);
      assert.equal(res.status, 200, `/api/pprof ${want.typeName}: ${res.status} ${res.text.slice(0, 200)}`);
      const { o } = await readExport(res.buf, `${svc}-${want.type}`, want.typeName);
      assert.equal(Number(o.total), fg.total, `${f} ${want.typeName}: export total (go tool pprof) vs /api/flamegraph total`);
      assertOracleEqual(o, want, `${f} ${want.typeName}: export vs uploaded file (both via go tool pprof)`);
    }
  });
}

test('/api/pprof of two merged uploads: window type doubles', async () => {
  const f = 'go-cpu-fib.pb.gz';
  const src = await oracleForFile(path.join(PPROF_DIR, f));
  const want = src.types.find((o) => o.typeName === 'cpu:nanoseconds');
  const svc = uniqueName('exp-merge');
  for (let i = 0; i < 2; i++) {
    const r = await upload(server, fs.readFileSync(path.join(PPROF_DIR, f)), { serviceName: svc });
    assert.equal(r.status, 200, r.text);
  }
  const res = await get(server.uiUrl, '/api/pprof', { service: svc, type: want.typeName, ...wideWindow() });
  assert.equal(res.status, 200, res.text.slice(0, 200));
  const { o } = await readExport(res.buf, `${svc}-merged`, want.typeName);
  const doubled = {
    total: 2n * want.total,
    self: new Map([...want.self].map(([k, v]) => [k, 2n * v])),
    cum: new Map([...want.cum].map(([k, v]) => [k, 2n * v])),
  };
  assertOracleEqual(o, doubled, 'merged export of two uploads');
});

test('kiln export writes the same pprof to stdout', async () => {
  const f = 'go-cpu-span-labels.pb.gz';
  const src = await oracleForFile(path.join(PPROF_DIR, f));
  const svc = uniqueName('exp-cli');
  const r = await upload(server, fs.readFileSync(path.join(PPROF_DIR, f)), { serviceName: svc });
  assert.equal(r.status, 200, r.text);
  for (const want of src.types) {
    const { code, stdout, stderr } = await runKiln(['export', '--service', svc, '--type', want.typeName, '--url', server.uiUrl]);
    assert.equal(code, 0, `kiln export exit ${code}: ${stderr}`);
    const { o } = await readExport(stdout, `${svc}-cli-${want.type}`, want.typeName);
    assertOracleEqual(o, want, `kiln export ${want.typeName} vs uploaded file`);
  }
});
