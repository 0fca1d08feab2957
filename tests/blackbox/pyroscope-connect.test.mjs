// Pyroscope's Connect push (API: Push: push.v1.PusherService/Push (Pyroscope
// Connect)) with a real Connect client: @connectrpc/connect-node over HTTP/1.1
// and over prior-knowledge h2c on the upload and UI listeners, binary and JSON
// codecs, gzip on and off, several series of several raw pprof profiles each.
// The messages come from tests/blackbox/proto/push.proto, generated at test
// time (lib/protogen.mjs). Oracle: `go tool pprof -raw` of
// the fixtures (lib/pprof.mjs), summed per series.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http2 from 'node:http2';
import path from 'node:path';
import zlib from 'node:zlib';
import { create } from '@bufbuild/protobuf';
import { createClient, ConnectError, Code } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport, compressionGzip } from '@connectrpc/connect-node';
import { TESTDATA, uniqueName, mkTemp } from './lib/env.mjs';
import { startServer, tail } from './lib/server.mjs';
import { upload, services, wideWindow } from './lib/http.mjs';
import { oracleForFile } from './lib/pprof.mjs';
import { checkQueryAgainst } from './lib/check.mjs';
import { generateProtos } from './lib/protogen.mjs';
import { createKey } from './lib/s6.mjs';

const FIXTURES = ['go-cpu-fib.pb.gz', 'go-cpu-two-stacks.pb.gz', 'python-pyspy-not-gzipped.pb', 'nodejs-wall.pb.gz'];
const raw = (f) => fs.readFileSync(path.join(TESTDATA, 'pprof', f));
const oracles = new Map();
let pb; // the generated module
let server;

before(async () => {
  [pb] = await generateProtos('push', ['proto/push.proto', 'proto/types.proto']);
  for (const f of FIXTURES) oracles.set(f, await oracleForFile(path.join(TESTDATA, 'pprof', f)));
  server = await startServer();
});
after(async () => {
  if (server) await server.stop();
});

function client(base, { httpVersion = '1.1', binary = true, gzip = false, headers } = {}) {
  const transport = createConnectTransport({
    baseUrl: base,
    httpVersion,
    useBinaryFormat: binary,
    sendCompression: gzip ? compressionGzip : undefined,
    acceptCompression: [compressionGzip],
    compressMinBytes: 1,
    interceptors: headers ? [(next) => async (req) => {
      for (const [k, v] of Object.entries(headers)) req.header.set(k, v);
      return next(req);
    }] : [],
  });
  return createClient(pb.PusherService, transport);
}

// A PushRequest of series [{labels: {k: v}, files: [fixture or Buffer, ...]}].
function request(series) {
  return create(pb.PushRequestSchema, {
    series: series.map((s) => ({
      labels: Object.entries(s.labels).map(([name, value]) => ({ name, value })),
      samples: s.files.map((f, i) => ({ rawProfile: typeof f === 'string' ? raw(f) : f, ID: `sample-${i}` })),
    })),
  });
}

// The oracle of a series: per type, the sums over its raw profiles.
function seriesOracle(files) {
  const byType = new Map();
  for (const f of files) {
    for (const o of oracles.get(f).types) {
      const m = byType.get(o.typeName) ?? { typeName: o.typeName, unit: o.unit, total: 0n, self: new Map(), cum: new Map(), hasNegative: false, unnamed: false };
      m.total += o.total;
      for (const [k, v] of o.self) m.self.set(k, (m.self.get(k) ?? 0n) + v);
      for (const [k, v] of o.cum) m.cum.set(k, (m.cum.get(k) ?? 0n) + v);
      m.hasNegative ||= o.hasNegative;
      m.unnamed ||= o.unnamed;
      byType.set(o.typeName, m);
    }
  }
  return [...byType.values()];
}

// Three series of two or three raw profiles each; one raw profile is gzipped by the test.
function threeSeries(tag) {
  const svc = (n) => uniqueName(`connect-${tag}-${n}`);
  return [
    { svc: svc('go'), labels: { env: 'prod' }, name: 'process_cpu', files: ['go-cpu-fib.pb.gz', 'go-cpu-two-stacks.pb.gz', 'go-cpu-fib.pb.gz'] },
    { svc: svc('py'), labels: { env: 'dev', region: 'eu-1' }, name: 'process_cpu', files: ['python-pyspy-not-gzipped.pb', 'python-pyspy-not-gzipped.pb'], gzipSecond: true },
    { svc: svc('node'), labels: { env: 'prod' }, name: 'wall', files: ['nodejs-wall.pb.gz', 'go-cpu-fib.pb.gz'] },
  ];
}

