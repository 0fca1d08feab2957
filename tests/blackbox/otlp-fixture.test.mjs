// The real eBPF-profiler request (testdata/otlp/ebpf-profiler-v1.10.pb and
// its OTLP/JSON twin), rebased to "now" (its samples are from March 2026,
// older than the 14-day window), sent over every transport Kiln offers —
// OTLP/HTTP identity, gzip, deflate, zstd, OTLP/JSON, OTLP/gRPC with gzip —
// each into a fresh server. Each must read back as computed in JS from the
// decoded request (lib/otlp-expect.mjs: service naming of API: Services and
// naming, per-type totals,
// samples:count → cpu:nanoseconds, frame kinds, unsymbolized native frames),
// and all transports must give identical /api/services, /api/flamegraph and
// /api/top JSON.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { getJson, wideWindow } from './lib/http.mjs';
import { checkQueryAgainst } from './lib/check.mjs';
import {
  loadFixture, startOtlpServer, sendPb, sendJson, grpcClient, grpcExport, hasZstdCli, encodeRequest, describe,
} from './lib/otlp.mjs';
import { expectRequest, expectSamples, flattenSamples } from './lib/otlp-expect.mjs';
import { assertAccepted, checkServerAgainst, snapshot, firstDiff } from './lib/otlp-check.mjs';

let fx;
let exp;
const snapshots = new Map();
const servers = [];

before(() => {
  fx = loadFixture(60);
  exp = expectRequest(fx.req);
});
after(async () => { await Promise.all(servers.map((s) => s.stop())); });

test('expectations of the fixture are what the testdata README describes', () => {
  // Independent of Kiln: checks the decoding and the naming rules (API: Services and naming) here.
  assert.equal(fx.req.resourceProfiles.length, 77, '77 per-process resources');
  assert.deepEqual([...exp.keys()].sort(), ['unknown_service', 'unknown_service:containerd', 'unknown_service:kwin_wayland', 'unknown_service:xdg-desktop-portal']);
  const us = exp.get('unknown_service');
  assert.ok(us.has('off_cpu:nanoseconds') && us.has('samples:count'));
  assert.equal(us.get('cpu:nanoseconds').total, us.get('samples:count').total * 50_000_000n, 'samples:count × period 50,000,000');
  assert.ok(exp.get('unknown_service:xdg-desktop-portal').get('off_cpu:nanoseconds').unsymbolized.has('libc.so.6'));
  const kinds = new Set();
  for (const [, m] of exp) for (const [, x] of m) for (const [, k] of x.kinds) for (const v of k) kinds.add(v);
  assert.deepEqual([...kinds].sort(), ['go', 'kernel', 'native']);
});

const variants = [
  ['OTLP/HTTP protobuf identity', (s) => sendPb(s, fx.pb)],
  ['OTLP/HTTP protobuf gzip', (s) => sendPb(s, fx.pb, 'gzip')],
  ['OTLP/HTTP protobuf deflate', (s) => sendPb(s, fx.pb, 'deflate')],
  ['OTLP/HTTP protobuf zstd', (s) => sendPb(s, fx.pb, 'zstd'), { skip: !hasZstdCli() && 'no zstd (neither node:zlib nor the zstd CLI)' }],
  ['OTLP/HTTP JSON identity', (s) => sendJson(s, fx.json)],
  ['OTLP/HTTP JSON gzip', (s) => sendJson(s, fx.json, 'gzip')],
  ['OTLP/gRPC gzip', async (s) => {
    const c = grpcClient(s, { channelOptions: { 'grpc.default_compression_algorithm': 2 } });
    try { return await grpcExport(c, fx.req); } finally { c.close(); }
  }],
];

for (const [name, send, topts] of variants) {
  test(`fixture over ${name}: accepted, reads back as decoded in JS`, topts ?? {}, async () => {
    const server = await startOtlpServer();
    servers.push(server);
    try {
      const r = await send(server);
      assertAccepted(r, name, server);
      await checkServerAgainst(server, exp, name, { exactServices: true });
      snapshots.set(name, await snapshot(server));
    } finally {
      await server.stop();
    }
  });
}

