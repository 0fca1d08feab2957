// The two store engines give the same answers (issue 8, OPS: Storage): one kiln
// on the embedded store and one on ClickHouse are fed identical inputs —
// the shared pprof fixtures (gzip by magic bytes, and a raw file sent with
// Content-Encoding: gzip), hand-built heap snapshots whose averages are not
// whole numbers, OTLP over HTTP (gzip) with span links, sample attributes
// and a samples:count profile with a CPU period, the real eBPF-profiler
// request — for several services, series labels and types, at explicit
// times on both sides of a UTC midnight within the retention, plus refused
// pushes for the usage counters. Then every /api route (docs/API.md,
// src/api/query_routes.c: services, types, flamegraph, top, timeline, pprof,
// labels, span, usage, targets) is asked the same questions with several
// parameter sets (ranges, steps, label filters, limits, bad parameters) and
// must answer byte for byte alike; a difference is reported at its first
// JSON path (pprof: as go tool pprof reads it when the bytes differ).
// The embedded answers are also checked against exact expected numbers, so
// "both empty" cannot pass. Both kilns sum past hours and days as soon as
// they end (KILN_TEST_HOURS_MS, KILN_TEST_HOURS_MARGIN_S: docs/STORE.md,
// Merged hours and Summed hours), the comparisons start once both
// compactors are done, and the ClickHouse kiln must have answered from
// summed rows (kiln_store_hours_used_total).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { TESTDATA, nowS } from './lib/env.mjs';
import { upload, getJson } from './lib/http.mjs';
import { oracleForFile } from './lib/pprof.mjs';
import { buildProfile } from './lib/pb.mjs';
import { startOtlpServer, postOtlp, compress, encodeRequest, loadFixture, describe } from './lib/otlp.mjs';
import { buildRequest } from './lib/otlp-build.mjs';
import { startClickHouse } from './lib/clickhouse.mjs';
import { assertSameResponse, assertSameAnswer } from './lib/compare.mjs';
import { tail } from './lib/server.mjs';

const PPROF = (f) => path.join(TESTDATA, 'pprof', f);
const NAMES = ['embedded', 'clickhouse'];
const DAY = 86400;
const NOW = nowS();
// D: the UTC midnight that began yesterday; uploads straddle it.
const D = Math.floor(NOW / DAY) * DAY - DAY;
const W = {
  all: { from: D - DAY, until: NOW + 60 },
  edge: { from: D - 1800, until: D + 1800 },
  recent: { from: NOW - 3600, until: NOW },
  empty: { from: D - 10 * DAY, until: D - 9 * DAY },
  relative: { from: 'now-3d', until: 'now' },
};
const HUGE = 2n ** 62n; // cmp-huge's value per profile: four of them pass 2^63
const TRACE = 'ce000000000000000000000000000001';
const SPAN_A = 'da00000000000001';
const SPAN_B = 'da00000000000002';
const SPAN_NONE = 'da000000000000ff';

let ch;
let L; // embedded
let C; // ClickHouse
const expected = new Map(); // `${service} ${type}` → total over W.all (embedded check)
const addExpected = (svc, type, v) => expected.set(`${svc} ${type}`, (expected.get(`${svc} ${type}`) ?? 0) + Number(v));

// Sends with send(server) to both servers, in turn, and asserts identical replies.
async function both(what, send) {
  const ra = await send(L);
  const rb = await send(C);
  await assertSameResponse(ra, rb, `push ${what}`, NAMES);
  return ra;
}
async function pushPprof(what, body, params, headers = {}) {
  const r = await both(what, (s) => upload(s, body, params, headers));
  assert.equal(r.status, 200, `${what}: ${r.text}`);
  return r;
}

// Heap snapshots with values chosen so averages are not whole numbers.
function heap(inuse, alloc) {
  return buildProfile({
    sampleTypes: [['alloc_space', 'bytes'], ['inuse_space', 'bytes']], periodType: ['space', 'bytes'], period: 524288,
    samples: [
      { stack: ['main.cache', 'main.serve', 'main.main'], values: [alloc, inuse] },
      { stack: ['bytes.growSlice', 'main.serve', 'main.main'], values: [alloc * 3, inuse * 2 + 1] },
    ],
  }).bytes;
}

