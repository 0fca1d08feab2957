// Per-key rate limits (API: Push errors; OPS: Rate limits): with limits.samplesPerSecond R,
// a key pushing 3×R for 10 s from several concurrent clients gets what a
// bucket of R/s and one second of burst admits for the times its requests
// were sent (within 5 %; never more than R × D + R), every refusal
// is 429 with Retry-After in whole seconds ≥ 1 and a message stating the
// rate and the limit, and exactly the accepted samples are stored; over
// OTLP/HTTP the refusal is 429 too and over gRPC RESOURCE_EXHAUSTED with a
// google.rpc.RetryInfo detail; a client honouring Retry-After gets all its
// data in; another key pushing at the same time is not affected.
// Bodies: pprofs of n distinct stacks with value 1 (the upload's "samples"
// is n, the stored total is n) and OTLP requests of n sample points.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkTemp, uniqueName } from './lib/env.mjs';
import { tail } from './lib/server.mjs';
import { parseOtlpReply } from './lib/otlp.mjs';
import {
  todoUnless, stopAll, startTracked, createKey, startS6, configYaml, uploadAs, postOtlpAs, apiAs, grpcClientAt, grpcExportMd, describeGrpcMd,
  retryInfoOf, pprofN, otlpN, wide, brief, sleep,
} from './lib/s6.mjs';

const R = 2000;
const CLIENTS = 6; // each paces its own requests: 10 req/s, so a slow (ASan) server still sees 3×R
const todo = await todoUnless('keys', 'auth', 'ratelimit');
const dataDir = mkTemp('rate');
const K = {};
let server;

before(async () => {
  if (todo) return;
  for (const n of ['noisy', 'quiet', 'patient', 'grpc', 'otlphttp']) K[n] = await createKey(dataDir, 'rl', `rl-${n}`, 'both');
  server = await startS6({ dataDir, extraArgs: ['--auth', 'required'], config: configYaml({ limits: { samplesPerSecond: R } }) });
});
after(stopAll);

async function storedTotal(svc, key) {
  const r = await apiAs(server, '/api/flamegraph', { service: svc, type: 'cpu:nanoseconds', ...wide() }, { key });
  if (r.status === 404) return 0;
  assert.equal(r.status, 200, `/api/flamegraph ${svc}: ${brief(r)}`);
  return r.json.total ?? 0;
}

function check429(r, ctx) {
  assert.equal(r.status, 429, `${ctx}: ${brief(r)}`);
  const ra = r.headers['retry-after'];
  assert.match(String(ra), /^\d+$/, `${ctx}: Retry-After must be whole seconds: ${brief(r)}`);
  assert.ok(Number(ra) >= 1, `${ctx}: Retry-After ≥ 1: ${brief(r)}`);
  assert.ok(Number(ra) <= 60, `${ctx}: Retry-After stays short (the Collector gives up after ~5 min): ${brief(r)}`);
}

function checkMessage(msg, ctx) {
  assert.match(msg, new RegExp(`\\b${R}\\b|${R.toLocaleString('en-US')}`), `${ctx}: the message must state the limit (${R}/s): ${JSON.stringify(msg)}`);
  assert.match(msg, /rate|limit/i, `${ctx}: the message must say it is a rate limit: ${JSON.stringify(msg)}`);
}

// Samples a token bucket of R/s and capacity R (full at first) admits for
// requests of n samples sent at the given times (ms, sorted).
function bucketAdmits(times, n) {
  let tokens = R;
  let last = times[0];
  let admitted = 0;
  for (const t of times) {
    tokens = Math.min(R, tokens + ((t - last) * R) / 1000);
    last = t;
    if (tokens >= n) { tokens -= n; admitted += n; }
  }
  return admitted;
}

