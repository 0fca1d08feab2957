// The caller of a listener without auth (project and key `default`) is not
// rate-limited unless limits.defaultSamplesPerSecond says so (issue 14,
// item 11): without the setting, 16 connections pushing far above the keys'
// 20,000 samples/s get no 429 and every sample is counted as accepted
// (kiln_samples_total, /api/usage) and stored; with the setting, the same
// caller gets 429 + Retry-After naming key default and the limit, and usage
// counts accepted and rate_limited exactly as the replies said.
// Bodies: pprofs of n distinct stacks with value 1 ("samples" = n, stored
// total = n).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { uniqueName, nowS } from './lib/env.mjs';
import { tail } from './lib/server.mjs';
import { stopAll, startTracked, uploadAs, apiAs, pprofN, wide, brief, parseProm, promSum, DAY } from './lib/s6.mjs';

after(stopAll);

const CONNS = 16;

// Sends `each` uploads of an n-sample pprof over each of CONNS concurrent
// connections; → {replies, seconds}.
async function burst(server, svc, n, each) {
  const body = pprofN(n);
  const t0 = Date.now();
  const lanes = Array.from({ length: CONNS }, async () => {
    const out = [];
    for (let i = 0; i < each; i++) out.push(await uploadAs(server, body, { serviceName: svc }));
    return out;
  });
  const replies = (await Promise.all(lanes)).flat();
  return { replies, seconds: (Date.now() - t0) / 1000 };
}

async function countsOfDefault(server) {
  const m = await apiAs(server, '/metrics', {});
  assert.equal(m.status, 200, `/metrics: ${brief(m)}`);
  const prom = parseProm(m.text);
  const u = await apiAs(server, '/api/usage', { from: nowS() - 2 * DAY, until: nowS() + 60 });
  assert.equal(u.status, 200, `/api/usage: ${brief(u)}`);
  const rows = (u.json?.days ?? []).filter((d) => d.key === 'default');
  return {
    metrics: {
      accepted: promSum(prom, 'kiln_samples_total', { key: 'default', result: 'accepted' }) ?? 0,
      rate_limited: promSum(prom, 'kiln_samples_total', { key: 'default', result: 'rate_limited' }) ?? 0,
    },
    usage: {
      accepted: rows.reduce((s, d) => s + d.accepted, 0),
      rate_limited: rows.reduce((s, d) => s + d.rejected_by_reason.rate_limited, 0),
    },
  };
}

async function storedTotal(server, svc) {
  const r = await apiAs(server, '/api/flamegraph', { service: svc, type: 'cpu:nanoseconds', ...wide() });
  if (r.status === 404) return 0;
  assert.equal(r.status, 200, `/api/flamegraph ${svc}: ${brief(r)}`);
  return r.json.total ?? 0;
}

test('no auth, no limits.defaultSamplesPerSecond: 16 connections far above 20,000 samples/s get no 429; usage counts every sample', { timeout: 240000 }, async () => {
  // No samplesPerSecond either: the keys' limit is its default, 20,000/s.
  const server = await startTracked({ config: 'limits: {requestBodiesMiB: 512}\n' });
  const svc = uniqueName('rld-free');
  const N = 5000;
  const { replies, seconds } = await burst(server, svc, N, 8);
  const bad = replies.filter((r) => r.status !== 200);
  assert.deepEqual(bad.map(brief).slice(0, 3), [], `${bad.length} of ${replies.length} refused\n${tail(server.stderr(), 5)}`);
  const total = replies.length * N;
  const rate = total / seconds;
  assert.ok(rate >= 2 * 20000, `the burst must be far above 20,000 samples/s: ${Math.round(rate)}/s (${total} in ${seconds.toFixed(2)} s)`);
  const c = await countsOfDefault(server);
  assert.deepEqual(c.metrics, { accepted: total, rate_limited: 0 }, 'kiln_samples_total{key="default"}');
  assert.deepEqual(c.usage, { accepted: total, rate_limited: 0 }, '/api/usage key default');
  assert.equal(await storedTotal(server, svc), total, 'stored total = samples sent');
  await server.stop();
});

test('limits.defaultSamplesPerSecond 2000: the caller without auth gets 429 + Retry-After naming key default and 2000; usage = the replies', { timeout: 240000 }, async () => {
  const R = 2000;
  const server = await startTracked({ config: `limits: {samplesPerSecond: 1000000000, defaultSamplesPerSecond: ${R}}\n` });
  const svc = uniqueName('rld-limited');
  const N = 500;
  const { replies } = await burst(server, svc, N, 3); // 24,000 samples at once: 12 s of the limit
  let accepted = 0;
  let limited = 0;
  const other = [];
  for (const r of replies) {
    if (r.status === 200) accepted += N;
    else if (r.status === 429) {
      limited += N;
      assert.match(String(r.headers['retry-after']), /^[1-9]\d*$/, `Retry-After: ${brief(r)}`);
      assert.match(r.json?.error ?? '', new RegExp(`^key default is over its rate limit of ${R} samples/s: this request has ${N} samples; retry in \\d+ s$`), brief(r));
    } else other.push(brief(r));
  }
  assert.deepEqual(other, [], 'replies other than 200/429');
  assert.ok(limited > 0, `never refused: ${replies.length} × ${N} samples at once against ${R}/s`);
  assert.ok(accepted >= R, `the full bucket (${R}) admits at least ${R / N} requests: accepted ${accepted}`);
  const c = await countsOfDefault(server);
  assert.deepEqual(c.metrics, { accepted, rate_limited: limited }, 'kiln_samples_total{key="default"}');
  assert.deepEqual(c.usage, { accepted, rate_limited: limited }, '/api/usage key default');
  assert.equal(await storedTotal(server, svc), accepted, 'stored total = accepted samples');
  await server.stop();
});