function otlpRequest() {
  const A = { traceId: TRACE, spanId: SPAN_A };
  const B = { traceId: TRACE, spanId: SPAN_B };
  const ns = (s) => BigInt(s) * 1000000000n;
  const req = buildRequest({
    resources: [
      {
        attrs: { 'service.name': 'cmp-otlp-a', 'k8s.namespace.name': 'shop', 'k8s.pod.name': 'otlp-0' },
        profiles: [{
          type: ['cpu', 'nanoseconds'], period: 10_000_000, timeNs: ns(NOW - 700),
          samples: [
            { stack: ['main.handleA', 'net/http.serve', 'main.main'], values: ['30000000'], link: A, attrs: { 'thread.name': 'worker' } },
            { stack: ['runtime.mallocgc', 'main.handleA', 'net/http.serve', 'main.main'], values: ['10000000', '20000000'], link: A, timestamps: [ns(NOW - 650), ns(NOW - 590)] },
            { stack: ['main.handleB', 'net/http.serve', 'main.main'], values: ['70000000'], link: B, attrs: { 'thread.name': 'main' } },
            { stack: ['main.idle', 'main.main'], values: ['90000000'], timestamps: [ns(D - 200)] },
            { stack: ['main.idle', 'main.main'], values: ['40000000'], timestamps: [ns(D + 100)], attrs: { 'thread.name': 'worker' } },
          ],
        }],
      },
      {
        attrs: { 'service.name': 'cmp-otlp-b', 'k8s.pod.name': 'ebpf-1' },
        profiles: [{
          type: ['samples', 'count'], periodType: ['cpu', 'nanoseconds'], period: 50_000_000, timeNs: ns(NOW - 400),
          samples: [
            { stack: ['@/usr/lib/libc.so.6', 'main.work', 'main.main'], values: ['3'], link: B },
            { stack: ['main.work', 'main.main'], values: ['5'] },
            { stack: ['main.work', 'main.main'], timestamps: [ns(NOW - 390), ns(NOW - 330), ns(NOW - 270)] },
          ],
        }],
      },
    ],
  });
  // A span of the trace without samples: only in the link table.
  req.dictionary.linkTable.push({ traceId: Buffer.from(TRACE, 'hex'), spanId: Buffer.from(SPAN_NONE, 'hex') });
  return req;
}

