// The table of bad uploads for badinput.test.mjs, built by hand with
// lib/pb.mjs (kept apart so the table can be checked against go tool pprof
// without a server: every malformed body must be refused by Go's reader too).
import zlib from 'node:zlib';
import { nowS } from './env.mjs';
import { PbWriter, WT, encodeProfile, buildProfile } from './pb.mjs';

export const MiB = 1 << 20;

export const baseSpec = {
  sampleTypes: [['samples', 'count'], ['cpu', 'nanoseconds']],
  periodType: ['cpu', 'nanoseconds'],
  samples: [
    { stack: ['main.a', 'main.b', 'main.c'], values: [1, 10_000_000] },
    { stack: ['main.d', 'main.b', 'main.c'], values: [2, 20_000_000] },
  ],
};
export const base = buildProfile(baseSpec);
// Ids in the base: functions/locations 1..4 (a, b, c, d), mapping 1.
const tables = () => structuredClone(base.tables);
const withTables = (fn) => { const t = tables(); fn(t); return encodeProfile(t); };
const plus = (...parts) => Buffer.concat([base.bytes, ...parts.map((p) => (Buffer.isBuffer(p) ? p : p.finish()))]);
const pb = () => new PbWriter();

export function manyTypes(n) {
  return buildProfile({
    sampleTypes: Array.from({ length: n }, (_, i) => [`t${i}`, 'count']),
    periodType: ['t0', 'count'],
    samples: [{ stack: ['main.x'], values: Array.from({ length: n }, (_, i) => i + 1) }],
  }).bytes;
}
export function manyRows(n) {
  return buildProfile({
    sampleTypes: [['samples', 'count']],
    periodType: ['cpu', 'nanoseconds'],
    samples: Array.from({ length: n }, (_, i) => ({ stack: [`main.f${i % 100}`, `main.g${Math.floor(i / 100)}`], values: [1] })),
  }).bytes;
}

