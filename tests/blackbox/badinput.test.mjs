// Bad input on the upload endpoint (API: Push: POST /profiling/upload, Push
// errors) and the query API (API: Conventions, Query):
// each case gets the expected status and a JSON {"error"} naming what is
// wrong; afterwards the server still answers /healthz and nothing of the
// refused request is stored (each case uses its own serviceName).
// The broken pprof messages are crafted by hand with lib/pb.mjs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { uniqueName } from './lib/env.mjs';
import { startServer, tail } from './lib/server.mjs';
import { upload, get, getJson, serviceNames, rawRequest, wideWindow } from './lib/http.mjs';
import { MiB, base, cases, manyTypes, manyRows } from './lib/badcases.mjs';

let server;
let before0; // service names before the bad cases
const controlSvc = uniqueName('bad-control');

before(async () => {
  server = await startServer();
  // Positive control: the base profile is valid, so each case fails only
  // for what it breaks.
  const r = await upload(server, base.bytes, { serviceName: controlSvc });
  assert.equal(r.status, 200, `control upload of the unbroken base profile: ${r.status} ${r.text}`);
  before0 = await serviceNames(server);
});
after(async () => { if (server) await server.stop(); });

function assertError(r, status, res, ctx) {
  assert.equal(r.status, status, `${ctx}: status ${r.status}, body ${r.text?.slice(0, 300)}`);
  assert.ok(r.json && typeof r.json.error === 'string' && r.json.error.length > 0,
    `${ctx}: body must be JSON {"error": "..."}, got ${JSON.stringify(r.text?.slice(0, 300))}`);
  for (const re of res) assert.match(r.json.error, re, `${ctx}: error message ${JSON.stringify(r.json.error)} should match ${re}`);
}

async function assertAliveAndNotStored(svc, ctx) {
  const h = await get(server.uiUrl, '/healthz');
  assert.equal(h.status, 200, `${ctx}: /healthz after the case → ${h.status}\n${tail(server.stderr())}`);
  if (svc) {
    const names = await serviceNames(server);
    assert.ok(!names.has(svc), `${ctx}: refused upload was stored (service ${svc} is listed)`);
  }
}

test(`at least 30 bad upload cases are defined (${cases.length})`, () => {
  assert.ok(cases.length >= 30);
});

for (const [name, body, status, res, opts = {}] of cases) {
  test(`upload: ${name} → ${status}`, async () => {
    const svc = uniqueName('bad');
    const params = opts.noName ? opts.params : { serviceName: svc, ...(opts.params ?? {}) };
    const r = await upload(server, body, params, opts.headers ?? {}, { method: opts.method, path: opts.path });
    assertError(r, status, res, name);
    await assertAliveAndNotStored(params.serviceName || null, name);
  });
}

test('upload: 33 MiB body with Content-Length → 413 before the body is sent', async () => {
  const svc = uniqueName('bad-cl');
  const total = 33 * MiB;
  // Send the headers and only the first MiB; the answer must come anyway.
  const r = await rawRequest(server.uploadUrl, {
    path: `/profiling/upload?serviceName=${svc}`,
    headers: { 'content-type': 'application/octet-stream', 'content-length': String(total) },
    chunks: [Buffer.alloc(MiB, 0x0a)],
    endAfterChunks: false,
    waitMs: 10000,
  });
  assertError(r, 413, [/32 MiB/], '33 MiB with Content-Length');
  await assertAliveAndNotStored(svc, '33 MiB with Content-Length');
});

