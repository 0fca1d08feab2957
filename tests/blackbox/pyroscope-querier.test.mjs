// Pyroscope's Connect query API (API: Query: querier.v1.QuerierService
// (Pyroscope Connect)) with a real Connect client: @connectrpc/connect-node
// over HTTP/1.1 and prior-knowledge h2c on the UI listener, binary and JSON
// codecs, messages generated from proto/querier.proto + proto/types.proto
// (lib/protogen.mjs). Data: real pprof fixtures pushed through
// /profiling/upload and Pyroscope's /ingest into a server of this file's own,
// so every listing is known exactly; the OTLP eBPF fixture and a Connect
// Push into another. Oracles: the fixtures' sample and period types and
// values as `go tool pprof -raw` prints them, named by Pyroscope's rule
// written out here (docs/API.md "Profile names"); /api/flamegraph and
// /api/span on the same data; tree bytes decoded by a decoder written here
// from the format.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import fs from 'node:fs';
import { create, toBinary } from '@bufbuild/protobuf';
import { createClient, Code } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { TESTDATA, uniqueName, mkTemp } from './lib/env.mjs';
import { startServer, tail } from './lib/server.mjs';
import { upload } from './lib/http.mjs';
import { createKey } from './lib/s6.mjs';
import { oracleForFile, oracle, pprofRaw } from './lib/pprof.mjs';
import { readPprofFile, encodePprof } from './lib/otlp-pprof.mjs';
import { loadFixture, startOtlpServer, sendPb } from './lib/otlp.mjs';
import { assertAccepted } from './lib/otlp-check.mjs';
import { flameStats } from './lib/check.mjs';
import { generateProtos } from './lib/protogen.mjs';

const fixture = (f) => path.join(TESTDATA, 'pprof', f);
let q; // querier_pb
let t; // types_pb
let pprofPb; // pprof_pb (perftools.profiles)
let pushPb; // push_pb (push.v1)
let server;
const SVC = {
  go: uniqueName('q-go'), heap: uniqueName('q-heap'), node: uniqueName('q-node'), py: uniqueName('q-py'),
  multi: uniqueName('q-multi'), span: uniqueName('q-span'),
};
const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';

// Sample types and period type of a fixture, from go tool pprof -raw's header.
function pprofTypes(f) {
  const out = execFileSync('go', ['tool', 'pprof', '-raw', fixture(f)], { maxBuffer: 1 << 28 }).toString();
  const lines = out.split('\n');
  const period = lines.find((l) => l.startsWith('PeriodType:')).slice('PeriodType:'.length);
  const [periodType, periodUnit] = period.startsWith('  ') ? ['', period.trim()] : period.trim().split(/\s+/);
  const at = lines.findIndex((l) => l.startsWith('Samples:'));
  const types = lines[at + 1].trim().split(/\s+/).map((s) => {
    const m = /^(.*)\/(.*)$/.exec(s);
    return { type: m[1], unit: m[2] };
  });
  return { types, periodType, periodUnit };
}

// Pyroscope's profile name for a sample type (pkg/og/convert/pprof's rule with
// its default display names), as docs/API.md states it.
function pyroName(types) {
  if (types.includes('wall')) return 'wall';
  const display = { samples: 'cpu', goroutine: 'goroutines', contentions: 'mutex_count', delay: 'mutex_duration' };
  let last = '';
  for (const ty of types) {
    const n = display[ty] ?? ty;
    last = n;
    if (n.includes('cpu')) return 'process_cpu';
    if (n.includes('alloc_') || n.includes('inuse_') || n === 'space' || n === 'objects') return 'memory';
    if (n.includes('mutex_')) return 'mutex';
    if (n.includes('block_')) return 'block';
    if (n.includes('goroutines')) return 'goroutines';
  }
  return /^[a-z0-9_.-]{1,64}$/.test(last) ? last : 'unknown';
}

// The pushes: [service, fixture, how, name rule]. /profiling/upload stores
// each sample type as its own unnamed series (named per type here); /ingest
// names the whole profile by Pyroscope's rule over all its types; profile=
// names it.
const PUSHES = [
  { svc: SVC.go, file: 'go-cpu-fib.pb.gz', via: 'upload', params: { namespace: 'shop', 'label.env': 'prod' } },
  { svc: SVC.heap, file: 'go-heap-delta.pb.gz', via: 'upload', params: { namespace: 'shop', 'label.env': 'dev' } },
  { svc: SVC.node, file: 'nodejs-wall.pb.gz', via: 'ingest' },
  { svc: SVC.py, file: 'python-pyspy-not-gzipped.pb', via: 'upload', params: { profile: 'py.cpu' } },
  // SelectSeries: two series of one service told apart by tier, tier a pushed twice.
  { svc: SVC.multi, file: 'go-cpu-fib.pb.gz', via: 'upload', params: { 'label.tier': 'a' } },
  { svc: SVC.multi, file: 'go-cpu-fib.pb.gz', via: 'upload', params: { 'label.tier': 'a' } },
  { svc: SVC.multi, file: 'go-cpu-two-stacks.pb.gz', via: 'upload', params: { 'label.tier': 'b' } },
  // SelectMergeSpanProfile: go-cpu-span-labels with its profile_id label renamed span_id (API: Span links).
  { svc: SVC.span, file: 'go-cpu-span-labels.pb.gz', via: 'upload', spanLabel: true },
];

// The fixture's bytes with label key profile_id renamed span_id.
function spanBody(f) {
  const p = readPprofFile(fixture(f));
  const i = p.stringTable.indexOf('profile_id');
  assert.ok(i > 0, 'profile_id in the string table');
  p.stringTable[i] = 'span_id';
  return encodePprof(p);
}

// Expected: per push, the ids of its series and its series labels.
function expected() {
  const rows = [];
  for (const p of PUSHES) {
    const { types, periodType, periodUnit } = pprofTypes(p.file);
    for (const ty of types) {
      const name = p.params?.profile ?? (p.via === 'ingest' ? pyroName(types.map((x) => x.type)) : pyroName([ty.type]));
      rows.push({
        svc: p.svc, name, id: `${name}:${ty.type}:${ty.unit}:${periodType}:${periodUnit}`,
        sampleType: ty.type, sampleUnit: ty.unit, periodType, periodUnit, push: p,
      });
    }
  }
  return rows;
}

let EXPECT;
let pushedFromMs; // before the first push
let pushedUntilMs; // after the last
const range = () => ({ start: BigInt(Date.now() - 3600_000), end: BigInt(Date.now() + 600_000) });

before(async () => {
  [q, t, pprofPb, pushPb] = await generateProtos('querier', ['proto/querier.proto', 'proto/types.proto', 'proto/pprof.proto', 'proto/push.proto']);
  server = await startServer();
  pushedFromMs = Date.now() - 1000;
  for (const p of PUSHES) {
    const body = p.spanLabel ? spanBody(p.file) : fs.readFileSync(fixture(p.file));
    let r;
    if (p.via === 'upload') {
      r = await upload(server, body, { serviceName: p.svc, ...p.params });
    } else {
      r = await upload(server, body, { name: `${p.svc}{region="eu-1"}`, format: 'pprof' }, {}, { path: '/ingest' });
    }
    assert.equal(r.status, 200, `${p.via} ${p.file}: ${r.text}`);
  }
  pushedUntilMs = Date.now() + 1000;
  EXPECT = expected();
});
after(async () => {
  if (server) await server.stop();
});

