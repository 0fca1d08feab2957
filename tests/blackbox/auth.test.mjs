// Ingestion keys on every listener (OPS: Roles and listeners, Projects and
// keys; API: Push errors): with `--auth required`, each of upload,
// OTLP/HTTP, OTLP/gRPC and the UI/API answers no key, an unknown key, a revoked key, a key of the wrong scope and a
// valid key (x-kiln-key and Authorization: Bearer) with the right code and
// a message a person can act on; keys created or revoked with the CLI while
// the server runs take effect within a second; the UI's login form sets an
// HttpOnly cookie that the API accepts. Cases the server does not support
// yet are node:test todos (lib/s6.mjs probes).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkTemp, uniqueName } from './lib/env.mjs';
import { tail } from './lib/server.mjs';
import {
  todoUnless, stopAll, startTracked, createKey, revokeKey, listKeys, startS6, configYaml, apiAs, request, wide, brief, sleep, ALL4,
} from './lib/s6.mjs';
import { pushTo, queryAs } from './lib/s6-push.mjs';

const todo = await todoUnless('keys', 'auth');
const dataDir = mkTemp('auth');
const K = {};
let server;

before(async () => {
  if (todo) return;
  K.ingest = await createKey(dataDir, 'pa', 'pa-ingest', 'ingest');
  K.query = await createKey(dataDir, 'pa', 'pa-query', 'query');
  K.both = await createKey(dataDir, 'pa', 'pa-both', 'both');
  K.rev = await createKey(dataDir, 'pa', 'pa-revoked', 'both');
  K.otherRev = await createKey(dataDir, 'pa', 'pa-revoked-before', 'both');
  await revokeKey(dataDir, 'pa-revoked-before');
  server = await startS6({ dataDir, extraArgs: ['--auth', 'required'] });
});
after(stopAll);

const WRONG = 'kiln_ThisIsNotAKeyThatExists0000000000000000000';
const PUSH = ['upload', 'otlp_http', 'otlp_grpc'];
const ctxOf = (l, what, r) => `${l} ${what}: ${r.describe}${server ? `\n${tail(server.stderr(), 8)}` : ''}`;

function assert401(l, what, r) {
  assert.equal(r.status, 401, ctxOf(l, what, r));
  assert.match(r.message, /x-kiln-key/i, `${ctxOf(l, what, r)}\n401 message must name the x-kiln-key header`);
}
function assert403(l, what, r, scope) {
  assert.equal(r.status, 403, ctxOf(l, what, r));
  assert.match(r.message, new RegExp(scope, 'i'), `${ctxOf(l, what, r)}\n403 message must say the "${scope}" scope is needed`);
}

test('kiln keys create prints the key alone; list shows names, projects and scopes but never a key', { todo }, async () => {
  const r = await listKeys(dataDir);
  assert.equal(r.code, 0, r.stderr);
  const out = r.stdout.toString();
  for (const n of ['pa-ingest', 'pa-query', 'pa-both', 'pa-revoked-before']) assert.ok(out.includes(n), `kiln keys list lacks ${n}:\n${out}`);
  assert.ok(out.includes('pa'), `project named:\n${out}`);
  for (const k of Object.values(K)) assert.ok(!out.includes(k), `kiln keys list prints a secret key:\n${out}`);
  assert.ok(new Set(Object.values(K)).size === Object.keys(K).length, 'keys are distinct');
  for (const k of Object.values(K)) assert.ok(k.length >= 22, `a key of ≥ 128 random bits is ≥ 22 base64 characters: ${k}`);
  // A second key of the same name is refused.
  const dup = await createKey(dataDir, 'pa', 'pa-ingest', 'ingest').then(() => null, (e) => e);
  assert.ok(dup, 'creating a key whose name exists must fail');
});