function toRequest(list) {
  return request(list.map((s) => ({
    labels: { service_name: s.svc, __name__: s.name, ...s.labels, __session_id__: 'abc' },
    files: s.files.map((f, i) => (s.gzipSecond && i === 1 ? zlib.gzipSync(raw(f)) : f)),
  })));
}

const MATRIX = [];
for (const httpVersion of ['1.1', '2']) {
  for (const binary of [true, false]) {
    for (const gzip of [false, true]) MATRIX.push({ listener: 'upload', httpVersion, binary, gzip });
  }
}
MATRIX.push({ listener: 'ui', httpVersion: '2', binary: true, gzip: true });
MATRIX.push({ listener: 'ui', httpVersion: '1.1', binary: false, gzip: false });

for (const m of MATRIX) {
  const what = `${m.listener} HTTP/${m.httpVersion} ${m.binary ? 'binary' : 'JSON'} gzip ${m.gzip ? 'on' : 'off'}`;
  test(`Push ${what}: three series of 2-3 raw profiles; every type equals go tool pprof summed per series`, async () => {
    const tag = `${m.listener}${m.httpVersion === '2' ? 'h2' : 'h1'}${m.binary ? 'pb' : 'js'}${m.gzip ? 'gz' : ''}`;
    const list = threeSeries(tag);
    const base = m.listener === 'ui' ? server.uiUrl : server.uploadUrl;
    let res;
    try {
      res = await client(base, m).push(toRequest(list));
    } catch (e) {
      assert.fail(`${what}: ${e}\n${tail(server.stderr())}`);
    }
    assert.equal(res.$typeName, 'push.v1.PushResponse');
    const win = wideWindow();
    for (const s of list) {
      for (const o of seriesOracle(s.files)) await checkQueryAgainst(server, s.svc, o, win, `${what} ${s.svc}`);
    }
    // Series labels filter; __ labels and service_name are not series labels.
    const go = list[0];
    const cpu = seriesOracle(go.files).find((o) => o.typeName === 'cpu:nanoseconds');
    const prod = await fetch(`${server.uiUrl}/api/flamegraph?${new URLSearchParams({ service: go.svc, type: cpu.typeName, 'label.env': 'prod', ...win })}`).then((r) => r.json());
    assert.equal(prod.total, Number(cpu.total));
    const none = await fetch(`${server.uiUrl}/api/flamegraph?${new URLSearchParams({ service: go.svc, type: cpu.typeName, 'label.env': 'dev', ...win })}`).then((r) => r.json());
    assert.equal(none.total ?? 0, 0);
    const labels = JSON.stringify(await fetch(`${server.uiUrl}/api/labels?${new URLSearchParams({ service: list[1].svc, type: 'samples:count', ...win })}`).then((r) => r.json()));
    assert.ok(labels.includes('"region"') && labels.includes('"eu-1"'), labels.slice(0, 300));
    assert.ok(!labels.includes('__session_id__') && !labels.includes('service_name'), labels.slice(0, 300));
  });
}

// The pprof decoder's message for bytes, as /profiling/upload reports it.
async function decoderMessage(bytes) {
  const r = await upload(server, bytes, { serviceName: uniqueName('connect-ref') });
  assert.equal(r.status, 400, r.text);
  return r.json.error;
}

for (const httpVersion of ['1.1', '2']) {
  test(`HTTP/${httpVersion}: a bad raw profile in the middle refuses the whole Push (invalid_argument naming series and sample); nothing stored`, async () => {
    const truncated = raw('python-pyspy-not-gzipped.pb').subarray(0, 200);
    const ref = await decoderMessage(truncated);
    const list = threeSeries(`bad${httpVersion === '2' ? 'h2' : 'h1'}`);
    const req = request([
      { labels: { service_name: list[0].svc }, files: list[0].files },
      { labels: { service_name: list[1].svc }, files: ['go-cpu-fib.pb.gz', truncated, 'go-cpu-fib.pb.gz'] },
      { labels: { service_name: list[2].svc }, files: list[2].files },
    ]);
    for (const binary of [true, false]) {
      await assert.rejects(client(server.uploadUrl, { httpVersion, binary }).push(req), (e) => {
        assert.ok(e instanceof ConnectError, String(e));
        assert.equal(e.code, Code.InvalidArgument, String(e));
        assert.equal(e.rawMessage, `series[1].samples[1]: ${ref}`);
        return true;
      });
    }
    const names = new Set((await services(server)).map((s) => s.name));
    for (const s of list) assert.ok(!names.has(s.svc), `${s.svc} stored from a refused Push`);
  });
}

