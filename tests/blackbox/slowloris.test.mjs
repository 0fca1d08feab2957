// Hostile connections (issue 7): 10,000 idle and slowloris connections to
// the upload listener (connection cap 4,096) do not keep other clients out —
// at the cap kiln closes the connection that waited longest without a
// request — and a client that stops reading a large answer does not stall
// the loop: other requests are answered meanwhile. (The write timeout that
// finally drops such a client is tested in tests/unit/net/http1.c.)
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { TESTDATA, uniqueName } from './lib/env.mjs';
import { startServer, tail } from './lib/server.mjs';
import { upload, get, sleep } from './lib/http.mjs';

const HOSTILE = 10000;
let server;
const sockets = [];
after(async () => {
  for (const s of sockets) s.destroy();
  if (server) await server.stop();
});

function openIdle(port, slow) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.on('error', () => {});
    s.on('connect', () => {
      if (slow) s.write('POST /profiling/upload HTTP/1.1\r\nHost: x\r\n'); // never finishes its head
      resolve(s);
    });
    s.on('close', () => resolve(s));
    setTimeout(() => resolve(s), 5000).unref(); // a SYN lost in a full backlog: go on
    sockets.push(s);
  });
}

test('10,000 idle and slowloris connections: uploads and queries are still answered; kiln evicts the oldest idle ones', { timeout: 180000 }, async (t) => {
  server = await startServer();
  const port = Number(new URL(server.uploadUrl).port);
  const body = fs.readFileSync(path.join(TESTDATA, 'pprof', 'go-cpu-fib.pb.gz'));
  const svc = uniqueName('loris');
  for (let i = 0; i < HOSTILE; i += 500) {
    await Promise.all(Array.from({ length: 500 }, (_, k) => openIdle(port, (i + k) % 2 === 1)));
  }
  // Meanwhile and now, real clients get through on new connections.
  for (let i = 0; i < 5; i++) {
    const r = await upload(server, body, { serviceName: svc }, { connection: 'close' });
    assert.equal(r.status, 200, r.text);
    await openIdle(port, true); // and the flood goes on
  }
  const closed = sockets.filter((s) => s.destroyed || s.readyState === 'closed').length;
  t.diagnostic(`${sockets.length} hostile connections opened, ${closed} closed by kiln`);
  assert.ok(closed >= sockets.length - 4096, `kiln keeps at most 4096: ${closed} of ${sockets.length} closed`);
  const h = await get(server.uiUrl, '/healthz');
  assert.equal(h.status, 200);
  assert.match(server.stderr(), /msg="http connection limit reached; closing the oldest idle connections" listener=upload/);
  const top = await get(server.uiUrl, '/api/top', { service: svc, type: 'cpu:nanoseconds', from: 'now-1h' });
  assert.equal(top.status, 200);
  assert.ok(top.json.total > 0);
  for (const s of sockets) s.destroy();
  sockets.length = 0;
});

test('a client that stops reading a large answer does not stall the others', { timeout: 60000 }, async () => {
  server ??= await startServer();
  const body = fs.readFileSync(path.join(TESTDATA, 'pprof', 'go-cpu-fib.pb.gz'));
  const svc = uniqueName('noread');
  const r = await upload(server, body, { serviceName: svc });
  assert.equal(r.status, 200, r.text);
  // Several requests for the same answer pipelined, never read: kiln's
  // output buffer fills and the socket stops draining.
  const port = Number(new URL(server.uiUrl).port);
  const s = net.connect(port, '127.0.0.1');
  s.on('error', () => {});
  sockets.push(s);
  s.pause();
  await new Promise((res) => s.on('connect', res));
  const q = `/api/flamegraph?service=${svc}&type=cpu:nanoseconds&from=now-1h`;
  for (let i = 0; i < 3000; i++) s.write(`GET ${q} HTTP/1.1\r\nHost: x\r\n\r\n`);
  await sleep(500);
  for (let i = 0; i < 20; i++) {
    const g = await get(server.uiUrl, '/api/top', { service: svc, type: 'cpu:nanoseconds', from: 'now-1h' }, { timeoutMs: 5000 });
    assert.equal(g.status, 200, tail(server.stderr()));
  }
  s.destroy();
});

// Opens a connection that announces a 32 MiB body and sends `bytes` of it.
async function partialUpload(port, bytes) {
  const s = net.connect(port, '127.0.0.1');
  sockets.push(s);
  let text = '';
  s.on('data', (d) => { text += d; });
  s.on('error', () => {});
  await new Promise((res) => s.on('connect', res));
  s.write(`POST /profiling/upload?serviceName=held HTTP/1.1\r\nHost: x\r\nContent-Length: ${32 << 20}\r\n\r\n`);
  const chunk = Buffer.alloc(1 << 20, 0x61);
  let closed = false;
  s.on('close', () => { closed = true; });
  for (let i = 0; i < bytes >> 20 && !closed; i++) {
    // kiln may answer 503 and close mid-body: then 'drain' never comes.
    if (!s.write(chunk)) await new Promise((res) => { s.once('drain', res); s.once('close', res); });
  }
  return { s, text: () => text };
}

test('limits.requestBodiesMiB bounds the bodies held at once: the body that crosses it gets 503 + Retry-After, space comes back', { timeout: 60000 }, async () => {
  const srv = await startServer({ config: 'limits: {samplesPerSecond: 1000000000, requestBodiesMiB: 64}\n' });
  try {
    const port = Number(new URL(srv.uploadUrl).port);
    const a = await partialUpload(port, 30 << 20);
    const b = await partialUpload(port, 30 << 20);
    await sleep(300);
    const c = await partialUpload(port, 8 << 20);
    const end = Date.now() + 5000;
    while (!c.text().includes('\r\n\r\n') && Date.now() < end) await sleep(50);
    assert.match(c.text(), /^HTTP\/1\.1 503 /, c.text().slice(0, 200));
    assert.match(c.text(), /\r\nRetry-After: 1\r\n/);
    assert.match(c.text(), /"error":"the server holds 64 MiB of request bodies already; retry shortly"/);
    assert.equal(a.text(), '', 'the bodies under the ceiling are not cut');
    // A closed connection gives its body's bytes back.
    a.s.destroy();
    b.s.destroy();
    await sleep(300);
    const body = fs.readFileSync(path.join(TESTDATA, 'pprof', 'go-cpu-fib.pb.gz'));
    const r = await upload(srv, body, { serviceName: uniqueName('after-budget') });
    assert.equal(r.status, 200, r.text);
  } finally {
    await srv.stop();
  }
});