test('upload: 33 MiB chunked body without Content-Length → 413', async () => {
  const svc = uniqueName('bad-chunked');
  async function* chunks() { for (let i = 0; i < 34; i++) yield Buffer.alloc(MiB, 0x0a); }
  const r = await rawRequest(server.uploadUrl, {
    path: `/profiling/upload?serviceName=${svc}`,
    headers: { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' },
    chunks: chunks(),
    waitMs: 30000,
  });
  assertError(r, 413, [/32 MiB/], '33 MiB chunked');
  await assertAliveAndNotStored(svc, '33 MiB chunked');
});

test('limits are inclusive: 64 sample types and 10,000 rows are accepted', async () => {
  const s64 = uniqueName('ok-64types');
  const r64 = await upload(server, manyTypes(64), { serviceName: s64 });
  assert.equal(r64.status, 200, `64 sample types: ${r64.text}`);
  assert.deepEqual(r64.json, { profiles: 64, samples: 64 });
  const fg = await getJson(server.uiUrl, '/api/flamegraph', { service: s64, type: 't63:count', ...wideWindow() });
  assert.equal(fg.total, 64, 't63:count total');
  const s10k = uniqueName('ok-10krows');
  const r10k = await upload(server, manyRows(10000), { serviceName: s10k });
  assert.equal(r10k.status, 200, `10,000 rows: ${r10k.text}`);
  assert.deepEqual(r10k.json, { profiles: 1, samples: 10000 });
  const fg2 = await getJson(server.uiUrl, '/api/flamegraph', { service: s10k, type: 'samples:count', ...wideWindow() });
  assert.equal(fg2.total, 10000, '10,000 rows total');
});

test('nothing of the refused uploads was stored', async () => {
  const now = await serviceNames(server);
  const extra = [...now].filter((n) => !before0.has(n) && !/^ok-/.test(n));
  assert.deepEqual(extra, [], 'services that appeared during the bad-input cases');
});

// --- query API: unknown parameters and bad values → 400 {"error"} ---
// Against an existing service, so only the broken parameter can be the reason.
const Q = { service: controlSvc, type: 'cpu:nanoseconds' };
const queryCases = [
  ['/api/flamegraph', { type: 'cpu:nanoseconds' }, 400, 'missing service'],
  ['/api/flamegraph', { service: controlSvc }, 400, 'missing type'],
  ['/api/flamegraph', { service: controlSvc, type: 'cpu' }, 400, 'type without unit'],
  ['/api/flamegraph', { ...Q, from: 'abc' }, 400, 'bad from'],
  ['/api/flamegraph', { ...Q, until: 'soon' }, 400, 'bad until'],
  ['/api/flamegraph', { ...Q, from: 2000, until: 1000 }, 400, 'from after until'],
  ['/api/flamegraph', { ...Q, bogus: '1' }, 400, 'unknown parameter'],
  ['/api/top', { ...Q, limit: 'abc' }, 400, 'bad limit'],
  ['/api/top', { ...Q, limit: '-5' }, 400, 'negative limit'],
  ['/api/timeline', { ...Q, step: 'abc' }, 400, 'bad step'],
  ['/api/timeline', { ...Q, step: '-10' }, 400, 'negative step'],
  ['/api/pprof', { service: controlSvc }, 400, 'pprof without type'],
  ['/api/services', { from: 'yesterday-ish' }, 400, 'services bad from'],
  ['/api/services', { bogus: '1' }, 400, 'services unknown parameter'],
  ['/api/types', {}, 400, 'types without service'],
  ['/api/no-such-route', {}, 404, 'unknown route'],
];
for (const [route, params, status, what] of queryCases) {
  test(`query: ${route} ${what} → ${status}`, async () => {
    const r = await get(server.uiUrl, route, params);
    assertError(r, status, [/./], `${route} ${JSON.stringify(params)}`);
    const h = await get(server.uiUrl, '/healthz');
    assert.equal(h.status, 200, '/healthz');
  });
}

test('after all bad input the server is still the same process and exits 0 on SIGTERM', async () => {
  assert.equal(server.exitInfo(), null, `kiln exited during the bad-input cases:\n${tail(server.stderr())}`);
  const e = await server.stop();
  assert.deepEqual(e, { code: 0, signal: null }, `exit after SIGTERM; stderr:\n${tail(server.stderr())}`);
});
