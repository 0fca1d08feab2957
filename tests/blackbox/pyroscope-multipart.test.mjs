// Pyroscope's multipart push (API: Push: POST /ingest (Pyroscope)), as the Go
// SDK (upstream/remote: mime/multipart, parts "profile" and
// "sample_type_config"), older Go SDKs ("prev_profile") and Alloy's
// receive_http forwarding send it, to a real kiln on both listeners.
// Oracles: `go tool pprof -raw` of the real files (lib/pprof.mjs) and, for
// the synthetic profiles, the arithmetic of their specs (lib/pb.mjs
// expectedOf): types as in the pprof with the profile name (__name__) from
// display-name (the Go SDK's block and mutex profiles of the real Go program
// tests/go/cpusplit listed apart), listed types only, an average type,
// cumulative types over three pushes stored as exact deltas, prev_profile
// subtracted, and bad bodies refused with an exact status and message,
// nothing stored.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import crypto from 'node:crypto';
import { TESTDATA, uniqueName, nowS, mkTemp } from './lib/env.mjs';
import { startServer, tail } from './lib/server.mjs';
import { getJson, services, upload, wideWindow } from './lib/http.mjs';
import { oracleForFile } from './lib/pprof.mjs';
import { checkQueryAgainst } from './lib/check.mjs';
import { buildProfile, expectedOf } from './lib/pb.mjs';
import { goBuild, startGoServer } from './lib/goprog.mjs';

const file = (f) => fs.readFileSync(path.join(TESTDATA, 'pprof', f));
let server;
let cpuOracle;
let pyspyOracle;
let prog;
const lockProfiles = {}; // block|mutex → {bytes, oracle}: the real Go program's profiles

before(async () => {
  cpuOracle = await oracleForFile(path.join(TESTDATA, 'pprof', 'go-cpu-fib.pb.gz'));
  pyspyOracle = await oracleForFile(path.join(TESTDATA, 'pprof', 'python-pyspy-not-gzipped.pb'));
  const bin = await goBuild('cpusplit');
  [server, prog] = await Promise.all([startServer(), startGoServer(bin, ['-parked=3'], 10000)]);
  // Let the workload run so both profiles have content.
  await new Promise((r) => setTimeout(r, 1500));
  const dir = mkTemp('mp-lock');
  for (const kind of ['block', 'mutex']) {
    const res = await fetch(`${prog.url}/debug/pprof/${kind}`, { signal: AbortSignal.timeout(30000) });
    assert.equal(res.status, 200, `GET /debug/pprof/${kind}`);
    const bytes = Buffer.from(await res.arrayBuffer());
    const f = path.join(dir, `${kind}.pb.gz`);
    fs.writeFileSync(f, bytes);
    const oracle = (await oracleForFile(f)).types;
    assert.deepEqual(oracle.map((o) => o.typeName), ['contentions:count', 'delay:nanoseconds'], `${kind} types`);
    for (const o of oracle) assert.ok(o.total > 0n, `${kind} ${o.typeName} has samples`);
    lockProfiles[kind] = { bytes, oracle };
  }
});
after(async () => {
  if (server) await server.stop();
  if (prog) await prog.stop();
});