function client(base, { httpVersion = '1.1', binary = true, headers } = {}) {
  const transport = createConnectTransport({
    baseUrl: base,
    httpVersion,
    useBinaryFormat: binary,
    interceptors: headers ? [(next) => async (req) => {
      for (const [k, v] of Object.entries(headers)) req.header.set(k, v);
      return next(req);
    }] : [],
  });
  return createClient(q.QuerierService, transport);
}

const MODES = [];
for (const httpVersion of ['1.1', '2']) for (const binary of [true, false]) MODES.push({ httpVersion, binary });
const modeName = (m) => `HTTP/${m.httpVersion} ${m.binary ? 'binary' : 'JSON'}`;
const uniqSorted = (xs) => [...new Set(xs)].sort((a, b) => (Buffer.compare(Buffer.from(a), Buffer.from(b))));

async function call(c, method, req, what) {
  try {
    return await c[method](req);
  } catch (e) {
    assert.fail(`${what} ${method}: ${e}\n${tail(server.stderr(), 10)}`);
  }
}

for (const m of MODES) {
  test(`ProfileTypes ${modeName(m)}: exactly the ids of the pushed series, parts split, sorted`, async () => {
    const res = await call(client(server.uiUrl, m), 'profileTypes', range(), modeName(m));
    const got = res.profileTypes.map((p) => ({ ID: p.ID, name: p.name, sampleType: p.sampleType, sampleUnit: p.sampleUnit, periodType: p.periodType, periodUnit: p.periodUnit }));
    const want = new Map();
    for (const e of EXPECT) want.set(e.id, { ID: e.id, name: e.name, sampleType: e.sampleType, sampleUnit: e.sampleUnit, periodType: e.periodType, periodUnit: e.periodUnit });
    const ids = uniqSorted([...want.keys()]);
    assert.deepEqual(got, ids.map((id) => want.get(id)));
    // Names the brief fixes: Go CPU and heap as Pyroscope stores them.
    for (const id of ['process_cpu:cpu:nanoseconds:cpu:nanoseconds', 'process_cpu:samples:count:cpu:nanoseconds',
      'memory:inuse_space:bytes:space:bytes', 'memory:alloc_objects:count:space:bytes', 'wall:wall:microseconds:wall:microseconds']) {
      assert.ok(ids.includes(id), `${id} in ${ids}`);
    }
  });

  test(`LabelNames and LabelValues ${modeName(m)}: exact, with matchers`, async () => {
    const c = client(server.uiUrl, m);
    const names = await call(c, 'labelNames', { ...range() }, modeName(m));
    const base = ['__name__', '__period_type__', '__period_unit__', '__profile_type__', '__type__', '__unit__', 'service_name'];
    assert.deepEqual(names.names, uniqSorted([...base, 'k8s.namespace.name', 'env', 'region', 'tier']));
    const goOnly = await call(c, 'labelNames', { matchers: [`{service_name="${SVC.go}"}`], ...range() }, modeName(m));
    assert.deepEqual(goOnly.names, uniqSorted([...base, 'k8s.namespace.name', 'env']));
    const svcs = await call(c, 'labelValues', { name: 'service_name', ...range() }, modeName(m));
    assert.deepEqual(svcs.names, uniqSorted(Object.values(SVC)));
    const types = await call(c, 'labelValues', { name: '__profile_type__', ...range() }, modeName(m));
    assert.deepEqual(types.names, uniqSorted(EXPECT.map((e) => e.id)));
    const cpuNames = await call(c, 'labelValues', { name: '__name__', ...range() }, modeName(m));
    assert.deepEqual(cpuNames.names, uniqSorted(EXPECT.map((e) => e.name)));
    // Round trip: an id selects exactly the services whose series carry it.
    for (const id of uniqSorted(EXPECT.map((e) => e.id))) {
      const r = await call(c, 'labelValues', { name: 'service_name', matchers: [`{__profile_type__="${id}"}`], ...range() }, modeName(m));
      assert.deepEqual(r.names, uniqSorted(EXPECT.filter((e) => e.id === id).map((e) => e.svc)), id);
    }
    // Several matchers: a series matching any of them; regex and negation.
    const two = await call(c, 'labelValues', { name: 'service_name', matchers: [`{env="prod"}`, `{region=~"eu-.*"}`], ...range() }, modeName(m));
    assert.deepEqual(two.names, uniqSorted([SVC.go, SVC.node]));
    const notShop = await call(c, 'labelValues', { name: 'service_name', matchers: [`{"k8s.namespace.name"!="shop"}`], ...range() }, modeName(m));
    assert.deepEqual(notShop.names, uniqSorted(Object.values(SVC).filter((v) => v !== SVC.go && v !== SVC.heap)));
    const envs = await call(c, 'labelValues', { name: 'env', ...range() }, modeName(m));
    assert.deepEqual(envs.names, ['dev', 'prod']);
    const none = await call(c, 'labelValues', { name: 'service_name', ...range(), start: 1000n, end: 2000n }, modeName(m));
    assert.deepEqual(none.names, []);
  });
}

// A raw Connect call: {status, json}.
async function rawCall(base, method, body, headers = {}) {
  const res = await fetch(`${base}/querier.v1.QuerierService/${method}`, {
    method: 'POST', body, headers: { 'content-type': 'application/proto', ...headers },
  });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = text; }
  return { status: res.status, json };
}

