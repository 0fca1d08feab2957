// Pyroscope's push (API: Push: POST /ingest (Pyroscope)), as the Node SDK 0.6
// sends it: POST /ingest?name=APP{tags}&from=&until=&format=pprof with a
// pprof body, gzipped or not, to a real kiln on the upload and UI listeners.
// Oracle: `go tool pprof -raw` of the same files (lib/pprof.mjs); the stored
// time range, the service (the application, or a service_name label), the
// series labels and the refusals with Pyroscope's {"code","message"} body.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import zlib from 'node:zlib';
import path from 'node:path';
import { TESTDATA, uniqueName, nowS, mkTemp } from './lib/env.mjs';
import { startServer, tail } from './lib/server.mjs';
import { upload, getJson, get, services, wideWindow } from './lib/http.mjs';
import { oracleForFile } from './lib/pprof.mjs';
import { checkQueryAgainst } from './lib/check.mjs';
import { createKey } from './lib/s6.mjs';

const FILES = ['go-cpu-fib.pb.gz', 'python-pyspy-not-gzipped.pb'];
const body = (f) => fs.readFileSync(path.join(TESTDATA, 'pprof', f));
const oracles = new Map();
let server;

before(async () => {
  for (const f of FILES) oracles.set(f, await oracleForFile(path.join(TESTDATA, 'pprof', f)));
  server = await startServer();
});
after(async () => {
  if (server) await server.stop();
});

// POST base + route with params (URLSearchParams encodes the name's braces and quotes).
async function ingest(base, params, data, headers = {}, route = '/ingest') {
  const q = new URLSearchParams(params).toString();
  const res = await fetch(`${base}${route}${q ? `?${q}` : ''}`, {
    method: 'POST', body: data, headers, signal: AbortSignal.timeout(60000),
  });
  const text = Buffer.from(await res.arrayBuffer()).toString('utf8');
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, text, json, ctype: res.headers.get('content-type') };
}

const UNITS = [['s', ''], ['ms', '000'], ['µs', '000000'], ['ns', '000000000']];

for (const f of FILES) {
  for (const [unit, zeros] of UNITS) {
    test(`${f}, from/until in ${unit}: 200 with an empty body; every type equals go tool pprof; stored at [from, until]`, async () => {
      const svc = uniqueName(`pyro-${unit === 'µs' ? 'us' : unit}`);
      const t = nowS() - 600;
      const r = await ingest(server.uploadUrl, {
        name: `${svc}{env=prod,region="eu-1"}`, from: `${t}${zeros}`, until: `${t + 10}${zeros}`,
        format: 'pprof', spyName: 'nodespy', sampleRate: '100',
      }, body(f));
      assert.equal(r.status, 200, `${r.text}\n${tail(server.stderr())}`);
      assert.equal(r.text, '', 'Pyroscope clients want an empty 200 body');
      for (const o of oracles.get(f).types) {
        await checkQueryAgainst(server, svc, o, { from: t - 1, until: t + 12 }, `${f} ${unit}`);
        const before_ = await get(server.uiUrl, '/api/flamegraph', { service: svc, type: o.typeName, from: t - 3600, until: t - 1800 });
        assert.equal(before_.json?.total ?? 0, 0, `${f} ${unit}: nothing stored an hour before from: ${before_.text.slice(0, 200)}`);
      }
      const list = await services(server);
      const entry = list.find((s) => s.name === svc);
      assert.ok(entry, `/api/services lacks ${svc}`);
      assert.deepEqual([...entry.types].sort(), oracles.get(f).types.map((o) => o.typeName).sort());
    });
  }
}