// Sends n-sample pprofs at perSec requests/s for durS seconds; returns the replies.
async function pacedClient(svc, key, n, perSec, durS, t0) {
  const out = [];
  const body = pprofN(n);
  const count = Math.round(perSec * durS);
  for (let i = 0; i < count; i++) {
    const wait = t0 + (i * 1000) / perSec - Date.now();
    if (wait > 0) await sleep(wait);
    const sent = Date.now();
    const r = await uploadAs(server, body, { serviceName: svc }, { key });
    out.push({ r, sent, done: Date.now() });
  }
  return out;
}

test(`one key at 3× its limit (${R}/s) for 10 s from 6 clients: accepted = what an R/s bucket admits for the send times (± 5 %), never over R × D + R; every refusal a 429 with Retry-After; stored = accepted; another key unaffected`, { todo }, async () => {
  assert.ok(server, 'no server');
  const svc = uniqueName('rl-noisy');
  const quietSvc = uniqueName('rl-quiet');
  const N = 100;
  const t0 = Date.now() + 50;
  const noisy = Array.from({ length: CLIENTS }, () => pacedClient(svc, K.noisy, N, (3 * R) / N / CLIENTS, 10, t0));
  // The quiet key sends a quarter of its limit meanwhile.
  const quiet = pacedClient(quietSvc, K.quiet, N, R / N / 4, 10, t0);
  const settled = await Promise.allSettled([quiet, ...noisy]);
  const failed = settled.find((x) => x.status === 'rejected');
  if (failed) throw failed.reason;
  const quietReplies = settled[0].value;
  const replies = settled.slice(1).flatMap((x) => x.value);

  const first = Math.min(...replies.map((x) => x.sent));
  const last = Math.max(...replies.map((x) => x.done));
  const D = (last - first) / 1000;
  let accepted = 0;
  let refused = 0;
  const other = [];
  for (const { r } of replies) {
    if (r.status === 200) {
      assert.equal(r.json?.samples, N, `200 reply "samples" of a ${N}-row pprof: ${brief(r)}`);
      accepted += r.json.samples;
    } else if (r.status === 429) {
      refused++;
      if (refused === 1) { check429(r, 'noisy key refusal'); checkMessage(r.json?.error ?? r.text, 'noisy key 429'); }
      else check429(r, 'noisy key refusal');
    } else other.push(brief(r));
  }
  assert.deepEqual(other, [], `replies other than 200/429:\n${other.slice(0, 5).join('\n')}\n${tail(server.stderr(), 10)}`);
  const demand = (replies.length * N) / D;
  assert.ok(demand >= 2 * R, `the test must push ≥ 2× the limit: it pushed ${Math.round(demand)}/s over ${D.toFixed(2)} s (replies too slow?)`);
  // Never more than the limit allows (one request of slack for the last refill).
  const ceiling = R * D + R + N;
  assert.ok(accepted <= ceiling, `accepted ${accepted} samples over ${D.toFixed(2)} s: more than ${R}/s with 1 s of burst allows (${ceiling})`);
  // And as much as the OPS: Rate limits bucket (R/s, capacity R) admits for the times the
  // requests were really sent: a client stalled for over a second (a loaded
  // machine) lets the full bucket overflow, which R × D + R would not see.
  const expected = bucketAdmits(replies.map((x) => x.sent).sort((a, b) => a - b), N);
  assert.ok(Math.abs(accepted - expected) <= 0.05 * expected,
    `accepted ${accepted} samples over ${D.toFixed(2)} s at ${R}/s with 1 s of burst; the bucket admits ${expected} for these send times (R × D + R = ${Math.round(R * D + R)}) ± 5 % (${refused} refusals of ${replies.length} requests)`);
  assert.equal(await storedTotal(svc, K.noisy), accepted, 'stored total = samples of the 200 replies (refused requests store nothing)');

  const qBad = quietReplies.filter(({ r }) => r.status !== 200);
  assert.equal(qBad.length, 0, `another key under its limit was refused ${qBad.length}× while the noisy key was limited: ${qBad.slice(0, 3).map(({ r }) => brief(r)).join('; ')}`);
  assert.equal(await storedTotal(quietSvc, K.quiet), quietReplies.length * N, 'quiet key: everything stored');
});