test('bad input: unknown method, malformed proto and JSON, bad selector, start > end → the Connect code', async () => {
  const u = server.uiUrl;
  let r = await rawCall(u, 'Nope', '');
  assert.equal(r.status, 404);
  assert.equal(r.json.code, 'unimplemented');
  assert.match(r.json.message, /Nope/);
  r = await rawCall(u, 'ProfileTypes', Buffer.from([0x08, 0xff]));
  assert.equal(r.status, 400);
  assert.equal(r.json.code, 'invalid_argument');
  r = await rawCall(u, 'ProfileTypes', '{"start":', { 'content-type': 'application/json' });
  assert.equal(r.json.code, 'invalid_argument');
  r = await rawCall(u, 'ProfileTypes', '{"start":"12x"}', { 'content-type': 'application/json' });
  assert.equal(r.json.code, 'invalid_argument');
  r = await rawCall(u, 'ProfileTypes', 'x', { 'content-type': 'text/plain' });
  assert.equal(r.json.code, 'invalid_argument');
  // int64 as a JSON number and as a string select alike.
  const now = Date.now();
  const a = await rawCall(u, 'ProfileTypes', JSON.stringify({ start: now - 3600_000, end: now + 600_000 }), { 'content-type': 'application/json' });
  const b = await rawCall(u, 'ProfileTypes', JSON.stringify({ start: String(now - 3600_000), end: String(now + 600_000) }), { 'content-type': 'application/json' });
  assert.equal(a.status, 200);
  assert.deepEqual(a.json, b.json);
  assert.equal(a.json.profileTypes.length, uniqSorted(EXPECT.map((e) => e.id)).length);
  for (const m of MODES) {
    const c = client(u, m);
    await assert.rejects(c.labelNames({ matchers: ['{service_name="x",}', '{a=~"("}'], ...range() }),
      (e) => { assert.equal(e.code, Code.InvalidArgument, `${e}`); assert.match(e.rawMessage, /selector: at \d+: regex/); return true; });
    await assert.rejects(c.labelValues({ name: 'x', matchers: ['{a="b" c}'], ...range() }),
      (e) => { assert.equal(e.code, Code.InvalidArgument, `${e}`); assert.match(e.rawMessage, /selector: at 7:/); return true; });
    await assert.rejects(c.profileTypes({ start: 2000n, end: 1000n }),
      (e) => { assert.equal(e.code, Code.InvalidArgument); assert.match(e.rawMessage, /start 2000 is after end 1000/); return true; });
    await assert.rejects(c.labelValues({ ...range() }),
      (e) => { assert.equal(e.code, Code.InvalidArgument); assert.match(e.rawMessage, /name/); return true; });
    const merge = (req) => c.selectMergeStacktraces({ profileTypeID: 'process_cpu:cpu:nanoseconds:cpu:nanoseconds', ...range(), ...req });
    for (const [req, code, re] of [
      [{ labelSelector: `{service_name=~"${SVC.go}"}` }, Code.Unimplemented, /^SelectMergeStacktracesRequest: label_selector: service_name takes = only \(the service to merge\), not =~$/],
      [{ labelSelector: `{service_name!="${SVC.go}"}` }, Code.Unimplemented, /^SelectMergeStacktracesRequest: label_selector: service_name takes = only \(the service to merge\), not !=$/],
      [{ labelSelector: '{env="prod"}' }, Code.InvalidArgument, /must name the service/],
      [{ labelSelector: '{service_name="x" env="y"}' }, Code.InvalidArgument, /selector: at 18:/],
      [{ labelSelector: `{service_name="${SVC.go}"}`, profileTypeID: 'cpu:nanoseconds' }, Code.InvalidArgument, /profile_typeID "cpu:nanoseconds" is not NAME:/],
      [{ labelSelector: `{service_name="${SVC.go}"}`, start: 5000n, end: 10n }, Code.InvalidArgument, /start 5000 is after end 10/],
    ]) {
      await assert.rejects(merge(req), (e) => { assert.equal(e.code, code, `${modeName(m)} ${req.labelSelector}: ${e}`); assert.match(e.rawMessage, re); return true; });
    }
    // The new methods: the same selector and time checks, and their own.
    const sel = { profileTypeID: CPU, labelSelector: `{service_name="${SVC.go}"}` };
    for (const [method, req, code, re] of [
      ['selectSeries', { ...sel, ...range(), step: 0 }, Code.InvalidArgument, /SelectSeriesRequest: step must be from 0.001 \(1 ms\) to 3162240000 seconds, got 0$/],
      ['selectSeries', { ...sel, start: 5000n, end: 10n, step: 1 }, Code.InvalidArgument, /^SelectSeriesRequest: start 5000 is after end 10 \(Unix milliseconds\)$/],
      ['selectSeries', { ...sel, labelSelector: '{service_name="x" env="y"}', ...range(), step: 1 }, Code.InvalidArgument, /selector: at 18:/],
      ['selectSeries', { ...sel, labelSelector: '{env="y"}', ...range(), step: 1 }, Code.InvalidArgument, /^SelectSeriesRequest: label_selector must name the service/],
      ['selectMergeSpanProfile', { ...sel, ...range() }, Code.InvalidArgument, /^SelectMergeSpanProfileRequest: span_selector must list at least one span id$/],
      ['selectMergeSpanProfile', { ...sel, spanSelector: ['ab'], start: 5000n, end: 10n }, Code.InvalidArgument, /^SelectMergeSpanProfileRequest: start 5000 is after end 10/],
      ['selectMergeSpanProfile', { ...sel, spanSelector: ['a\nb'], ...range() }, Code.InvalidArgument, /span_selector: a span id has no control characters/],
      ['selectMergeSpanProfile', { ...sel, profileTypeID: 'cpu', spanSelector: ['ab'], ...range() }, Code.InvalidArgument, /profile_typeID "cpu" is not NAME:/],
    ]) {
      await assert.rejects(c[method](req), (e) => { assert.equal(e.code, code, `${modeName(m)} ${method}: ${e}`); assert.match(e.rawMessage, re); return true; });
    }
  }
  // Per new method: malformed protobuf, malformed JSON, a wrong JSON type,
  // an unknown enum name, wrong content type → invalid_argument with the message's name.
  for (const [method, msg] of [['SelectSeries', 'SelectSeriesRequest'], ['SelectMergeSpanProfile', 'SelectMergeSpanProfileRequest'], ['SelectMergeStacktraces', 'SelectMergeStacktracesRequest']]) {
    r = await rawCall(u, method, Buffer.from([0x0a, 0x05, 0x61]));
    assert.deepEqual([r.status, r.json.code], [400, 'invalid_argument'], `${method} truncated proto`);
    assert.match(r.json.message, new RegExp(`^${msg}: field 1: malformed protobuf$`));
    r = await rawCall(u, method, '{"profileTypeID":', { 'content-type': 'application/json' });
    assert.deepEqual([r.status, r.json.code], [400, 'invalid_argument'], `${method} bad JSON`);
    r = await rawCall(u, method, '{"start":{}}', { 'content-type': 'application/json' });
    assert.deepEqual([r.status, r.json], [400, { code: 'invalid_argument', message: 'start: expected an integer (a number or a decimal string)' }], `${method} start as object`);
    r = await rawCall(u, method, 'x', { 'content-type': 'text/plain' });
    assert.deepEqual([r.status, r.json], [400, { code: 'invalid_argument', message: 'Content-Type text/plain is not supported: application/proto or application/json' }]);
  }
  r = await rawCall(u, 'SelectSeries', '{"aggregation":"TIME_SERIES_AGGREGATION_TYPE_MAX"}', { 'content-type': 'application/json' });
  assert.deepEqual([r.status, r.json], [400, { code: 'invalid_argument', message: 'aggregation: unknown enum value name' }]);
  r = await rawCall(u, 'SelectMergeStacktraces', '{"format":7}', { 'content-type': 'application/json' });
  assert.deepEqual([r.status, r.json.code], [400, 'invalid_argument']);
  assert.match(r.json.message, /^SelectMergeStacktracesRequest: format 7 is not a ProfileFormat/);
  r = await rawCall(u, 'SelectSeries', Buffer.from([0x38, 0x05]));
  assert.deepEqual([r.status, r.json.code], [400, 'invalid_argument']);
  assert.match(r.json.message, /aggregation 5 is not a TimeSeriesAggregationType/);
  r = await rawCall(u, 'SelectSeries', '', { 'connect-protocol-version': '2' });
  assert.deepEqual([r.status, r.json], [400, { code: 'invalid_argument', message: 'Connect-Protocol-Version 2 is not supported: 1' }]);
  // The querier is the UI listener's: the upload listener answers unimplemented.
  r = await rawCall(server.uploadUrl, 'ProfileTypes', Buffer.from(toBinary(q.ProfileTypesRequestSchema, create(q.ProfileTypesRequestSchema, range()))));
  assert.equal(r.json.code, 'unimplemented');
});