test('the name\'s labels filter as label.K=V; service_name names the service; __ labels are dropped; both listeners and both paths', async () => {
  const f = 'go-cpu-fib.pb.gz';
  const o = oracles.get(f).types.find((x) => x.typeName === 'cpu:nanoseconds') ?? oracles.get(f).types[0];
  const app = uniqueName('pyro-app');
  const real = uniqueName('pyro-real');
  const win = wideWindow();
  const pushes = [
    [server.uploadUrl, '/ingest', 'prod'],
    [server.uploadUrl, '/pyroscope/ingest', 'prod'],
    [server.uiUrl, '/ingest', 'dev'],
    [server.uiUrl, '/pyroscope/ingest', 'prod'],
  ];
  for (const [base, route, env] of pushes) {
    const r = await ingest(base, { name: `${app}.cpu{service_name=${real},env=${env},__session_id__=abc123}` }, body(f), {}, route);
    assert.equal(r.status, 200, `${base}${route}: ${r.text}`);
    assert.equal(r.text, '');
  }
  const names = (await services(server)).map((s) => s.name);
  assert.ok(names.includes(real), `service_name label should name the service: ${names.join(',')}`);
  assert.ok(!names.some((n) => n.startsWith(app)), `the application must not be a service when service_name is given: ${names.join(',')}`);
  const all = await getJson(server.uiUrl, '/api/flamegraph', { service: real, type: o.typeName, ...win });
  assert.equal(all.total, Number(o.total) * 4, 'four pushes');
  const prod = await getJson(server.uiUrl, '/api/flamegraph', { service: real, type: o.typeName, 'label.env': 'prod', ...win });
  assert.equal(prod.total, Number(o.total) * 3, 'label.env=prod: three pushes');
  const dev = await getJson(server.uiUrl, '/api/flamegraph', { service: real, type: o.typeName, 'label.env': 'dev', ...win });
  assert.equal(dev.total, Number(o.total), 'label.env=dev: the UI listener\'s push');
  const labels = await getJson(server.uiUrl, '/api/labels', { service: real, type: o.typeName, ...win });
  const text = JSON.stringify(labels);
  assert.ok(text.includes('"env"') && text.includes('"prod"'), `env label listed: ${text.slice(0, 300)}`);
  assert.ok(!text.includes('__session_id__') && !text.includes('service_name'), `__ labels and service_name are not series labels: ${text.slice(0, 300)}`);
});

// API: Profile names: a pprof body without __name__ is named from its sample
// types as Pyroscope's /ingest names it (its default sample_type_config:
// samples → cpu; a type named wall wins); the SAMPLE:UNIT ids stay when
// unambiguous; a __name__ label given wins.
test('a pprof body without __name__ gets Pyroscope\'s profile name from its sample types; a given __name__ wins', async () => {
  const win = wideWindow();
  const cases = [
    ['go-cpu-fib.pb.gz', 'process_cpu'], // samples/count + cpu/nanoseconds
    ['python-pyspy-not-gzipped.pb', 'process_cpu'], // samples/count
    ['nodejs-wall.pb.gz', 'wall'], // samples/count + wall/microseconds
    ['go-heap-delta.pb.gz', 'memory'], // alloc_* / inuse_*
  ];
  for (const [f, name] of cases) {
    const o = await oracleForFile(path.join(TESTDATA, 'pprof', f));
    for (const given of [undefined, 'custom']) {
      const svc = uniqueName('pyro-named');
      const r = await ingest(server.uiUrl, { name: given ? `${svc}{__name__=${given}}` : svc, format: 'pprof' }, body(f));
      assert.equal(r.status, 200, `${f}: ${r.text}`);
      const want = given ?? name;
      assert.deepEqual((await getJson(server.uiUrl, '/api/types', { service: svc, ...win })).types,
        o.types.map((x) => x.typeName).sort(), `${f}: SAMPLE:UNIT ids`);
      for (const x of o.types) {
        await checkQueryAgainst(server, svc, { ...x, typeName: `${want}:${x.typeName}` }, win, `${f} named ${want}`);
        const other = await getJson(server.uiUrl, '/api/flamegraph', { service: svc, type: `frobs:${x.typeName}`, ...win });
        assert.equal(other.total, 0, `${f}: only the name ${want}`);
      }
    }
  }
});

