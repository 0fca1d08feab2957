// Bad OTLP input (API: Push: OTLP profiles over HTTP, OTLP decoder checks,
// Push errors): every index kind out of range and
// negative, missing tables, wrong wire types, bad sample shapes and id
// lengths, malformed protobuf/JSON, bad encodings and content types, size
// and frame limits. Each case gets the exact HTTP status with a
// google.rpc.Status body that parses and whose message names what is wrong;
// a subset is also sent over gRPC for the status code. Every case carries
// its own service.name, which must never be listed (nothing partial is
// stored); the same server process answers until the end.
// Also: partial success for samples outside the accepted time window.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { uniqueName } from './lib/env.mjs';
import { tail } from './lib/server.mjs';
import { get, getJson, serviceNames, wideWindow } from './lib/http.mjs';
import {
  startOtlpServer, postOtlp, encodeRequest, compress, describe, describeGrpc, grpcClient, grpcCall, grpc,
  hasZstdCli, rejectedOf, sendPb, sendJson, grpcExport, MiB,
} from './lib/otlp.mjs';
import { buildRequest, encodeWithRaw, nowNs, PbWriter, WT } from './lib/otlp-build.mjs';
import { expectRequest } from './lib/otlp-expect.mjs';
import { assertAccepted } from './lib/otlp-check.mjs';

const VERSION_HINT = /version|v1\.1[01]|v1\.10|0\.1[4-6]\d/i;
const NEG = /-1\b|4294967295|18446744073709551615|negative/i;
const P0 = 'resource_profiles\\[0\\]\\.scope_profiles\\[0\\]\\.profiles\\[0\\]';
const S0 = `${P0}\\.samples\\[0\\]`;
const re = (s) => new RegExp(s);

// The valid base: one resource, one cpu profile of three samples, attributes,
// a link, a native unsymbolized frame.
function base(svc) {
  return buildRequest({
    resources: [{
      attrs: { 'service.name': svc },
      profiles: [{
        type: ['cpu', 'nanoseconds'], period: 10_000_000,
        samples: [
          { stack: ['main.a', 'main.b', 'main.c'], values: [10_000_000], attrs: { 'thread.name': 'main' }, link: { traceId: '0102030405060708090a0b0c0d0e0f10', spanId: '1112131415161718' } },
          { stack: ['main.d', 'main.b', 'main.c'], values: [20_000_000], attrs: { 'thread.name': 'worker' } },
          { stack: ['@libc.so.6', 'main.c'], values: [30_000_000] },
        ],
      }],
    }],
  });
}

const pb = () => new PbWriter();
const sizeOf = (t) => `\\b${t.length}\\b`;
// [name, mutate(req) → void | {body, headers…}, status, [regex strings], opts]
// An index case names the table and its size, the index, and (out of range)
// the format-version hint.
const oob = (path, table, index, size) => [re(path), re(table), re(`\\b${index}\\b`), re(`\\b${size}\\b`), VERSION_HINT];
const neg = (path, table) => [re(path), re(table), NEG];

