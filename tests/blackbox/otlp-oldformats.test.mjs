// Requests of older OTLP Profiles wire formats (testdata/otlp/old-formats)
// must be refused — 400 over OTLP/HTTP, INVALID_ARGUMENT over OTLP/gRPC —
// with a google.rpc.Status message that names the table or field that does
// not fit and says that the sender's format version differs (API: OTLP decoder checks,
// API: Push errors); nothing of them may be stored.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { services } from './lib/http.mjs';
import { tail } from './lib/server.mjs';
import {
  OTLP_DIR, startOtlpServer, postOtlp, grpcClient, grpcCall, grpc, describe, describeGrpc, compress, loadFixture, sendPb,
} from './lib/otlp.mjs';
import { assertAccepted } from './lib/otlp-check.mjs';

const DIR = path.join(OTLP_DIR, 'old-formats');
const VERSION_HINT = /v1\.1[01]|v1\.10|version|0\.1[4-6]\d|older|newer/i;
// file → what the message must name (all of them), besides the version hint.
const EXPECT = {
  'ebpf-profiler-v1.5.pb': [/dictionary/i, /v1\.7|older/i],
  'ebpf-profiler-v1.7.pb': [/stack_table/],
  'ebpf-profiler-v1.8.pb': [/attribute_table|attribute_indices|link_index|wire type|field/i],
  'ebpf-profiler-v1.8-corrupted.pb': [/stack_index/, /1000000000/, /stack_table/],
};

let server;
before(async () => { server = await startOtlpServer(); });
after(async () => { if (server) await server.stop(); });

test('all four old-format files are present', () => {
  assert.deepEqual(fs.readdirSync(DIR).sort(), Object.keys(EXPECT).sort());
});

for (const [file, res] of Object.entries(EXPECT)) {
  const body = () => fs.readFileSync(path.join(DIR, file));
  for (const enc of ['identity', 'gzip']) {
    test(`OTLP/HTTP ${enc}: ${file} → 400 naming the table/field and the format version`, async () => {
      const r = await postOtlp(server, compress(body(), enc), { encoding: enc === 'identity' ? undefined : enc });
      assert.equal(r.status, 400, `${file}: ${describe(r)}\n${tail(server.stderr())}`);
      assert.equal(r.parseError, undefined, `${file}: error body must be a google.rpc.Status: ${r.parseError}`);
      const msg = r.rpcStatus?.message ?? '';
      for (const re of [...res, VERSION_HINT]) assert.match(msg, re, `${file}: message ${JSON.stringify(msg)}`);
      if (r.rpcStatus.code !== undefined) assert.equal(r.rpcStatus.code, 3, `${file}: google.rpc.Status.code should be INVALID_ARGUMENT (3)`);
      assert.deepEqual(await services(server), [], `${file}: a refused request stored something`);
    });
  }
  test(`OTLP/gRPC: ${file} → INVALID_ARGUMENT naming the table/field and the format version`, async () => {
    const c = grpcClient(server);
    try {
      const r = await grpcCall(c, 'Export', body());
      assert.equal(r.code, grpc.status.INVALID_ARGUMENT, `${file}: ${describeGrpc(r)}`);
      for (const re of [...res, VERSION_HINT]) assert.match(r.details ?? '', re, `${file}: grpc-message ${JSON.stringify(r.details)}`);
      assert.deepEqual(await services(server), [], `${file}: a refused request stored something`);
    } finally { c.close(); }
  });
}

test('the same server accepts the current format afterwards (positive control)', async () => {
  const fx = loadFixture(60);
  assertAccepted(await sendPb(server, fx.pb), 'v1.10 fixture', server);
  assert.ok((await services(server)).length > 0, 'fixture stored');
});