test('bad input on both listeners: exact status and Pyroscope body, nothing stored', async () => {
  const good = body('go-cpu-fib.pb.gz');
  const truncated = body('python-pyspy-not-gzipped.pb').subarray(0, 200);
  // The decoder's own message for the truncated body: what /profiling/upload says of it.
  const ref = await upload(server, truncated, { serviceName: uniqueName('pyro-ref') });
  assert.equal(ref.status, 400, ref.text);
  const big = Buffer.alloc(33 << 20, 1);
  const bomb = zlib.gzipSync(Buffer.alloc(40 << 20)); // ~40 KiB that inflate to 40 MiB
  const tried = [];
  for (const base of [server.uploadUrl, server.uiUrl]) {
    const svc = () => { const s = uniqueName('pyro-bad'); tried.push(s); return s; };
    const cases = [
      ['missing name', {}, good, {}, 400, 'invalid_argument', 'missing name: give name=APP{k=v,...} in the query string'],
      ['empty name', { name: '' }, good, {}, 400, 'invalid_argument', 'missing name: give name=APP{k=v,...} in the query string'],
      ['name without =', { name: 'x{k}', _s: svc() }, good, {}, 400, 'invalid_argument', "name: expected '=' at byte 3"],
      ['name app{k=', { name: 'app{k=' }, good, {}, 400, 'invalid_argument', 'name: expected a label value at byte 6'],
      ['unbalanced braces', { name: `${svc()}{k=v` }, good, {}, 400, 'invalid_argument', null],
      ['format=trie', { name: svc(), format: 'trie' }, good, {}, 415, 'unimplemented',
        "format=trie is not supported: Kiln's /ingest takes pprof and folded text (format=pprof, groups or lines)"],
      ['format=jfr with a pprof body', { name: svc(), format: 'jfr' }, good, {}, 400, 'invalid_argument',
        "chunk 0 at offset 0: not a JFR chunk: magic 0a 04 08 01, expected 'FLR\\0'"],
      ['multipart without parts', { name: svc() }, good, { 'content-type': 'multipart/form-data; boundary=x' }, 400, 'invalid_argument',
        'multipart: no delimiter line --x in the body'],
      ['truncated pprof', { name: svc(), format: 'pprof' }, truncated, {}, 400, 'invalid_argument', ref.json.error],
      ['bad from', { name: svc(), from: '12x' }, good, {}, 400, 'invalid_argument',
        'from=12x is not a time: unix seconds (13 digits: ms, 16: µs, 19: ns) or now-DURATION'],
      ['gzip bomb', { name: svc(), format: 'pprof' }, bomb, {}, 413, 'resource_exhausted', 'decompressed body exceeds the 32 MiB limit'],
      ['gzip bomb, no format', { name: svc() }, bomb, {}, 413, 'resource_exhausted', 'decompressed body exceeds the 32 MiB limit'],
      ['multipart/mixed', { name: svc() }, good, { 'content-type': 'multipart/mixed; boundary=x' }, 415, 'unimplemented',
        'multipart/mixed is not supported: send multipart/form-data'],
      ['33 MiB', { name: svc(), format: 'pprof' }, big, {}, 413, 'resource_exhausted', 'request body is 34603008 bytes; the limit is 32 MiB'],
    ];
    for (const [what, params, data, headers, status, code, message] of cases) {
      const q = { ...params };
      delete q._s;
      const r = await ingest(base, q, data, headers);
      const ctx = `${base} ${what}: ${r.status} ${r.text.slice(0, 300)}`;
      assert.equal(r.status, status, ctx);
      assert.equal(r.ctype, 'application/json', ctx);
      assert.deepEqual(Object.keys(r.json ?? {}), ['code', 'message'], ctx);
      assert.equal(r.json.code, code, ctx);
      if (message) assert.equal(r.json.message, message, ctx);
      else assert.match(r.json.message, /^name: missing '}' at byte \d+$/, ctx);
    }
  }
  const names = new Set((await services(server)).map((s) => s.name));
  for (const s of tried) assert.ok(!names.has(s), `refused push stored as ${s}`);
});

