// Pyroscope's folded text on POST /ingest (API: Push: POST /ingest (Pyroscope)):
// format=groups ("frame;frame COUNT" lines), format=lines (one stack per line)
// and no format (folded text unless the body is pprof), gzipped or not, with
// units / aggregationType / sampleRate, to a real kiln. Oracle: the stacks
// summed here in JS from the same text, scaled by the sample period, compared
// with /api/flamegraph node by node, /api/types and /api/services; refusals
// with their exact {"code","message"}, nothing stored; usage counted per key.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { uniqueName, nowS, mkTemp } from './lib/env.mjs';
import { startServer, tail } from './lib/server.mjs';
import { getJson, services } from './lib/http.mjs';
import { createKey } from './lib/s6.mjs';

let server;
before(async () => { server = await startServer(); });
after(async () => { if (server) await server.stop(); });

async function ingest(base, params, data, headers = {}) {
  const q = new URLSearchParams(params).toString();
  const res = await fetch(`${base}/ingest?${q}`, { method: 'POST', body: data, headers, signal: AbortSignal.timeout(60000) });
  const text = Buffer.from(await res.arrayBuffer()).toString('utf8');
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, text, json };
}

// The oracle: stack (frames joined by ';') → summed value, from folded text.
function expectStacks(text, format, scale = 1) {
  const out = new Map();
  for (const raw of text.split('\n')) {
    const line = raw.replace(/[ \t\r]+$/, '');
    if (!line) continue;
    let stack = line;
    let n = 1;
    if (format !== 'lines') {
      const at = line.lastIndexOf(' ');
      stack = line.slice(0, at).replace(/[ \t]+$/, '');
      n = Number(line.slice(at + 1));
    }
    out.set(stack, (out.get(stack) ?? 0) + n * scale);
  }
  for (const [k, v] of out) if (v === 0) out.delete(k);
  return out;
}

// /api/flamegraph's tree as stack → self (nodes with a self value), and its total.
function flatten(root) {
  const out = new Map();
  const walk = (n, path) => {
    for (const c of n.children ?? []) {
      const p = path ? `${path};${c.name}` : c.name;
      if (c.self) out.set(p, c.self);
      walk(c, p);
    }
  };
  walk(root, '');
  return out;
}

const sum = (m) => [...m.values()].reduce((a, b) => a + b, 0);

async function checkFlame(svc, type, want, win, what) {
  const fg = await getJson(server.uiUrl, '/api/flamegraph', { service: svc, type, ...win });
  assert.equal(fg.type, type, what);
  assert.equal(fg.total, sum(want), `${what}: total`);
  assert.deepEqual(Object.fromEntries([...flatten(fg.root)].sort()), Object.fromEntries([...want].sort()), `${what}: self per stack`);
}

const GROUPS = 'main;work;leaf 5\nmain;work 3\r\nmain;idle 2\n\nmain;work;leaf 1\nmain;zero 0\nfoo (a.py:3);bar (b.py:9) 4\n';
const LINES = 'main;alloc\nmain;alloc\r\nmain;other\n\nmain;alloc\n';

test('groups: CPU counts at sampleRate Hz become cpu:nanoseconds (count × 1e9/rate); raw, gzip and no format alike; the service ranks by CPU', async () => {
  const t = nowS() - 600;
  const cases = [
    ['groups, rate 100', { format: 'groups', sampleRate: '100', spyName: 'pyspy' }, Buffer.from(GROUPS), 10_000_000],
    ['groups gzip, rate 250', { format: 'groups', sampleRate: '250' }, zlib.gzipSync(GROUPS), 4_000_000],
    ['no format, no rate (Pyroscope\'s 100 Hz)', {}, Buffer.from(GROUPS), 10_000_000],
    ['no format gzip, Content-Encoding: gzip, rate 3', { sampleRate: '3' }, zlib.gzipSync(GROUPS), 333_333_333],
  ];
  for (const [what, params, data, period] of cases) {
    const svc = uniqueName('fold-cpu');
    const headers = what.includes('Content-Encoding') ? { 'content-encoding': 'gzip' } : {};
    const r = await ingest(server.uploadUrl, { name: `${svc}{env=prod}`, from: `${t}`, until: `${t + 10}`, ...params }, data, headers);
    assert.equal(r.status, 200, `${what}: ${r.text}\n${tail(server.stderr())}`);
    assert.equal(r.text, '');
    const want = expectStacks(GROUPS, 'groups', period);
    const win = { from: t - 1, until: t + 12 };
    await checkFlame(svc, 'cpu:nanoseconds', want, win, what);
    assert.deepEqual((await getJson(server.uiUrl, '/api/types', { service: svc, ...win })).types, ['cpu:nanoseconds'], what);
    const entry = (await getJson(server.uiUrl, '/api/services', win)).services.find((s) => s.name === svc);
    assert.equal(entry?.cpu_nanoseconds, sum(want), `${what}: /api/services ranks it by CPU: ${JSON.stringify(entry)}`);
    const prod = await getJson(server.uiUrl, '/api/flamegraph', { service: svc, type: 'cpu:nanoseconds', 'label.env': 'prod', ...win });
    assert.equal(prod.total, sum(want), `${what}: the name's labels are series labels`);
  }
});