before(async () => {
  ch = await startClickHouse();
  const env = { KILN_TEST_HOURS_MS: '200', KILN_TEST_HOURS_MARGIN_S: '0' };
  [L, C] = await Promise.all([
    startOtlpServer({ engine: 'local', env }),
    startOtlpServer({ engine: 'clickhouse', clickhouseUrl: ch.url, env }),
  ]);

  // pprof fixtures, several series and times on both sides of D.
  const fib = await oracleForFile(PPROF('go-cpu-fib.pb.gz'));
  const fibBody = fs.readFileSync(PPROF('go-cpu-fib.pb.gz'));
  const fibUploads = [
    [D - 300, { namespace: 'shop', pod: 'web-0', 'label.env': 'prod' }],
    [D + 240, { namespace: 'shop', pod: 'web-1', 'label.env': 'prod' }],
    [NOW - 900, { namespace: 'shop', pod: 'web-0', 'label.env': 'canary' }],
  ];
  for (const [from, labels] of fibUploads) {
    await pushPprof(`go-cpu-fib at ${from}`, fibBody, { serviceName: 'cmp-go', from, until: from + 30, ...labels });
    for (const o of fib.types) addExpected('cmp-go', o.typeName, o.total);
  }
  const spans = await oracleForFile(PPROF('go-cpu-span-labels.pb.gz'));
  await pushPprof('go-cpu-span-labels', fs.readFileSync(PPROF('go-cpu-span-labels.pb.gz')), { serviceName: 'cmp-spans', workload: 'ignored', from: NOW - 1200, until: NOW - 1190, container: 'app' });
  for (const o of spans.types) addExpected('cmp-spans', o.typeName, o.total);
  const node = await oracleForFile(PPROF('nodejs-wall.pb.gz'));
  await pushPprof('nodejs-wall', fs.readFileSync(PPROF('nodejs-wall.pb.gz')), { workload: 'cmp-node', from: D - 1500, until: D - 1490 });
  for (const o of node.types) addExpected('cmp-node', o.typeName, o.total);
  const py = await oracleForFile(PPROF('python-pyspy-not-gzipped.pb'));
  await pushPprof('python-pyspy with Content-Encoding: gzip', zlib.gzipSync(fs.readFileSync(PPROF('python-pyspy-not-gzipped.pb'))),
    { serviceName: 'cmp-py', from: D + 1700, until: D + 1710 }, { 'content-encoding': 'gzip' });
  for (const o of py.types) addExpected('cmp-py', o.typeName, o.total);
  const two = await oracleForFile(PPROF('go-cpu-two-stacks.pb.gz'));
  await pushPprof('go-cpu-two-stacks', fs.readFileSync(PPROF('go-cpu-two-stacks.pb.gz')), { serviceName: 'cmp-go', pod: 'web-2', from: NOW - 2000, until: NOW - 1990 });
  for (const o of two.types) addExpected('cmp-go', o.typeName, o.total);
  const hd = await oracleForFile(PPROF('go-heap-delta.pb.gz'));
  await pushPprof('go-heap-delta', fs.readFileSync(PPROF('go-heap-delta.pb.gz')), { serviceName: 'cmp-heapfile', from: D + 60, until: D + 90 });
  for (const o of hd.types) addExpected('cmp-heapfile', o.typeName, o.total);

  // Heap snapshots: pod a three times (inuse 100, 200, 401 → average 233.67),
  // pod b twice (7, 8 → 7.5); alloc_space is a window type (summed).
  const snaps = [['a', NOW - 1500, 100, 10], ['a', NOW - 900, 200, 20], ['a', NOW - 300, 401, 40], ['b', NOW - 1200, 7, 1], ['b', NOW - 600, 8, 2]];
  for (const [pod, from, inuse, alloc] of snaps) {
    await pushPprof(`heap snapshot ${pod}@${from}`, heap(inuse, alloc), { serviceName: 'cmp-heap', pod, from, until: from + 10 });
    addExpected('cmp-heap', 'alloc_space:bytes', alloc * 4);
  }

  // Values whose sums pass 2^63: three in one day (ClickHouse sums them in
  // one GROUP BY, whose Int64 wraps) and one more the day after. Both
  // engines must saturate at 2^63 - 1 rather than turn negative.
  for (const from of [D + 100, D + 200, D + 300, NOW - 700]) {
    const body = buildProfile({
      sampleTypes: [['samples', 'count'], ['cpu', 'nanoseconds']],
      samples: [{ stack: ['main.huge', 'main.main'], values: [1, HUGE] }, { stack: ['main.small', 'main.main'], values: [1, 7] }],
    }).bytes;
    await pushPprof(`values near 2^62 at ${from}`, body, { serviceName: 'cmp-huge', from, until: from + 10 });
  }

  // OTLP/HTTP, gzip, with links, sample attributes, a samples:count profile.
  const req = otlpRequest();
  const gz = compress(encodeRequest(req), 'gzip');
  const r = await both('OTLP request (gzip)', (s) => postOtlp(s, gz, { encoding: 'gzip' }));
  assert.equal(r.status, 200, describe(r));
  addExpected('cmp-otlp-a', 'cpu:nanoseconds', 30_000_000 + 30_000_000 + 70_000_000 + 90_000_000 + 40_000_000);
  addExpected('cmp-otlp-b', 'samples:count', 3 + 5 + 3);
  addExpected('cmp-otlp-b', 'cpu:nanoseconds', (3 + 5 + 3) * 50_000_000);

  // The real eBPF-profiler request, rebased to 10 minutes ago.
  const fx = loadFixture(600);
  const rf = await both('eBPF-profiler fixture', (s) => postOtlp(s, fx.pb));
  assert.equal(rf.status, 200, describe(rf));

  // Refused pushes, for the usage counters: out of the window, and malformed.
  const old = NOW - 20 * DAY;
  const ro = await both('pprof 20 days old', (s) => upload(s, fibBody, { serviceName: 'cmp-old', from: old, until: old + 10 }));
  assert.equal(ro.status, 400, ro.text);
  const rb = await both('malformed pprof', (s) => upload(s, Buffer.from([0x12, 0x7f, 0x01]), { serviceName: 'cmp-bad' }));
  assert.equal(rb.status, 400, rb.text);
  // Usage counters are flushed every second.
  await new Promise((res) => setTimeout(res, 1500));
  // The compactors: done when neither wrote a summed row for 2 s (10 passes).
  let last = '';
  for (let stable = 0, i = 0; stable < 10 && i < 300; i++) {
    const now = `${await metric(L, 'kiln_store_hours_summed_total')} ${await metric(C, 'kiln_store_hours_summed_total')}`;
    stable = now === last ? stable + 1 : 0;
    last = now;
    await new Promise((res) => setTimeout(res, 200));
  }
  const [sl, sc] = last.split(' ').map(Number);
  assert.ok(sl > 0 && sc > 0, `summed rows written: embedded ${sl}, clickhouse ${sc}`);
});