const cases = [
  // --- every index kind, out of range and negative ---
  ['stack_index out of range', (r) => { r.resourceProfiles[0].scopeProfiles[0].profiles[0].samples[0].stackIndex = 1000000000; }, 400, (r) => oob(`${S0}\\.stack_index`, 'stack_table', 1000000000, r.dictionary.stackTable.length), { grpc: true }],
  ['stack_index negative', (r) => { r.resourceProfiles[0].scopeProfiles[0].profiles[0].samples[0].stackIndex = -1; }, 400, () => neg(`${S0}\\.stack_index`, 'stack_table'), { grpc: true }],
  ['sample attribute_indices out of range', (r) => { r.resourceProfiles[0].scopeProfiles[0].profiles[0].samples[0].attributeIndices = [999]; }, 400, (r) => oob(`${S0}\\.attribute_indices`, 'attribute_table', 999, r.dictionary.attributeTable.length)],
  ['sample attribute_indices negative', (r) => { r.resourceProfiles[0].scopeProfiles[0].profiles[0].samples[0].attributeIndices = [-1]; }, 400, () => neg('attribute_indices', 'attribute_table')],
  ['link_index out of range', (r) => { r.resourceProfiles[0].scopeProfiles[0].profiles[0].samples[0].linkIndex = 999; }, 400, (r) => oob(`${S0}\\.link_index`, 'link_table', 999, r.dictionary.linkTable.length), { grpc: true }],
  ['link_index negative', (r) => { r.resourceProfiles[0].scopeProfiles[0].profiles[0].samples[0].linkIndex = -1; }, 400, () => neg('link_index', 'link_table')],
  ['stack location_indices out of range', (r) => { r.dictionary.stackTable[1].locationIndices[0] = 999; }, 400, (r) => oob('location_indices', 'location_table', 999, r.dictionary.locationTable.length)],
  ['stack location_indices negative', (r) => { r.dictionary.stackTable[1].locationIndices[0] = -1; }, 400, () => neg('location_indices', 'location_table')],
  ['location mapping_index out of range', (r) => { r.dictionary.locationTable[1].mappingIndex = 999; }, 400, (r) => oob('mapping_index', 'mapping_table', 999, r.dictionary.mappingTable.length), { grpc: true }],
  ['location mapping_index negative', (r) => { r.dictionary.locationTable[1].mappingIndex = -1; }, 400, () => neg('mapping_index', 'mapping_table')],
  ['line function_index out of range', (r) => { r.dictionary.locationTable[1].lines[0].functionIndex = 999; }, 400, (r) => oob('function_index', 'function_table', 999, r.dictionary.functionTable.length)],
  ['line function_index negative', (r) => { r.dictionary.locationTable[1].lines[0].functionIndex = -1; }, 400, () => neg('function_index', 'function_table')],
  ['sample_type type_strindex out of range', (r) => { r.resourceProfiles[0].scopeProfiles[0].profiles[0].sampleType.typeStrindex = 9999; }, 400, (r) => oob('sample_type', 'string_table', 9999, r.dictionary.stringTable.length), { grpc: true }],
  ['sample_type unit_strindex negative', (r) => { r.resourceProfiles[0].scopeProfiles[0].profiles[0].sampleType.unitStrindex = -1; }, 400, () => neg('unit_strindex', 'string_table')],
  ['period_type type_strindex out of range', (r) => { r.resourceProfiles[0].scopeProfiles[0].profiles[0].periodType.typeStrindex = 9999; }, 400, (r) => oob('period_type', 'string_table', 9999, r.dictionary.stringTable.length)],
  ['function name_strindex out of range', (r) => { r.dictionary.functionTable[1].nameStrindex = 9999; }, 400, (r) => oob('name_strindex', 'string_table', 9999, r.dictionary.stringTable.length)],
  ['function name_strindex negative', (r) => { r.dictionary.functionTable[1].nameStrindex = -1; }, 400, () => neg('name_strindex', 'string_table')],
  ['function filename_strindex out of range', (r) => { r.dictionary.functionTable[1].filenameStrindex = 9999; }, 400, (r) => oob('filename_strindex', 'string_table', 9999, r.dictionary.stringTable.length)],
  ['function system_name_strindex out of range', (r) => { r.dictionary.functionTable[1].systemNameStrindex = 9999; }, 400, (r) => oob('system_name_strindex', 'string_table', 9999, r.dictionary.stringTable.length)],
  ['mapping filename_strindex out of range', (r) => { r.dictionary.mappingTable[1].filenameStrindex = 9999; }, 400, (r) => oob('filename_strindex', 'string_table', 9999, r.dictionary.stringTable.length)],
  ['attribute key_strindex out of range', (r) => { r.dictionary.attributeTable[1].keyStrindex = 9999; }, 400, (r) => oob('key_strindex', 'string_table', 9999, r.dictionary.stringTable.length)],
  ['attribute string_value_strindex out of range', (r) => { r.dictionary.attributeTable[1].value = { stringValueStrindex: 9999 }; }, 400, (r) => oob('string_value_strindex', 'string_table', 9999, r.dictionary.stringTable.length)],
  ['attribute unit_strindex out of range', (r) => { r.dictionary.attributeTable[1].unitStrindex = 9999; }, 400, (r) => oob('unit_strindex', 'string_table', 9999, r.dictionary.stringTable.length)],
  ['resource key_strindex out of range', (r) => { r.resourceProfiles[0].resource.attributes.push({ keyStrindex: 9999, value: { stringValue: 'x' } }); }, 400, (r) => oob('key_strindex', 'string_table', 9999, r.dictionary.stringTable.length)],
  ['resource key_strindex negative', (r) => { r.resourceProfiles[0].resource.attributes.push({ keyStrindex: -1, value: { stringValue: 'x' } }); }, 400, () => neg('key_strindex', 'string_table')],
  ['resource string_value_strindex out of range', (r) => { r.resourceProfiles[0].resource.attributes.push({ key: 'k8s.pod.name', value: { stringValueStrindex: 9999 } }); }, 400, (r) => oob('string_value_strindex', 'string_table', 9999, r.dictionary.stringTable.length)],
  ['location attribute_indices out of range', (r) => { r.dictionary.locationTable[1].attributeIndices = [999]; }, 400, (r) => oob('attribute_indices', 'attribute_table', 999, r.dictionary.attributeTable.length)],
  ['mapping attribute_indices out of range', (r) => { r.dictionary.mappingTable[1].attributeIndices = [999]; }, 400, (r) => oob('attribute_indices', 'attribute_table', 999, r.dictionary.attributeTable.length)],
  ['profile attribute_indices out of range', (r) => { r.resourceProfiles[0].scopeProfiles[0].profiles[0].attributeIndices = [999]; }, 400, (r) => oob('attribute_indices', 'attribute_table', 999, r.dictionary.attributeTable.length)],
  // --- tables missing (entry 0 and everything after it) ---
  ['no dictionary (format older than v1.7)', (r) => { delete r.dictionary; }, 400, () => [/dictionary/i, /v1\.7|older/i], { grpc: true }],
  ['empty stack_table', (r) => { r.dictionary.stackTable = []; }, 400, () => [/stack_table/, /\b0\b/]],
  ['empty string_table', (r) => { r.dictionary.stringTable = []; }, 400, () => [/string_table/]],
  ['empty location_table', (r) => { r.dictionary.locationTable = []; }, 400, () => [/location_table/]],
  ['empty function_table', (r) => { r.dictionary.functionTable = []; }, 400, () => [/function_table/]],
  ['empty mapping_table', (r) => { r.dictionary.mappingTable = []; }, 400, () => [/mapping_table/]],
  ['empty attribute_table', (r) => { r.dictionary.attributeTable = []; }, 400, () => [/attribute_table/]],
  ['empty link_table', (r) => { r.dictionary.linkTable = []; }, 400, () => [/link_table/]],
  // --- wrong wire types of known fields ---
  ['Sample.stack_index as length-delimited', (r) => ({ body: encodeWithRaw(r, { sampleReplace: pb().bytes(1, [1]).packed(4, [5]).finish() }) }), 400, () => [/stack_index/, /wire type|wire-type|wiretype/i], { grpc: true }],
  ['v1.8/v1.9-shaped Sample (values in field 2, attribute_indices in 3, link_index in 4)', (r) => ({
    body: encodeWithRaw(r, { sampleReplace: pb().uint(1, 1).packed(2, [5_000_000_000]).packed(3, [1]).uint(4, 0).finish() }),
  }), 400, () => [/attribute_indices|link_index|attribute_table/, VERSION_HINT], { grpc: true }],
  ['Profile.time_unix_nano as varint (is fixed64)', (r) => ({ body: encodeWithRaw(r, { profile: pb().uint(3, 5).finish() }) }), 400, () => [/time_unix_nano/, /wire type|wire-type|wiretype/i]],
  ['Profile.sample_type as varint', (r) => ({ body: encodeWithRaw(r, { profile: pb().uint(1, 7).finish() }) }), 400, () => [/sample_type/, /wire type|wire-type|wiretype/i]],
  ['dictionary as varint', (r) => ({ body: encodeWithRaw(r, { dictionaryReplace: pb().uint(2, 1).finish() }) }), 400, () => [/dictionary/]],
  ['string_table entry as varint', (r) => ({ body: encodeWithRaw(r, { dictionary: pb().uint(5, 7).finish() }) }), 400, () => [/string_table/, /wire type|wire-type|wiretype/i]],
  ['Sample.timestamps_unix_nano as packed varints (is fixed64)', (r) => ({ body: encodeWithRaw(r, { sample: pb().uint(5, 12345).finish() }) }), 400, () => [/timestamps_unix_nano/, /wire type|wire-type|wiretype/i]],
  // --- malformed protobuf ---
  ['truncated message', (r) => { const b = encodeRequest(r); return { body: b.subarray(0, b.length - 9) }; }, 400, () => [/truncat|end of|unexpected|malformed|length|past/i], { grpc: true }],
  ['garbage bytes', () => ({ body: Buffer.alloc(64, 0xff) }), 400, () => [/./]],
  ['varint longer than 10 bytes', () => ({ body: Buffer.concat([Buffer.from([0x0a]), Buffer.alloc(11, 0xff), Buffer.from([0x01])]) }), 400, () => [/varint|malformed|overflow|too long/i]],
  ['length past the end of the body', () => ({ body: Buffer.concat([pb().tag(1, WT.LEN).varint(1000).finish(), Buffer.from([1, 2, 3])]) }), 400, () => [/truncat|end of|unexpected|malformed|length|past|exceeds/i]],
  ['group wire type (3)', (r) => ({ body: Buffer.concat([encodeRequest(r), Buffer.from([0x1b])]) }), 400, () => [/./]],
  // --- sample shapes and id lengths ---
  ['sample with neither values nor timestamps', (r) => { delete r.resourceProfiles[0].scopeProfiles[0].profiles[0].samples[0].values; }, 400, () => [re(S0), /value|timestamp/i], { grpc: true }],
  ['values and timestamps of different lengths', (r) => {
    const s = r.resourceProfiles[0].scopeProfiles[0].profiles[0].samples[0];
    s.values = ['1', '2']; const t = nowNs(-30); s.timestampsUnixNano = [t, t, t].map(String);
  }, 400, () => [re(S0), /value|timestamp/i, /\b2\b/, /\b3\b/]],
  ['profile_id of 5 bytes', (r) => { r.resourceProfiles[0].scopeProfiles[0].profiles[0].profileId = Buffer.from([1, 2, 3, 4, 5]); }, 400, () => [/profile_id/, /\b16\b/, /\b5\b/], { grpc: true }],
  ['trace_id of 15 bytes', (r) => { r.dictionary.linkTable[1].traceId = Buffer.alloc(15, 1); }, 400, () => [/trace_id/, /\b16\b/, /\b15\b/]],
  ['span_id of 7 bytes', (r) => { r.dictionary.linkTable[1].spanId = Buffer.alloc(7, 1); }, 400, () => [/span_id/, /\b8\b/, /\b7\b/]],
  // --- transport: methods, content types, encodings, sizes, frames ---
  ['GET', (r) => ({ body: encodeRequest(r), method: 'GET' }), 405, () => [/POST/]],
  ['PUT', (r) => ({ body: encodeRequest(r), method: 'PUT' }), 405, () => [/POST/]],
  ['Content-Type text/plain', (r) => ({ body: encodeRequest(r), contentType: 'text/plain' }), 415, () => [/application\/x-protobuf/, /application\/json/]],
  ['Content-Encoding br (unknown)', (r) => ({ body: encodeRequest(r), encoding: 'br' }), 415, () => [/br|encoding/i, /gzip/]],
  ['corrupt gzip', () => ({ body: Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]), Buffer.alloc(100, 0x55)]), encoding: 'gzip' }), 400, () => [/gzip/i]],
  ['truncated gzip', (r) => { const g = zlib.gzipSync(encodeRequest(r)); return { body: g.subarray(0, g.length - 12), encoding: 'gzip' }; }, 400, () => [/gzip|truncat/i]],
  ['bad zstd', () => ({ body: Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd]), Buffer.alloc(64, 0x55)]), encoding: 'zstd' }), 400, () => [/zstd/i]],
  ['corrupt deflate', () => ({ body: Buffer.alloc(64, 0x55), encoding: 'deflate' }), 400, () => [/deflate|zlib/i]],
  ['body over 32 MiB', () => ({ body: pb().bytes(2, pb().string(5, 'x'.repeat(33 * MiB)).finish()).finish() }), 413, () => [/32 MiB|33554432/], { grpc: 'RESOURCE_EXHAUSTED' }],
  ['gzip bomb (decoded over 32 MiB)', () => ({ body: zlib.gzipSync(pb().bytes(2, pb().string(5, 'x'.repeat(40 * MiB)).finish()).finish()), encoding: 'gzip' }), 413, () => [/32 MiB|33554432/], { grpc: 'RESOURCE_EXHAUSTED' }],
  ['more than 1,000,000 frames', (r) => ({ body: encodeRequest(tooManyFrames(r)) }), 413, () => [/1,?001,?000/, /1,?000,?000/, /lower the batch size/i], { grpc: 'RESOURCE_EXHAUSTED' }],
  // --- OTLP/JSON ---
  ['malformed JSON', () => ({ body: Buffer.from('{"resourceProfiles":[{'), contentType: 'application/json' }), 400, () => [/json|parse|unexpected|malformed/i]],
  ['JSON with stackIndex out of range', (r) => {
    const j = toJson(r); j.resourceProfiles[0].scopeProfiles[0].profiles[0].samples[0].stackIndex = 1000000000;
    return { body: Buffer.from(JSON.stringify(j)), contentType: 'application/json' };
  }, 400, (r) => oob(`${S0}\\.stack_index`, 'stack_table', 1000000000, r.dictionary.stackTable.length)],
  ['JSON with a traceId that is not hex', (r) => {
    const j = toJson(r); j.dictionary.linkTable[1].traceId = 'zz'.repeat(16);
    return { body: Buffer.from(JSON.stringify(j)), contentType: 'application/json' };
  }, 400, () => [/trace_?id/i]],
];