test('lines and units: objects average is inuse_objects (averaged), sum alloc_objects (summed); bytes, goroutines, lock_*, sampleRate=0', async () => {
  const t = nowS() - 900;
  const second = 'main;alloc\nmain;other\nmain;new;x\nmain;new;x\n';
  const push = async (svc, params, text, at) => {
    const r = await ingest(server.uiUrl, { name: svc, format: 'lines', from: `${at}`, until: `${at + 10}`, ...params }, Buffer.from(text));
    assert.equal(r.status, 200, `${svc} ${JSON.stringify(params)}: ${r.text}`);
  };
  const win = { from: t - 1, until: t + 30 };
  // Two snapshots of one series, averaged stack by stack: alloc (3+1)/2, other (1+1)/2, new;x (0+2)/2.
  const avg = uniqueName('fold-inuse');
  await push(avg, { units: 'objects', aggregationType: 'average' }, LINES, t);
  await push(avg, { units: 'objects', aggregationType: 'average' }, second, t + 10);
  const a = expectStacks(LINES, 'lines'); const b = expectStacks(second, 'lines');
  const mean = new Map();
  for (const k of new Set([...a.keys(), ...b.keys()])) mean.set(k, ((a.get(k) ?? 0) + (b.get(k) ?? 0)) / 2);
  assert.deepEqual((await getJson(server.uiUrl, '/api/types', { service: avg, ...win })).types, ['inuse_objects:count']);
  await checkFlame(avg, 'inuse_objects:count', mean, win, 'objects, average');
  // The same as a sum: alloc_objects, summed.
  const summed = uniqueName('fold-alloc');
  await push(summed, { units: 'objects' }, LINES, t);
  await push(summed, { units: 'objects', aggregationType: 'sum' }, second, t + 10);
  const total = new Map(a);
  for (const [k, v] of b) total.set(k, (total.get(k) ?? 0) + v);
  assert.deepEqual((await getJson(server.uiUrl, '/api/types', { service: summed, ...win })).types, ['alloc_objects:count']);
  await checkFlame(summed, 'alloc_objects:count', total, win, 'objects, sum');
  // Each other unit in groups: its type, values as sent (no period).
  for (const [units, rate, type] of [
    ['bytes', undefined, 'alloc_space:bytes'], ['goroutines', undefined, 'goroutine:count'],
    ['lock_samples', undefined, 'contentions:count'], ['lock_nanoseconds', '100', 'delay:nanoseconds'],
    ['samples', '0', 'samples:count'],
  ]) {
    const svc = uniqueName(`fold-${units.replace('_', '')}`);
    const r = await ingest(server.uploadUrl, { name: svc, units, ...(rate ? { sampleRate: rate } : {}), from: `${t}` }, Buffer.from(GROUPS));
    assert.equal(r.status, 200, `${units}: ${r.text}`);
    assert.deepEqual((await getJson(server.uiUrl, '/api/types', { service: svc, ...win })).types, [type], units);
    await checkFlame(svc, type, expectStacks(GROUPS, 'groups'), win, units);
  }
  // Folded text under format=pprof is not read as folded text (pyroscope-ingest: pprof without a format).
  const svc = uniqueName('fold-notpprof');
  const r = await ingest(server.uploadUrl, { name: svc, format: 'pprof' }, Buffer.from(GROUPS));
  assert.equal(r.status, 400, r.text);
});