test('with auth required: query keys (x-kiln-key, Bearer, Basic, cookie) answer their project only; ingest key permission_denied; none unauthenticated', async () => {
  const dataDir = mkTemp('querier-auth');
  const ingestA = await createKey(dataDir, 'qa', 'qa-ingest', 'ingest');
  const queryA = await createKey(dataDir, 'qa', 'qa-query', 'query');
  const ingestB = await createKey(dataDir, 'qb', 'qb-ingest', 'ingest');
  const queryB = await createKey(dataDir, 'qb', 'qb-query', 'query');
  const s = await startServer({ dataDir, extraArgs: ['--auth', 'required'] });
  try {
    const svcA = uniqueName('qa'), svcB = uniqueName('qb');
    const body = fs.readFileSync(fixture('go-cpu-fib.pb.gz'));
    assert.equal((await upload(s, body, { serviceName: svcA }, { 'x-kiln-key': ingestA })).status, 200);
    assert.equal((await upload(s, body, { serviceName: svcB, profile: 'other' }, { 'x-kiln-key': ingestB })).status, 200);
    const basic = (key) => `Basic ${Buffer.from(`grafana:${key}`).toString('base64')}`;
    const fibTotal = Number((await oracleForFile(fixture('go-cpu-fib.pb.gz'))).types.find((x) => x.typeName === 'cpu:nanoseconds').total);
    for (const m of MODES) {
      for (const [what, headers] of [['x-kiln-key', { 'x-kiln-key': queryA }], ['Bearer', { authorization: `Bearer ${queryA}` }],
        ['Basic', { authorization: basic(queryA) }], ['cookie', { cookie: `kiln_key=${queryA}` }]]) {
        const c = client(s.uiUrl, { ...m, headers });
        let r;
        try {
          r = await c.labelValues({ name: 'service_name', ...range() });
        } catch (e) {
          assert.fail(`${modeName(m)} ${what}: ${e}\n${tail(s.stderr(), 8)}`);
        }
        assert.deepEqual(r.names, [svcA], `${modeName(m)} ${what}`);
      }
      const b = await client(s.uiUrl, { ...m, headers: { authorization: `Bearer ${queryB}` } }).profileTypes(range());
      assert.deepEqual(b.profileTypes.map((p) => p.ID), ['other:cpu:nanoseconds:cpu:nanoseconds', 'other:samples:count:cpu:nanoseconds']);
      // The new methods: A's key sees A's profiles, B's key sees nothing of A's service.
      const selA = { profileTypeID: CPU, labelSelector: `{service_name="${svcA}"}`, ...range() };
      const calls = {
        selectSeries: (c) => c.selectSeries({ ...selA, step: 60 }),
        tree: (c) => c.selectMergeStacktraces({ ...selA, format: q.ProfileFormat.TREE }),
        selectMergeSpanProfile: (c) => c.selectMergeSpanProfile({ ...selA, spanSelector: ['ab01'] }),
      };
      const a = client(s.uiUrl, { ...m, headers: { authorization: `Bearer ${queryA}` } });
      const bc = client(s.uiUrl, { ...m, headers: { authorization: `Bearer ${queryB}` } });
      assert.deepEqual((await calls.selectSeries(a)).series.map(pointsSum), [fibTotal], `${modeName(m)} A's series`);
      assert.equal(decodeTree((await calls.tree(a)).tree).total, fibTotal, `${modeName(m)} A's tree`);
      assert.equal(Number((await calls.selectMergeSpanProfile(a)).flamegraph.total), 0);
      assert.deepEqual((await calls.selectSeries(bc)).series, [], `${modeName(m)} B sees no series of A`);
      assert.equal(Buffer.from((await calls.tree(bc)).tree).length, 0, `${modeName(m)} B sees no tree of A`);
      for (const [what, headers, code, re] of [
        ['no key', undefined, Code.Unauthenticated, /requires a key/],
        ['ingest key', { authorization: `Bearer ${ingestA}` }, Code.PermissionDenied, /scope query/],
        ['unknown key', { 'x-kiln-key': 'nope-nope-nope-nope' }, Code.Unauthenticated, /./],
      ]) {
        const c = client(s.uiUrl, { ...m, headers });
        for (const [name, f] of [['labelNames', (x) => x.labelNames(range())], ...Object.entries(calls)]) {
          await assert.rejects(f(c),
            (e) => { assert.equal(e.code, code, `${modeName(m)} ${what} ${name}: ${e}`); assert.match(e.rawMessage, re); return true; });
        }
      }
    }
  } finally {
    await s.stop();
  }
});

// Decodes FlameGraph levels: every node {name, x, total, self, depth}; checks
// that each node's children lie within it and sum with its self to its total.
function decodeLevels(fg) {
  const nodes = [];
  const levels = fg.levels.map((l) => l.values.map(Number));
  for (let d = 0; d < levels.length; d++) {
    const v = levels[d];
    assert.equal(v.length % 4, 0, `level ${d}: ${v.length} ints`);
    let x = 0;
    for (let i = 0; i < v.length; i += 4) {
      x += v[i];
      nodes.push({ depth: d, x, total: v[i + 1], self: v[i + 2], name: fg.names[v[i + 3]] });
      x += v[i + 1];
    }
  }
  for (const n of nodes) {
    const kids = nodes.filter((k) => k.depth === n.depth + 1 && k.x >= n.x && k.x < n.x + n.total);
    assert.equal(n.self + kids.reduce((a, k) => a + k.total, 0), n.total, `${n.name} at depth ${n.depth}`);
  }
  const self = new Map();
  for (const n of nodes) if (n.depth > 0) self.set(n.name, (self.get(n.name) ?? 0) + n.self);
  return { nodes, self };
}

const nonZero = (m) => new Map([...m].filter(([, v]) => Number(v) !== 0).map(([k, v]) => [k, Number(v)]));
const sortMap = (m) => [...m].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));

