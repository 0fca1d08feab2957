// Answers from ClickHouse are bounded (issue 14, item 8): store.maxAnswerMiB
// caps what one answer may hold. kiln asks ClickHouse for no more
// (max_result_bytes / max_result_rows with result_overflow_mode=throw on
// every SELECT) and cuts off whatever a server sends past it while
// receiving; either way the query answers 503 with a message naming the
// limit, and the process goes on serving.
//   1. A real ClickHouse, store.maxAnswerMiB: 1. One day holds a profile
//      whose frames alone are ~2.4 MiB (4,000 functions with 600-byte
//      names); a query over that day → 503 and the exact message. Then a
//      query over today (a small profile) → 200 with its exact total, and
//      the big day again → the same 503: nothing was left half-read.
//   2. A misbehaving "ClickHouse" (a plain HTTP server that answers every
//      statement 200 and every SELECT with 64 MiB of bytes) behind kiln with
//      store.maxAnswerMiB: 1: the query answers the same 503 (the answer was
//      cut off while receiving, kiln's own count), kiln stays up.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { nowS } from './lib/env.mjs';
import { upload, get } from './lib/http.mjs';
import { buildProfile } from './lib/pb.mjs';
import { startClickHouse } from './lib/clickhouse.mjs';
import { startServer, clickhouseStoreYaml, freshDatabase, tail } from './lib/server.mjs';

const SVC = 'ceiling';
const TYPE = 'cpu:nanoseconds';
const DAY_S = 86400;
const MESSAGE = 'store: the answer from ClickHouse exceeded 1 MiB (store.maxAnswerMiB)';
const N_BIG = 4000;
let ch;

before(async () => { ch = await startClickHouse(); });
after(async () => { await ch?.stop(); });

const config = (url, database) =>
  `limits: {samplesPerSecond: 1000000000}\n${clickhouseStoreYaml({ url, database })}  maxAnswerMiB: 1\n`;

// One profile of n samples at timeS, sample i on stack [f_i, main.main]
// with value 1000 + i; f_i's name padded to `pad` bytes.
function profile(n, timeS, pad) {
  const samples = [];
  let total = 0;
  for (let i = 0; i < n; i++) {
    const name = `main.f${i}_`.padEnd(pad, 'x');
    samples.push({ stack: [name, 'main.main'], values: [1000 + i] });
    total += 1000 + i;
  }
  const bytes = buildProfile({
    sampleTypes: [['cpu', 'nanoseconds']], periodType: ['cpu', 'nanoseconds'], period: 1,
    timeNanos: BigInt(timeS) * 1000000000n, samples,
  }).bytes;
  return { bytes, total };
}

async function expectCeiling(kiln, params, what) {
  const r = await get(kiln.uiUrl, '/api/flamegraph', { service: SVC, type: TYPE, ...params }, { timeoutMs: 60000 });
  assert.equal(r.status, 503, `${what}: ${r.status} ${r.text.slice(0, 300)}\n${tail(kiln.stderr(), 10)}`);
  assert.deepEqual(r.json, { error: MESSAGE }, what);
  assert.equal(kiln.exitInfo(), null, `${what}: kiln exited`);
}

test('store.maxAnswerMiB on a real ClickHouse: a day past the ceiling answers 503 naming it, a day within answers 200 with its total', async () => {
  const kiln = await startServer({ config: config(ch.url, freshDatabase()) });
  try {
    const now = nowS();
    const bigDay = now - 3 * DAY_S;
    const big = profile(N_BIG, bigDay, 600);
    assert.ok(big.bytes.length > 2 << 20, `the big profile is ${big.bytes.length} bytes`);
    // Without `from`, a pprof upload is stored at receive time (S2.1).
    let r = await upload(kiln, big.bytes, { serviceName: SVC, from: bigDay, until: bigDay + 10 });
    assert.equal(r.status, 200, `big push: ${r.text}\n${tail(kiln.stderr(), 10)}`);
    const small = profile(20, now - 60, 0);
    r = await upload(kiln, small.bytes, { serviceName: SVC, from: now - 60, until: now - 50 });
    assert.equal(r.status, 200, `small push: ${r.text}`);
    // The frames of the big day are stored whole: the ceiling is on answers, not on writes.
    const stored = await ch.query(`SELECT count(), sum(length(name)) FROM ${kiln.database}.frames WHERE name LIKE 'main.f%'`);
    const [frames, nameBytes] = stored.trim().split('\t').map(Number);
    assert.equal(frames, N_BIG + 20, stored);
    assert.ok(nameBytes > 1 << 21, `frame names hold ${nameBytes} bytes`);

    const bigRange = { from: bigDay - 3600, until: bigDay + 3600 };
    await expectCeiling(kiln, bigRange, 'the big day');
    // ClickHouse itself refused (max_result_bytes, code 396 TOO_MANY_ROWS_OR_BYTES) before sending it.
    const refused = kiln.stderr().split('\n').find((l) => l.includes('clickhouse request failed'));
    assert.match(refused ?? '', /Code: 396,.*max bytes/, `kiln's log of the refusal: ${refused}`);
    const fg = await get(kiln.uiUrl, '/api/flamegraph', { service: SVC, type: TYPE, from: now - 3600, until: now + 60 });
    assert.equal(fg.status, 200, `today after the refusal: ${fg.status} ${fg.text.slice(0, 300)}\n${tail(kiln.stderr(), 10)}`);
    assert.equal(fg.json.total, small.total, 'today\'s total');
    await expectCeiling(kiln, bigRange, 'the big day again');
    const last = await get(kiln.uiUrl, '/api/flamegraph', { service: SVC, type: TYPE, from: now - 3600, until: now + 60 });
    assert.equal(last.status, 200);
    assert.equal(last.json.total, small.total);
  } finally {
    await kiln.stop();
  }
});

test('a server that sends more than store.maxAnswerMiB: kiln cuts the answer off while receiving, answers 503 naming the limit, stays up', async () => {
  const SENT = 64 << 20; // more than the kernel's socket buffers hold: a reader that hangs up leaves it unsent
  let selects = 0;
  let cut = 0;
  const fake = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      if (!/^\s*SELECT/i.test(body)) { res.writeHead(200); res.end(); return; }
      selects++;
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': SENT });
      const chunk = Buffer.alloc(64 << 10, 0x41);
      let sent = 0;
      const pump = () => {
        while (sent < SENT) {
          sent += chunk.length;
          if (!res.write(chunk)) { res.once('drain', pump); return; }
        }
        res.end();
      };
      // A reader that took every byte lets the answer finish; kiln must hang up before.
      res.on('close', () => { if (!res.writableFinished) cut++; });
      pump();
    });
  });
  await new Promise((r) => fake.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${fake.address().port}`;
  const kiln = await startServer({ config: config(url, 'kiln_fake'), checkStore: false });
  try {
    for (let i = 0; i < 2; i++) {
      await expectCeiling(kiln, { from: nowS() - 3600, until: nowS() + 60 }, `query ${i} on the misbehaving server`);
    }
    assert.ok(selects >= 2, `SELECTs sent: ${selects}`);
    assert.ok(cut >= 1, 'kiln read every byte instead of cutting the answer off');
    assert.match(kiln.stderr(), /answer cut off at 1048576 bytes \(store.maxAnswerMiB\)/);
    // Still serving: the process answers its health route.
    const h = await get(kiln.uiUrl, '/healthz');
    assert.equal(h.status, 200, `healthz: ${h.status}`);
    assert.equal(kiln.exitInfo(), null);
  } finally {
    await kiln.stop();
    fake.close();
  }
});
