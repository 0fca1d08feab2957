// /metrics (OPS: Metrics, issue 4): Prometheus text format with
// kiln_requests_total{listener,status}, kiln_received_bytes_total{listener},
// kiln_samples_total{key,result} (the caller's project only),
// kiln_store_queue_depth, the kiln_store_commit_seconds and
// kiln_store_ack_seconds histograms and kiln_store_partitions; the counters move by exactly what this test did
// between two scrapes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkTemp, uniqueName } from './lib/env.mjs';
import { tail } from './lib/server.mjs';
import {
  todoUnless, stopAll, startTracked, createKey, startS6, configYaml, apiAs, brief, pprofN, otlpN, parseProm, promSum, sleep, uploadAs,
} from './lib/s6.mjs';
import { pushTo } from './lib/s6-push.mjs';

const R = 2000;
const todo = await todoUnless('keys', 'auth', 'ratelimit', 'metrics');
const todoSamples = todo || await todoUnless('usageExact');
let samplesCheck; // set by the counters test: the kiln_samples_total deltas
const dataDir = mkTemp('metrics');
let server;
let key;

before(async () => {
  if (todo) return;
  key = await createKey(dataDir, 'pm', 'm-main', 'both');
  server = await startS6({ dataDir, extraArgs: ['--auth', 'required'], config: configYaml({ limits: { samplesPerSecond: R } }) });
});
after(stopAll);

async function scrape(s, auth) {
  const r = await apiAs(s, '/metrics', {}, auth);
  assert.equal(r.status, 200, `/metrics: ${brief(r)}`);
  assert.match(String(r.headers['content-type']), /^text\/plain/, `/metrics content-type: ${r.headers['content-type']}`);
  let samples;
  try { samples = parseProm(r.text); } catch (e) { assert.fail(`/metrics does not parse as Prometheus text: ${e.message}`); }
  return { text: r.text, samples };
}

test('self-check: the Prometheus text parser', () => {
  const s = parseProm([
    '# HELP kiln_requests_total Requests.', '# TYPE kiln_requests_total counter',
    'kiln_requests_total{listener="upload",status="200"} 3', 'kiln_requests_total{listener="upload",status="429"} 1',
    'kiln_store_commit_seconds{quantile="0.5"} 0.002', 'kiln_store_commit_seconds_count 7', 'x{a="q\\"uote,d"} 1.5e3 1700000000000', '',
  ].join('\n'));
  assert.equal(promSum(s, 'kiln_requests_total', { listener: 'upload' }), 4);
  assert.equal(promSum(s, 'kiln_requests_total', { status: '429' }), 1);
  assert.equal(promSum(s, 'kiln_store_commit_seconds_count'), 7);
  assert.equal(s.find((x) => x.name === 'x').labels.a, 'q"uote,d');
  assert.equal(promSum(s, 'nothing'), undefined);
  assert.throws(() => parseProm('not a metric line at all\n'));
});