test('/profiling/upload keeps its parameters and JSON answer; GET /ingest is 405', async () => {
  const svc = uniqueName('pyro-upload');
  const r = await upload(server, body('go-cpu-fib.pb.gz'), { serviceName: svc });
  assert.equal(r.status, 200, r.text);
  assert.equal(typeof r.json.profiles, 'number');
  const g = await get(server.uploadUrl, '/ingest', { name: svc });
  assert.equal(g.status, 405, g.text);
  assert.equal(g.json.code, 'unimplemented');
  // The UI listener takes 32 MiB for a push only; other bodies keep the 64 KiB of a sign-in form.
  const login = await fetch(`${server.uiUrl}/login`, { method: 'POST', body: Buffer.alloc(65 << 10, 0x61) });
  assert.equal(login.status, 413);
  assert.deepEqual(await login.json(), { error: 'request body over 64 KiB: only POST /ingest takes a large body here' });
});

test('with auth required: Bearer and Basic ingest keys → 200; no key 401, query key 403, on both listeners', async () => {
  const dataDir = mkTemp('pyro-auth');
  const ingestKey = await createKey(dataDir, 'pyro', 'pyro-ingest', 'ingest');
  const queryKey = await createKey(dataDir, 'pyro', 'pyro-query', 'query');
  const s = await startServer({ dataDir, extraArgs: ['--auth', 'required'] });
  try {
    const f = 'go-cpu-fib.pb.gz';
    const o = oracles.get(f).types[0];
    const basic = (user, key) => `Basic ${Buffer.from(`${user}:${key}`).toString('base64')}`;
    const stored = [];
    for (const base of [s.uploadUrl, s.uiUrl]) {
      for (const [what, headers] of [
        ['Bearer', { authorization: `Bearer ${ingestKey}` }],
        ['Basic (Pyroscope SDK user)', { authorization: basic('12345', ingestKey) }],
        ['Basic (empty user)', { authorization: basic('', ingestKey) }],
        ['x-kiln-key', { 'x-kiln-key': ingestKey }],
      ]) {
        const svc = uniqueName('pyro-auth-ok');
        const r = await ingest(base, { name: svc, format: 'pprof' }, body(f), headers);
        assert.equal(r.status, 200, `${base} ${what}: ${r.text}\n${tail(s.stderr(), 8)}`);
        assert.equal(r.text, '');
        stored.push(svc);
      }
      const refused = uniqueName('pyro-auth-refused');
      for (const [what, headers, status, code, re] of [
        ['no key', {}, 401, 'unauthenticated', /HTTP Basic with the key as the password/],
        ['unknown Basic key', { authorization: basic('u', 'kiln_NotAKey000000000000000000000000000000000') }, 401, 'unauthenticated', /unknown or revoked/],
        ['query key as Bearer', { authorization: `Bearer ${queryKey}` }, 403, 'permission_denied', /scope ingest/],
        ['query key as Basic', { authorization: basic('u', queryKey) }, 403, 'permission_denied', /scope ingest/],
      ]) {
        const r = await ingest(base, { name: refused }, body(f), headers);
        assert.equal(r.status, status, `${base} ${what}: ${r.text}`);
        assert.equal(r.json?.code, code, `${base} ${what}: ${r.text}`);
        assert.match(r.json.message, re, `${base} ${what}`);
      }
    }
    const res = await fetch(`${s.uiUrl}/api/services?${new URLSearchParams(wideWindow())}`, { headers: { 'x-kiln-key': queryKey } });
    const list = (await res.json()).services.map((x) => x.name);
    for (const svc of stored) assert.ok(list.includes(svc), `${svc} stored under the key's project`);
    assert.ok(!list.some((n) => n.startsWith('pyro-auth-refused')), 'refused pushes stored');
    const fg = await fetch(`${s.uiUrl}/api/flamegraph?${new URLSearchParams({ service: stored[1], type: o.typeName, ...wideWindow() })}`,
      { headers: { 'x-kiln-key': queryKey } });
    assert.equal((await fg.json()).total, Number(o.total), 'the Basic push reads back exactly');
  } finally {
    await s.stop();
  }
});