for (const m of MODES) {
  test(`SelectMergeStacktraces ${modeName(m)}: totals and per-function self equal /api/flamegraph and go tool pprof; filters; max_nodes keeps the total`, async () => {
    const c = client(server.uiUrl, m);
    const now = Math.floor(Date.now() / 1000);
    const cases = [
      { svc: SVC.go, file: 'go-cpu-fib.pb.gz', id: 'process_cpu:cpu:nanoseconds:cpu:nanoseconds', type: 'cpu:nanoseconds' },
      { svc: SVC.go, file: 'go-cpu-fib.pb.gz', id: 'process_cpu:samples:count:cpu:nanoseconds', type: 'samples:count' },
      { svc: SVC.heap, file: 'go-heap-delta.pb.gz', id: 'memory:alloc_space:bytes:space:bytes', type: 'alloc_space:bytes' },
      { svc: SVC.node, file: 'nodejs-wall.pb.gz', id: 'wall:wall:microseconds:wall:microseconds', type: 'wall:microseconds' },
      { svc: SVC.py, file: 'python-pyspy-not-gzipped.pb', id: EXPECT.find((e) => e.svc === SVC.py).id, type: 'py.cpu:samples:count' },
    ];
    for (const k of cases) {
      const what = `${modeName(m)} ${k.svc} ${k.id}`;
      const res = await call(c, 'selectMergeStacktraces', { profileTypeID: k.id, labelSelector: `{service_name="${k.svc}"}`, ...range() }, what);
      const fg = res.flamegraph;
      assert.equal(fg.names[0], 'total', what);
      const { nodes, self } = decodeLevels(fg);
      const o = (await oracleForFile(fixture(k.file))).types.find((x) => `${x.typeName}` === k.type.replace(/^py\.cpu:/, ''));
      assert.equal(Number(fg.total), Number(o.total), `${what}: total vs go tool pprof`);
      assert.equal(nodes[0].total, Number(o.total), what);
      const api = await fetch(`${server.uiUrl}/api/flamegraph?${new URLSearchParams({ service: k.svc, type: k.type, from: now - 3600, until: now + 600 })}`).then((r) => r.json());
      assert.equal(Number(fg.total), api.total, `${what}: total vs /api/flamegraph`);
      assert.deepEqual(sortMap(nonZero(self)), sortMap(nonZero(flameStats(api.root).self)), `${what}: self vs /api/flamegraph`);
      if (!o.unnamed) assert.deepEqual(sortMap(nonZero(self)), sortMap(nonZero(o.self)), `${what}: self vs go tool pprof`);
      assert.equal(Number(fg.maxSelf), Math.max(...nodes.map((n) => n.self)), what);
      // max_nodes: a cut keeps the total and puts the rest into `other`.
      const cut = await call(c, 'selectMergeStacktraces', { profileTypeID: k.id, labelSelector: `{service_name="${k.svc}"}`, maxNodes: 3n, ...range() }, what);
      const d = decodeLevels(cut.flamegraph);
      assert.equal(Number(cut.flamegraph.total), Number(o.total), `${what}: cut total`);
      assert.equal(d.nodes.reduce((a, n) => a + n.self, 0), Number(o.total), `${what}: cut selves sum to the total`);
      if (nodes.length > 10) {
        assert.ok(d.nodes.length < nodes.length, `${what}: ${d.nodes.length} nodes after the cut, ${nodes.length} before`);
        assert.ok(cut.flamegraph.names.includes('other'), what);
      }
    }
    // Filters: series labels with =; a label no series has selects nothing.
    const go = (sel) => c.selectMergeStacktraces({ profileTypeID: cases[0].id, labelSelector: sel, ...range() });
    const all = Number((await go(`{service_name="${SVC.go}"}`)).flamegraph.total);
    assert.ok(all > 0);
    assert.equal(Number((await go(`{service_name="${SVC.go}", env="prod", "k8s.namespace.name"="shop"}`)).flamegraph.total), all);
    assert.equal(Number((await go(`{service_name="${SVC.go}", env="dev"}`)).flamegraph.total), 0);
    // !=, =~, !~ and k="" on series labels; an absent label matches as "" (as in
    // Prometheus and /pyroscope/render: region="" selects the series without region).
    for (const [sel, want] of [
      ['env=""', 0], ['region=""', all], ['region="", env="prod"', all], ['env!="dev"', all], ['env!="prod"', 0], ['env=~"pr.*"', all], ['env=~"p"', 0], ['env!~"p.*"', 0], ['env!~"d.*"', all],
      ['"k8s.namespace.name"=~"sh.p", env!~""', all], ['region!="eu-1"', all], ['region=~"eu.*"', 0], ['region=~""', all],
    ]) {
      assert.equal(Number((await go(`{service_name="${SVC.go}", ${sel}}`)).flamegraph.total), want, sel);
    }
    // The id selects by name: the same sample type under another name is not merged.
    assert.equal(Number((await c.selectMergeStacktraces({ profileTypeID: 'block:cpu:nanoseconds:cpu:nanoseconds', labelSelector: `{service_name="${SVC.go}"}`, ...range() })).flamegraph.total), 0);
    const empty = await c.selectMergeStacktraces({ profileTypeID: cases[0].id, labelSelector: `{service_name="${SVC.go}"}`, start: 1000n, end: 2000n });
    assert.equal(Number(empty.flamegraph.total), 0);
  });
}

for (const m of MODES) {
  test(`Series and GetProfileStats ${modeName(m)}: label sets exact; stats span the pushes`, async () => {
    const c = client(server.uiUrl, m);
    const goIds = uniqSorted(EXPECT.filter((e) => e.svc === SVC.go).map((e) => e.id));
    const r = await call(c, 'series', { matchers: [`{service_name="${SVC.go}"}`], labelNames: ['service_name', '__profile_type__'], ...range() }, modeName(m));
    assert.deepEqual(r.labelsSet.map((l) => l.labels.map((p) => [p.name, p.value])),
      goIds.map((id) => [['__profile_type__', id], ['service_name', SVC.go]]));
    const py = EXPECT.find((e) => e.svc === SVC.py);
    const full = await call(c, 'series', { matchers: [`{service_name="${SVC.py}"}`], ...range() }, modeName(m));
    assert.deepEqual(full.labelsSet.map((l) => l.labels.map((p) => [p.name, p.value])), [[
      ['__name__', 'py.cpu'], ['__period_unit__', py.periodUnit], ['__profile_type__', py.id],
      ['__type__', 'samples'], ['__unit__', 'count'], ['service_name', SVC.py],
    ]]);
    assert.equal(py.periodType, '', 'py-spy has no period type');
    // A name before the braces is the profile type id.
    const byId = await call(c, 'series', { matchers: ['process_cpu:cpu:nanoseconds:cpu:nanoseconds{}'], labelNames: ['service_name'], ...range() }, modeName(m));
    assert.deepEqual(byId.labelsSet.map((l) => l.labels.map((p) => [p.name, p.value])), uniqSorted([SVC.go, SVC.multi, SVC.span]).map((v) => [['service_name', v]]));
    const none = await call(c, 'series', { matchers: ['{service_name="nope"}'], ...range() }, modeName(m));
    assert.deepEqual(none.labelsSet, []);
    const st = await call(c, 'getProfileStats', {}, modeName(m));
    assert.equal(st.dataIngested, true);
    const oldest = Number(st.oldestProfileTime), newest = Number(st.newestProfileTime);
    assert.ok(pushedFromMs - 60_000 <= oldest && oldest <= newest && newest <= pushedUntilMs, `${oldest} ${newest} in [${pushedFromMs}, ${pushedUntilMs}]`);
  });
}