// A multipart/form-data body as Go's mime/multipart writer builds it: a
// random 60-hex-digit boundary, CreateFormFile's headers, CRLFs.
function form(parts, boundary = crypto.randomBytes(30).toString('hex')) {
  const chunks = [];
  parts.forEach(([name, data, filename], i) => {
    chunks.push(Buffer.from(`${i ? '\r\n' : ''}--${boundary}\r\n` +
      `Content-Disposition: form-data; name="${name}"; filename="${filename ?? `${name}.pprof`}"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n'));
    chunks.push(Buffer.isBuffer(data) ? data : Buffer.from(data));
  });
  chunks.push(Buffer.from(`\r\n--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

// The body the Node.js SDK up to 0.5 sent (npm form-data): a boundary of 26
// dashes and 24 digits, one part "profile" with filename "profile" and
// Content-Type text/json.
function nodeForm(data) {
  const boundary = `${'-'.repeat(26)}${String(Date.now()).padStart(24, '0')}`;
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="profile"; filename="profile"\r\n` +
      'Content-Type: text/json\r\n\r\n'),
    data, Buffer.from(`\r\n--${boundary}--\r\n`)]);
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

// POST /ingest as the Go SDK does: name, from/until in ns, spyName, sampleRate, units, aggregationType.
async function ingest(base, name, { body, contentType }, { from, until, route = '/ingest', extra = {}, headers = {} } = {}) {
  const q = new URLSearchParams({
    name, spyName: 'gospy', sampleRate: '100', units: '', aggregationType: '', ...extra,
  });
  if (from !== undefined) q.set('from', `${from}000000000`);
  if (until !== undefined) q.set('until', `${until}000000000`);
  const res = await fetch(`${base}${route}?${q}`, {
    method: 'POST', body, headers: { 'content-type': contentType, ...headers }, signal: AbortSignal.timeout(60000),
  });
  const text = Buffer.from(await res.arrayBuffer()).toString('utf8');
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, text, json };
}

async function ok(r, what) {
  assert.equal(r.status, 200, `${what}: ${r.text}\n${tail(server.stderr())}`);
  assert.equal(r.text, '', `${what}: Pyroscope clients want an empty 200 body`);
}

const typesOf = async (svc) => {
  const entry = (await services(server)).find((s) => s.name === svc);
  assert.ok(entry, `/api/services lacks ${svc}`);
  return [...entry.types].sort();
};

const total = async (svc, type, from, until, params = {}) =>
  (await getJson(server.uiUrl, '/api/flamegraph', { service: svc, type, from, until, ...params })).total;

test('the Go SDK\'s CPU push (one "profile" part, no config), gzipped and not, and the Node SDK 0.5\'s form: every type equals go tool pprof, both listeners and routes', async () => {
  const t = nowS() - 900;
  const cases = [
    [server.uploadUrl, '/ingest', 'go-cpu-fib.pb.gz', cpuOracle, form],
    [server.uiUrl, '/pyroscope/ingest', 'python-pyspy-not-gzipped.pb', pyspyOracle, form],
    [server.uiUrl, '/ingest', 'go-cpu-fib.pb.gz', cpuOracle, (parts) => nodeForm(parts[0][1])],
  ];
  for (const [base, route, f, o, build] of cases) {
    const svc = uniqueName('mp-plain');
    await ok(await ingest(base, `${svc}{env=prod}`, build([['profile', file(f)]]), { from: t, until: t + 10, route }), f);
    for (const exp of o.types) await checkQueryAgainst(server, svc, exp, { from: t - 1, until: t + 12, 'label.env': 'prod' }, f);
    assert.deepEqual(await typesOf(svc), o.types.map((x) => x.typeName).sort());
  }
});

test('Content-Encoding: gzip applies to the whole form; a form that is not gzip then is refused', async () => {
  const t = nowS() - 850;
  const svc = uniqueName('mp-gzip-form');
  const f = form([['profile', zlib.gunzipSync(file('go-cpu-fib.pb.gz'))]]);
  await ok(await ingest(server.uploadUrl, svc, { ...f, body: zlib.gzipSync(f.body) },
    { from: t, until: t + 10, headers: { 'content-encoding': 'gzip' } }), 'gzipped form');
  for (const exp of cpuOracle.types) await checkQueryAgainst(server, svc, exp, { from: t - 1, until: t + 12 }, 'gzipped form');
  const bad = uniqueName('mp-gzip-bad');
  const r = await ingest(server.uploadUrl, bad, f, { headers: { 'content-encoding': 'gzip' } });
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.message, 'Content-Encoding: gzip but the body does not start with the gzip magic bytes');
  assert.ok(!(await services(server)).some((x) => x.name === bad));
});

test('sample_type_config: only the listed types are stored, as in the pprof; display-name names the profile (__name__), units change nothing', async () => {
  const svc = uniqueName('mp-name');
  const t = nowS() - 800;
  const cpu = cpuOracle.types.find((x) => x.typeName === 'cpu:nanoseconds');
  assert.ok(cpu, 'go-cpu-fib has cpu:nanoseconds');
  // display-name alloc_weird: Pyroscope's rule names the profile memory.
  const config = JSON.stringify({ cpu: { 'display-name': 'alloc_weird', units: 'nanos' }, absent_type: { units: 'x' } });
  await ok(await ingest(server.uploadUrl, svc, form([['profile', file('go-cpu-fib.pb.gz')],
    ['sample_type_config', config, 'sample_type_config.json']]), { from: t, until: t + 10 }), 'named');
  assert.deepEqual(await typesOf(svc), ['cpu:nanoseconds'], 'samples:count is not listed: not stored');
  const w = { from: t - 1, until: t + 12 };
  await checkQueryAgainst(server, svc, cpu, w, 'named cpu');
  await checkQueryAgainst(server, svc, { ...cpu, typeName: 'memory:cpu:nanoseconds' }, w, 'named cpu, NAME:SAMPLE:UNIT id');
  assert.equal(await total(svc, 'process_cpu:cpu:nanoseconds', w.from, w.until), 0, 'not named process_cpu');
  assert.equal(await total(svc, 'cpu:nanoseconds', w.from, w.until, { 'label.__name__': 'memory' }), Number(cpu.total));
  // Without a config, the default one names it: samples → cpu → process_cpu.
  const plain = uniqueName('mp-name-plain');
  await ok(await ingest(server.uiUrl, plain, form([['profile', file('go-cpu-fib.pb.gz')]]), { from: t, until: t + 10 }), 'no config');
  for (const exp of cpuOracle.types) {
    await checkQueryAgainst(server, plain, { ...exp, typeName: `process_cpu:${exp.typeName}` }, w, 'no config');
    assert.equal(await total(plain, exp.typeName, w.from, w.until, { 'label.__name__': 'process_cpu' }), Number(exp.total));
  }
});

// The Go SDK's configs (pyroscope-go sample_types.go): its mutex and block
// profiles are already deltas (godeltaprof), so not cumulative.
const GO_SDK_CONFIG = {
  mutex: { contentions: { 'display-name': 'mutex_count', units: 'lock_samples' }, delay: { 'display-name': 'mutex_duration', units: 'lock_nanoseconds' } },
  block: { contentions: { 'display-name': 'block_count', units: 'lock_samples' }, delay: { 'display-name': 'block_duration', units: 'lock_nanoseconds' } },
};
const LOCK_IDS = ['block:contentions:count', 'mutex:contentions:count', 'block:delay:nanoseconds', 'mutex:delay:nanoseconds'];

test('the Go SDK\'s mutex and block pushes for one service: the pprof\'s types, kept apart by the name from display-name, totals exact', async () => {
  const app = uniqueName('mp-lock');
  const t = nowS() - 750;
  for (const kind of ['mutex', 'block'])
    await ok(await ingest(server.uploadUrl, `${app}{env=prod}`, form([['profile', lockProfiles[kind].bytes],
      ['sample_type_config', JSON.stringify(GO_SDK_CONFIG[kind])]]), { from: t, until: t + 10 }), kind);
  const w = { from: t - 1, until: t + 12 };
  assert.deepEqual((await getJson(server.uiUrl, '/api/types', { service: app, ...w })).types, LOCK_IDS);
  for (const kind of ['block', 'mutex'])
    for (const o of lockProfiles[kind].oracle)
      await checkQueryAgainst(server, app, { ...o, typeName: `${kind}:${o.typeName}` }, { ...w, 'label.env': 'prod' }, `Go SDK ${kind}`);
  // An old SAMPLE:UNIT link sums both kinds.
  for (const [i, type] of ['contentions:count', 'delay:nanoseconds'].entries())
    assert.equal(await total(app, type, w.from, w.until),
      Number(lockProfiles.block.oracle[i].total + lockProfiles.mutex.oracle[i].total), `old link ${type}`);
  // The same types as a pprof push of the profile.
  const up = uniqueName('mp-lock-upload');
  const r = await upload(server, lockProfiles.block.bytes, { serviceName: up });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual((await getJson(server.uiUrl, '/api/types', { service: up, ...wideWindow() })).types,
    ['contentions:count', 'delay:nanoseconds']);
});

// A synthetic Go-heap-like profile: three stacks, values per type given per stack.
const STACKS = [['malloc', 'handler', 'main'], ['grow', 'handler', 'main'], ['load', 'init', 'main']];
function heapSpec(rows, t) {
  return {
    sampleTypes: [['alloc_objects', 'count'], ['alloc_space', 'bytes'], ['inuse_space', 'bytes']],
    periodType: ['space', 'bytes'], period: 524288, timeNanos: BigInt(t) * 1000000000n,
    samples: rows.map((values, i) => ({ stack: STACKS[i], values })).filter((s) => s.values.some((v) => v !== 0)),
  };
}
const HEAP_CONFIG = JSON.stringify({
  alloc_objects: { units: 'objects', cumulative: true },
  alloc_space: { units: 'bytes', cumulative: true },
  inuse_space: { units: 'bytes', aggregation: 'average' },
});
// Per-stack values of three pushes (stack 3 allocates from the second on).
const PUSHES = [
  [[10, 1000, 500], [4, 400, 100], [0, 0, 20]],
  [[15, 1600, 700], [4, 400, 100], [2, 50, 20]],
  [[40, 4100, 300], [9, 900, 100], [2, 50, 20]],
];
const deltaSpec = (a, b, t) => heapSpec(b.map((row, i) => row.map((v, k) => (k < 2 ? v - a[i][k] : v))), t);

test('cumulative types over three pushes: the first stores none, then exact growth per stack; the average type is averaged', async () => {
  const svc = uniqueName('mp-cumulative');
  const t0 = nowS() - 700;
  const times = [t0, t0 + 15, t0 + 30];
  for (let i = 0; i < 3; i++) {
    const bytes = zlib.gzipSync(buildProfile(heapSpec(PUSHES[i], times[i])).bytes);
    await ok(await ingest(server.uploadUrl, `${svc}{pod=a}`, form([['profile', bytes], ['sample_type_config', HEAP_CONFIG]]),
      { from: times[i], until: times[i] + 10 }), `push ${i + 1}`);
  }
  assert.deepEqual(await typesOf(svc), ['alloc_objects:count', 'alloc_space:bytes', 'inuse_space:bytes']);
  for (const [k, type] of [[0, 'alloc_objects:count'], [1, 'alloc_space:bytes']]) {
    assert.equal(await total(svc, type, times[0] - 1, times[0] + 12), 0, `${type}: the first push stores no cumulative type`);
    for (const i of [1, 2]) {
      const exp = expectedOf(deltaSpec(PUSHES[i - 1], PUSHES[i], times[i]), k);
      await checkQueryAgainst(server, svc, { ...exp, typeName: type, hasNegative: false, unnamed: false },
        { from: times[i] - 1, until: times[i] + 12 }, `push ${i + 1} ${type}`);
    }
    const all = expectedOf(deltaSpec(PUSHES[0], PUSHES[2], t0), k).total;
    assert.equal(await total(svc, type, t0 - 1, t0 + 45), Number(all), `${type}: the deltas add up to the growth from push 1 to 3`);
  }
  // inuse_space, "average": every push stored, averaged over the three.
  for (let i = 0; i < 3; i++) {
    const exp = expectedOf(heapSpec(PUSHES[i], times[i]), 2);
    assert.equal(await total(svc, 'inuse_space:bytes', times[i] - 1, times[i] + 12), Number(exp.total), `inuse push ${i + 1}`);
  }
  // Per stack (500+700+300)/3 + (100+100+100)/3 + (20+20+20)/3: averaged, not summed.
  assert.equal(await total(svc, 'inuse_space:bytes', t0 - 1, t0 + 45), 620, 'averaged, not summed');
});

test('aggregation "average" makes a type Kiln would sum a snapshot type; "sum" keeps it a window type', async () => {
  const t = nowS() - 600;
  const spec = (v, at) => ({
    sampleTypes: [['objects_held', 'count']], periodType: ['objects_held', 'count'], timeNanos: BigInt(at) * 1000000000n,
    samples: [{ stack: ['hold', 'main'], values: [v] }, { stack: ['keep', 'main'], values: [v * 3] }],
  });
  const res = {};
  for (const agg of ['average', 'sum']) {
    const svc = uniqueName(`mp-${agg}`);
    const config = JSON.stringify({ objects_held: { aggregation: agg } });
    for (const [v, at] of [[100, t], [300, t + 20]])
      await ok(await ingest(server.uiUrl, svc, form([['profile', buildProfile(spec(v, at)).bytes], ['sample_type_config', config]]),
        { from: at, until: at + 10 }), `${agg} ${v}`);
    res[agg] = await total(svc, 'objects_held:count', t - 1, t + 35);
  }
  assert.equal(res.average, (400 + 1200) / 2, 'average of the two snapshots');
  assert.equal(res.sum, 400 + 1200, 'sum of the two windows');
});

test('prev_profile (older Go SDKs): subtracted from profile for the cumulative types, at the first push', async () => {
  const svc = uniqueName('mp-prev');
  const t = nowS() - 500;
  const body = form([
    ['profile', zlib.gzipSync(buildProfile(heapSpec(PUSHES[2], t)).bytes)],
    ['prev_profile', buildProfile(heapSpec(PUSHES[1], t - 10)).bytes],
    ['sample_type_config', HEAP_CONFIG],
  ]);
  await ok(await ingest(server.uploadUrl, svc, body, { from: t, until: t + 10 }), 'prev_profile');
  for (const [k, type] of [[0, 'alloc_objects:count'], [1, 'alloc_space:bytes']]) {
    const exp = expectedOf(deltaSpec(PUSHES[1], PUSHES[2], t), k);
    await checkQueryAgainst(server, svc, { ...exp, typeName: type, hasNegative: false, unnamed: false },
      { from: t - 1, until: t + 12 }, `prev_profile ${type}`);
  }
  const inuse = expectedOf(heapSpec(PUSHES[2], t), 2);
  await checkQueryAgainst(server, svc, { ...inuse, typeName: 'inuse_space:bytes', hasNegative: false, unnamed: false },
    { from: t - 1, until: t + 12 }, 'prev_profile: inuse_space is not cumulative: stored as sent');
});

test('bad multipart bodies on both listeners: exact status and Pyroscope body, nothing stored', async () => {
  const good = file('go-cpu-fib.pb.gz');
  const ok1 = form([['profile', good]], 'BOUNDARY');
  const bomb = zlib.gzipSync(Buffer.alloc(40 << 20));
  // The pprof decoder's own message for a truncated pprof, as a raw /ingest body.
  const truncated = zlib.gunzipSync(good).subarray(0, 300);
  const ref = await fetch(`${server.uploadUrl}/ingest?name=${uniqueName('mp-ref')}`, { method: 'POST', body: truncated });
  const refMsg = (await ref.json()).message;
  assert.equal(ref.status, 400, refMsg);
  const tried = [];
  for (const base of [server.uploadUrl, server.uiUrl]) {
    const cases = [
      ['no boundary', { body: ok1.body, contentType: 'multipart/form-data' }, 400,
        'multipart: the Content-Type has no boundary parameter'],
      ['boundary over 70', { body: ok1.body, contentType: `multipart/form-data; boundary=${'b'.repeat(71)}` }, 400,
        'multipart: the boundary is 71 characters; RFC 2046 allows 1 to 70'],
      ['multipart/mixed', { body: ok1.body, contentType: 'multipart/mixed; boundary=BOUNDARY' }, 415,
        'multipart/mixed is not supported: send multipart/form-data'],
      ['wrong boundary', { body: ok1.body, contentType: 'multipart/form-data; boundary=OTHER' }, 400,
        'multipart: no delimiter line --OTHER in the body'],
      ['truncated', { body: ok1.body.subarray(0, ok1.body.length - 40), contentType: ok1.contentType }, 400,
        'multipart: part 1 ("profile") has no closing delimiter --BOUNDARY--'],
      ['missing profile part', form([['prev_profile', good]]), 400, 'multipart: no part named "profile" (the pprof profile)'],
      ['empty profile part', form([['profile', '']]), 400,
        'multipart: the "profile" part is empty: send a pprof profile (raw or gzip)'],
      ['duplicate profile part', form([['profile', good], ['profile', good]]), 400,
        'multipart: part 2: a second part named "profile"'],
      ['bad JSON config', form([['profile', good], ['sample_type_config', '{"cpu": {"units": "x"']]), 400,
        "sample_type_config: not JSON ('}' expected near end of file at byte 21)"],
      ['config aggregation', form([['profile', good], ['sample_type_config', '{"cpu":{"aggregation":"max"}}']]), 400,
        'sample_type_config: "cpu".aggregation must be "sum" or "average", not "max"'],
      ['truncated pprof part', form([['profile', truncated]]), 400, `multipart part "profile": ${refMsg}`],
      ['gzip bomb in a part', form([['profile', bomb]]), 413,
        'multipart part "profile": decompressed body exceeds the 32 MiB limit'],
    ];
    for (const [what, body, status, message] of cases) {
      const svc = uniqueName('mp-bad');
      tried.push(svc);
      const r = await ingest(base, svc, body);
      const ctx = `${base} ${what}: ${r.status} ${r.text.slice(0, 300)}`;
      assert.equal(r.status, status, ctx);
      assert.deepEqual(Object.keys(r.json ?? {}), ['code', 'message'], ctx);
      assert.equal(r.json.code, status === 400 ? 'invalid_argument' : status === 413 ? 'resource_exhausted' : 'unimplemented', ctx);
      assert.equal(r.json.message, message, ctx);
    }
  }
  const names = new Set((await services(server)).map((s) => s.name));
  for (const s of tried) assert.ok(!names.has(s), `refused push stored as ${s}`);
});

test('format=jfr with a multipart body goes to the JFR decoder (part jfr; tests/blackbox/pyroscope-jfr.test.mjs)', async () => {
  const svc = uniqueName('mp-jfr');
  const r = await ingest(server.uploadUrl, svc, form([['jfr', 'x'], ['labels', 'y']]), { extra: { format: 'jfr' } });
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.code, 'invalid_argument');
  assert.equal(r.json.message, 'chunk 0 at offset 0: chunk header truncated (1 of 68 bytes)');
  assert.ok(!(await services(server)).some((s) => s.name === svc));
});
