// OTLP/gRPC (API: Push: OTLP profiles over gRPC) with real HTTP/2 peers: @grpc/grpc-js (gzip and
// identity, several channels, concurrent calls), h2load from nghttp2-client
// (many streams per connection, many connections), unknown methods,
// a message over 32 MiB, and the grpc-status-details-bin decoder (RetryInfo
// arrives with rate limiting in a later issue; its decoder is checked here
// on a Status we encode ourselves).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { uniqueName, mkTemp } from './lib/env.mjs';
import { tail } from './lib/server.mjs';
import { getJson, wideWindow, get } from './lib/http.mjs';
import {
  startOtlpServer, grpcClient, grpcCall, grpcExport, grpc, describeGrpc, encodeRequest, GRPC_PATH, MiB,
  decodeStatus, encodeStatus, encodeRetryInfo, statusDetailsOf, RETRY_INFO_TYPE_URL,
} from './lib/otlp.mjs';
import { buildRequest } from './lib/otlp-build.mjs';
import { expectRequest } from './lib/otlp-expect.mjs';
import { assertAccepted } from './lib/otlp-check.mjs';
import { checkQueryAgainst } from './lib/check.mjs';

const execFileP = promisify(execFile);
let server;
before(async () => { server = await startOtlpServer(); });
after(async () => { if (server) await server.stop(); });

function small(svc, n = 1) {
  return buildRequest({
    resources: [{
      attrs: { 'service.name': svc },
      profiles: [{
        type: ['cpu', 'nanoseconds'], period: 10_000_000,
        samples: [
          { stack: ['main.work', 'main.loop', 'main.main'], values: [String(10_000_000 * n)] },
          { stack: ['runtime.mallocgc', 'main.loop', 'main.main'], values: ['5000000'] },
          { stack: ['@libc.so.6', 'main.main'], values: ['2500000'] },
        ],
      }],
    }],
  });
}

test('Export with gzip (grpc.default_compression_algorithm 2) and identity stores the profile', async () => {
  for (const [label, opts] of [['gzip', { 'grpc.default_compression_algorithm': 2 }], ['identity', {}]]) {
    const svc = uniqueName(`grpc-${label}`);
    const req = small(svc);
    const c = grpcClient(server, { channelOptions: opts });
    try {
      const r = await grpcExport(c, req);
      assertAccepted(r, `gRPC ${label}`, server);
    } finally { c.close(); }
    for (const [, x] of expectRequest(req).get(svc)) await checkQueryAgainst(server, svc, x, wideWindow(), `gRPC ${label}`);
  }
});

test('an empty ExportProfilesServiceRequest succeeds', async () => {
  const c = grpcClient(server);
  try {
    const r = await grpcCall(c, 'Export', Buffer.alloc(0));
    assert.ok(r.ok, `empty request: ${describeGrpc(r)}`);
  } finally { c.close(); }
});

test('unknown method on ProfilesService, and an unknown service → UNIMPLEMENTED', async () => {
  const c = grpcClient(server, { methods: ['Export', 'Nope'] });
  const c2 = grpcClient(server, { service: 'opentelemetry.proto.collector.trace.v1.TraceService' });
  try {
    const r = await grpcCall(c, 'Nope', encodeRequest(small(uniqueName('grpc-nope'))));
    assert.equal(r.codeName, 'UNIMPLEMENTED', `ProfilesService/Nope: ${describeGrpc(r)}`);
    const r2 = await grpcCall(c2, 'Export', encodeRequest(small(uniqueName('grpc-trace'))));
    assert.equal(r2.codeName, 'UNIMPLEMENTED', `TraceService/Export: ${describeGrpc(r2)}`);
    // The connection stays usable.
    const r3 = await grpcExport(c, small(uniqueName('grpc-after-nope')));
    assert.ok(r3.ok, `Export on the same channel afterwards: ${describeGrpc(r3)}`);
  } finally { c.close(); c2.close(); }
});

test('a message over 32 MiB → RESOURCE_EXHAUSTED naming the limit, without RetryInfo; the server stays up', async () => {
  const svc = uniqueName('grpc-big');
  const req = small(svc);
  req.dictionary.stringTable.push('x'.repeat(33 * MiB));
  for (const [label, opts] of [['identity', {}], ['gzip', { 'grpc.default_compression_algorithm': 2 }]]) {
    const c = grpcClient(server, { channelOptions: opts });
    try {
      const r = await grpcExport(c, req);
      assert.equal(r.codeName, 'RESOURCE_EXHAUSTED', `${label} 33 MiB: ${describeGrpc(r)}`);
      assert.match(r.details ?? '', /32 MiB|33554432/, `${label}: message names the limit`);
      const retry = r.statusDetails?.details?.find((d) => d.typeUrl === RETRY_INFO_TYPE_URL);
      assert.equal(retry, undefined, `${label}: too large is permanent, no RetryInfo`);
    } finally { c.close(); }
  }
  const h = await get(server.uiUrl, '/healthz');
  assert.equal(h.status, 200, tail(server.stderr()));
  const c = grpcClient(server);
  try { assertAccepted(await grpcExport(c, small(uniqueName('grpc-after-big'))), 'after the big message', server); } finally { c.close(); }
});

