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
    sockets.push(s);
  });
}

test('10,000 idle and slowloris connections: uploads and queries are still answered; kiln evicts the oldest idle ones', async (t) => {
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

test('a client that stops reading a large answer does not stall the others', async () => {
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
