// A full write queue (issue 15 items 2 and 5; API: Push errors, OPS: Storage,
// OPS: Scrape results and what to do): with store.queueBatches: 1 and the
// writer held by the test-only hook KILN_TEST_HOLD_WRITER=FILE (the writer
// waits before each group while FILE exists), one push fills the queue. Then
// every push path is refused at once — pprof upload, /ingest and OTLP/HTTP
// with 503 + Retry-After: 1, OTLP/gRPC with UNAVAILABLE, Connect Push with
// `unavailable` (503 + Retry-After) — and stores nothing; the push that was
// queued is answered 200 once the writer is released, and stored whole
// (its total is the test's own sum of the profile it built). A scrape the
// store refuses is result store_busy: in /api/targets, in
// kiln_scrape_results_total and in its `profile scrape failed` log line,
// and nothing of it is stored. Runs on either engine (KILN_TEST_ENGINE).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { mkTemp, uniqueName } from './lib/env.mjs';
import { startServer, tail, TEST_ENGINE, clickhouseStoreYaml, freshDatabase } from './lib/server.mjs';
import { upload, get, getJson, wideWindow } from './lib/http.mjs';
import { buildProfile } from './lib/pb.mjs';
import { postOtlp } from './lib/otlp.mjs';
import { grpcClientAt, grpcExportMd, otlpN } from './lib/s6.mjs';
import { waitTarget, logLines, until } from './lib/scrape.mjs';

const BUSY = /^store: busy: 1 batches \(0 MiB\) are waiting to be written, the most allowed is 1 \(store\.queueBatches\) and 256 MiB \(store\.queueMiB\); retry later$/;

// A store block with queueBatches: 1 for the engine under test.
function storeYaml() {
  if (TEST_ENGINE !== 'clickhouse') return 'store: {queueBatches: 1}\n';
  return `${clickhouseStoreYaml({ url: process.env.KILN_TEST_CLICKHOUSE_URL, database: freshDatabase() })}  queueBatches: 1\n`;
}

// A cpu pprof of n distinct stacks with values 1..n; total n(n+1)/2.
function pprof(tag, n) {
  return buildProfile({
    sampleTypes: [['cpu', 'nanoseconds']], periodType: ['cpu', 'nanoseconds'], period: 1,
    samples: Array.from({ length: n }, (_, i) => ({ stack: [`main.${tag}${i}`, 'main.main'], values: [i + 1] })),
  }).bytes;
}

let kPush, kScrape, target, queueFull;
const scrapeReady = new Promise((r) => { queueFull = r; });
const holdDir = mkTemp('hold');
const holdPush = path.join(holdDir, 'push');
const holdScrape = path.join(holdDir, 'scrape');
const svc = uniqueName('busy');

function listen(server) {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
}

before(async () => {
  const body = pprof('s', 10);
  // Answers only once the queue is full (scrapeReady), so the scrape's push
  // always meets the full queue, whenever its timer fires.
  const s = http.createServer(async (req, res) => {
    await scrapeReady;
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length });
    res.end(body);
  });
  target = { server: s, port: await listen(s) };
  fs.writeFileSync(holdPush, '');
  fs.writeFileSync(holdScrape, '');
  const scrape = `receivers:
  profiles:
    scrape:
      enabled: true
      interval: 10s
      static:
        - {name: t, url: "http://127.0.0.1:${target.port}", service: ${svc}-scraped, types: {memory: {scrape: true}}}
`;
  const limits = 'limits: {samplesPerSecond: 1000000000}\n';
  [kPush, kScrape] = await Promise.all([
    startServer({ config: limits + storeYaml(), otlp: true, listeners: ['upload', 'ui', 'otlp_http', 'otlp_grpc'], env: { KILN_TEST_HOLD_WRITER: holdPush } }),
    startServer({ config: limits + storeYaml() + scrape, env: { KILN_TEST_HOLD_WRITER: holdScrape } }),
  ]);
});

after(async () => {
  for (const f of [holdPush, holdScrape]) fs.rmSync(f, { force: true });
  queueFull();
  for (const k of [kPush, kScrape]) if (k) await k.stop();
  if (target) await new Promise((r) => { target.server.closeAllConnections(); target.server.close(r); });
});

// Starts a push that the held writer takes (the queue's one batch); resolves
// once the hook shows the writer holding it (FILE.held). Returns {pending}
// (the upload's promise, wrapped: an async function would wait for it).
async function fillQueue(k, hold, service) {
  const pending = upload(k, pprof('q', 20), { serviceName: service });
  await until(k, async () => fs.existsSync(`${hold}.held`), 'the writer holding the push', 10000);
  return { pending };
}

