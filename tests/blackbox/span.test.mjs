// Span links (API: Span links, GET /api/span): OTLP samples linked to spans through
// link_index → link_table (trace_id, span_id), and pprof samples with a
// span_id label, are queryable by span. The expected flame graph of a span
// is computed in JS from the request we built (OTLP) or from go tool pprof
// -raw's labels (pprof).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { TESTDATA, uniqueName } from './lib/env.mjs';
import { upload, get, getJson } from './lib/http.mjs';
import { flameStats } from './lib/check.mjs';
import { oracle, pprofRaw } from './lib/pprof.mjs';
import { startOtlpServer, sendPb } from './lib/otlp.mjs';
import { startServer } from './lib/server.mjs';
import { buildRequest } from './lib/otlp-build.mjs';
import { expectRequest } from './lib/otlp-expect.mjs';
import { assertAccepted } from './lib/otlp-check.mjs';
import { readPprofFile, encodePprof } from './lib/otlp-pprof.mjs';

const SPAN_FILE = path.join(TESTDATA, 'pprof', 'go-cpu-span-labels.pb.gz');
const TRACE = 'aa000000000000000000000000000001';
const SPAN_A = 'bb00000000000001';
const SPAN_B = 'bb00000000000002';
const SPAN_NONE = 'bb000000000000ff';
let server;
let svc;
let req;

async function setup() {
  if (server) return;
  server = await startOtlpServer();
  svc = uniqueName('span-otlp');
  const A = { traceId: TRACE, spanId: SPAN_A };
  const B = { traceId: TRACE, spanId: SPAN_B };
  req = buildRequest({
    resources: [{
      attrs: { 'service.name': svc },
      profiles: [{
        type: ['cpu', 'nanoseconds'], period: 10_000_000,
        samples: [
          { stack: ['main.handleA', 'net/http.serve', 'main.main'], values: ['30000000'], link: A },
          { stack: ['runtime.mallocgc', 'main.handleA', 'net/http.serve', 'main.main'], values: ['10000000', '10000000'], link: A, timestamps: [-40, -35].map((s) => BigInt(Date.now() + s * 1000) * 1000000n) },
          { stack: ['main.handleB', 'net/http.serve', 'main.main'], values: ['70000000'], link: B },
          { stack: ['main.idle', 'main.main'], values: ['90000000'] },
        ],
      }],
    }],
  });
  // A span of the same trace that has no samples: in the link table only.
  req.dictionary.linkTable.push({ traceId: Buffer.from(TRACE, 'hex'), spanId: Buffer.from(SPAN_NONE, 'hex') });
  assertAccepted(await sendPb(server, req), 'span request', server);
}
after(async () => { if (server) await server.stop(); });

function checkSpanFlame(j, exp, ctx) {
  assert.ok(j.samples > 0, `${ctx}: "samples" must be > 0: ${JSON.stringify(j).slice(0, 300)}`);
  assert.equal(j.total, Number(exp.total), `${ctx}: total`);
  assert.ok(j.root, `${ctx}: no root`);
  assert.equal(j.root.total, Number(exp.total), `${ctx}: root.total`);
  const fs = flameStats(j.root);
  assert.deepEqual(fs.bad, [], `${ctx}: node totals`);
  const num = (m) => new Map([...m].filter(([, v]) => v !== 0n && v !== 0).map(([k, v]) => [k, Number(v)]));
  assert.deepEqual(num(fs.self), num(exp.self), `${ctx}: self per function`);
  assert.deepEqual(num(fs.cum), num(exp.cum), `${ctx}: cum per function`);
}

for (const [span, label] of [[SPAN_A, 'A (two samples, one with timestamps)'], [SPAN_B, 'B']]) {
  test(`OTLP span ${label}: /api/span?trace_id=&span_id= is the flame graph of its samples`, async () => {
    await setup();
    const exp = expectRequest(req, (s) => s.link?.spanId === span).get(svc).get('cpu:nanoseconds');
    const j = await getJson(server.uiUrl, '/api/span', { trace_id: TRACE, span_id: span });
    checkSpanFlame(j, exp, `span ${span}`);
  });
}