async function metric(s, name) {
  const text = await (await fetch(new URL('/metrics', s.uiUrl))).text();
  const m = text.match(new RegExp(`^${name} (\\d+)$`, 'm'));
  assert.ok(m, `${name} on /metrics`);
  return Number(m[1]);
}


after(async () => {
  await Promise.all([L?.stop(), C?.stop()]);
  await ch?.destroy();
});

// Runs every [route, params] in turn on both servers; collects the
// differences and fails once listing them (at most 15).
async function compareAll(t, cases) {
  const problems = [];
  const notes = [];
  for (const [route, params] of cases) {
    try {
      await assertSameAnswer(L, C, route, params, NAMES, { diagnostic: (m) => notes.push(m) });
    } catch (e) {
      problems.push(e.message.split('\n')[0]);
    }
  }
  t.diagnostic(`${cases.length} requests compared${notes.length ? `; ${notes.length} pprof answers differ in their bytes only (go tool pprof reads the same samples)` : ''}`);
  if (problems.length) {
    assert.fail(`${problems.length} of ${cases.length} answers differ between the engines:\n${problems.slice(0, 15).join('\n')}${problems.length > 15 ? '\n…' : ''}\nclickhouse kiln stderr:\n${tail(C.stderr(), 10)}`);
  }
}

// (service, type) pairs of the embedded server over the widest window.
async function seriesTypes() {
  const j = await getJson(L.uiUrl, '/api/services', W.all);
  return j.services.flatMap((s) => s.types.map((t) => [s.name, t]));
}

// Label filter sets worth asking per service.
const FILTERS = {
  'cmp-go': [{ 'label.k8s.pod.name': 'web-0' }, { 'label.env': 'canary' }, { 'label.k8s.pod.name': 'web-0', 'label.env': 'prod' }, { 'label.k8s.namespace.name': 'shop' }, { 'label.env': 'nope' }],
  'cmp-spans': [{ 'label.function': 'slow' }, { 'label.foo': 'bar', 'label.function': 'fast' }, { 'label.k8s.container.name': 'app' }, { 'label.span_id': 'f73477d9dfd33f64' }],
  'cmp-heap': [{ 'label.k8s.pod.name': 'a' }, { 'label.k8s.pod.name': 'b' }],
  'cmp-otlp-a': [{ 'label.thread.name': 'worker' }, { 'label.thread.name': 'worker', 'label.k8s.pod.name': 'otlp-0' }, { 'label.trace_id': TRACE }],
  'cmp-py': [{ 'label.function': 'fast' }],
};