// 1001 distinct stacks of 1000 locations, one sample each: 1,001,000
// frames however they are counted (per sample or per distinct stack).
function tooManyFrames(r) {
  const d = r.dictionary;
  const fn = d.locationTable[1];
  while (d.locationTable.length < 1001) d.locationTable.push({ ...fn, address: String(0x500000 + d.locationTable.length) });
  d.stackTable = [{}];
  const p = r.resourceProfiles[0].scopeProfiles[0].profiles[0];
  p.samples = [];
  for (let k = 0; k < 1001; k++) {
    const locs = Array.from({ length: 1000 }, (_, i) => 1 + ((i + k) % 1000));
    d.stackTable.push({ locationIndices: locs });
    p.samples.push({ stackIndex: k + 1, values: ['1'] });
  }
  return r;
}

// OTLP/JSON of a built request: lowerCamelCase (already), ids as hex,
// 64-bit integers as strings (already).
function toJson(r) {
  const j = structuredClone(r);
  for (const l of j.dictionary.linkTable) {
    if (l.traceId) l.traceId = Buffer.from(l.traceId).toString('hex');
    if (l.spanId) l.spanId = Buffer.from(l.spanId).toString('hex');
  }
  return j;
}

let server;
let pid;
let controlSvc;
const caseServices = [];