for (const l of ALL4) {
  const isUi = l === 'ui';
  const needed = isUi ? 'query' : 'ingest';
  const wrongScope = isUi ? 'ingest' : 'query';
  test(`${l}: no key → 401 naming x-kiln-key`, { todo }, async () => {
    assert401(l, 'no key', await pushTo(server, l, uniqueName('auth-none')));
  });
  test(`${l}: unknown key (x-kiln-key and Bearer) → 401`, { todo }, async () => {
    assert401(l, 'unknown x-kiln-key', await pushTo(server, l, uniqueName('auth-wrong'), { key: WRONG }));
    assert401(l, 'unknown Bearer', await pushTo(server, l, uniqueName('auth-wrong'), { bearer: WRONG }));
    assert401(l, 'empty x-kiln-key', await pushTo(server, l, uniqueName('auth-wrong'), { key: '' }));
  });
  test(`${l}: a key revoked before start → 401`, { todo }, async () => {
    assert401(l, 'revoked key', await pushTo(server, l, uniqueName('auth-rev'), { key: K.otherRev }));
  });
  test(`${l}: ${wrongScope}-only key → 403 saying "${needed}" is needed`, { todo }, async () => {
    assert403(l, `${wrongScope} key`, await pushTo(server, l, uniqueName('auth-scope'), { key: K[wrongScope] }), needed);
    assert403(l, `${wrongScope} key as Bearer`, await pushTo(server, l, uniqueName('auth-scope'), { bearer: K[wrongScope] }), needed);
  });
  test(`${l}: valid ${needed} and both keys, as x-kiln-key and as Bearer → 200`, { todo }, async () => {
    for (const [what, auth] of [[`${needed} x-kiln-key`, { key: K[needed] }], [`${needed} Bearer`, { bearer: K[needed] }], ['both x-kiln-key', { key: K.both }], ['both Bearer', { bearer: K.both }]]) {
      const svc = uniqueName(`auth-ok-${l}`);
      const r = await pushTo(server, l, svc, auth);
      assert.equal(r.status, 200, ctxOf(l, what, r));
      if (!isUi) {
        // Stored under the key's project: the project's query key sees it.
        const s = await queryAs(server, { key: K.query });
        assert.equal(s.status, 200, brief(s.raw));
        assert.ok(s.raw.json.services.some((x) => x.name === svc), `${l} ${what}: ${svc} not in project pa's /api/services: ${s.raw.text.slice(0, 400)}`);
      }
    }
  });
}

test('a refused push stores nothing', { todo }, async () => {
  const svc = uniqueName('auth-refused');
  for (const l of PUSH) {
    for (const auth of [{}, { key: WRONG }, { key: K.query }]) {
      const r = await pushTo(server, l, svc, auth);
      assert.ok(r.status === 401 || r.status === 403, ctxOf(l, JSON.stringify(auth), r));
    }
  }
  const s = await queryAs(server, { key: K.query });
  assert.equal(s.status, 200, s.describe);
  assert.ok(!s.raw.json.services.some((x) => x.name === svc), `refused pushes were stored: ${s.raw.text.slice(0, 400)}`);
});

// Polls fn until ok(result) or deadline; returns {elapsed, r}.
async function until(fn, ok, ms) {
  const t0 = Date.now();
  let r;
  for (;;) {
    r = await fn();
    if (ok(r) || Date.now() - t0 > ms) return { elapsed: Date.now() - t0, r };
    await sleep(50);
  }
}

test('a key created while the server runs is accepted within 1 s on every listener', { todo }, async () => {
  const name = uniqueName('late').slice(0, 60);
  const key = await createKey(dataDir, 'pa', name, 'both');
  const t0 = Date.now();
  const first = await until(() => pushTo(server, 'upload', uniqueName('auth-late'), { key }), (r) => r.status === 200, 3000);
  const took = Date.now() - t0;
  assert.equal(first.r.status, 200, `new key still refused after ${took} ms: ${first.r.describe}`);
  assert.ok(took <= 1300, `new key accepted only after ${took} ms (OPS: Projects and keys: within 1 s)`);
  for (const l of ALL4) {
    const r = await pushTo(server, l, uniqueName('auth-late'), { key });
    assert.equal(r.status, 200, ctxOf(l, 'key created while running', r));
  }
});

test('a key revoked while the server runs is refused within 1 s on every listener', { todo }, async () => {
  for (const l of ALL4) {
    const r = await pushTo(server, l, uniqueName('auth-prerev'), { key: K.rev });
    assert.equal(r.status, 200, ctxOf(l, 'before revocation', r));
  }
  await revokeKey(dataDir, 'pa-revoked');
  const t0 = Date.now();
  const res = await until(() => pushTo(server, 'upload', uniqueName('auth-rev'), { key: K.rev }), (r) => r.status === 401, 3000);
  const took = Date.now() - t0;
  assert.equal(res.r.status, 401, `revoked key still accepted after ${took} ms: ${res.r.describe}`);
  assert.ok(took <= 1300, `revoked key refused only after ${took} ms (OPS: Projects and keys: within 1 s)`);
  for (const l of ALL4) assert401(l, 'key revoked while running', await pushTo(server, l, uniqueName('auth-rev'), { key: K.rev }));
  const ls = await listKeys(dataDir);
  assert.match(ls.stdout.toString(), /pa-revoked/, 'a revoked key is still listed (as revoked)');
  // Revoking an unknown name fails.
  const bad = await revokeKey(dataDir, 'no-such-key-name').then(() => null, (e) => e);
  assert.ok(bad, 'kiln keys revoke of an unknown name must fail');
});

