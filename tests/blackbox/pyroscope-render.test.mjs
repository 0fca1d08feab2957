// Pyroscope's legacy HTTP query API (API: Query: Pyroscope HTTP API
// (/pyroscope/*)): /pyroscope/render, render-diff, label-values and labels
// on the UI listener. Data: real pprof fixtures pushed through
// /profiling/upload, OTLP/HTTP (lib/otlp-pprof.mjs converts the same file)
// and Pyroscope's /ingest into a server of this file's own, so every list is
// known exactly. Oracles: `go tool pprof` on the same files (totals,
// per-function self, sample types), Pyroscope's naming and step rules
// written out here from its source (pkg/querier/timeline, pkg/model
// ExportToFlamebearer), and /api/flamegraph + /api/timeline for the tree
// and the timeline.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import fs from 'node:fs';
import { TESTDATA, uniqueName, mkTemp } from './lib/env.mjs';
import { tail } from './lib/server.mjs';
import { upload } from './lib/http.mjs';
import { createKey } from './lib/s6.mjs';
import { oracleForFile, pprofRaw } from './lib/pprof.mjs';
import { flameStats } from './lib/check.mjs';
import { startOtlpServer, sendPb } from './lib/otlp.mjs';
import { readPprofFile, pprofToOtlp } from './lib/otlp-pprof.mjs';

const fixture = (f) => path.join(TESTDATA, 'pprof', f);
const SVC = { go: uniqueName('r-go'), otlp: uniqueName('r-otlp'), heap: uniqueName('r-heap'), node: uniqueName('r-node'), grp: uniqueName('r-grp') };
const AVG = uniqueName('r-avg'); // the aggregation test's service, outside the other tests' ranges
const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';
const SAMPLES = 'process_cpu:samples:count:cpu:nanoseconds';
let server;
let oracles; // file → oracleForFile
let pushedAt; // unix seconds of the pushes
let avgAt; // AVG's profiles: avgAt + 1, + 3, + 20 (three days back, a multiple of 15 s)

before(async () => {
  server = await startOtlpServer();
  oracles = new Map();
  for (const f of ['go-cpu-fib.pb.gz', 'go-heap-delta.pb.gz', 'nodejs-wall.pb.gz', 'go-cpu-two-stacks.pb.gz']) oracles.set(f, await oracleForFile(fixture(f)));
  pushedAt = Math.floor(Date.now() / 1000);
  avgAt = Math.floor((pushedAt - 3 * 86400) / 15) * 15;
  const cpu = fs.readFileSync(fixture('go-cpu-fib.pb.gz'));
  const two = fs.readFileSync(fixture('go-cpu-two-stacks.pb.gz'));
  // aggregation: two profiles in one 15 s step, one in the next; outside every other test's range
  for (const [body, at, params] of [[cpu, 1, { 'label.env': 'prod' }], [two, 3, {}], [cpu, 20, { 'label.env': 'prod' }]]) {
    const r = await upload(server, body, { serviceName: AVG, from: String(avgAt + at), ...params });
    assert.equal(r.status, 200, r.text);
  }
  const pushes = [
    upload(server, cpu, { serviceName: SVC.go, namespace: 'shop', 'label.env': 'prod' }),
    upload(server, fs.readFileSync(fixture('go-heap-delta.pb.gz')), { serviceName: SVC.heap, 'label.env': 'dev' }),
    upload(server, fs.readFileSync(fixture('nodejs-wall.pb.gz')), { name: `${SVC.node}{region="eu-1"}`, format: 'pprof' }, {}, { path: '/ingest' }),
    // groupBy: the same profile with env=prod and without env
    upload(server, cpu, { serviceName: SVC.grp, 'label.env': 'prod' }),
    upload(server, cpu, { serviceName: SVC.grp }),
  ];
  for (const r of await Promise.all(pushes)) assert.equal(r.status, 200, r.text);
  const otlp = pprofToOtlp(readPprofFile(fixture('go-cpu-fib.pb.gz')), { serviceName: SVC.otlp, timeUnixNano: BigInt(Date.now() - 5000) * 1000000n });
  const r = await sendPb(server, otlp);
  assert.equal(r.status, 200, r.text);
});
after(async () => {
  if (server) await server.stop();
});