before(async () => {
  server = await startOtlpServer();
  pid = server.pid;
  controlSvc = uniqueName('otlp-bad-control');
  const r = await sendPb(server, base(controlSvc));
  assert.equal(r.status, 200, `control: the unbroken base request must be accepted: ${describe(r)}\n${tail(server.stderr())}`);
});
after(async () => { if (server) await server.stop(); });

test(`at least 40 bad OTLP cases are defined (${cases.length})`, () => {
  assert.ok(cases.length >= 40);
  // The base and the JSON helper are valid: the control upload covers the
  // protobuf; every case below breaks exactly one thing.
});

function assertRpcStatus(r, status, res, ctx) {
  assert.equal(r.status, status, `${ctx}: ${describe(r)}\n${tail(server.stderr(), 5)}`);
  assert.equal(r.parseError, undefined, `${ctx}: the error body must be a google.rpc.Status (${r.contentType}): ${r.parseError}; body ${JSON.stringify(r.text.slice(0, 200))}`);
  const msg = r.rpcStatus?.message;
  assert.ok(typeof msg === 'string' && msg.length > 0, `${ctx}: google.rpc.Status without message: ${JSON.stringify(r.rpcStatus)}`);
  for (const x of res) assert.match(msg, x, `${ctx}: message ${JSON.stringify(msg)} should match ${x}`);
  if (r.contentType === 'application/json') {
    assert.equal(typeof r.rpcStatus.code, 'number', `${ctx}: JSON Status needs a numeric "code": ${r.text}`);
  }
}

