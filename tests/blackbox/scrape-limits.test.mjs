// Scrape limits (OPS: Scrape requests, Scrape limits, Scrape log lines):
// responses over 8 MiB compressed or
// 32 MiB decompressed are too_large, profiles over maxDecodedSampleRows rows
// (counted after .sample_types) are validation_error, and no more than 64
// scrapes run at once (skipped_concurrency) — against a Node server that
// serves such bodies and one that never answers. The expected totals of the
// stored profiles come from the profiles the test built.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import http from 'node:http';
import zlib from 'node:zlib';
import { uniqueName } from './lib/env.mjs';
import { startServer, tail } from './lib/server.mjs';
import { getJson, get } from './lib/http.mjs';
import { buildProfile } from './lib/pb.mjs';
import { targets, waitTarget, logLines, until, staticScrapeConfig } from './lib/scrape.mjs';

const MiB = 1 << 20;
const SLOW_TARGETS = 100;
let bodies, serve, slow, kLimits, kSlow;
const svc = uniqueName('rows');

// rows distinct stacks with sample types a and b; row 0 has a = 0 when zeroA.
function rowsProfile(rows, zeroA) {
  const samples = [];
  for (let i = 0; i < rows; i++) {
    samples.push({ stack: [`main.f${i}`, 'main.work', 'main.main'], values: [zeroA && i === 0 ? 0 : i + 1, 2 * i + 1] });
  }
  const spec = { sampleTypes: [['a', 'count'], ['b', 'count']], periodType: ['a', 'count'], period: 1, samples };
  const sum = (k) => samples.reduce((s, x) => s + x.values[k], 0);
  return { bytes: zlib.gzipSync(buildProfile(spec).bytes), a: sum(0), b: sum(1) };
}

function listen(server) {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
}

before(async () => {
  bodies = {
    '/big': crypto.randomBytes(9 * MiB), // incompressible: over 8 MiB on the wire
    '/bomb': zlib.gzipSync(Buffer.alloc(40 * MiB)), // ~40 KiB that inflate to 40 MiB
    '/rows-10000': rowsProfile(10000, false),
    '/rows-10001': rowsProfile(10001, true),
  };
  const s = http.createServer((req, res) => {
    const path = req.url.split('?')[0];
    if (path === '/big-chunked') { // no Content-Length: the limit must hold while streaming
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      for (let i = 0; i < 9; i++) res.write(bodies['/big'].subarray(i * MiB, (i + 1) * MiB));
      res.end();
      return;
    }
    const b = bodies[path];
    if (!b) { res.writeHead(404); res.end(); return; }
    const buf = b.bytes ?? b;
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': buf.length });
    res.end(buf);
  });
  const port = await listen(s);
  serve = { port, stop: () => new Promise((r) => { s.closeAllConnections(); s.close(r); }) };

  // Never answers; counts the requests open at once.
  const open = new Set();
  let peak = 0;
  const sl = http.createServer((req) => {
    open.add(req);
    peak = Math.max(peak, open.size);
    // kiln's FIN ('end') is the moment it let go; 'close' comes a tick later.
    req.socket.on('end', () => open.delete(req));
    req.socket.on('close', () => open.delete(req));
  });
  const slowPort = await listen(sl);
  slow = { port: slowPort, peak: () => peak, stop: () => new Promise((r) => { sl.closeAllConnections(); sl.close(r); }) };

  const t = (name, path, extra = '') =>
    `        - {name: ${name}, url: "http://127.0.0.1:${port}", service: ${svc}-${name}, types: {memory: {scrape: true, path: "${path}"${extra}}}}\n`;
  const limitsConfig = staticScrapeConfig('10s', t('big', '/big') + t('chunked', '/big-chunked') + t('bomb', '/bomb') +
    t('rows10000', '/rows-10000') + t('rows10001', '/rows-10001') + t('rows10001a', '/rows-10001', ', sample_types: a') +
    t('rows10001b', '/rows-10001', ', sample_types: b'));
  let slowItems = '';
  for (let i = 0; i < SLOW_TARGETS; i++) {
    slowItems += `        - {name: slow${i}, url: "http://127.0.0.1:${slowPort}", types: {goroutine: {scrape: true, path: "/slow/${i}"}}}\n`;
  }
  const slowConfig = staticScrapeConfig('10s', slowItems);
  [kLimits, kSlow] = await Promise.all([startServer({ config: limitsConfig }), startServer({ config: slowConfig })]);
});