const ui = () => server.uiUrl;
async function get(route, params, headers = {}, base = ui()) {
  const res = await fetch(`${base}${route}?${new URLSearchParams(params)}`, { headers });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, json, text, type: res.headers.get('content-type') };
}
async function ok(route, params, headers) {
  const r = await get(route, params, headers);
  assert.equal(r.status, 200, `${route} ${JSON.stringify(params)}: ${r.text.slice(0, 300)}\n${tail(server.stderr(), 8)}`);
  assert.equal(r.type, 'application/json');
  return r.json;
}
const wideRange = () => ({ from: String(pushedAt - 3600), until: String(pushedAt + 600) });

// Decodes flamebearer levels (width 4: single; 7: diff, side 0 or 1) into
// nodes {path, depth, x, total, self}; checks that children lie within their
// parent and that self + children = total at every node.
function decode(fb, width = 4, side = 0) {
  const nodes = [];
  const at = side * 3;
  for (let d = 0; d < fb.levels.length; d++) {
    const v = fb.levels[d];
    assert.equal(v.length % width, 0, `level ${d}: ${v.length} ints`);
    let x = 0;
    for (let i = 0; i < v.length; i += width) {
      x += v[i + at];
      // zero-width nodes (one side of a diff) find no parent: their path is their name alone
      const parent = d === 0 ? null : nodes.find((p) => p.depth === d - 1 && x >= p.x && x < p.x + p.total) ?? null;
      const name = fb.names[v[i + width - 1]];
      nodes.push({ depth: d, x, total: v[i + at + 1], self: v[i + at + 2], name, path: parent ? `${parent.path};${name}` : name, parent });
      x += v[i + at + 1];
    }
  }
  for (const n of nodes) {
    const kids = nodes.filter((k) => k.parent === n);
    assert.equal(n.self + kids.reduce((a, k) => a + k.total, 0), n.total, `${n.path}`);
  }
  return nodes;
}
// path → [total, self] of decoded nodes with a non-zero total.
const pathMap = (nodes) => new Map(nodes.filter((n) => n.total !== 0).map((n) => [n.path, [n.total, n.self]]));
// The same of /api/flamegraph's tree.
function apiPaths(root) {
  const m = new Map();
  const walk = (n, p) => {
    if (n.total !== 0) m.set(p, [n.total, n.self]);
    for (const c of n.children ?? []) walk(c, `${p};${c.name}`);
  };
  walk(root, 'total');
  return m;
}
const sorted = (m) => [...m].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
const selfByName = (nodes) => {
  const m = new Map();
  for (const n of nodes) if (n.depth > 0 && n.self) m.set(n.name, (m.get(n.name) ?? 0) + n.self);
  return m;
};
const nonZero = (m) => new Map([...m].filter(([, v]) => Number(v) !== 0).map(([k, v]) => [k, Number(v)]));

// Pyroscope's CalcPointInterval (pkg/querier/timeline/calculator.go): the
// range over 1,500, at least 15 s, rounded to its table; in seconds.
function pyroStep(fromMs, untilMs) {
  const iv = (untilMs - fromMs) / 1500 / 1000;
  if (iv < 15) return 15;
  const table = [[17.5, 15], [25, 20], [45, 30], [90, 60], [210, 120], [450, 300], [750, 600], [1050, 900], [1500, 1200],
    [2700, 1800], [5400, 3600], [9000, 7200], [16200, 10800], [32400, 21600], [86400, 43200], [172800, 86400],
    [604800, 86400], [1814400, 604800]];
  for (const [upto, step] of table) if (iv <= upto) return step;
  return iv < 3628800 ? 2592000 : 31536000;
}
// ExportToFlamebearer's units and sample rate.
function unitsOf(sampleType, sampleUnit) {
  if (sampleType === 'cpu') return ['samples', 1e9];
  if (['inuse_objects', 'alloc_objects', 'goroutine', 'samples'].includes(sampleType)) return ['objects', 100];
  return [sampleUnit, 100];
}

const CASES = [
  { svc: SVC.go, file: 'go-cpu-fib.pb.gz', id: CPU, type: 'cpu:nanoseconds' },
  { svc: SVC.go, file: 'go-cpu-fib.pb.gz', id: SAMPLES, type: 'samples:count' },
  { svc: SVC.otlp, file: 'go-cpu-fib.pb.gz', id: CPU, type: 'cpu:nanoseconds' },
  { svc: SVC.heap, file: 'go-heap-delta.pb.gz', id: 'memory:alloc_space:bytes:space:bytes', type: 'alloc_space:bytes' },
  { svc: SVC.heap, file: 'go-heap-delta.pb.gz', id: 'memory:alloc_objects:count:space:bytes', type: 'alloc_objects:count' },
  // a delta heap: negative values, which Pyroscope's levels cannot lay out
  // (its max_nodes rule puts every negative total into `other`): the total only
  { svc: SVC.heap, file: 'go-heap-delta.pb.gz', id: 'memory:inuse_objects:count:space:bytes', type: 'inuse_objects:count', negative: true },
  { svc: SVC.node, file: 'nodejs-wall.pb.gz', id: 'wall:wall:microseconds:wall:microseconds', type: 'wall:microseconds' },
];