test('bad input: 400/415 with the exact message, Pyroscope\'s body, nothing stored', async () => {
  const tried = [];
  const svc = () => { const s = uniqueName('fold-bad'); tried.push(s); return s; };
  const text = (s) => Buffer.from(s);
  const cases = [
    ['no count', { format: 'groups' }, text('a;b 1\nmain;work\n'), 400, 'invalid_argument',
      "line 2: no count: a groups line is 'frame;frame;... COUNT' (format=lines takes lines without counts)"],
    ['non-digit count', {}, text('a;b 1\n\na;c x1\n'), 400, 'invalid_argument', "line 3: count 'x1' is not a non-negative integer"],
    ['count overflow', { format: 'groups' }, text('a 9223372036854775808\n'), 400, 'invalid_argument',
      'line 1: count 9223372036854775808 is above 9223372036854775807'],
    ['scaled overflow', { format: 'groups' }, text('a 922337203685477581\n'), 400, 'invalid_argument',
      'line 1: count 922337203685477581 × the sample period 10000000 ns is above 9223372036854775807'],
    ['empty frame', { format: 'lines' }, zlib.gzipSync('a;b\na;;b\n'), 400, 'invalid_argument',
      "line 2: frame 2 is empty (';;', or a ';' at the start or end of the stack)"],
    ['control byte', { format: 'lines' }, text('a\tb;c\nx\x07y\n'), 400, 'invalid_argument', 'line 2: control byte 0x07 at column 2'],
    ['only blank lines', { format: 'groups' }, text('\n\r\n  \n'), 400, 'invalid_argument', 'no stacks: the folded text has only blank lines'],
    ['empty body', { format: 'lines' }, text(''), 400, 'invalid_argument',
      "empty body: send folded text, raw or gzip: one 'frame;frame;frame COUNT' per line (format=groups) or one stack per line (format=lines)"],
    ['bad units', { format: 'groups', units: 'furlongs' }, text('a 1\n'), 400, 'invalid_argument',
      'units=furlongs is not one of samples, objects, bytes, goroutines, lock_samples, lock_nanoseconds'],
    ['bad aggregationType', { aggregationType: 'max' }, text('a 1\n'), 400, 'invalid_argument', 'aggregationType=max is not sum or average'],
    ['bad sampleRate', { format: 'groups', sampleRate: '-1' }, text('a 1\n'), 400, 'invalid_argument',
      'sampleRate=-1 is not a rate: a whole number of samples per second, 0 to 1000000000'],
    ['Content-Encoding: gzip, not gzip', { format: 'groups', _ce: 1 }, text('a 1\n'), 400, 'invalid_argument',
      'Content-Encoding: gzip but the body does not start with the gzip magic bytes'],
    ['format=jfr with folded text', { format: 'jfr' }, text('a 1\n'), 400, 'invalid_argument',
      'chunk 0 at offset 0: chunk header truncated (4 of 68 bytes)'],
    ...['trie', 'tree', 'speedscope'].map((f) => [`format=${f}`, { format: f }, text('a 1\n'), 415, 'unimplemented',
      `format=${f} is not supported: Kiln's /ingest takes pprof and folded text (format=pprof, groups or lines)`]),
    ...['trie', 'tree'].map((f) => [`Content-Type binary/octet-stream+${f}`, { _ct: `binary/octet-stream+${f}` }, text('a 1\n'), 415, 'unimplemented',
      `Content-Type binary/octet-stream+${f} (Pyroscope's ${f} format) is not supported: Kiln's /ingest takes pprof and folded text (format=pprof, groups or lines)`]),
    ['unknown format', { format: 'folded' }, text('a 1\n'), 415, 'unimplemented',
      "format=folded is not a format Kiln's /ingest knows: it takes pprof and folded text (format=pprof, groups or lines)"],
  ];
  for (const base of [server.uploadUrl, server.uiUrl]) {
    for (const [what, params, data, status, code, message] of cases) {
      const q = { name: svc(), ...params };
      const headers = { ...(q._ce ? { 'content-encoding': 'gzip' } : {}), ...(q._ct ? { 'content-type': q._ct } : {}) };
      delete q._ce;
      delete q._ct;
      const r = await ingest(base, q, data, headers);
      const ctx = `${base} ${what}: ${r.status} ${r.text.slice(0, 300)}`;
      assert.equal(r.status, status, ctx);
      assert.deepEqual(r.json, { code, message }, ctx);
    }
  }
  const names = new Set((await services(server)).map((s) => s.name));
  for (const s of tried) assert.ok(!names.has(s), `refused push stored as ${s}`);
});

test('usage: accepted = stacks stored, a refused push counts 1 invalid, per key', async () => {
  const dataDir = mkTemp('fold-usage');
  const key = await createKey(dataDir, 'pf', 'pf-main', 'both');
  const s = await startServer({ dataDir, extraArgs: ['--auth', 'required'] });
  try {
    const headers = { authorization: `Bearer ${key}` };
    const t = nowS() - 300;
    const ok = await ingest(s.uploadUrl, { name: uniqueName('fold-use'), from: `${t}` }, Buffer.from(GROUPS), headers);
    assert.equal(ok.status, 200, ok.text);
    const ok2 = await ingest(s.uiUrl, { name: uniqueName('fold-use'), format: 'lines', from: `${t}` }, Buffer.from(LINES), headers);
    assert.equal(ok2.status, 200, ok2.text);
    const bad = await ingest(s.uploadUrl, { name: uniqueName('fold-use'), format: 'groups' }, Buffer.from('a x\n'), headers);
    assert.equal(bad.status, 400, bad.text);
    const want = { accepted: expectStacks(GROUPS, 'groups').size + expectStacks(LINES, 'lines').size, invalid: 1 };
    let got;
    for (let i = 0; i < 50; i++) { // usage is flushed every second
      const u = await fetch(`${s.uiUrl}/api/usage?${new URLSearchParams({ from: `${nowS() - 86400 * 2}`, until: `${nowS() + 60}` })}`, { headers: { 'x-kiln-key': key } });
      const days = (await u.json()).days.filter((d) => d.key === 'pf-main');
      got = { accepted: days.reduce((a, d) => a + d.accepted, 0), invalid: days.reduce((a, d) => a + d.rejected_by_reason.invalid, 0) };
      if (got.accepted === want.accepted && got.invalid === want.invalid) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.deepEqual(got, want);
  } finally {
    await s.stop();
  }
});