// A raw Connect call (fetch for HTTP/1.1, node:http2 for h2c): {status, ctype, json}.
async function rawCall(base, route, { httpVersion = '1.1', headers = {}, body = Buffer.alloc(0) } = {}) {
  if (httpVersion === '1.1') {
    const r = await fetch(`${base}${route}`, { method: 'POST', headers: { 'content-type': 'application/proto', ...headers }, body });
    const text = await r.text();
    return { status: r.status, ctype: r.headers.get('content-type'), text, json: text ? JSON.parse(text) : undefined };
  }
  const session = http2.connect(base);
  try {
    return await new Promise((resolve, reject) => {
      session.on('error', reject);
      const s = session.request({ ':method': 'POST', ':path': route, 'content-type': 'application/proto', ...headers });
      const chunks = [];
      let head;
      s.on('response', (h) => { head = h; });
      s.on('data', (c) => chunks.push(c));
      s.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: head[':status'], ctype: head['content-type'], text, json: text ? JSON.parse(text) : undefined });
      });
      s.on('error', reject);
      s.end(body);
    });
  } finally {
    session.close();
  }
}

test('errors on both listeners and HTTP versions: exact Connect code, HTTP status and message', async () => {
  const cases = [
    ['unknown method', '/push.v1.PusherService/Nope', {}, Buffer.alloc(0), 404, 'unimplemented',
      'unknown method /push.v1.PusherService/Nope: this server implements push.v1.PusherService/Push'],
    ['wrong Content-Type', '/push.v1.PusherService/Push', { 'content-type': 'text/plain' }, Buffer.alloc(0), 400, 'invalid_argument',
      'Content-Type text/plain is not supported: application/proto or application/json'],
    ['unknown encoding', '/push.v1.PusherService/Push', { 'content-encoding': 'br' }, Buffer.alloc(0), 404, 'unimplemented',
      'Content-Encoding br is not supported: gzip, zstd, deflate or identity'],
    ['gzip bomb', '/push.v1.PusherService/Push', { 'content-encoding': 'gzip' }, zlib.gzipSync(Buffer.alloc(40 << 20)), 429, 'resource_exhausted',
      'decompressed body exceeds the 32 MiB limit'],
    ['bad gzip', '/push.v1.PusherService/Push', { 'content-encoding': 'gzip' }, Buffer.from('not gzip'), 400, 'invalid_argument', null],
    ['malformed PushRequest', '/push.v1.PusherService/Push', {}, Buffer.from([0x0a, 0x05, 0x12]), 400, 'invalid_argument',
      'series: length at byte 1 runs past the end of its message or is malformed'],
    ['malformed JSON', '/push.v1.PusherService/Push', { 'content-type': 'application/json' }, Buffer.from('{"series":[{"samples":[{"rawProfile":5}]}]}'), 400, 'invalid_argument',
      'series[0].samples[0].rawProfile: expected a base64 string'],
    ['version 2', '/push.v1.PusherService/Push', { 'connect-protocol-version': '2' }, Buffer.alloc(0), 400, 'invalid_argument',
      'Connect-Protocol-Version 2 is not supported: 1'],
  ];
  for (const base of [server.uploadUrl, server.uiUrl]) {
    for (const httpVersion of ['1.1', '2']) {
      for (const [what, route, headers, body, status, code, message] of cases) {
        const r = await rawCall(base, route, { httpVersion, headers, body });
        const ctx = `${base} HTTP/${httpVersion} ${what}: ${r.status} ${r.text.slice(0, 300)}`;
        assert.equal(r.status, status, ctx);
        assert.equal(r.ctype, 'application/json', ctx);
        assert.equal(r.json.code, code, ctx);
        if (message) assert.equal(r.json.message, message, ctx);
      }
    }
    // Any other path over h2c is unimplemented (the HTTP/1.1 routes stay HTTP/1.1's;
    // querier.v1 on the UI listener is pyroscope-querier.test.mjs's).
    const q = await rawCall(base, '/settings.v1.SettingsService/Get', { httpVersion: '2' });
    assert.equal(q.status, 404, q.text);
    assert.equal(q.json.code, 'unimplemented', q.text);
  }
  // An empty PushRequest is a valid Push: an empty PushResponse.
  const ok = await client(server.uploadUrl, { httpVersion: '2' }).push(create(pb.PushRequestSchema, {}));
  assert.equal(ok.$typeName, 'push.v1.PushResponse');
  // Over HTTP/1.1 a declared oversize body is refused before it is read: resource_exhausted (429).
  const big = await fetch(`${server.uploadUrl}/push.v1.PusherService/Push`, {
    method: 'POST', headers: { 'content-type': 'application/proto' }, body: Buffer.alloc(33 << 20, 1),
  });
  assert.equal(big.status, 429);
  assert.deepEqual(await big.json(), { code: 'resource_exhausted', message: 'request body is 34603008 bytes; the limit is 32 MiB' });
});