test('render: totals, per-function self and the tree equal /api/flamegraph and go tool pprof; metadata; timeline on Pyroscope\'s step', async () => {
  for (const k of CASES) {
    const what = `${k.svc} ${k.id}`;
    const range = wideRange();
    const fb = await ok('/pyroscope/render', { query: `${k.id}{service_name="${k.svc}"}`, ...range, format: 'json' });
    assert.equal(fb.version, 1);
    assert.equal(fb.flamebearer.names[0], 'total', what);
    const o = oracles.get(k.file).types.find((x) => x.typeName === k.type);
    const total = Number(o.total);
    assert.equal(fb.flamebearer.numTicks, total, `${what}: numTicks vs go tool pprof`);
    assert.equal(o.hasNegative, !!k.negative, `${what}: negative values in the fixture`);
    if (k.negative) continue;
    const nodes = decode(fb.flamebearer);
    assert.equal(nodes[0].total, total, what);
    assert.equal(fb.flamebearer.maxSelf, Math.max(...nodes.map((n) => n.self)), what);
    const api = await ok('/api/flamegraph', { service: k.svc, type: k.type, ...range });
    assert.equal(api.total, total, `${what}: /api/flamegraph`);
    assert.deepEqual(sorted(pathMap(nodes)), sorted(apiPaths(api.root)), `${what}: the tree vs /api/flamegraph`);
    assert.deepEqual(sorted(selfByName(nodes)), sorted(nonZero(flameStats(api.root).self)), `${what}: self vs /api/flamegraph`);
    if (!o.unnamed) assert.deepEqual(sorted(selfByName(nodes)), sorted(nonZero(o.self)), `${what}: self vs go tool pprof`);
    const [sampleType, sampleUnit] = k.type.split(':');
    const [units, sampleRate] = unitsOf(sampleType, sampleUnit);
    assert.deepEqual(fb.metadata, { format: 'single', spyName: '', sampleRate, units, name: sampleType }, what);
    assert.equal(fb.groups, null);
    assert.equal(fb.heatmap, null);
    // Timeline: Pyroscope's step for the range; the values are /api/timeline's on that step.
    const step = pyroStep(Number(range.from) * 1000, Number(range.until) * 1000);
    assert.equal(fb.timeline.durationDelta, step, what);
    assert.equal(fb.timeline.startTime, Math.floor(Number(range.from) / step) * step, what);
    assert.equal(fb.timeline.watermarks, null);
    const tl = await ok('/api/timeline', { service: k.svc, type: k.type, ...range, step: `${step}s` });
    assert.deepEqual(fb.timeline.samples, tl.points.map((p) => p[1]), `${what}: timeline vs /api/timeline`);
    assert.equal(fb.timeline.samples.reduce((a, v) => a + v, 0), total, `${what}: the timeline adds up to the total`);
  }
});

test('render: maxNodes / max-nodes cut into `other` and keep the totals exact', async () => {
  const o = oracles.get('go-cpu-fib.pb.gz').types.find((x) => x.typeName === 'cpu:nanoseconds');
  const total = Number(o.total);
  const full = await ok('/pyroscope/render', { query: `${CPU}{service_name="${SVC.go}"}`, ...wideRange() });
  const nFull = decode(full.flamebearer).length;
  assert.ok(nFull > 10, `${nFull} nodes`);
  for (const params of [{ maxNodes: '3' }, { 'max-nodes': '3' }, { 'max-nodes': '500', maxNodes: '3' }]) {
    const fb = await ok('/pyroscope/render', { query: `${CPU}{service_name="${SVC.go}"}`, ...wideRange(), ...params });
    const nodes = decode(fb.flamebearer);
    assert.equal(fb.flamebearer.numTicks, total, JSON.stringify(params));
    assert.equal(nodes.reduce((a, n) => a + n.self, 0), total, 'the selves sum to the total');
    assert.ok(nodes.length < nFull, `${nodes.length} < ${nFull}`);
    assert.ok(fb.flamebearer.names.includes('other'));
  }
  // 0 or absent: the default (16,384: the whole of this tree)
  const zero = await ok('/pyroscope/render', { query: `${CPU}{service_name="${SVC.go}"}`, ...wideRange(), maxNodes: '0' });
  assert.deepEqual(zero.flamebearer, full.flamebearer);
});