test('GetProfileStats of a project without data: data_ingested false', async () => {
  const dataDir = mkTemp('querier-stats');
  const key = await createKey(dataDir, 'empty', 'empty-query', 'query');
  const s = await startServer({ dataDir, extraArgs: ['--auth', 'required'] });
  try {
    for (const m of MODES) {
      const st = await client(s.uiUrl, { ...m, headers: { 'x-kiln-key': key } }).getProfileStats({});
      assert.deepEqual([st.dataIngested, st.oldestProfileTime, st.newestProfileTime], [false, 0n, 0n], modeName(m));
    }
  } finally {
    await s.stop();
  }
});

for (const m of MODES) {
  test(`SelectMergeProfile ${modeName(m)}: a pprof that go tool pprof reads with the fixture's total and per-function self; max_nodes cuts into other with the total kept`, async () => {
    const c = client(server.uiUrl, m);
    const pprofOf = async (res) => {
      const file = path.join(mkTemp('querier-pprof'), 'merged.pb');
      fs.writeFileSync(file, toBinary(pprofPb.ProfileSchema, res));
      return (await oracleForFile(file)).types;
    };
    for (const k of [
      { svc: SVC.go, file: 'go-cpu-fib.pb.gz', id: CPU, type: 'cpu:nanoseconds' },
      { svc: SVC.node, file: 'nodejs-wall.pb.gz', id: 'wall:wall:microseconds:wall:microseconds', type: 'wall:microseconds' },
    ]) {
      const req = { profileTypeID: k.id, labelSelector: `{service_name="${k.svc}"}`, ...range() };
      const got = await pprofOf(await call(c, 'selectMergeProfile', req, k.id));
      const want = (await oracleForFile(fixture(k.file))).types.find((x) => x.typeName === k.type);
      assert.equal(got.length, 1, `${k.id}: one sample type`);
      assert.equal(got[0].typeName, k.type);
      assert.equal(got[0].total, want.total, `${k.id}: total`);
      assert.deepEqual(sortMap(nonZero(got[0].self)), sortMap(nonZero(want.self)), `${k.id}: self`);
      // max_nodes: the flame graph's cut, as a pprof.
      const fg = decodeLevels((await call(c, 'selectMergeStacktraces', { ...req, maxNodes: 3n }, k.id)).flamegraph);
      const cut = await pprofOf(await call(c, 'selectMergeProfile', { ...req, maxNodes: 3n }, k.id));
      assert.equal(cut[0].total, want.total, `${k.id}: cut total`);
      assert.deepEqual(sortMap(nonZero(cut[0].self)), sortMap(nonZero(fg.self)), `${k.id}: cut self per function = the cut flame graph's`);
      if (fg.nodes.length < (await pprofOf(await call(c, 'selectMergeProfile', req, k.id)))[0].self.size) {
        assert.ok(cut[0].self.has('other'), `${k.id}: other`);
      }
    }
  });
}

test('SelectMergeProfile in JSON: protojson of the Profile (camelCase, int64 as strings)', async () => {
  const body = JSON.stringify({ profileTypeID: CPU, labelSelector: `{service_name="${SVC.go}"}`, start: String(range().start), end: String(range().end) });
  const r = await rawCall(server.uiUrl, 'SelectMergeProfile', body, { 'content-type': 'application/json' });
  assert.equal(r.status, 200);
  const order = ['sampleType', 'sample', 'mapping', 'location', 'function', 'stringTable', 'dropFrames', 'keepFrames',
    'timeNanos', 'durationNanos', 'periodType', 'period', 'comment', 'defaultSampleType'];
  assert.deepEqual(Object.keys(r.json), order.filter((k) => k in r.json), 'keys in field order, no others');
  assert.ok(['sampleType', 'sample', 'location', 'function', 'stringTable', 'periodType', 'period'].every((k) => k in r.json), Object.keys(r.json).join());
  const st = r.json.stringTable;
  assert.deepEqual([st[Number(r.json.sampleType[0].type)], st[Number(r.json.sampleType[0].unit)]], ['cpu', 'nanoseconds']);
  assert.equal(typeof r.json.period, 'string');
  const o = (await oracleForFile(fixture('go-cpu-fib.pb.gz'))).types.find((x) => x.typeName === 'cpu:nanoseconds');
  assert.equal(r.json.sample.reduce((a, s) => a + BigInt(s.value[0]), 0n), BigInt(o.total), 'sample values sum to the total');
  for (const s of r.json.sample) assert.ok(s.value.every((v) => typeof v === 'string') && (s.locationId ?? []).every((v) => typeof v === 'string'));
});

// Pyroscope's tree bytes, decoded from the format (pkg/model tree.go
// MarshalTruncate, as docs/API.md states it): depth first from a virtual
// root, a node = uvarint(name length) name uvarint(self) uvarint(children);
// a node's children follow as a stack, so the last pushed comes first.
function uvarint(b, at) {
  let v = 0n;
  for (let shift = 0n; ; shift += 7n) {
    assert.ok(at.i < b.length, 'tree bytes: truncated varint');
    const x = b[at.i++];
    v |= BigInt(x & 0x7f) << shift;
    if (x < 0x80) return Number(v);
  }
}
function decodeTree(bytes) {
  const b = Buffer.from(bytes);
  const at = { i: 0 };
  let top = null;
  const parents = [null];
  while (parents.length && b.length) {
    const parent = parents.pop();
    const len = uvarint(b, at);
    const name = b.subarray(at.i, at.i + len).toString();
    at.i += len;
    const node = { name, self: uvarint(b, at), children: [], total: 0 };
    const n = uvarint(b, at);
    if (parent) parent.children.push(node); else top = node;
    for (let k = 0; k < n; k++) parents.push(node);
  }
  assert.equal(at.i, b.length, 'tree bytes: all read');
  const fill = (n) => { n.total = n.self + n.children.reduce((a, c) => a + fill(c), 0); return n.total; };
  if (top) fill(top);
  return top ?? { name: '', self: 0, children: [], total: 0 };
}
// Per-function self of a decoded tree (virtual root left out); node count;
// children come in the reverse of byte order (the stack), so reversed they are sorted.
function treeStats(t) {
  const self = new Map();
  let nodes = 0;
  const walk = (n, depth) => {
    if (depth > 0) { self.set(n.name, (self.get(n.name) ?? 0) + n.self); nodes++; }
    const names = n.children.map((c) => c.name).reverse();
    assert.deepEqual(names, [...names].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))), `children of ${n.name} in name order`);
    for (const c of n.children) walk(c, depth + 1);
  };
  walk(t, 0);
  return { self, nodes, names: [...self.keys()] };
}