test('with auth required: Bearer and Basic ingest keys push; no key unauthenticated, a query key permission_denied; HTTP/1.1 and h2c', async () => {
  const dataDir = mkTemp('connect-auth');
  const ingestKey = await createKey(dataDir, 'cproj', 'connect-ingest', 'ingest');
  const queryKey = await createKey(dataDir, 'cproj', 'connect-query', 'query');
  const s = await startServer({ dataDir, extraArgs: ['--auth', 'required'] });
  try {
    const basic = (user, key) => `Basic ${Buffer.from(`${user}:${key}`).toString('base64')}`;
    const stored = [];
    const o = seriesOracle(['go-cpu-fib.pb.gz']).find((x) => x.typeName === 'cpu:nanoseconds');
    for (const base of [s.uploadUrl, s.uiUrl]) {
      for (const httpVersion of ['1.1', '2']) {
        for (const [what, headers] of [
          ['Bearer', { authorization: `Bearer ${ingestKey}` }],
          ['Basic', { authorization: basic('12345', ingestKey) }],
        ]) {
          const svc = uniqueName('connect-auth');
          try {
            await client(base, { httpVersion, headers }).push(request([{ labels: { service_name: svc }, files: ['go-cpu-fib.pb.gz'] }]));
          } catch (e) {
            assert.fail(`${base} HTTP/${httpVersion} ${what}: ${e}\n${tail(s.stderr(), 8)}`);
          }
          stored.push(svc);
        }
        for (const [what, headers, code, re] of [
          ['no key', undefined, Code.Unauthenticated, /HTTP Basic with the key as the password/],
          ['query key', { authorization: `Bearer ${queryKey}` }, Code.PermissionDenied, /scope ingest/],
        ]) {
          await assert.rejects(
            client(base, { httpVersion, headers }).push(request([{ labels: { service_name: uniqueName('connect-refused') }, files: ['go-cpu-fib.pb.gz'] }])),
            (e) => { assert.equal(e.code, code, `${what}: ${e}`); assert.match(e.rawMessage, re); return true; });
        }
      }
    }
    const q = { 'x-kiln-key': queryKey };
    const list = (await fetch(`${s.uiUrl}/api/services?${new URLSearchParams(wideWindow())}`, { headers: q }).then((r) => r.json())).services.map((x) => x.name);
    for (const svc of stored) assert.ok(list.includes(svc), `${svc} stored under the key's project`);
    assert.ok(!list.some((n) => n.startsWith('connect-refused')), 'refused pushes stored');
    const fg = await fetch(`${s.uiUrl}/api/flamegraph?${new URLSearchParams({ service: stored[3], type: o.typeName, ...wideWindow() })}`, { headers: q }).then((r) => r.json());
    assert.equal(fg.total, Number(o.total));
  } finally {
    await s.stop();
  }
});

test('the same method as gRPC on the OTLP/gRPC listener (connect-node gRPC transport): stored exactly; a bad raw profile is INVALID_ARGUMENT', async () => {
  const s = await startServer({ otlp: true });
  try {
    const grpc = createClient(pb.PusherService, createGrpcTransport({ baseUrl: s.urls.otlp_grpc, sendCompression: compressionGzip }));
    const list = threeSeries('grpc');
    await grpc.push(toRequest(list));
    const win = wideWindow();
    for (const x of list) {
      for (const o of seriesOracle(x.files)) await checkQueryAgainst(s, x.svc, o, win, `gRPC ${x.svc}`);
    }
    const truncated = raw('python-pyspy-not-gzipped.pb').subarray(0, 200);
    const ref = await decoderMessage(truncated);
    const svc = uniqueName('connect-grpc-bad');
    await assert.rejects(grpc.push(request([{ labels: { service_name: svc }, files: ['go-cpu-fib.pb.gz', truncated] }])), (e) => {
      assert.equal(e.code, Code.InvalidArgument, String(e));
      assert.equal(e.rawMessage, `series[0].samples[1]: ${ref}`);
      return true;
    });
    const names = (await services(s)).map((x) => x.name);
    assert.ok(!names.includes(svc), 'refused gRPC push stored');
  } finally {
    await s.stop();
  }
});