test('UI: /healthz and GET /login are open; /api/* and /metrics need a query key', { todo }, async () => {
  const h = await apiAs(server, '/healthz', {});
  assert.equal(h.status, 200, `/healthz without key: ${brief(h)}`);
  const lg = await apiAs(server, '/login', {});
  assert.equal(lg.status, 200, `GET /login: ${brief(lg)}`);
  assert.match(lg.text, /<form/i, 'GET /login is a form');
  assert.match(lg.text, /name=["']?key["']?/i, 'the login form has a field "key"');
  for (const route of ['/api/services', '/api/types', '/api/usage', '/metrics']) {
    const params = route === '/api/types' ? { service: 'x' } : route === '/metrics' ? {} : wide();
    const r = await apiAs(server, route, params);
    assert.equal(r.status, 401, `${route} without key: ${brief(r)}`);
    const i = await apiAs(server, route, params, { key: K.ingest });
    assert.equal(i.status, 403, `${route} with an ingest-only key: ${brief(i)}`);
    const q = await apiAs(server, route, params, { key: K.query });
    assert.equal(q.status, 200, `${route} with a query key: ${brief(q)}`);
  }
});

test('UI: POST /login with a query key → 303 to / with an HttpOnly SameSite=Strict kiln_key cookie the API accepts', { todo }, async () => {
  const r = await request(`${server.urls.ui}/login`, {
    method: 'POST', body: new URLSearchParams({ key: K.query }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  assert.equal(r.status, 303, `POST /login: ${brief(r)}`);
  assert.equal(new URL(r.headers.location, server.urls.ui).pathname, '/', `Location: ${r.headers.location}`);
  const cookies = [].concat(r.headers['set-cookie'] ?? []);
  const c = cookies.find((x) => /^kiln_key=/.test(x));
  assert.ok(c, `Set-Cookie kiln_key missing: ${JSON.stringify(cookies)}`);
  assert.match(c, /;\s*HttpOnly/i, c);
  assert.match(c, /;\s*SameSite=Strict/i, c);
  assert.match(c, /;\s*Path=\//i, c);
  const pair = c.split(';')[0];
  const api = await apiAs(server, '/api/services', wide(), { cookie: pair });
  assert.equal(api.status, 200, `/api/services with the login cookie: ${brief(api)}`);
  const m = await apiAs(server, '/metrics', {}, { cookie: pair });
  assert.equal(m.status, 200, `/metrics with the login cookie: ${brief(m)}`);
  // A made-up cookie is refused.
  const bad = await apiAs(server, '/api/services', wide(), { cookie: `kiln_key=${WRONG}` });
  assert.equal(bad.status, 401, `/api/services with a bad cookie: ${brief(bad)}`);
});

test('UI: POST /login with a wrong or ingest-only key sets no cookie', { todo }, async () => {
  for (const [what, key] of [['unknown key', WRONG], ['ingest-only key', K.ingest], ['empty', '']]) {
    const r = await request(`${server.urls.ui}/login`, {
      method: 'POST', body: new URLSearchParams({ key }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    const cookies = [].concat(r.headers['set-cookie'] ?? []).filter((x) => /^kiln_key=[^;]/.test(x));
    assert.equal(cookies.length, 0, `POST /login with ${what} set a cookie: ${brief(r)}`);
    assert.notEqual(r.status, 303, `POST /login with ${what} must not redirect as logged in: ${brief(r)}`);
  }
});

test('config auth per listener: upload required, the others open (project default)', { todo }, async () => {
  const dir = mkTemp('auth-cfg');
  const key = await createKey(dir, 'pc', 'pc-both', 'both');
  const s = await startS6({ dataDir: dir, config: configYaml({ listeners: { upload: { auth: 'required' } } }) });
  try {
    const svc = uniqueName('auth-cfg');
    assert401('upload', 'no key (auth: required in config)', await pushTo(s, 'upload', svc));
    const ok = await pushTo(s, 'upload', svc, { key });
    assert.equal(ok.status, 200, ok.describe);
    for (const l of ['otlp_http', 'otlp_grpc']) {
      const r = await pushTo(s, l, uniqueName('auth-cfg-open'));
      assert.equal(r.status, 200, `${l} without auth needs no key: ${r.describe}`);
    }
    const q = await queryAs(s, {});
    assert.equal(q.status, 200, `ui without auth: ${q.describe}`);
  } finally { await s.stop(); }
});