test('render: selectors filter as the querier\'s; the id selects by name; an empty range is 0', async () => {
  const total = Number(oracles.get('go-cpu-fib.pb.gz').types.find((x) => x.typeName === 'cpu:nanoseconds').total);
  const ticks = async (query, extra = {}) => (await ok('/pyroscope/render', { query, ...wideRange(), ...extra })).flamebearer.numTicks;
  for (const [sel, want] of [
    [`service_name="${SVC.go}"`, total], [`service_name="${SVC.go}", env="prod"`, total], [`service_name="${SVC.go}", env="dev"`, 0],
    [`service_name="${SVC.go}", env=~"pr.*"`, total], [`service_name="${SVC.go}", env!="prod"`, 0],
    [`service_name="${SVC.go}", "k8s.namespace.name"!~"sh.p"`, 0], [`service_name="${SVC.go}", region=""`, total],
    [`service_name="${SVC.grp}", env=""`, total], [`service_name="${SVC.grp}"`, 2 * total],
  ]) {
    assert.equal(await ticks(`${CPU}{${sel}}`), want, sel);
  }
  assert.equal(await ticks(`{__name__="${CPU}", service_name="${SVC.go}"}`), total, '__name__ matcher as the id');
  assert.equal(await ticks(`block:cpu:nanoseconds:cpu:nanoseconds{service_name="${SVC.go}"}`), 0);
  assert.equal(await ticks(`${CPU}{service_name="${SVC.go}"}`, { from: '1000', until: '2000' }), 0);
});

test('render: groupBy gives one timeline per value, "*" for the series without the label', async () => {
  const total = Number(oracles.get('go-cpu-fib.pb.gz').types.find((x) => x.typeName === 'cpu:nanoseconds').total);
  const range = wideRange();
  const fb = await ok('/pyroscope/render', { query: `${CPU}{service_name="${SVC.grp}"}`, ...range, groupBy: 'env', aggregation: 'sum' });
  assert.deepEqual(Object.keys(fb.groups).sort(), ['*', 'prod']);
  const sum = (tl) => tl.samples.reduce((a, v) => a + v, 0);
  assert.equal(sum(fb.groups['*']), total);
  assert.equal(sum(fb.groups.prod), total);
  assert.equal(sum(fb.timeline), 2 * total);
  for (const g of Object.values(fb.groups)) {
    assert.equal(g.startTime, fb.timeline.startTime);
    assert.equal(g.durationDelta, fb.timeline.durationDelta);
    assert.equal(g.samples.length, fb.timeline.samples.length);
  }
  const prod = await ok('/api/timeline', { service: SVC.grp, type: 'cpu:nanoseconds', ...range, step: `${fb.timeline.durationDelta}s`, 'label.env': 'prod' });
  assert.deepEqual(fb.groups.prod.samples, prod.points.map((p) => p[1]));
  // A pseudo label: one group, the whole timeline.
  const bySvc = await ok('/pyroscope/render', { query: `${CPU}{service_name="${SVC.grp}"}`, ...range, groupBy: 'service_name', aggregation: 'avg' });
  assert.deepEqual(bySvc.groups, { [SVC.grp]: bySvc.timeline });
});