test('the embedded kiln holds exactly what was sent (so equal answers are not both empty)', async () => {
  const missing = [];
  for (const [k, total] of expected) {
    const [service, type] = k.split(' ');
    const j = await getJson(L.uiUrl, '/api/flamegraph', { service, type, ...W.all });
    if (j.total !== total) missing.push(`${k}: total ${j.total}, sent ${total}`);
  }
  assert.deepEqual(missing, []);
  // Snapshot averaging: per series, then summed: (100+200+401)/3 + (7+8)/2 for
  // main.cache's inuse, and 2× that + 1 for bytes.growSlice.
  const j = await getJson(L.uiUrl, '/api/top', { service: 'cmp-heap', type: 'inuse_space:bytes', ...W.all, limit: 0 });
  const by = Object.fromEntries(j.rows.map((r) => [r.name, r.self]));
  assert.ok(Math.abs(by['main.cache'] - (701 / 3 + 7.5)) <= 1, `inuse_space self of main.cache: ${JSON.stringify(j.rows)}`);
  // cmp-huge: 4 × 2^62 + 4 × 7 saturates at 2^63 - 1 (text, not a rounded double).
  const huge = await fetch(new URL(`/api/flamegraph?${new URLSearchParams({ service: 'cmp-huge', type: 'cpu:nanoseconds', ...W.all })}`, L.uiUrl));
  const text = await huge.text();
  assert.match(text, /"total":9223372036854775807[,}]/, `cmp-huge total: ${text.slice(0, 300)}`);
  const services = (await getJson(L.uiUrl, '/api/services', W.all)).services.map((s) => s.name);
  for (const s of ['cmp-go', 'cmp-spans', 'cmp-node', 'cmp-py', 'cmp-heap', 'cmp-heapfile', 'cmp-otlp-a', 'cmp-otlp-b', 'unknown_service']) {
    assert.ok(services.includes(s), `/api/services lacks ${s}: ${services}`);
  }
});

test('/api/services and /api/types answer alike over every range', async (t) => {
  const cases = Object.values(W).map((w) => ['/api/services', w]);
  cases.push(['/api/services', {}]);
  const names = (await getJson(L.uiUrl, '/api/services', W.all)).services.map((s) => s.name);
  for (const service of [...names, 'cmp-nobody']) {
    for (const w of [W.all, W.edge, {}]) cases.push(['/api/types', { service, ...w }]);
  }
  await compareAll(t, cases);
});

test('/api/flamegraph and /api/top answer alike for every service and type, range and label filter', async (t) => {
  const cases = [];
  for (const [service, type] of await seriesTypes()) {
    for (const w of [W.all, W.edge, W.recent, W.empty, W.relative]) {
      cases.push(['/api/flamegraph', { service, type, ...w }]);
      cases.push(['/api/top', { service, type, ...w, limit: 0 }]);
    }
    cases.push(['/api/top', { service, type, ...W.all }]);
    cases.push(['/api/top', { service, type, ...W.all, limit: 3 }]);
    for (const f of FILTERS[service] ?? []) {
      cases.push(['/api/flamegraph', { service, type, ...W.all, ...f }]);
      cases.push(['/api/top', { service, type, ...W.all, ...f, limit: 0 }]);
    }
  }
  assert.ok(cases.length > 100, `too few (service, type) pairs: ${cases.length / 2}`);
  await compareAll(t, cases);
});

test('/api/timeline answers alike for steps of a minute, an hour and a day, and the automatic step', async (t) => {
  const cases = [];
  for (const [service, type] of await seriesTypes()) {
    cases.push(['/api/timeline', { service, type, ...W.all }]);
    cases.push(['/api/timeline', { service, type, ...W.all, step: 3600 }]);
    cases.push(['/api/timeline', { service, type, ...W.all, step: '1d' }]);
    cases.push(['/api/timeline', { service, type, ...W.edge, step: 60 }]);
    cases.push(['/api/timeline', { service, type, ...W.edge, step: '10s' }]);
    cases.push(['/api/timeline', { service, type, from: D - 7 * DAY, until: NOW, step: 86400 }]);
    for (const f of FILTERS[service] ?? []) cases.push(['/api/timeline', { service, type, ...W.all, ...f, step: 3600 }]);
  }
  await compareAll(t, cases);
});

test('/api/pprof answers alike (bytes, or samples as go tool pprof reads them)', async (t) => {
  const cases = [];
  for (const [service, type] of await seriesTypes()) {
    cases.push(['/api/pprof', { service, type, ...W.all }]);
    for (const f of (FILTERS[service] ?? []).slice(0, 2)) cases.push(['/api/pprof', { service, type, ...W.all, ...f }]);
  }
  cases.push(['/api/pprof', { service: 'cmp-go', type: 'cpu:nanoseconds', ...W.edge }]);
  cases.push(['/api/pprof', { service: 'cmp-go', type: 'cpu:nanoseconds', ...W.empty }]);
  await compareAll(t, cases);
});

