// Every real pprof of the shared test data, converted to OTLP by our own
// encoder (lib/otlp-pprof.mjs: one Profile per sample type, as the
// Collector's pprof receiver does) and sent over OTLP/HTTP and OTLP/gRPC,
// must read back exactly like the same file through the pprof upload: the
// /api/flamegraph and /api/top JSON of the OTLP services equal those of the
// pprof service, and all of them equal the go tool pprof oracle.
// The converter itself is checked first without a server: the JS expectation
// of the converted request equals go tool pprof's reading of the file.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { TESTDATA, uniqueName } from './lib/env.mjs';
import { upload, getJson, wideWindow } from './lib/http.mjs';
import { oracleForFile } from './lib/pprof.mjs';
import { checkQueryAgainst } from './lib/check.mjs';
import { startOtlpServer, sendPb, grpcClient, grpcExport, encodeRequest } from './lib/otlp.mjs';
import { readPprofFile, pprofToOtlp } from './lib/otlp-pprof.mjs';
import { expectRequest } from './lib/otlp-expect.mjs';
import { assertAccepted, firstDiff } from './lib/otlp-check.mjs';

const PPROF_DIR = path.join(TESTDATA, 'pprof');
const files = fs.readdirSync(PPROF_DIR).filter((f) => /\.pb(\.gz)?$/.test(f)).sort();
const oracles = new Map();
let server;
let grpcC;
// The server starts with the first test that needs it (the converter
// self-checks run without one).
async function getServer() {
  if (!server) {
    server = await startOtlpServer();
    grpcC = grpcClient(server, { channelOptions: { 'grpc.default_compression_algorithm': 2 } });
  }
  return server;
}

before(async () => {
  await Promise.all(files.map(async (f) => oracles.set(f, await oracleForFile(path.join(PPROF_DIR, f)))));
});
after(async () => { grpcC?.close(); if (server) await server.stop(); });

const toNum = (m) => new Map([...m].filter(([, v]) => v !== 0n).map(([k, v]) => [k, Number(v)]));

function convert(f, serviceName, strindexAttrs = false) {
  const p = readPprofFile(path.join(PPROF_DIR, f));
  return pprofToOtlp(p, { serviceName, strindexAttrs, timeUnixNano: BigInt(Date.now() - 30000) * 1000000n });
}

for (const f of files) {
  test(`converter self-check: ${f} as OTLP, computed in JS, equals go tool pprof`, () => {
    const { types } = oracles.get(f);
    const req = convert(f, 'x');
    const exp = expectRequest(req).get('x');
    for (const o of types) {
      const e = exp.get(o.typeName);
      assert.ok(e, `${f}: converted request lacks ${o.typeName}`);
      assert.equal(e.total, o.total, `${f} ${o.typeName}: total`);
      if (!o.unnamed) {
        assert.deepEqual(toNum(e.self), toNum(o.self), `${f} ${o.typeName}: self`);
        assert.deepEqual(toNum(e.cum), toNum(o.cum), `${f} ${o.typeName}: cum`);
      }
    }
  });
}

for (const f of files) {
  test(`${f}: OTLP/HTTP and OTLP/gRPC give the pprof upload's flame graph and top`, async () => {
    const { types } = oracles.get(f);
    await getServer();
    const svcPprof = uniqueName(`vs-pprof-${f.replace(/\W+/g, '-')}`);
    const svcHttp = `${svcPprof}-otlp-http`;
    const svcGrpc = `${svcPprof}-otlp-grpc`;
    const up = await upload(server, fs.readFileSync(path.join(PPROF_DIR, f)), { serviceName: svcPprof });
    assert.equal(up.status, 200, `pprof upload: ${up.text}`);
    assertAccepted(await sendPb(server, encodeRequest(convert(f, svcHttp)), 'gzip'), `${f} OTLP/HTTP`, server);
    // gRPC: resource attributes by key_strindex / string_value_strindex.
    assertAccepted(await grpcExport(grpcC, convert(f, svcGrpc, true)), `${f} OTLP/gRPC (strindex attributes)`, server);
    const win = wideWindow();
    for (const o of types) {
      const q = (service) => ({ service, type: o.typeName, ...win });
      const ref = {
        fg: await getJson(server.uiUrl, '/api/flamegraph', q(svcPprof)),
        top: await getJson(server.uiUrl, '/api/top', { ...q(svcPprof), limit: 0 }),
      };
      for (const svc of [svcHttp, svcGrpc]) {
        await checkQueryAgainst(server, svc, o, win, `${f} via ${svc.endsWith('http') ? 'OTLP/HTTP' : 'OTLP/gRPC'}`);
        const got = {
          fg: await getJson(server.uiUrl, '/api/flamegraph', q(svc)),
          top: await getJson(server.uiUrl, '/api/top', { ...q(svc), limit: 0 }),
        };
        const d = firstDiff(ref, got);
        assert.equal(d, null, `${f} ${o.typeName}: ${svc} differs from the pprof upload at ${d}`);
      }
    }
  });
}