test('render: aggregation=avg gives the mean of the profiles in each step, sum (the default) their sum; groups alike', async () => {
  const tot = (f) => Number(oracles.get(f).types.find((x) => x.typeName === 'cpu:nanoseconds').total);
  const fib = tot('go-cpu-fib.pb.gz');
  const two = tot('go-cpu-two-stacks.pb.gz');
  assert.notEqual(fib, two);
  // 3600 s → Pyroscope's step 15 s, 240 steps from avgAt - 1800; the profiles at +1 and +3 are in step 120, +20 in 121
  const range = { from: String(avgAt - 1800), until: String(avgAt + 1800) };
  const timeline = (at120, at121) => {
    const samples = new Array(240).fill(0);
    samples[120] = at120;
    samples[121] = at121;
    return { startTime: avgAt - 1800, samples, durationDelta: 15, watermarks: null };
  };
  const query = `${CPU}{service_name="${AVG}"}`;
  for (const [agg, want] of [[undefined, timeline(fib + two, fib)], ['sum', timeline(fib + two, fib)], ['avg', timeline(Math.trunc((fib + two) / 2), fib)]]) {
    const fb = await ok('/pyroscope/render', { query, ...range, ...(agg ? { aggregation: agg } : {}) });
    assert.equal(fb.flamebearer.numTicks, 2 * fib + two, `${agg}: the flame graph does not change`);
    assert.deepEqual(fb.timeline, want, `aggregation=${agg}`);
    // env=prod holds the two fib profiles, one per step; "*" the other
    const g = await ok('/pyroscope/render', { query, ...range, groupBy: 'env', ...(agg ? { aggregation: agg } : {}) });
    assert.deepEqual(g.timeline, want, `aggregation=${agg}, groupBy`);
    assert.deepEqual(g.groups, { prod: timeline(fib, fib), '*': timeline(two, 0) }, `aggregation=${agg}: groups`);
  }
  // avg with a filter: only the env=prod profiles, one per step (the profile without
  // env, filtered by sample attribute, has no matching sample and does not count)
  const prod = await ok('/pyroscope/render', { query: `${CPU}{service_name="${AVG}", env="prod"}`, ...range, aggregation: 'avg' });
  assert.deepEqual(prod.timeline, timeline(fib, fib));
});

test('render: from/until as now-1h, Unix seconds, milliseconds and microseconds select alike', async () => {
  const total = Number(oracles.get('go-cpu-fib.pb.gz').types.find((x) => x.typeName === 'cpu:nanoseconds').total);
  const query = `${CPU}{service_name="${SVC.go}"}`;
  const s = pushedAt;
  for (const [from, until] of [['now-1h', 'now+10m'], ['now-1h30m', ''], ['-2h', 'now+1d'], [String(s - 600), String(s + 600)],
    [String((s - 600) * 1000), String((s + 600) * 1000)], [`${(s - 600) * 1000}000`, `${(s + 600) * 1000}000`],
    [`${s - 600}_000`, '']]) {
    const params = { query, from, ...(until ? { until } : {}) };
    const fb = await ok('/pyroscope/render', params);
    assert.equal(fb.flamebearer.numTicks, total, JSON.stringify(params));
  }
  // Milliseconds: the timeline starts at the step before from (seconds).
  const fromMs = (s - 7200) * 1000 + 123;
  const fb = await ok('/pyroscope/render', { query, from: String(fromMs), until: String((s + 600) * 1000) });
  const step = pyroStep(fromMs, (s + 600) * 1000);
  assert.equal(fb.timeline.durationDelta, step);
  assert.equal(fb.timeline.startTime, Math.floor(fromMs / 1000 / step) * step);
  // YYYYMMDD (as Pyroscope's attime) and an old range: nothing there.
  for (const [from, until] of [['20200101', '20200102'], ['1000', '2000']]) {
    assert.equal((await ok('/pyroscope/render', { query, from, until })).flamebearer.numTicks, 0, `${from} ${until}`);
  }
});

test('render-diff: format double, leftTicks/rightTicks equal the two flame graphs\' totals, each side decodes to its tree', async () => {
  const range = wideRange();
  for (const [left, right, type, id] of [[SVC.go, SVC.grp, 'cpu:nanoseconds', CPU], [SVC.otlp, SVC.go, 'cpu:nanoseconds', CPU],
    [SVC.go, SVC.go, 'samples:count', SAMPLES]]) {
    const fb = await ok('/pyroscope/render-diff', {
      leftQuery: `${id}{service_name="${left}"}`, leftFrom: range.from, leftUntil: range.until,
      rightQuery: `${id}{service_name="${right}"}`, rightFrom: range.from, rightUntil: range.until,
    });
    const apiL = await ok('/api/flamegraph', { service: left, type, ...range });
    const apiR = await ok('/api/flamegraph', { service: right, type, ...range });
    assert.equal(fb.leftTicks, apiL.total);
    assert.equal(fb.rightTicks, apiR.total);
    assert.equal(fb.flamebearer.numTicks, apiL.total + apiR.total);
    assert.equal(fb.metadata.format, 'double');
    assert.equal(fb.timeline, null);
    assert.deepEqual(sorted(pathMap(decode(fb.flamebearer, 7, 0))), sorted(apiPaths(apiL.root)), `${left}: left side`);
    assert.deepEqual(sorted(pathMap(decode(fb.flamebearer, 7, 1))), sorted(apiPaths(apiR.root)), `${right}: right side`);
  }
  // maxNodes: both sides keep their totals.
  const cut = await ok('/pyroscope/render-diff', {
    leftQuery: `${CPU}{service_name="${SVC.go}"}`, rightQuery: `${CPU}{service_name="${SVC.grp}"}`, ...range, leftFrom: range.from, rightFrom: range.from, maxNodes: '3',
  });
  const total = Number(oracles.get('go-cpu-fib.pb.gz').types.find((x) => x.typeName === 'cpu:nanoseconds').total);
  assert.deepEqual([cut.leftTicks, cut.rightTicks], [total, 2 * total]);
  assert.ok(cut.flamebearer.names.includes('other'));
  assert.equal(decode(cut.flamebearer, 7, 1).reduce((a, n) => a + n.self, 0), 2 * total);
});