test('every transport gives identical /api/services, /api/flamegraph and /api/top JSON', () => {
  const names = [...snapshots.keys()];
  assert.ok(names.length >= 2, `need at least two transports that worked, have ${names}`);
  const ref = snapshots.get(names[0]);
  for (const n of names.slice(1)) {
    const d = firstDiff(ref, snapshots.get(n));
    assert.equal(d, null, `${n} differs from ${names[0]} at ${d}`);
  }
});

test('resource attributes are series labels and sample attributes are filterable (label.K=V)', async () => {
  const server = await startOtlpServer();
  servers.push(server);
  try {
    assertAccepted(await sendPb(server, fx.pb), 'identity', server);
    const flat = flattenSamples(fx.req);
    const win = wideWindow();
    // A resource of the shared "unknown_service" by its process.pid.
    const counts = new Map();
    for (const s of flat) if (s.service === 'unknown_service' && s.typeName === 'off_cpu:nanoseconds') counts.set(s.resAttrs['process.pid'], (counts.get(s.resAttrs['process.pid']) ?? 0) + 1);
    const pid = [...counts].sort((a, b) => b[1] - a[1])[0][0];
    const byPid = expectSamples(flat, (s) => s.resAttrs['process.pid'] === pid).get('unknown_service');
    for (const [, x] of byPid) await checkQueryAgainst(server, 'unknown_service', x, { ...win, 'label.process.pid': pid }, `label.process.pid=${pid}`);
    // Resource attribute of a named process.
    const path = 'label.process.executable.name';
    const kw = expectSamples(flat, (s) => s.resAttrs['process.executable.name'] === 'kwin_wayland').get('unknown_service:kwin_wayland');
    for (const [, x] of kw) await checkQueryAgainst(server, 'unknown_service:kwin_wayland', x, { ...win, [path]: 'kwin_wayland' }, path);
    // Sample attribute thread.name: the most frequent one of unknown_service.
    const tn = new Map();
    for (const s of flat) if (s.service === 'unknown_service') tn.set(s.sampleAttrs['thread.name'], (tn.get(s.sampleAttrs['thread.name']) ?? 0) + 1);
    const thread = [...tn].sort((a, b) => b[1] - a[1])[0][0];
    const byThread = expectSamples(flat, (s) => s.sampleAttrs['thread.name'] === thread).get('unknown_service');
    for (const [, x] of byThread) await checkQueryAgainst(server, 'unknown_service', x, { ...win, 'label.thread.name': thread }, `label.thread.name=${thread}`);
    // Nothing matches a made-up value.
    const none = await getJson(server.uiUrl, '/api/flamegraph', { service: 'unknown_service', type: 'off_cpu:nanoseconds', ...win, 'label.process.pid': '999999999' });
    assert.equal(none.total, 0, 'label.process.pid of no resource selects nothing');
  } finally {
    await server.stop();
  }
});

test('the same request sent twice is stored twice (window type sums), and an empty request succeeds', async () => {
  const server = await startOtlpServer();
  servers.push(server);
  try {
    for (let i = 0; i < 2; i++) assertAccepted(await sendPb(server, fx.pb, 'gzip'), `send #${i + 1}`, server);
    const win = wideWindow();
    for (const [svc, types] of exp) {
      for (const [t, x] of types) {
        const fg = await getJson(server.uiUrl, '/api/flamegraph', { service: svc, type: t, ...win });
        assert.equal(fg.total, Number(2n * x.total), `${svc} ${t}: two identical exports sum`);
      }
    }
    const empty = await sendPb(server, encodeRequest({}));
    assert.equal(empty.status, 200, `empty protobuf request: ${describe(empty)}`);
    assert.equal(empty.parseError, undefined, `empty request reply: ${empty.parseError}`);
    const emptyJson = await sendJson(server, '{}');
    assert.equal(emptyJson.status, 200, `empty JSON request: ${describe(emptyJson)}`);
    assert.ok(emptyJson.json && typeof emptyJson.json === 'object', `empty JSON reply must be a JSON object: ${emptyJson.text}`);
  } finally {
    await server.stop();
  }
});