after(async () => {
  for (const k of [kLimits, kSlow]) if (k) await k.stop();
  if (serve) await serve.stop();
  if (slow) await slow.stop();
});

const result = (name) => waitTarget(kLimits, `static/${name}/memory`, (t) => t.last_result !== null, 'a result', 30000);
async function flame(name, type) {
  return getJson(kLimits.uiUrl, '/api/flamegraph', { service: `${svc}-${name}`, type, from: 'now-1h' });
}

test('over 8 MiB compressed (with or without Content-Length) or 32 MiB decompressed: too_large, nothing stored', async () => {
  for (const name of ['big', 'chunked', 'bomb']) {
    const t = await result(name);
    assert.equal(t.last_result, 'too_large', `${name}: ${JSON.stringify(t)}`);
    assert.equal(t.last_success, null);
    const line = logLines(kLimits, 'profile scrape failed').find((l) => l.key === `static/${name}/memory`);
    assert.ok(line, tail(kLimits.stderr()));
    assert.deepEqual([line.result, line.consecutive], ['too_large', '1']);
    const ty = await getJson(kLimits.uiUrl, '/api/types', { service: `${svc}-${name}`, from: 'now-1h' });
    assert.deepEqual(ty.types, []);
  }
});

test('maxDecodedSampleRows (10,000) counts rows after .sample_types: 10,000 ok, 10,001 validation_error', async () => {
  const exp10000 = bodies['/rows-10000'];
  const exp10001 = bodies['/rows-10001'];
  const ok = await result('rows10000');
  assert.equal(ok.last_result, 'ok');
  let f = await until(kLimits, async () => { const j = await flame('rows10000', 'a:count'); return j.total && j; }, 'rows10000 stored', 10000);
  assert.equal(f.total, exp10000.a);
  assert.equal((await flame('rows10000', 'b:count')).total, exp10000.b);

  assert.equal((await result('rows10001')).last_result, 'validation_error');
  const line = logLines(kLimits, 'profile scrape failed').find((l) => l.key === 'static/rows10001/memory');
  assert.equal(line.error, 'profile has 10001 sample rows; the limit is 10000 (maxDecodedSampleRows)');
  // Only a is kept: its zero row is dropped, 10,000 rows remain → ok, and b is not stored.
  assert.equal((await result('rows10001a')).last_result, 'ok');
  f = await until(kLimits, async () => { const j = await flame('rows10001a', 'a:count'); return j.total && j; }, 'rows10001a stored', 10000);
  assert.equal(f.total, exp10001.a);
  assert.deepEqual((await getJson(kLimits.uiUrl, '/api/types', { service: `${svc}-rows10001a`, from: 'now-1h' })).types, ['a:count']);
  // Only b is kept: 10,001 rows → validation_error.
  assert.equal((await result('rows10001b')).last_result, 'validation_error');
  const lineB = logLines(kLimits, 'profile scrape failed').find((l) => l.key === 'static/rows10001b/memory');
  assert.equal(lineB.error, 'profile b has 10001 rows; the limit is 10000 (receivers.profiles.maxDecodedSampleRows)');
  assert.deepEqual((await getJson(kLimits.uiUrl, '/api/types', { service: `${svc}-rows10001b`, from: 'now-1h' })).types, []);
});

test('100 targets that never answer: at most 64 scrapes at once, the rest skipped_concurrency, then timeout (OPS: Scrape requests)', async () => {
  const sum = (ts, r) => ts.reduce((s, t) => s + (t.results[r] ?? 0), 0);
  const ts = await until(kSlow, async () => {
    const all = await targets(kSlow);
    return sum(all, 'skipped_concurrency') >= 20 && sum(all, 'timeout') >= 20 && all;
  }, 'skipped_concurrency and timeout results', 40000);
  assert.equal(ts.length, SLOW_TARGETS);
  assert.equal(slow.peak(), 64, 'requests open at once at the target');
  const m = /^kiln_scrape_inflight (\d+)$/m.exec((await get(kSlow.uiUrl, '/metrics')).text);
  assert.ok(m && Number(m[1]) <= 64, `kiln_scrape_inflight ${m?.[1]}`);
  const lines = logLines(kSlow, 'profile scrape failed').filter((l) => l.result === 'skipped_concurrency');
  assert.ok(lines.length >= 1, tail(kSlow.stderr()));
  assert.equal(lines[0].consecutive, '1');
  assert.equal(lines[0].type, 'goroutine');
});