// The sample types of a fixture as go tool pprof prints them.
async function fixtureTypes(f) {
  return (await pprofRaw(fixture(f))).sampleTypes.map((t) => `${t.type}:${t.unit}`);
}

test('label-values and labels: exact lists; label=__name__ lists the profile type ids; query= filters', async () => {
  // Oracle: the fixtures' sample types (go tool pprof) under Pyroscope's names.
  assert.deepEqual(await fixtureTypes('go-cpu-fib.pb.gz'), ['samples:count', 'cpu:nanoseconds']);
  assert.deepEqual(await fixtureTypes('go-heap-delta.pb.gz'), ['alloc_objects:count', 'alloc_space:bytes', 'inuse_objects:count', 'inuse_space:bytes']);
  assert.deepEqual(await fixtureTypes('nodejs-wall.pb.gz'), ['samples:count', 'wall:microseconds']);
  const goIds = [CPU, SAMPLES];
  const heapIds = ['alloc_objects:count', 'alloc_space:bytes', 'inuse_objects:count', 'inuse_space:bytes'].map((t) => `memory:${t}:space:bytes`);
  const nodeIds = ['wall:samples:count:wall:microseconds', 'wall:wall:microseconds:wall:microseconds'];
  const range = wideRange();
  const lv = (params) => ok('/pyroscope/label-values', { ...range, ...params });
  assert.deepEqual(await lv({ label: '__name__' }), [...goIds, ...heapIds, ...nodeIds].sort());
  assert.deepEqual(await lv({ label: '__name__', query: `{service_name="${SVC.heap}"}` }), heapIds.sort());
  assert.deepEqual(await lv({ label: '__name__', query: `{service_name="${SVC.otlp}"}` }), goIds.sort());
  assert.deepEqual(await lv({ label: 'service_name' }), Object.values(SVC).sort());
  assert.deepEqual(await lv({ label: 'service_name', query: `${CPU}{}` }), [SVC.go, SVC.grp, SVC.otlp].sort());
  assert.deepEqual(await lv({ label: 'service_name', query: '{env=~"pr.*|dev"}' }), [SVC.go, SVC.grp, SVC.heap].sort());
  assert.deepEqual(await lv({ label: 'env' }), ['dev', 'prod']);
  assert.deepEqual(await lv({ label: 'region' }), ['eu-1']);
  assert.deepEqual(await lv({ label: 'nope' }), []);
  assert.deepEqual(await lv({ label: 'service_name', from: '1000', until: '2000' }), []);
  const base = ['__name__', '__period_type__', '__period_unit__', '__profile_type__', '__type__', '__unit__', 'service_name'];
  assert.deepEqual(await ok('/pyroscope/labels', range), [...base, 'env', 'k8s.namespace.name', 'region'].sort());
  assert.deepEqual(await ok('/pyroscope/labels', { ...range, query: `{service_name="${SVC.heap}"}` }), [...base, 'env'].sort());
  assert.deepEqual(await ok('/pyroscope/labels', { query: `{service_name="${SVC.otlp}"}` }), base, 'default range: the last hour');
});