for (const [name, mutate, status, resOf, opts = {}] of cases) {
  test(`OTLP/HTTP: ${name} → ${status}`, async () => {
    const svc = uniqueName('otlp-bad');
    caseServices.push(svc);
    const req = base(svc);
    const out = mutate(req) ?? {};
    const body = out.body ?? encodeRequest(req);
    const r = await postOtlp(server, out.encoding && !['br'].includes(out.encoding) && out.body === undefined ? compress(body, out.encoding) : body,
      { contentType: out.contentType, encoding: out.encoding, method: out.method });
    assertRpcStatus(r, status, resOf(req), name);
    const h = await get(server.uiUrl, '/healthz');
    assert.equal(h.status, 200, `${name}: /healthz after the case\n${tail(server.stderr())}`);
    assert.ok(!(await serviceNames(server)).has(svc), `${name}: the refused request was stored (service ${svc} is listed)`);
  });
  if (opts.grpc) {
    const want = opts.grpc === true ? 'INVALID_ARGUMENT' : opts.grpc;
    test(`OTLP/gRPC: ${name} → ${want}`, async () => {
      const svc = uniqueName('otlp-bad-grpc');
      caseServices.push(svc);
      const req = base(svc);
      const out = mutate(req) ?? {};
      const body = out.body && out.encoding === 'gzip' ? zlib.gunzipSync(out.body) : out.body ?? encodeRequest(req);
      const c = grpcClient(server);
      try {
        const r = await grpcCall(c, 'Export', body);
        assert.equal(r.codeName, want, `${name}: ${describeGrpc(r)}`);
        for (const x of resOf(req)) assert.match(r.details ?? '', x, `${name}: grpc-message ${JSON.stringify(r.details)} should match ${x}`);
        if (want === 'RESOURCE_EXHAUSTED') {
          const retry = r.statusDetails?.details?.find((d) => d.retryDelaySeconds !== undefined);
          assert.equal(retry, undefined, `${name}: too large is permanent: no RetryInfo (${JSON.stringify(r.statusDetails)})`);
        }
      } finally { c.close(); }
      assert.ok(!(await serviceNames(server)).has(svc), `${name}: the refused gRPC request was stored`);
    });
  }
}