test('OTLP span without samples: {"samples":0,"service","from","until"} pointing at the span\'s minutes', async () => {
  await setup();
  const r = await get(server.uiUrl, '/api/span', { trace_id: TRACE, span_id: SPAN_NONE });
  assert.equal(r.status, 200, `${r.status} ${r.text}`);
  assert.equal(r.json.samples, 0, r.text);
  assert.equal(r.json.service, svc, `service of the trace: ${r.text}`);
  const now = Math.floor(Date.now() / 1000);
  for (const k of ['from', 'until']) {
    assert.equal(typeof r.json[k], 'number', `"${k}" unix seconds: ${r.text}`);
    assert.ok(Math.abs(r.json[k] - now) < 3600, `"${k}" near the trace's samples: ${r.text}`);
  }
  assert.ok(r.json.from <= r.json.until, r.text);
});

test('unknown trace and span: samples 0, not an error', async () => {
  await setup();
  const r = await get(server.uiUrl, '/api/span', { trace_id: 'cc000000000000000000000000000001', span_id: 'dd00000000000001' });
  assert.ok(r.status === 200 || r.status === 404, `${r.status} ${r.text}`);
  if (r.status === 200) assert.equal(r.json.samples, 0, r.text);
});

test('bad ids → 400', async () => {
  await setup();
  for (const q of [{ trace_id: TRACE, span_id: 'xyz' }, { trace_id: 'abc', span_id: SPAN_A }, {}]) {
    const r = await get(server.uiUrl, '/api/span', q);
    assert.equal(r.status, 400, `${JSON.stringify(q)} → ${r.status} ${r.text}`);
  }
});

// pprof: the span id is a sample label. go-cpu-span-labels.pb.gz carries it
// under Pyroscope's key "profile_id" (no "span_id" label despite its name);
// API: Span links names "span_id", so the same file with the key renamed is
// checked too.
async function pprofSpanCase(renameTo) {
  const raw = await pprofRaw(SPAN_FILE);
  const key = 'profile_id';
  const counts = new Map();
  for (const s of raw.samples) if (s.labels?.[key]) counts.set(s.labels[key], (counts.get(s.labels[key]) ?? 0) + 1);
  const spanId = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0][0];
  let body;
  if (renameTo) {
    const p = readPprofFile(SPAN_FILE);
    const i = p.stringTable.indexOf(key);
    assert.ok(i > 0, 'profile_id in the string table');
    p.stringTable[i] = renameTo;
    body = encodePprof(p);
  } else {
    body = (await import('node:fs')).readFileSync(SPAN_FILE);
  }
  // A server of its own: the two cases share span id values.
  const srv = await startServer();
  let j;
  try {
    const svcP = uniqueName(`span-pprof-${renameTo ?? key}`);
    const up = await upload(srv, body, { serviceName: svcP });
    assert.equal(up.status, 200, up.text);
    j = await getJson(srv.uiUrl, '/api/span', { span_id: spanId });
  } finally { await srv.stop(); }
  const ti = raw.sampleTypes.findIndex((t) => `${t.type}:${t.unit}` === j.type);
  assert.ok(ti >= 0, `/api/span "type" ${JSON.stringify(j.type)} should be one of the file's types: ${JSON.stringify(j).slice(0, 300)}`);
  const exp = oracle(raw, ti, (s) => s.labels?.[key] === spanId);
  assert.ok(exp.total > 0n);
  checkSpanFlame(j, exp, `pprof label ${renameTo ?? key}=${spanId}`);
}

test('pprof upload with a span_id label (go-cpu-span-labels, key renamed to span_id): /api/span?span_id= equals go tool pprof for that label', async () => {
  await pprofSpanCase('span_id');
});

test('pprof upload of go-cpu-span-labels as is (Pyroscope\'s profile_id label): /api/span?span_id= equals go tool pprof', async () => {
  await pprofSpanCase(null);
});