test('OTLP/gRPC over the limit → RESOURCE_EXHAUSTED with RetryInfo; stored = accepted sample points', { todo }, async () => {
  const svc = uniqueName('rl-grpc');
  const c = grpcClientAt(server.urls.otlp_grpc);
  const N = 500;
  let accepted = 0;
  let refusal;
  const t0 = Date.now();
  try {
    for (let i = 0; i < 20 && !refusal; i++) {
      const r = await grpcExportMd(c, otlpN(svc, N), { 'x-kiln-key': K.grpc });
      if (r.ok) {
        assert.equal(Number(r.response?.partialSuccess?.rejectedProfiles ?? 0), 0, describeGrpcMd(r));
        accepted += N;
      } else refusal = r;
    }
  } finally { c.close(); }
  assert.ok(refusal, `20 × ${N} sample points at once never refused (limit ${R}/s, burst ${R})`);
  assert.equal(refusal.codeName, 'RESOURCE_EXHAUSTED', describeGrpcMd(refusal));
  checkMessage(refusal.details ?? '', 'gRPC RESOURCE_EXHAUSTED');
  const ri = retryInfoOf(refusal);
  assert.ok(ri, `RESOURCE_EXHAUSTED without a google.rpc.RetryInfo in grpc-status-details-bin: ${describeGrpcMd(refusal)}`);
  assert.ok(ri.retryDelaySeconds > 0 && ri.retryDelaySeconds <= 60, `RetryInfo.retry_delay ${ri.retryDelaySeconds} s`);
  const el = (Date.now() - t0) / 1000;
  assert.ok(accepted >= R && accepted <= R + R * el + N, `accepted ${accepted} in ${el.toFixed(2)} s before the first refusal (burst ${R}, ${R}/s)`);
  assert.equal(await storedTotal(svc, K.grpc), accepted, 'stored total = accepted sample points');
});

test('OTLP/HTTP over the limit → 429 with Retry-After and a google.rpc.Status naming the limit', { todo }, async () => {
  const svc = uniqueName('rl-otlphttp');
  const N = 500;
  let accepted = 0;
  let refusal;
  for (let i = 0; i < 20 && !refusal; i++) {
    const r = await postOtlpAs(server, otlpN(svc, N), { key: K.otlphttp });
    if (r.status === 200) accepted += N;
    else refusal = r;
  }
  assert.ok(refusal, 'never refused');
  check429(refusal, 'OTLP/HTTP');
  const p = parseOtlpReply(refusal.status, refusal.headers, refusal.buf);
  assert.equal(p.parseError, undefined, `429 body must be a google.rpc.Status: ${p.parseError}`);
  checkMessage(p.rpcStatus?.message ?? '', 'OTLP/HTTP 429');
  assert.equal(await storedTotal(svc, K.otlphttp), accepted, 'stored total = accepted sample points');
});

test('a client honouring Retry-After gets all its data in', { todo }, async () => {
  const svc = uniqueName('rl-patient');
  // Each batch is one second of the limit: after the first empties the
  // bucket, the next is refused unless a request takes over a second.
  const N = R;
  const batches = 4;
  let refusals = 0;
  const t0 = Date.now();
  for (let b = 0; b < batches; b++) {
    for (;;) {
      const r = await uploadAs(server, pprofN(N, { tag: `b${b}_` }), { serviceName: svc }, { key: K.patient });
      if (r.status === 200) break;
      check429(r, `patient batch ${b}`);
      refusals++;
      assert.ok(Date.now() - t0 < 30000, `still refused after 30 s (${refusals} refusals)`);
      await sleep(Number(r.headers['retry-after']) * 1000);
    }
  }
  assert.ok(refusals > 0, 'the patient client was never refused: the limit did not apply');
  assert.equal(await storedTotal(svc, K.patient), N * batches, 'every batch stored once');
});