test('after every bad case: same process, control data intact, no case service listed', async () => {
  assert.equal(server.exitInfo(), null, `kiln exited: ${JSON.stringify(server.exitInfo())}\n${tail(server.stderr())}`);
  assert.equal(server.pid, pid);
  const names = await serviceNames(server);
  assert.ok(names.has(controlSvc), 'control service still listed');
  for (const s of caseServices) assert.ok(!names.has(s), `${s} listed`);
  const fg = await getJson(server.uiUrl, '/api/flamegraph', { service: controlSvc, type: 'cpu:nanoseconds', ...wideWindow() });
  assert.equal(fg.total, 60_000_000, 'control flame graph total');
});

// --- partial success: samples outside [now - 14 days, now + 10 min] ---

function timed(svc, tsList) {
  return {
    attrs: { 'service.name': svc },
    profiles: [{
      type: ['cpu', 'nanoseconds'], period: 10_000_000,
      samples: tsList.map((t, i) => ({ stack: [`main.f${i}`, 'main.main'], values: ['1000'], timestamps: [t] })),
    }],
  };
}

for (const via of ['protobuf', 'JSON', 'gRPC']) {
  test(`partial success over ${via}: a profile whose samples are all 20 days old or 20 min ahead is rejected, the rest stored`, async () => {
    const ok = uniqueName('otlp-partial-ok');
    const old = uniqueName('otlp-partial-old');
    const fut = uniqueName('otlp-partial-future');
    const mixed = uniqueName('otlp-partial-mixed');
    const req = buildRequest({
      resources: [
        timed(ok, [nowNs(-30), nowNs(-20)]),
        timed(old, [nowNs(-20 * 86400), nowNs(-20 * 86400 + 5)]),
        timed(fut, [nowNs(20 * 60)]),
        // One sample old, two in the window: the old one is dropped.
        timed(mixed, [nowNs(-20 * 86400), nowNs(-40), nowNs(-30)]),
      ],
    });
    // Profile times inside the window, so only the sample times matter.
    let r;
    if (via === 'protobuf') r = await sendPb(server, req);
    else if (via === 'JSON') r = await sendJson(server, toJson(req));
    else { const c = grpcClient(server); try { r = await grpcExport(c, req); } finally { c.close(); } }
    let ps;
    if (via === 'gRPC') {
      assert.ok(r.ok, `gRPC: ${describeGrpc(r)}`);
      ps = r.response.partialSuccess;
    } else {
      assert.equal(r.status, 200, `${via}: ${describe(r)}`);
      assert.equal(r.parseError, undefined, r.parseError);
      ps = r.response?.partialSuccess;
      if (via === 'JSON') assert.equal(typeof ps?.rejectedProfiles, 'string', `OTLP/JSON int64 rejectedProfiles should be a string: ${r.text}`);
    }
    assert.ok(ps, `${via}: partial_success expected: ${JSON.stringify(r.response ?? r.text)}`);
    assert.equal(Number(ps.rejectedProfiles), 2, `${via}: rejected_profiles (the all-old and the all-future profile): ${JSON.stringify(ps)}`);
    assert.ok(typeof ps.errorMessage === 'string' && ps.errorMessage.length > 0, `${via}: partial_success needs an error_message`);
    const names = await serviceNames(server);
    assert.ok(names.has(ok), 'accepted profile stored');
    assert.ok(!names.has(old), 'all-old profile not stored');
    const win = wideWindow();
    const exp = expectRequest(req).get(mixed).get('cpu:nanoseconds');
    const fg = await getJson(server.uiUrl, '/api/flamegraph', { service: mixed, type: 'cpu:nanoseconds', ...win });
    assert.equal(fg.total, Number(exp.total) - 1000, 'mixed profile: the old sample dropped, two kept');
    const fgf = await getJson(server.uiUrl, '/api/flamegraph', { service: fut, type: 'cpu:nanoseconds', from: Math.floor(Date.now() / 1000) - 3600, until: Math.floor(Date.now() / 1000) + 3600 });
    assert.equal(fgf.total, 0, 'future profile not stored');
  });
}

test('zstd-encoded bad index is decoded first, then refused with 400', { skip: !hasZstdCli() && 'no zstd' }, async () => {
  const req = base(uniqueName('otlp-bad-zstd'));
  req.resourceProfiles[0].scopeProfiles[0].profiles[0].samples[0].stackIndex = 777;
  const r = await postOtlp(server, compress(encodeRequest(req), 'zstd'), { encoding: 'zstd' });
  assertRpcStatus(r, 400, [/stack_table/, /\b777\b/], 'zstd');
  assert.equal(rejectedOf(r), 0);
});