for (const m of MODES) {
  test(`SelectMergeStacktraces format TREE ${modeName(m)}: the tree bytes decode to the flame graph; max_nodes cuts into other with the total kept`, async () => {
    const c = client(server.uiUrl, m);
    for (const [svc, id, file, type] of [[SVC.go, CPU, 'go-cpu-fib.pb.gz', 'cpu:nanoseconds'],
      [SVC.node, 'wall:wall:microseconds:wall:microseconds', 'nodejs-wall.pb.gz', 'wall:microseconds']]) {
      const what = `${modeName(m)} ${svc}`;
      const sel = { profileTypeID: id, labelSelector: `{service_name="${svc}"}`, ...range() };
      const fg = (await call(c, 'selectMergeStacktraces', sel, what)).flamegraph;
      const res = await call(c, 'selectMergeStacktraces', { ...sel, format: q.ProfileFormat.TREE }, what);
      assert.equal(res.flamegraph, undefined, `${what}: no flame graph with the tree`);
      const t = decodeTree(res.tree);
      const o = (await oracleForFile(fixture(file))).types.find((x) => x.typeName === type);
      assert.equal(t.total, Number(o.total), `${what}: tree total vs go tool pprof`);
      assert.equal(t.total, Number(fg.total), `${what}: tree total vs FlameGraph`);
      const st = treeStats(t);
      assert.deepEqual(sortMap(nonZero(st.self)), sortMap(nonZero(decodeLevels(fg).self)), `${what}: self per function vs FlameGraph`);
      if (!o.unnamed) assert.deepEqual(sortMap(nonZero(st.self)), sortMap(nonZero(o.self)), `${what}: self vs go tool pprof`);
      const cut = decodeTree((await call(c, 'selectMergeStacktraces', { ...sel, format: q.ProfileFormat.TREE, maxNodes: 3n }, what)).tree);
      const cs = treeStats(cut);
      assert.equal(cut.total, Number(o.total), `${what}: cut total`);
      if (st.nodes > 10) {
        assert.ok(cs.nodes < st.nodes, `${what}: ${cs.nodes} nodes cut, ${st.nodes} whole`);
        assert.ok(cs.names.includes('other'), `${what}: other`);
      }
    }
    const empty = await c.selectMergeStacktraces({ profileTypeID: CPU, labelSelector: `{service_name="${SVC.go}"}`, start: 1000n, end: 2000n, format: q.ProfileFormat.TREE });
    assert.equal(Buffer.from(empty.tree).length, 0, 'an empty tree is no bytes');
  });
}

test('format by number in JSON: 2 is the tree, 1 the flame graph (protojson reads enums by name or number)', async () => {
  const body = (format) => JSON.stringify({ profileTypeID: CPU, labelSelector: `{service_name="${SVC.go}"}`, start: String(range().start), end: String(range().end), format });
  const two = await rawCall(server.uiUrl, 'SelectMergeStacktraces', body(2), { 'content-type': 'application/json' });
  const named = await rawCall(server.uiUrl, 'SelectMergeStacktraces', body('PROFILE_FORMAT_TREE'), { 'content-type': 'application/json' });
  assert.equal(two.status, 200);
  assert.deepEqual(Object.keys(two.json), ['tree']);
  assert.equal(two.json.tree, named.json.tree);
  const one = await rawCall(server.uiUrl, 'SelectMergeStacktraces', body(1), { 'content-type': 'application/json' });
  assert.deepEqual(Object.keys(one.json), ['flamegraph']);
  assert.equal(decodeTree(Buffer.from(two.json.tree, 'base64')).total, Number(one.json.flamegraph.total));
});

const pointsSum = (s) => s.points.reduce((a, p) => a + p.value, 0);
const labelsOf = (s) => s.labels.map((l) => [l.name, l.value]);

for (const m of MODES) {
  test(`SelectSeries ${modeName(m)}: points on the step grid sum to the flame graph total; group_by, aggregation average, limit`, async () => {
    const c = client(server.uiUrl, m);
    const r = range();
    const startMs = Number(r.start);
    const cpuTotal = async (f) => Number((await oracleForFile(fixture(f))).types.find((x) => x.typeName === 'cpu:nanoseconds').total);
    const fib = await cpuTotal('go-cpu-fib.pb.gz'), two = await cpuTotal('go-cpu-two-stacks.pb.gz');
    for (const [svc, want] of [[SVC.go, fib], [SVC.multi, 2 * fib + two]]) {
      const fg = await call(c, 'selectMergeStacktraces', { profileTypeID: CPU, labelSelector: `{service_name="${svc}"}`, ...r }, modeName(m));
      assert.equal(Number(fg.flamegraph.total), want, `${svc}: flame graph total vs go tool pprof`);
      for (const step of [1, 15, 3600]) {
        const res = await call(c, 'selectSeries', { profileTypeID: CPU, labelSelector: `{service_name="${svc}"}`, ...r, step }, modeName(m));
        assert.equal(res.series.length, 1, `${svc} step ${step}: one series without group_by`);
        assert.deepEqual(res.series[0].labels, []);
        assert.equal(pointsSum(res.series[0]), want, `${svc} step ${step}: points sum = flame graph total`);
        const ts = res.series[0].points.map((p) => Number(p.timestamp));
        for (const t of ts) assert.equal((t - startMs) % (step * 1000), 0, `${t} on the grid from ${startMs} by ${step}s`);
        assert.deepEqual(ts, [...new Set(ts)].sort((a, b) => a - b), 'points in time order, one per step');
        assert.ok(ts[0] >= startMs && ts.at(-1) <= Number(r.end), `${ts} within the range`);
      }
    }
    // step 1 h from start = now - 1 h: every push lies in (start, start + 1 h], the point start + 1 h.
    const multi = { profileTypeID: CPU, labelSelector: `{service_name="${SVC.multi}"}`, ...r, step: 3600 };
    const g = await call(c, 'selectSeries', { ...multi, groupBy: ['tier'] }, modeName(m));
    const byTotal = (rows) => rows.sort((a, b) => b[1] - a[1]);
    assert.deepEqual(g.series.map((s) => [labelsOf(s), pointsSum(s)]), byTotal([[[['tier', 'a']], 2 * fib], [[['tier', 'b']], two]]));
    for (const s of g.series) assert.deepEqual(s.points.map((p) => Number(p.timestamp)), [startMs + 3600_000]);
    const avg = await call(c, 'selectSeries', { ...multi, groupBy: ['tier'], aggregation: t.TimeSeriesAggregationType.AVERAGE }, modeName(m));
    assert.deepEqual(avg.series.map((s) => [labelsOf(s), s.points.map((p) => p.value)]), byTotal([[[['tier', 'a']], [fib]], [[['tier', 'b']], [two]]]), 'average: the mean per profile (tier a: two pushes of one file)');
    const top = await call(c, 'selectSeries', { ...multi, groupBy: ['tier'], limit: 1n }, modeName(m));
    assert.deepEqual(top.series.map(labelsOf), [labelsOf(g.series[0])], 'limit 1: the top series by total');
    const two2 = await call(c, 'selectSeries', { ...multi, groupBy: ['tier', 'service_name', '__name__'] }, modeName(m));
    assert.deepEqual(two2.series.map(labelsOf).sort(), [
      [['__name__', 'process_cpu'], ['service_name', SVC.multi], ['tier', 'a']],
      [['__name__', 'process_cpu'], ['service_name', SVC.multi], ['tier', 'b']]].sort(), 'labels sorted by name');
    const none = await call(c, 'selectSeries', { ...multi, groupBy: ['no_such_label'] }, modeName(m));
    assert.deepEqual(none.series.map((s) => [labelsOf(s), pointsSum(s)]), [[[], 2 * fib + two]]);
    const filtered = await call(c, 'selectSeries', { ...multi, labelSelector: `{service_name="${SVC.multi}", tier!="a"}` }, modeName(m));
    assert.deepEqual(filtered.series.map(pointsSum), [two]);
    const past = await call(c, 'selectSeries', { ...multi, start: 1000n, end: 2000n }, modeName(m));
    assert.deepEqual(past.series, [], 'a range with no profiles (before retention): no series');
  });
}