test('bad input: exact status and message, naming the parameter', async () => {
  const Q = `${CPU}{service_name="${SVC.go}"}`;
  const forms = 'now, now-1h (units s, m, h, d, w, M, y), Unix seconds, milliseconds (13 digits), microseconds (16), nanoseconds (19) or YYYYMMDD';
  const rows = [
    ['/pyroscope/render', {}, 400, 'query is required: PROFILE_TYPE_ID{service_name="NAME", …}, e.g. process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="app"}'],
    ['/pyroscope/render', { query: `{service_name="${SVC.go}"}` }, 400, 'query must start with a profile type id NAME:SAMPLE_TYPE:SAMPLE_UNIT:PERIOD_TYPE:PERIOD_UNIT (see /pyroscope/label-values?label=__name__)'],
    ['/pyroscope/render', { query: 'cpu:nanoseconds{service_name="a"}' }, 400, 'query: the profile type id "cpu:nanoseconds" is not NAME:SAMPLE_TYPE:SAMPLE_UNIT:PERIOD_TYPE:PERIOD_UNIT'],
    ['/pyroscope/render', { query: CPU }, 400, 'query must name the service: {service_name="NAME", …}'],
    ['/pyroscope/render', { query: `${CPU}{service_name=~"a.*"}` }, 501, 'query: service_name takes = only (the service to merge), not =~'],
    ['/pyroscope/render', { query: `${CPU}{service_name="a" env="b"}` }, 400, 'query: selector: at 61: expected "," or "}"'],
    ['/pyroscope/render', { query: `${CPU}{a=~"("}` }, 400, 'query: selector: at 47: regex: at 0: missing closing )'],
    ['/pyroscope/render', { query: `${CPU}{a="${'x'.repeat(16400)}"}` }, 400, 'query: selector: at 16384: longer than 16384 bytes'],
    ['/pyroscope/render', { query: Q, from: 'garbage' }, 400, `from=garbage is not a time: ${forms}`],
    ['/pyroscope/render', { query: Q, until: 'now-1x' }, 400, `until=now-1x is not a time: ${forms}`],
    ['/pyroscope/render', { query: Q, from: 'yesterday-1h' }, 400, `from=yesterday-1h is not a time: ${forms}`],
    ['/pyroscope/render', { query: Q, from: '12345678901234567890' }, 400, `from=12345678901234567890 is not a time: ${forms}`],
    ['/pyroscope/render', { query: Q, from: '2000', until: '1000' }, 400, 'from (2000000 ms) must be before until (1000000 ms)'],
    ['/pyroscope/render', { query: Q, from: '1000', until: '1000' }, 400, 'from (1000000 ms) must be before until (1000000 ms)'],
    ['/pyroscope/render', { query: Q, maxNodes: 'many' }, 400, 'maxNodes=many must be a whole number from 0 (the default, 16384)'],
    ['/pyroscope/render', { query: Q, 'max-nodes': '-3' }, 400, 'max-nodes=-3 must be a whole number from 0 (the default, 16384)'],
    ['/pyroscope/render', { query: Q, aggregation: 'max' }, 400, 'aggregation=max must be sum or avg'],
    ['/pyroscope/render', { query: Q, format: 'dot' }, 400, 'format=dot is not supported: json (the default)'],
    ['/pyroscope/render-diff', { leftQuery: Q }, 400, 'rightQuery is required: PROFILE_TYPE_ID{service_name="NAME", …}, e.g. process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="app"}'],
    ['/pyroscope/render-diff', { leftQuery: Q, rightQuery: `${SAMPLES}{service_name="${SVC.go}"}` }, 400, 'leftQuery and rightQuery must have the same profile type id'],
    ['/pyroscope/render-diff', { leftQuery: Q, rightQuery: Q, rightFrom: 'now+1h' }, 400, /^rightFrom \(\d+ ms\) must be before rightUntil \(\d+ ms\)$/],
    ['/pyroscope/render-diff', { leftQuery: Q, rightQuery: Q, leftUntil: 'x' }, 400, `leftUntil=x is not a time: ${forms}`],
    ['/pyroscope/label-values', {}, 400, 'label is required: label=NAME (label=__name__ lists the profile type ids)'],
    ['/pyroscope/label-values', { label: 'env', query: '{a' }, 400, 'query: selector: at 2: expected "=", "!=", "=~" or "!~"'],
    ['/pyroscope/labels', { from: 'now+1h' }, 400, /^from \(\d+ ms\) must be before until \(\d+ ms\)$/],
    ['/pyroscope/labels', { query: '{a="b"' }, 400, 'query: selector: at 6: expected "," or "}"'],
    ['/pyroscope/nope', {}, 404, 'no route /pyroscope/nope; the API is documented in docs/API.md'],
  ];
  for (const [route, params, status, msg] of rows) {
    const r = await get(route, params);
    const what = `${route} ${JSON.stringify(params).slice(0, 200)}`;
    assert.equal(r.status, status, `${what}: ${r.text}`);
    assert.equal(r.type, 'application/json', what);
    if (msg instanceof RegExp) assert.match(r.json.error, msg, what);
    else assert.deepEqual(r.json, { error: msg }, what);
  }
  const post = await fetch(`${ui()}/pyroscope/render?query=${encodeURIComponent(Q)}`, { method: 'POST', body: 'x' });
  assert.equal(post.status, 405);
  assert.deepEqual(await post.json(), { error: 'method POST not allowed: the query API is read-only (GET)' });
  // Not on the upload listener.
  const up = await get('/pyroscope/render', { query: Q }, {}, server.uploadUrl);
  assert.equal(up.status, 404, up.text);
});

