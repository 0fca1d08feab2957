// Comparing two kiln servers' answers to the same request (the store
// engines must answer byte for byte alike, OPS: Storage / issue 8): the first
// JSON path where two values differ (lib/otlp-check.mjs firstDiff), the
// first byte where two bodies differ, and a pprof comparison that falls back to go tool pprof's reading
// when the bytes differ (sample order inside a pprof is not part of the
// contract; what the samples say is).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { mkTemp } from './env.mjs';
import { get } from './http.mjs';
import { pprofRaw } from './pprof.mjs';
import { firstDiff } from './otlp-check.mjs';

// Index of the first differing byte, or -1.
export function firstByteDiff(x, y) {
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) if (x[i] !== y[i]) return i;
  return x.length === y.length ? -1 : n;
}

// A pprof read by go tool pprof, comparable: the header lines, the sample
// types, and per sample (values, frames as address and lines, labels) a
// count. Ids of locations and mappings are left out (a writer's choice).
async function readPprof(buf, name) {
  const f = path.join(mkTemp('cmp-pprof'), `${name}.pb.gz`);
  fs.writeFileSync(f, buf);
  const prof = await pprofRaw(f);
  const samples = new Map();
  const totals = prof.sampleTypes.map(() => 0n);
  for (const s of prof.samples) {
    s.values.forEach((v, i) => { totals[i] += v; });
    const k = JSON.stringify({
      values: s.values.map(String),
      frames: s.locs.map((id) => {
        const l = prof.locations.get(id);
        return [l.address, ...l.lines.map((x) => `${x.name} ${x.file}:${x.line}`)];
      }),
      labels: s.labels ?? {},
    });
    samples.set(k, (samples.get(k) ?? 0) + 1);
  }
  return { head: { header: prof.header, sampleTypes: prof.sampleTypes }, totals: totals.map(String), samples };
}

// → null, or where two pprofs (as go tool pprof reads them) differ.
async function pprofDiff(bufA, bufB, names) {
  const [a, b] = await Promise.all([readPprof(bufA, 'a'), readPprof(bufB, 'b')]);
  const d = firstDiff(a.head, b.head) ?? firstDiff(a.totals, b.totals, '$totals');
  if (d) return d;
  const cut = (k) => (k.length > 300 ? `${k.slice(0, 300)}…` : k);
  for (const k of [...new Set([...a.samples.keys(), ...b.samples.keys()])].sort()) {
    const na = a.samples.get(k) ?? 0;
    const nb = b.samples.get(k) ?? 0;
    if (na !== nb) return `a sample ${na}× in ${names[0]}, ${nb}× in ${names[1]}: ${cut(k)}`;
  }
  return null;
}

// Asserts two responses to one request are the same: status, content type
// and body — byte for byte for JSON (reporting the first differing JSON path
// when the values differ too), and for pprof bodies byte for byte or else
// sample for sample as go tool pprof reads them (ctx.diagnostic, if given,
// is told when only the bytes differ).
export async function assertSameResponse(ra, rb, what, names = ['left', 'right'], ctx = null) {
  const ct = (r) => (r.headers.get?.('content-type') ?? r.headers['content-type'] ?? '').split(';')[0];
  const head = (r) => `${r.status} ${ct(r)} ${r.text.slice(0, 200)}`;
  assert.equal(rb.status, ra.status, `${what}: status ${names[0]} ${head(ra)} vs ${names[1]} ${head(rb)}`);
  assert.equal(ct(rb), ct(ra), `${what}: content-type`);
  if (ra.json !== undefined || rb.json !== undefined) {
    const d = firstDiff(ra.json, rb.json);
    if (d) assert.fail(`${what}: first difference (${names[0]} vs ${names[1]}) at ${d}`);
    const i = firstByteDiff(ra.buf, rb.buf);
    if (i >= 0) {
      assert.fail(`${what}: the same JSON value written differently at byte ${i}: ${names[0]} …${JSON.stringify(ra.text.slice(Math.max(0, i - 40), i + 40))}… vs ${names[1]} …${JSON.stringify(rb.text.slice(Math.max(0, i - 40), i + 40))}…`);
    }
    return;
  }
  if (firstByteDiff(ra.buf, rb.buf) < 0) return;
  if (ct(ra) === 'application/octet-stream' && ra.status === 200) {
    const d = await pprofDiff(ra.buf, rb.buf, names);
    if (d) assert.fail(`${what}: the pprofs differ as go tool pprof -raw reads them (${names[0]} vs ${names[1]}): ${d}`);
    ctx?.diagnostic?.(`${what}: pprof bytes differ (${ra.buf.length} vs ${rb.buf.length} bytes), go tool pprof reads the same samples`);
    return;
  }
  const i = firstByteDiff(ra.buf, rb.buf);
  assert.fail(`${what}: bodies differ at byte ${i} (${ra.buf.length} vs ${rb.buf.length} bytes)`);
}

// GET route with params from both servers' UI listeners, then assertSameResponse.
export async function assertSameAnswer(a, b, route, params, names, ctx) {
  const [ra, rb] = await Promise.all([get(a.uiUrl, route, params), get(b.uiUrl, route, params)]);
  await assertSameResponse(ra, rb, `GET ${route} ${JSON.stringify(params)}`, names, ctx);
  return ra;
}