for (const m of MODES) {
  test(`SelectMergeSpanProfile ${modeName(m)}: one span equals /api/span and go tool pprof; two spans add up; max_nodes keeps the total`, async () => {
    const c = client(server.uiUrl, m);
    const raw = await pprofRaw(fixture('go-cpu-span-labels.pb.gz'));
    const counts = new Map();
    for (const s of raw.samples) if (s.labels?.profile_id) counts.set(s.labels.profile_id, (counts.get(s.labels.profile_id) ?? 0) + 1);
    const [a, b] = [...counts].sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1)).map((x) => x[0]);
    assert.ok(a && b, 'two span ids in the fixture');
    const ti = raw.sampleTypes.findIndex((x) => `${x.type}:${x.unit}` === 'cpu:nanoseconds');
    const exp = (ids) => oracle(raw, ti, (s) => ids.includes(s.labels?.profile_id));
    const span = (ids, extra = {}) => call(c, 'selectMergeSpanProfile', { profileTypeID: CPU, labelSelector: `{service_name="${SVC.span}"}`, spanSelector: ids, ...range(), ...extra }, `${modeName(m)} ${ids}`);
    const one = (await span([a])).flamegraph;
    const ea = exp([a]);
    assert.ok(ea.total > 0n);
    assert.equal(Number(one.total), Number(ea.total), 'one span: total vs go tool pprof');
    assert.deepEqual(sortMap(nonZero(decodeLevels(one).self)), sortMap(nonZero(ea.self)), 'one span: self per function vs go tool pprof');
    const api = await fetch(`${server.uiUrl}/api/span?${new URLSearchParams({ span_id: a, service: SVC.span, type: 'cpu:nanoseconds' })}`).then((x) => x.json());
    assert.equal(Number(one.total), api.total, 'one span: total vs /api/span');
    assert.deepEqual(sortMap(nonZero(decodeLevels(one).self)), sortMap(nonZero(flameStats(api.root).self)), 'one span: self vs /api/span');
    const both = (await span([a, b, a])).flamegraph;
    assert.equal(Number(both.total), Number(exp([a, b]).total), 'two spans (one listed twice): the sum');
    assert.deepEqual(sortMap(nonZero(decodeLevels(both).self)), sortMap(nonZero(exp([a, b]).self)));
    const cut = (await span([a, b], { maxNodes: 2n })).flamegraph;
    assert.equal(Number(cut.total), Number(exp([a, b]).total), 'max_nodes: total kept');
    assert.equal(decodeLevels(cut).nodes.reduce((x, n) => x + n.self, 0), Number(exp([a, b]).total));
    assert.equal(Number((await span(['ffffffffffffffff'])).flamegraph.total), 0, 'a span with no samples');
    assert.equal(Number((await span([a], { labelSelector: `{service_name="${SVC.go}"}` })).flamegraph.total), 0, 'another service: nothing');
    assert.equal(Number((await span([a], { start: 1000n, end: 2000n })).flamegraph.total), 0, 'another range: nothing');
  });
}

// The other ingest paths: OTLP (the eBPF profiler fixture) and Connect Push
// (push.v1, a Go CPU profile named by __name__). For every service and
// profile type they stored, each Select method's total equals
// /api/flamegraph's over the same range, in every codec and transport.
test('OTLP and Connect Push data: every Select method equals /api/flamegraph per service and type', async () => {
  const s = await startOtlpServer();
  try {
    const fx = loadFixture(60);
    assertAccepted(await sendPb(s, fx.pb), 'OTLP fixture', s);
    const pushSvc = uniqueName('q-connect');
    const pusher = createClient(pushPb.PusherService, createConnectTransport({ baseUrl: s.uploadUrl, httpVersion: '2' }));
    await pusher.push(create(pushPb.PushRequestSchema, { series: [{
      labels: [{ name: 'service_name', value: pushSvc }, { name: '__name__', value: 'process_cpu' }],
      samples: [{ rawProfile: fs.readFileSync(fixture('go-cpu-two-stacks.pb.gz')), ID: 'a' }],
    }] }));
    const now = Math.floor(Date.now() / 1000);
    const r = { start: BigInt((now - 3600) * 1000), end: BigInt((now + 600) * 1000) };
    let checked = 0;
    for (const m of MODES) {
      const c = client(s.uiUrl, m);
      const services = (await call(c, 'labelValues', { name: 'service_name', ...r }, modeName(m))).names;
      assert.ok(services.includes(pushSvc) && services.some((x) => x.startsWith('unknown_service')), `${services}`);
      for (const svc of services) {
        const ids = (await call(c, 'series', { matchers: [`{service_name="${svc}"}`], labelNames: ['__profile_type__'], ...r }, modeName(m)))
          .labelsSet.map((l) => l.labels[0].value);
        for (const id of ids) {
          const [, st, su] = id.split(':');
          const what = `${modeName(m)} ${svc} ${id}`;
          const api = await fetch(`${s.uiUrl}/api/flamegraph?${new URLSearchParams({ service: svc, type: `${st}:${su}`, from: now - 3600, until: now + 600 })}`).then((x) => x.json());
          const req = { profileTypeID: id, labelSelector: `{service_name="${svc}"}`, ...r };
          const fg = (await call(c, 'selectMergeStacktraces', req, what)).flamegraph;
          assert.equal(Number(fg.total), api.total, `${what}: flame graph`);
          assert.deepEqual(sortMap(nonZero(decodeLevels(fg).self)), sortMap(nonZero(flameStats(api.root).self)), `${what}: self`);
          assert.equal(decodeTree((await call(c, 'selectMergeStacktraces', { ...req, format: q.ProfileFormat.TREE }, what)).tree).total, api.total, `${what}: tree`);
          const series = (await call(c, 'selectSeries', { ...req, step: 10 }, what)).series;
          assert.equal(series.reduce((a, x) => a + pointsSum(x), 0), api.total, `${what}: series`);
          const file = path.join(mkTemp('querier-otlp'), 'merged.pb');
          fs.writeFileSync(file, toBinary(pprofPb.ProfileSchema, await call(c, 'selectMergeProfile', req, what)));
          assert.equal(Number((await oracleForFile(file)).types[0].total), api.total, `${what}: pprof`);
          checked++;
        }
      }
    }
    assert.ok(checked >= 4 * 5, `${checked} (service, type) checks`);
  } finally {
    await s.stop();
  }
});