// [name, body, expected status, [regexes the error message must match], {params, headers, method, path, noName}]
// params are added to a fresh serviceName, unless noName.
export const cases = [
  // --- malformed protobuf: truncation and lengths ---
  ['truncated message: valid profile cut after 3 bytes (inside sample_type)', base.bytes.subarray(0, 3), 400, [/truncat|past the end|end of (data|input|buffer)/i]],
  ['truncated message: valid profile cut in half', base.bytes.subarray(0, Math.floor(base.bytes.length / 2)), 400, [/./]],
  ['truncated string: string_table entry of 50 bytes with 10', plus(pb().tag(6, WT.LEN).varint(50).raw(Buffer.from('abcdefghij'))), 400, [/truncat|past the end|length/i]],
  ['truncated varint at the end (0x80)', plus(pb().tag(9, WT.VARINT).raw([0x80])), 400, [/varint|truncat/i]],
  ['truncated tag at the end', plus(pb().raw([0x80])), 400, [/varint|truncat|tag/i]],
  ['varint overflow: 11-byte varint in time_nanos', plus(pb().tag(9, WT.VARINT).raw([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])), 400, [/varint/i]],
  ['varint overflow inside packed location_id', plus(pb().message(2, (m) => m.tag(1, WT.LEN).varint(11).raw([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]))), 400, [/varint/i]],
  ['negative length: length varint 2^64-1', plus(pb().tag(6, WT.LEN).varint(-1n).raw(Buffer.from('xyz'))), 400, [/length|truncat|past the end/i]],
  ['length past the end: sample of 1000 bytes with 5', plus(pb().tag(2, WT.LEN).varint(1000).raw([8, 1, 8, 2, 8])), 400, [/truncat|length|past the end/i]],
  ['nested length past the enclosing sample', plus(pb().tag(2, WT.LEN).varint(4).raw([0x0a, 50, 1, 2])), 400, [/truncat|length|past the end/i]],
  // --- wrong wire types ---
  ['wrong wire type: sample as varint', plus(pb().uint(2, 5)), 400, [/wire type/i, /sample/i]],
  ['wrong wire type: location as fixed32', plus(pb().tag(4, WT.I32).raw([1, 2, 3, 4])), 400, [/wire type/i, /location/i]],
  ['wrong wire type: string_table as varint', plus(pb().uint(6, 1)), 400, [/wire type/i, /string/i]],
  ['wrong wire type: function as fixed64', plus(pb().tag(5, WT.I64).raw([1, 2, 3, 4, 5, 6, 7, 8])), 400, [/wire type/i, /function/i]],
  ['wrong wire type: Location.line as varint', plus(pb().message(4, (m) => { m.uint(1, 9); m.uint(4, 3); })), 400, [/wire type/i, /line/i]],
  ['invalid wire type 7', plus(pb().tag(2, 7).raw([0])), 400, [/wire type/i]],
  ['group wire type (3) for sample_type', plus(pb().tag(1, WT.SGROUP).raw([0x0c])), 400, [/wire type/i]],
  // --- ids and indices out of range ---
  ['sample location id out of range (99)', withTables((t) => { t.samples[0].locationIds = [99, 2, 3]; }), 400, [/location id/i, /99/]],
  ['sample location id 0', withTables((t) => { t.samples[1].locationIds = [0]; }), 400, [/location id/i]],
  ['sample location id out of range, unpacked encoding', withTables((t) => { t.samples[0].unpacked = true; t.samples[0].locationIds = [1, 1234]; }), 400, [/location id/i, /1234/]],
  ['line function id out of range (77)', withTables((t) => { t.locations[0].lines[0].functionId = 77; }), 400, [/function id/i, /77/]],
  ['location mapping id out of range (9)', withTables((t) => { t.locations[1].mappingId = 9; }), 400, [/mapping id/i, /9/]],
  ['sample_type string index out of range (500)', withTables((t) => { t.sampleTypes[0].type = 500; }), 400, [/string index/i, /500/]],
  ['function name string index out of range (1000)', withTables((t) => { t.functions[0].name = 1000; }), 400, [/string index/i, /1000/]],
  ['function name string index negative (-1)', withTables((t) => { t.functions[2].name = -1n; }), 400, [/string index/i]],
  ['label key string index out of range (300)', withTables((t) => { t.samples[0].labels = [{ key: 300, str: 1 }]; }), 400, [/string index/i, /300/]],
  ['label value string index out of range (301)', withTables((t) => { t.samples[0].labels = [{ key: 1, str: 301 }]; }), 400, [/string index/i, /301/]],
  ['period_type unit string index out of range (999)', withTables((t) => { t.periodType.unit = 999; }), 400, [/string index/i, /999/]],
  ['mapping filename string index out of range (4000)', withTables((t) => { t.mappings[0].filename = 4000; }), 400, [/string index/i, /4000/]],
  // --- sample shape ---
  ['values count < sample types', withTables((t) => { t.samples[0].values = [1]; }), 400, [/value/i]],
  ['values count > sample types', withTables((t) => { t.samples[1].values = [1, 2, 3]; }), 400, [/value/i]],
  ['samples with values but no sample types', withTables((t) => { t.sampleTypes = []; }), 400, [/value|sample.?type/i]],
  ['garbage body (text)', Buffer.from('hello, this is not a profile at all\n'), 400, [/./]],
  // --- compression ---
  ['gzip bomb: 40 MiB of zeros', zlib.gzipSync(Buffer.alloc(40 * MiB)), 413, [/32 MiB/]],
  ['gzip bomb with Content-Encoding: gzip', zlib.gzipSync(Buffer.alloc(40 * MiB)), 413, [/32 MiB/], { headers: { 'content-encoding': 'gzip' } }],
  ['corrupt gzip (magic + garbage)', Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]), Buffer.from('not deflate data at all, really not')]), 400, [/gzip|deflate|decompress|inflate/i]],
  ['truncated gzip (half of a valid stream)', (() => { const g = zlib.gzipSync(base.bytes); return g.subarray(0, Math.floor(g.length / 2)); })(), 400, [/gzip|truncat|decompress|inflate|deflate/i]],
  ['Content-Encoding: gzip on a raw pprof body', base.bytes, 400, [/gzip/i], { headers: { 'content-encoding': 'gzip' } }],
  // --- limits ---
  ['65 sample types', manyTypes(65), 413, [/64/]],
  ['10,001 sample rows', manyRows(10001), 413, [/10000/]],
  // --- request shape ---
  ['missing serviceName and workload', base.bytes, 400, [/serviceName/, /workload/], { noName: true, params: {} }],
  ['empty serviceName', base.bytes, 400, [/serviceName/, /workload/], { noName: true, params: { serviceName: '' } }],
  ['empty workload, no serviceName', base.bytes, 400, [/serviceName/, /workload/], { noName: true, params: { workload: '' } }],
  ['empty body', Buffer.alloc(0), 400, [/empty|body/i]],
  ['GET on the upload path', null, 405, [/./], { method: 'GET' }],
  ['bad from (from=abc)', base.bytes, 400, [/from/], { params: { from: 'abc' } }],
  ['bad until (until=xyz)', base.bytes, 400, [/until/], { params: { until: 'xyz' } }],
  ['from after until', base.bytes, 400, [/from|until/], { params: { from: nowS(), until: nowS() - 100 } }],
  ['unknown path', base.bytes, 404, [/./], { path: '/profiling/uploads' }],
];