test('counters move by exactly the requests and bytes sent; store gauges present', { todo }, async () => {
  const auth = { key };
  const a = await scrape(server, auth);
  let bytes200 = 0;
  const up = async (n, want, opts = {}) => {
    const body = pprofN(n, { tag: `m${n}_` });
    const r = await uploadAs(server, body, opts.params ?? { serviceName: uniqueName('m') }, opts.auth ?? auth);
    assert.equal(r.status, want, brief(r));
    if (want === 200) bytes200 += body.length;
  };
  await up(10, 200);
  await up(10, 200);
  await up(10, 200);
  await up(10, 400, { params: {} }); // no serviceName
  await up(10, 401, { auth: {} });
  for (let i = 0; i < 2; i++) assert.equal((await pushTo(server, 'otlp_http', uniqueName('m-h'), auth, { n: 5 })).status, 200);
  assert.equal((await pushTo(server, 'otlp_grpc', uniqueName('m-g'), auth, { n: 5 })).status, 200);
  await sleep(1100); // full bucket again
  await up(1900, 200);
  await up(1900, 429);
  const b = await scrape(server, auth);
  const d = (name, match) => (promSum(b.samples, name, match) ?? 0) - (promSum(a.samples, name, match) ?? 0);
  const ctx = `\n${b.text.split('\n').filter((l) => /^kiln_(requests|samples|received)/.test(l)).join('\n')}`;

  for (const [status, n] of [['200', 4], ['400', 1], ['401', 1], ['429', 1]]) {
    assert.ok(promSum(b.samples, 'kiln_requests_total', { listener: 'upload', status }) !== undefined, `kiln_requests_total{listener="upload",status="${status}"} missing${ctx}`);
    assert.equal(d('kiln_requests_total', { listener: 'upload', status }), n, `kiln_requests_total{listener="upload",status="${status}"} delta${ctx}`);
  }
  assert.equal(d('kiln_requests_total', { listener: 'otlp_http', status: '200' }), 2, `otlp_http 200 delta${ctx}`);
  assert.equal(d('kiln_requests_total', { listener: 'otlp_grpc' }), 1, `otlp_grpc requests delta (any status label)${ctx}`);
  assert.ok(d('kiln_requests_total', { listener: 'ui' }) >= 1, `ui requests counted (the first scrape)${ctx}`);
  const rb = d('kiln_received_bytes_total', { listener: 'upload' });
  assert.ok(rb >= bytes200, `kiln_received_bytes_total{listener="upload"} delta ${rb} < ${bytes200} bytes of accepted bodies${ctx}`);
  assert.ok(d('kiln_received_bytes_total', { listener: 'otlp_http' }) > 0, `kiln_received_bytes_total{listener="otlp_http"}${ctx}`);

  samplesCheck = () => {
    assert.equal(d('kiln_samples_total', { key: 'm-main', result: 'accepted' }), 30 + 1900 + 10 + 5, `kiln_samples_total{key="m-main",result="accepted"} delta${ctx}`);
    assert.equal(d('kiln_samples_total', { key: 'm-main', result: 'rate_limited' }), 1900, `kiln_samples_total{key="m-main",result="rate_limited"} delta${ctx}`);
  };

  for (const name of ['kiln_store_queue_depth', 'kiln_store_partitions']) {
    const v = promSum(b.samples, name);
    assert.ok(v !== undefined && v >= 0, `${name} missing or negative`);
  }
  assert.ok(promSum(b.samples, 'kiln_store_partitions') >= 1, 'kiln_store_partitions ≥ 1 after commits');
  const cnt = (s) => promSum(s, 'kiln_store_commit_seconds_count');
  assert.ok(cnt(b.samples) !== undefined, 'kiln_store_commit_seconds_count missing (summary or histogram)');
  assert.ok(cnt(b.samples) - (cnt(a.samples) ?? 0) >= 1, 'kiln_store_commit_seconds_count grows with commits');
  assert.ok(promSum(b.samples, 'kiln_store_commit_seconds_sum') >= 0, 'kiln_store_commit_seconds_sum missing');
  // Both store time histograms: cumulative buckets ending in +Inf = _count;
  // one ack per push answered 200 (4 uploads, 2 OTLP/HTTP, 1 OTLP/gRPC).
  for (const name of ['kiln_store_commit_seconds', 'kiln_store_ack_seconds']) {
    assert.match(b.text, new RegExp(`^# TYPE ${name} histogram$`, 'm'), `# TYPE of ${name}`);
    const buckets = b.samples.filter((x) => x.name === `${name}_bucket`);
    assert.equal(buckets.length, 22, `${name}: 21 bounds and +Inf`);
    assert.equal(buckets.at(-1).labels.le, '+Inf');
    const le = (x) => (x.labels.le === '+Inf' ? Infinity : Number(x.labels.le));
    for (let i = 1; i < buckets.length; i++) {
      assert.ok(le(buckets[i]) > le(buckets[i - 1]), `${name} le order`);
      assert.ok(buckets[i].value >= buckets[i - 1].value, `${name} buckets are cumulative`);
    }
    assert.equal(buckets.at(-1).value, promSum(b.samples, `${name}_count`), `${name} +Inf = _count`);
  }
  assert.equal(d('kiln_store_ack_seconds_count'), 7, `kiln_store_ack_seconds_count delta: one per push answered 200${ctx}`);
  assert.ok(d('kiln_store_ack_seconds_sum') > 0, 'kiln_store_ack_seconds_sum grows');
  assert.match(b.text, /^# TYPE kiln_requests_total counter$/m, '# TYPE line for kiln_requests_total');
  assert.match(b.text, /^# TYPE kiln_store_commit_seconds (summary|histogram)$/m, '# TYPE of kiln_store_commit_seconds');
  assert.ok(b.text.length > 0, tail(server.stderr(), 5));
});

test('kiln_samples_total{key,result} moved by exactly the samples accepted and rate-limited in the test above', { todo: todoSamples }, () => {
  assert.ok(samplesCheck, 'the counters test did not get that far');
  samplesCheck();
});

test('without auth, traffic is counted under the key name "default"', { todo: await todoUnless('metrics', 'usageExact') }, async () => {
  const s = await startTracked();
  try {
    const r = await uploadAs(s, pprofN(7), { serviceName: uniqueName('m-default') });
    assert.equal(r.status, 200, brief(r));
    const m = await scrape(s, {});
    assert.equal(promSum(m.samples, 'kiln_samples_total', { key: 'default', result: 'accepted' }), 7, m.text.split('\n').filter((l) => l.startsWith('kiln_samples_total')).join('\n'));
  } finally { await s.stop(); }
});