test('/api/labels answers alike, with and without filters', async (t) => {
  const cases = [];
  for (const [service, type] of await seriesTypes()) {
    cases.push(['/api/labels', { service, type, ...W.all }]);
    cases.push(['/api/labels', { service, type, ...W.edge }]);
    for (const f of FILTERS[service] ?? []) cases.push(['/api/labels', { service, type, ...W.all, ...f }]);
  }
  await compareAll(t, cases);
});

test('/api/span answers alike: OTLP links, a link without samples, a pprof span label, unknown ids', async (t) => {
  const cases = [
    ['/api/span', { trace_id: TRACE, span_id: SPAN_A }],
    ['/api/span', { trace_id: TRACE, span_id: SPAN_B }],
    ['/api/span', { trace_id: TRACE, span_id: SPAN_B, type: 'samples:count' }],
    ['/api/span', { trace_id: TRACE, span_id: SPAN_NONE }],
    ['/api/span', { span_id: 'f73477d9dfd33f64' }],
    ['/api/span', { span_id: 'f73477d9dfd33f64', type: 'samples:count' }],
    ['/api/span', { span_id: 'c717c11b87121639', service: 'cmp-spans' }],
    ['/api/span', { trace_id: 'cf000000000000000000000000000009', span_id: 'db00000000000009', service: 'cmp-go', from: D - 600, until: D + 600 }],
    ['/api/span', { trace_id: TRACE, span_id: 'xyz' }],
  ];
  const j = await getJson(L.uiUrl, '/api/span', { trace_id: TRACE, span_id: SPAN_A });
  assert.equal(j.total, 60_000_000, `embedded /api/span total of span A: ${JSON.stringify(j).slice(0, 300)}`);
  await compareAll(t, cases);
});

test('/api/usage and /api/targets answer alike', async (t) => {
  const u = await getJson(L.uiUrl, '/api/usage', { from: NOW - 3 * DAY, until: NOW + 60 });
  const rejected = u.days.reduce((s, d) => s + d.rejected, 0);
  assert.ok(u.days.length > 0 && rejected > 0, `embedded /api/usage counts the refused pushes: ${JSON.stringify(u)}`);
  await compareAll(t, [
    ['/api/usage', { from: NOW - 3 * DAY, until: NOW + 60 }],
    ['/api/usage', { from: 'now-7d' }],
    ['/api/usage', {}],
    ['/api/targets', {}],
  ]);
});

test('bad parameters get the same errors', async (t) => {
  await compareAll(t, [
    ['/api/flamegraph', { service: 'cmp-go' }],
    ['/api/flamegraph', { type: 'cpu:nanoseconds' }],
    ['/api/flamegraph', { service: 'cmp-go', type: 'cpu:nanoseconds', from: 'yesterday' }],
    ['/api/flamegraph', { service: 'cmp-go', type: 'cpu:nanoseconds', from: NOW, until: NOW - 3600 }],
    ['/api/timeline', { service: 'cmp-go', type: 'cpu:nanoseconds', step: 0 }],
    ['/api/timeline', { service: 'cmp-go', type: 'cpu:nanoseconds', ...W.all, step: 1 }],
    ['/api/top', { service: 'cmp-go', type: 'cpu:nanoseconds', limit: -1 }],
    ['/api/flamegraph', { service: 'cmp-go', type: 'nonsense' }],
    ['/api/flamegraph', { service: 'cmp-go', type: 'wall:hours', ...W.all }],
    ['/api/usage', { from: 'yesterday-ish' }],
    ['/api/nothing', {}],
  ]);
});

test('the ClickHouse kiln answered from summed hours and days (so they are compared too)', async () => {
  // Run after the comparisons (node:test runs a file's tests in order).
  const used = await metric(C, 'kiln_store_hours_used_total');
  assert.ok(used > 0, `kiln_store_hours_used_total ${used}`);
});