test('with auth required: every route takes query keys (x-kiln-key, Bearer, Basic), answers the key\'s project only; ingest key 403; none 401', async () => {
  const dataDir = mkTemp('render-auth');
  const ingestA = await createKey(dataDir, 'ra', 'ra-ingest', 'ingest');
  const queryA = await createKey(dataDir, 'ra', 'ra-query', 'query');
  const ingestB = await createKey(dataDir, 'rb', 'rb-ingest', 'ingest');
  const queryB = await createKey(dataDir, 'rb', 'rb-query', 'query');
  const { startServer } = await import('./lib/server.mjs');
  const s = await startServer({ dataDir, extraArgs: ['--auth', 'required'] });
  try {
    const svcA = uniqueName('ra'), svcB = uniqueName('rb');
    const body = fs.readFileSync(fixture('go-cpu-fib.pb.gz'));
    assert.equal((await upload(s, body, { serviceName: svcA, 'label.env': 'a' }, { 'x-kiln-key': ingestA })).status, 200);
    assert.equal((await upload(s, body, { serviceName: svcB, 'label.env': 'b' }, { 'x-kiln-key': ingestB })).status, 200);
    const total = Number(oracles.get('go-cpu-fib.pb.gz').types.find((x) => x.typeName === 'cpu:nanoseconds').total);
    const basic = (key) => `Basic ${Buffer.from(`grafana:${key}`).toString('base64')}`;
    const routes = (svc) => [
      ['/pyroscope/render', { query: `${CPU}{service_name="${svc}"}` }, (j) => j.flamebearer.numTicks],
      ['/pyroscope/render-diff', { leftQuery: `${CPU}{service_name="${svc}"}`, rightQuery: `${CPU}{service_name="${svc}"}` }, (j) => [j.leftTicks ?? 0, j.rightTicks ?? 0]],
      ['/pyroscope/label-values', { label: 'service_name' }, (j) => j],
      ['/pyroscope/label-values', { label: 'env' }, (j) => j],
      ['/pyroscope/labels', {}, (j) => j.includes('env')],
    ];
    const base = s.uiUrl;
    const as = async (route, params, headers) => get(route, params, headers, base);
    for (const [what, headers] of [['x-kiln-key', { 'x-kiln-key': queryA }], ['Bearer', { authorization: `Bearer ${queryA}` }], ['Basic', { authorization: basic(queryA) }]]) {
      const own = [];
      for (const [route, params, pick] of routes(svcA)) {
        const r = await as(route, params, headers);
        assert.equal(r.status, 200, `${what} ${route}: ${r.text}`);
        own.push(pick(r.json));
      }
      assert.deepEqual(own, [total, [total, total], [svcA], ['a'], true], what);
      // Project B's service through A's key: nothing.
      const other = [];
      for (const [route, params, pick] of routes(svcB).slice(0, 2)) other.push(pick((await as(route, params, headers)).json));
      assert.deepEqual(other, [0, [0, 0]], `${what}: isolation`);
    }
    const b = await as('/pyroscope/label-values', { label: 'service_name' }, { authorization: `Bearer ${queryB}` });
    assert.deepEqual(b.json, [svcB]);
    for (const [route, params] of routes(svcA)) {
      for (const [what, headers, status, re] of [
        ['no key', {}, 401, /requires a key/],
        ['ingest key', { authorization: `Bearer ${ingestA}` }, 403, /scope query/],
        ['unknown key', { 'x-kiln-key': 'nope-nope-nope-nope' }, 401, /./],
      ]) {
        const r = await as(route, params, headers);
        assert.equal(r.status, status, `${route} ${what}: ${r.text}`);
        assert.match(r.json.error, re, `${route} ${what}`);
      }
    }
  } finally {
    await s.stop();
  }
});
