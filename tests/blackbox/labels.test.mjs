// GET /api/labels (the UI's label-filter suggestions) and the UI screen URLs.
// Series labels are what the uploads named; sample labels come from
// `go tool pprof -raw` of the uploaded file (the oracle), never from Kiln.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { TESTDATA, uniqueName } from './lib/env.mjs';
import { upload, get, getJson, wideWindow } from './lib/http.mjs';
import { pprofRaw } from './lib/pprof.mjs';
import { startServer } from './lib/server.mjs';

const FILE = path.join(TESTDATA, 'pprof', 'go-cpu-span-labels.pb.gz');
const LINK_KEYS = new Set(['span_id', 'trace_id', 'profile_id']);
let server;
let svc;
let raw;

before(async () => {
  server = await startServer();
  svc = uniqueName('labels');
  raw = await pprofRaw(FILE);
  const body = fs.readFileSync(FILE);
  for (const pod of ['web-1', 'web-0']) {
    const up = await upload(server, body, { serviceName: svc, namespace: 'shop', pod, 'label.env': 'prod' });
    assert.equal(up.status, 200, up.text);
  }
});
after(async () => { if (server) await server.stop(); });

// Expected sample labels of type index ti: every string label of a sample
// whose value of that type is not 0 (zero values are not stored).
function sampleLabels(ti) {
  const m = new Map();
  for (const s of raw.samples) {
    if (s.values[ti] === 0n) continue;
    for (const [k, v] of Object.entries(s.labels ?? {})) {
      if (LINK_KEYS.has(k)) continue;
      if (!m.has(k)) m.set(k, new Set());
      m.get(k).add(v);
    }
  }
  return m;
}

test('/api/labels lists the series labels of the uploads and the sample labels go tool pprof reads, sorted', async () => {
  const ti = raw.sampleTypes.findIndex((t) => t.type === 'cpu');
  assert.ok(ti >= 0, 'fixture has a cpu sample type');
  const type = `cpu:${raw.sampleTypes[ti].unit}`;
  const j = await getJson(server.uiUrl, '/api/labels', { service: svc, type, ...wideWindow() });
  const want = [
    { name: 'env', source: 'series', values: ['prod'] },
    { name: 'k8s.namespace.name', source: 'series', values: ['shop'] },
    { name: 'k8s.pod.name', source: 'series', values: ['web-0', 'web-1'] },
  ];
  const fromFile = sampleLabels(ti);
  assert.ok(fromFile.size > 0, 'the fixture has sample labels');
  for (const [k, vs] of fromFile) want.push({ name: k, source: 'sample', values: [...vs].sort() });
  want.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  assert.deepEqual(j, { labels: want });
});

test('/api/labels applies the label filters and answers an unknown service with no labels', async () => {
  const type = 'cpu:nanoseconds';
  const j = await getJson(server.uiUrl, '/api/labels',
    { service: svc, type, 'label.k8s.pod.name': 'web-0', ...wideWindow() });
  const pods = j.labels.find((l) => l.name === 'k8s.pod.name');
  assert.deepEqual(pods, { name: 'k8s.pod.name', source: 'series', values: ['web-0'] });
  const none = await getJson(server.uiUrl, '/api/labels', { service: uniqueName('nobody'), type, ...wideWindow() });
  assert.deepEqual(none, { labels: [] });
});

test('/api/labels needs service and type (400 with the message)', async () => {
  const r1 = await get(server.uiUrl, '/api/labels', { type: 'cpu:nanoseconds' });
  assert.equal(r1.status, 400);
  assert.deepEqual(r1.json, { error: 'missing service=NAME (see /api/services)' });
  const r2 = await get(server.uiUrl, '/api/labels', { service: svc });
  assert.equal(r2.status, 400);
  assert.deepEqual(r2.json, { error: 'missing type=SAMPLE_TYPE:UNIT, e.g. type=cpu:nanoseconds (see /api/types)' });
});

test('the UI screens /profiles, /span, /usage, /targets serve the single page; other paths 404', async () => {
  const index = await get(server.uiUrl, '/');
  assert.equal(index.status, 200);
  assert.match(index.headers.get('content-type'), /^text\/html/);
  for (const p of ['/profiles', '/span', '/usage', '/targets']) {
    const r = await get(server.uiUrl, p, p === '/span' ? { trace_id: 'x', span_id: 'y' } : {});
    assert.equal(r.status, 200, p);
    assert.equal(r.text, index.text, `${p} serves index.html`);
  }
  const r = await get(server.uiUrl, '/spans');
  assert.equal(r.status, 404);
  assert.deepEqual(r.json, { error: 'no route /spans; the API is documented in docs/API.md' });
});