async function flameTotal(k, service) {
  const r = await get(k.uiUrl, '/api/flamegraph', { service, type: 'cpu:nanoseconds', ...wideWindow() });
  return r.status === 200 ? r.json.total : `status ${r.status}`;
}

test('queue full: every push path refused at once (503 + Retry-After: 1 / UNAVAILABLE / unavailable), nothing of it stored; the queued push answered 200 after release and stored whole', async () => {
  const { pending } = await fillQueue(kPush, holdPush, `${svc}-held`);

  const up = await upload(kPush, pprof('u', 5), { serviceName: `${svc}-upload` });
  assert.equal(up.status, 503, up.text);
  assert.equal(up.headers.get('retry-after'), '1');
  assert.match(up.json.error, BUSY);

  const ing = await fetch(`${kPush.uploadUrl}/ingest?name=${encodeURIComponent(`${svc}-ingest`)}&format=pprof`, { method: 'POST', body: pprof('i', 5) });
  assert.equal(ing.status, 503);
  assert.equal(ing.headers.get('retry-after'), '1');
  assert.match(await ing.text(), /store: busy/);

  const conn = await fetch(`${kPush.uploadUrl}/push.v1.PusherService/Push`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ series: [{ labels: [{ name: 'service_name', value: `${svc}-connect` }, { name: '__name__', value: 'process_cpu' }], samples: [{ rawProfile: Buffer.from(pprof('c', 5)).toString('base64') }] }] }),
  });
  assert.equal(conn.status, 503);
  assert.equal(conn.headers.get('retry-after'), '1');
  const cj = await conn.json();
  assert.equal(cj.code, 'unavailable');
  assert.match(cj.message, BUSY);

  const oh = await postOtlp(kPush, otlpN(`${svc}-otlphttp`, 5));
  assert.equal(oh.status, 503, oh.text);
  assert.equal(oh.headers.get('retry-after'), '1');

  const client = grpcClientAt(kPush.urls.otlp_grpc);
  const og = await grpcExportMd(client, otlpN(`${svc}-otlpgrpc`, 5));
  client.close();
  assert.equal(og.codeName, 'UNAVAILABLE', JSON.stringify(og));
  assert.match(og.details, BUSY);

  fs.rmSync(holdPush);
  const held = await pending;
  assert.equal(held.status, 200, held.text);
  assert.equal(await flameTotal(kPush, `${svc}-held`), (20 * 21) / 2);
  for (const s of ['upload', 'ingest', 'connect', 'otlphttp', 'otlpgrpc']) {
    const ty = await getJson(kPush.uiUrl, '/api/types', { service: `${svc}-${s}`, ...wideWindow() });
    assert.deepEqual(ty.types, [], `${s}: nothing stored\n${tail(kPush.stderr())}`);
  }
  // The queue has room again: the same upload now goes in.
  const again = await upload(kPush, pprof('u', 5), { serviceName: `${svc}-upload` });
  assert.equal(again.status, 200, again.text);
  assert.equal(await flameTotal(kPush, `${svc}-upload`), 15);
});

test('a scrape while the queue is full: result store_busy in /api/targets, /metrics and the log line; nothing of it stored', async () => {
  const { pending } = await fillQueue(kScrape, holdScrape, `${svc}-held2`);
  queueFull();
  const t = await waitTarget(kScrape, 'static/t/memory', (x) => x.last_result !== null, 'a result', 25000);
  assert.equal(t.last_result, 'store_busy', JSON.stringify(t));
  assert.equal(t.results.store_busy, 1);
  assert.equal(t.results.ok, 0);
  const m = (await get(kScrape.uiUrl, '/metrics')).text;
  assert.match(m, /^kiln_scrape_results_total\{type="memory",result="store_busy"\} 1$/m);
  const line = logLines(kScrape, 'profile scrape failed').find((l) => l.key === 'static/t/memory');
  assert.ok(line, tail(kScrape.stderr()));
  assert.equal(line.result, 'store_busy');
  assert.equal(line.consecutive, '1');
  assert.match(line.error, /^store: busy: 1 batches/);
  const ty = await getJson(kScrape.uiUrl, '/api/types', { service: `${svc}-scraped`, ...wideWindow() });
  assert.deepEqual(ty.types, []);
  fs.rmSync(holdScrape);
  assert.equal((await pending).status, 200);
});