test('200 concurrent calls over 4 channels all succeed and all are stored', async () => {
  const svc = uniqueName('grpc-conc');
  const chans = Array.from({ length: 4 }, (_, i) => grpcClient(server, { channelOptions: i % 2 ? { 'grpc.default_compression_algorithm': 2 } : {} }));
  const req = encodeRequest(small(svc));
  try {
    const rs = await Promise.all(Array.from({ length: 200 }, (_, i) => grpcCall(chans[i % 4], 'Export', req)));
    const bad = rs.filter((r) => !r.ok);
    assert.equal(bad.length, 0, `failed calls: ${bad.slice(0, 3).map(describeGrpc).join('; ')}`);
  } finally { chans.forEach((c) => c.close()); }
  const one = expectRequest(small(svc)).get(svc).get('cpu:nanoseconds');
  const fg = await getJson(server.uiUrl, '/api/flamegraph', { service: svc, type: 'cpu:nanoseconds', ...wideWindow() });
  assert.equal(fg.total, Number(one.total) * 200, '200 identical exports sum');
});

test('h2load: 2000 gRPC-framed Exports over 20 connections × 10 streams, all 2xx, all stored', async () => {
  const svc = uniqueName('grpc-h2load');
  const msg = encodeRequest(small(svc));
  const frame = Buffer.alloc(5 + msg.length);
  frame[0] = 0;
  frame.writeUInt32BE(msg.length, 1);
  msg.copy(frame, 5);
  const dir = mkTemp('h2load');
  const file = path.join(dir, 'export.grpc');
  fs.writeFileSync(file, frame);
  const url = `${server.urls.otlp_grpc}${GRPC_PATH}`;
  const { stdout } = await execFileP('h2load', ['-d', file, '-H', 'content-type: application/grpc', '-H', 'te: trailers',
    '-m', '10', '-c', '20', '-n', '2000', '-t', '2', url], { timeout: 240000, maxBuffer: 16 << 20 });
  const m = /requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored/.exec(stdout);
  assert.ok(m, `h2load output: ${stdout}`);
  const codes = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(stdout);
  assert.equal(Number(m[4]), 2000, `h2load succeeded count:\n${stdout}`);
  assert.equal(Number(codes[1]), 2000, `h2load 2xx:\n${stdout}`);
  // h2load does not read grpc-status; the stored total tells whether every
  // call was really accepted.
  const one = expectRequest(small(svc)).get(svc).get('cpu:nanoseconds');
  const fg = await getJson(server.uiUrl, '/api/flamegraph', { service: svc, type: 'cpu:nanoseconds', ...wideWindow() });
  assert.equal(fg.total, Number(one.total) * 2000, 'every h2load Export stored (grpc-status OK)');
  fs.rmSync(dir, { recursive: true, force: true });
});

test('grpc-status-details-bin decoder: google.rpc.Status with RetryInfo (self-check, no server)', () => {
  const st = encodeStatus({ code: 8, message: 'rate limited', details: [{ typeUrl: RETRY_INFO_TYPE_URL, value: encodeRetryInfo(3, 500000000) }] });
  const md = new grpc.Metadata();
  md.set('grpc-status-details-bin', st);
  const d = statusDetailsOf(md);
  assert.equal(d.code, 8);
  assert.equal(d.message, 'rate limited');
  assert.equal(d.details[0].retryDelaySeconds, 3.5);
  assert.deepEqual(decodeStatus(st).details[0].retryDelaySeconds, 3.5);
});

test('when kiln sends grpc-status-details-bin, it is a google.rpc.Status matching grpc-status and grpc-message', async () => {
  const req = small(uniqueName('grpc-details'));
  req.resourceProfiles[0].scopeProfiles[0].profiles[0].samples[0].stackIndex = 4242;
  const c = grpcClient(server);
  try {
    const r = await grpcExport(c, req);
    assert.equal(r.codeName, 'INVALID_ARGUMENT', describeGrpc(r));
    if (r.statusDetails) {
      assert.equal(r.statusDetails.code, r.code, 'Status.code = grpc-status');
      assert.equal(r.statusDetails.message, r.details, 'Status.message = grpc-message');
    }
  } finally { c.close(); }
});
