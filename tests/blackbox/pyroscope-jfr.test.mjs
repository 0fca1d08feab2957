// Pyroscope's JFR push on POST /ingest?format=jfr (API: Push: POST /ingest
// (Pyroscope), JFR) to a real kiln: recordings from tests/data/jfr sent as
// the Java agent sends them (multipart parts jfr + labels, OkHttp's part
// headers) and as an application/octet-stream body, gzipped or not. Oracle:
// grafana/jfr-parser's own output for each recording (its collapsed text in
// tests/data/jfr): per profile name and sample type, /api/flamegraph's total
// and the top-20 self values per function equal the oracle's. The labels
// part: a label.K=V filter's total and /api/span's total equal the sum over
// the oracle's pprof text samples with that label (its `_expected.txt.gz`,
// parsed here: each sample's value and its `key:[value]` line). The agent's
// own request, byte for byte (OkHttp over a raw socket). Refusals carry the
// decoder's message, and nothing is stored.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import zlib from 'node:zlib';
import { uniqueName, nowS, mkTemp, TESTDATA } from './lib/env.mjs';
import { startServer, tail } from './lib/server.mjs';
import { getJson, services } from './lib/http.mjs';
import { runKiln } from './lib/cli.mjs';

let server;
before(async () => { server = await startServer(); });
after(async () => { if (server) await server.stop(); });

const DIR = path.join(TESTDATA, 'jfr');
const read = (f) => fs.readFileSync(path.join(DIR, f));

// The multipart body the Java agent's OkHttp client builds: parts jfr and labels.
function agentForm(jfr, labels) {
  const boundary = crypto.randomUUID();
  const part = (name, data) => Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${name}"\r\n` +
      `Content-Type: application/octet-stream\r\nContent-Length: ${data.length}\r\n\r\n`),
    data, Buffer.from('\r\n')]);
  const parts = [part('jfr', jfr)];
  if (labels) parts.push(part('labels', labels));
  return { body: Buffer.concat([...parts, Buffer.from(`--${boundary}--\r\n`)]), contentType: `multipart/form-data; boundary=${boundary}` };
}

async function ingest(name, { body, contentType }, from, extra = {}) {
  const q = new URLSearchParams({
    name, units: '', aggregationType: '', sampleRate: '100', from: String(from), until: String(from + 10),
    spyName: 'javaspy', format: 'jfr', ...extra,
  });
  const res = await fetch(`${server.uploadUrl}/ingest?${q}`, {
    method: 'POST', body, headers: { 'content-type': contentType }, signal: AbortSignal.timeout(60000),
  });
  const text = Buffer.from(await res.arrayBuffer()).toString('utf8');
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, text, json };
}

// The oracle files of a recording: [{name, types: [{type, unit, total, self: Map}]}].
function oracles(rec) {
  const names = ['process_cpu', 'memory', 'mutex', 'block', 'wall'];
  const out = [];
  for (const f of fs.readdirSync(DIR)) {
    const m = f.match(/^(.*)_(\d)_(.*)_expected_collapsed\.txt\.gz$/);
    if (!m || m[1] !== rec) continue;
    const name = names.find((n) => m[3].startsWith(`${n}_`));
    const types = m[3].slice(name.length + 1).split('+').map((t) => {
      const [type, unit] = t.split('__');
      return { type, unit, total: 0, self: new Map() };
    });
    for (const line of zlib.gunzipSync(read(f)).toString('utf8').split('\n')) {
      if (!line) continue;
      const br = line.lastIndexOf(' [');
      const values = line.slice(br + 2, -1).split(' ').map(Number);
      const stack = line.slice(0, br);
      // Frames end in ":LINE"; a ';' after one separates frames (names may hold ';').
      const cut = [...stack.matchAll(/:\d+;/g)].pop();
      const leaf = cut ? stack.slice(cut.index + cut[0].length) : stack;
      const fn = leaf.replace(/:\d+$/, '');
      types.forEach((t, i) => {
        t.total += values[i];
        t.self.set(fn, (t.self.get(fn) ?? 0) + values[i]);
      });
    }
    out.push({ name, types });
  }
  return out;
}

// /api/flamegraph's self per function name (summed over the tree).
function selfByName(root) {
  const out = new Map();
  const walk = (n) => {
    for (const c of n.children ?? []) {
      if (c.self) out.set(c.name, (out.get(c.name) ?? 0) + c.self);
      walk(c);
    }
  };
  walk(root);
  return out;
}

const top20 = (m) => [...m].filter(([, v]) => v !== 0).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 20);

async function checkOracles(svc, rec, from) {
  const want = oracles(rec);
  assert.ok(want.length > 0, rec);
  let checked = 0;
  for (const { name, types } of want) {
    for (const t of types) {
      const what = `${rec} ${name}:${t.type}`;
      const fg = await getJson(server.uiUrl, '/api/flamegraph', { service: svc, type: `${name}:${t.type}:${t.unit}`, from: from - 60, until: from + 60 });
      assert.equal(fg.total, t.total, `${what}: total`);
      const got = selfByName(fg.root);
      for (const [fn, v] of top20(t.self)) assert.equal(got.get(fn), v, `${what}: self of ${fn}`);
      assert.deepEqual(top20(got).map(([, v]) => v), top20(t.self).map(([, v]) => v), `${what}: top-20 self values`);
      checked++;
    }
  }
  return checked;
}

test('format=jfr: the agent\'s multipart (jfr + labels) and a raw octet-stream body convert exactly as grafana/jfr-parser does', async () => {
  const from = nowS() - 300;
  const cases = [
    ['dump1', 'multipart, labels part, jfr gzipped', agentForm(read('dump1.jfr.gz'), read('dump1.labels.pb.gz')), 1],
    ['cortex-dev-01__kafka-0__cpu_lock_alloc__0', 'octet-stream, raw',
      { body: zlib.gunzipSync(read('cortex-dev-01__kafka-0__cpu_lock_alloc__0.jfr.gz')), contentType: 'application/octet-stream' }, 3],
    ['example', 'multipart without labels, jfr raw', agentForm(zlib.gunzipSync(read('example.jfr.gz'))), 7],
  ];
  // Every other recording of tests/data/jfr, gzipped, as the agent's multipart
  // (with its labels part where the recording has one): each oracle type checked.
  for (const f of fs.readdirSync(DIR).filter((x) => x.endsWith('.jfr.gz')).sort()) {
    const rec = f.slice(0, -'.jfr.gz'.length);
    if (cases.some(([c]) => c === rec)) continue;
    const lf = fs.readdirSync(DIR).find((x) => x.startsWith(`${rec}.labels.`));
    const n = oracles(rec).reduce((k, o) => k + o.types.length, 0);
    cases.push([rec, `multipart${lf ? ', labels part' : ''}, jfr gzipped`, agentForm(read(f), lf ? read(lf) : undefined), n]);
  }
  assert.equal(cases.length, 10, 'every recording of tests/data/jfr');
  for (const [rec, what, body, types] of cases) {
    const svc = uniqueName('jfr');
    const r = await ingest(`${svc}{env=test}`, body, from);
    assert.equal(r.status, 200, `${what}: ${r.text}\n${tail(server.stderr())}`);
    assert.equal(r.text, '');
    assert.equal(await checkOracles(svc, rec, from), types, `${what}: sample types checked`);
  }
});

test('format=jfr refusals: the decoder\'s message as a 400 (gzip bombs 413), the server up, nothing stored', async () => {
  const from = nowS() - 300;
  const good = zlib.gunzipSync(read('nativemem.jfr.gz'));
  const bad = Buffer.from(good);
  bad.writeBigUInt64BE(BigInt(good.length + 1000), 8);
  const renamed = agentForm(good);
  renamed.body = Buffer.from(renamed.body.toString('latin1').replace('name="jfr"', 'name="profile"'), 'latin1');
  const octet = (body) => ({ body, contentType: 'application/octet-stream' });
  const cases = [
    ['not JFR', agentForm(Buffer.from('x')), {}, 'chunk 0 at offset 0: chunk header truncated (1 of 68 bytes)'],
    ['no jfr part', renamed, {}, 'multipart: no part named jfr: format=jfr takes the recording as part jfr (and its labels as part labels), as the Java agent sends them'],
    ['chunk size past the end', octet(bad), {},
      `chunk 0 at offset 8: chunk size ${good.length + 1000} runs past the end of the file (${good.length} bytes left)`],
    ['empty', octet(Buffer.alloc(0)), {}, 'empty recording: format=jfr takes a JFR recording, raw or gzip, as the body or as multipart part jfr'],
    ['sampleRate', octet(good), { sampleRate: '0' }, 'sampleRate=0 is not a positive integer up to 1000000000 (Hz)'],
    ['gzip bomb', octet(zlib.gzipSync(Buffer.alloc(40 << 20))), {}, 'decompressed body exceeds the 32 MiB limit', 413],
    ['gzip bomb in part jfr', agentForm(zlib.gzipSync(Buffer.alloc(40 << 20))), {}, 'decompressed body exceeds the 32 MiB limit', 413],
    ['labels: a string id not in strings', agentForm(good, Buffer.from([0x12, 5, 8, 1, 0x12, 1, 0x78, 0x0a, 10, 8, 5, 0x12, 6, 0x0a, 4, 8, 1, 0x10, 9])), {},
      "labels.contexts[0].labels[0].value: string id 9 is not in the snapshot's strings"],
    ['labels: not a protobuf', agentForm(good, Buffer.from([0x0a, 0x7f])), {},
      'labels.contexts: length at byte 1 runs past the end of its message or is malformed'],
    ['gzip bomb in part labels', agentForm(good, zlib.gzipSync(Buffer.alloc(40 << 20))), {}, 'part labels: the recording and its labels decompress to more than 32 MiB (the limit)', 413],
  ];
  // The chunk header's fields (JFR: magic, u16 major, u16 minor, u64 size,
  // u64 constant pool offset, u64 metadata offset, …; 68 bytes), patched in
  // the real recording: each message follows from the patched field alone.
  const S = good.length;
  assert.equal(Number(good.readBigUInt64BE(8)), S, 'nativemem is one chunk');
  const CP = Number(good.readBigUInt64BE(16));
  const META = Number(good.readBigUInt64BE(24));
  const patched = (fn) => { const b = Buffer.from(good); fn(b); return b; };
  const u64 = (at, v) => (b) => b.writeBigUInt64BE(BigInt(v), at);
  const version = (major, minor) => (b) => { b.writeUInt16BE(major, 4); b.writeUInt16BE(minor, 6); };
  const c0 = (off, msg) => `chunk 0 at offset ${off}: ${msg}`;
  const notJfr = "not a JFR chunk: magic 58 58 58 58, expected 'FLR\\0'";
  const header = [
    ['bad magic', patched((b) => b.write('XXXX', 0, 'latin1')), c0(0, notJfr)],
    ['bad magic, gzipped', zlib.gzipSync(patched((b) => b.write('XXXX', 0, 'latin1'))), c0(0, notJfr)],
    ['version 1.0', patched(version(1, 0)), c0(4, 'unsupported JFR version 1.0 (Kiln reads 2.x)')],
    ['version 3.1', patched(version(3, 1)), c0(4, 'unsupported JFR version 3.1 (Kiln reads 2.x)')],
    ['chunk size 0', patched(u64(8, 0)), c0(8, 'chunk size 0 is smaller than its 68-byte header')],
    ['chunk size 67', patched(u64(8, 67)), c0(8, 'chunk size 67 is smaller than its 68-byte header')],
    ['constant pool offset 0', patched(u64(16, 0)), c0(16, `constant pool offset 0 out of range (chunk of ${S} bytes)`)],
    ['constant pool offset inside the header', patched(u64(16, 67)), c0(16, `constant pool offset 67 out of range (chunk of ${S} bytes)`)],
    ['constant pool offset at the chunk end', patched(u64(16, S)), c0(16, `constant pool offset ${S} out of range (chunk of ${S} bytes)`)],
    ['metadata offset 0', patched(u64(24, 0)), c0(24, `metadata offset 0 out of range (chunk of ${S} bytes)`)],
    ['metadata offset at the chunk end', patched(u64(24, S)), c0(24, `metadata offset ${S} out of range (chunk of ${S} bytes)`)],
    ['header cut at 30 bytes', good.subarray(0, 30), c0(0, 'chunk header truncated (30 of 68 bytes)')],
    ['header cut at 67 bytes', good.subarray(0, 67), c0(0, 'chunk header truncated (67 of 68 bytes)')],
    ['metadata offset pointing at the constant pool', patched(u64(24, CP)), c0(CP, 'metadata event has type 1, expected 0')],
    ['constant pool offset pointing at the metadata', patched(u64(16, META)), c0(META, 'checkpoint event has type 0, expected 1')],
    ['a second chunk that is not JFR', Buffer.concat([good, Buffer.alloc(68, 'X')]), `chunk 1 at offset ${S}: ${notJfr}`],
    ['a second chunk cut in its header', Buffer.concat([good, good.subarray(0, 20)]), `chunk 1 at offset ${S}: chunk header truncated (20 of 68 bytes)`],
    ['a second chunk of version 1.0', Buffer.concat([good, patched(version(1, 0))]), `chunk 1 at offset ${S + 4}: unsupported JFR version 1.0 (Kiln reads 2.x)`],
  ];
  for (const [what, body, message] of header) cases.push([what, octet(body), {}, message]);
  assert.ok(cases.length >= 25, `${cases.length} bad inputs`);
  const tried = [];
  for (const [what, body, extra, message, status = 400] of cases) {
    const svc = uniqueName('jfr-bad');
    tried.push(svc);
    const r = await ingest(svc, body, from, extra);
    assert.equal(r.status, status, `${what}: ${r.text}`);
    assert.equal(r.json.code, status === 400 ? 'invalid_argument' : 'resource_exhausted', what);
    assert.equal(r.json.message, message, what);
  }
  const names = new Set((await services(server)).map((s) => s.name));
  for (const s of tried) assert.ok(!names.has(s), `refused push stored as ${s}`);
  // The server still takes a good recording after all that.
  const ok = await ingest(uniqueName('jfr-after'), octet(good), from);
  assert.equal(ok.status, 200, ok.text);
});

// The oracle's cpu samples of rec per label: "k=v" → summed value (from its pprof text).
function oracleByLabel(rec) {
  const text = zlib.gunzipSync(read(`${rec}_0_process_cpu_cpu__nanoseconds_expected.txt.gz`)).toString('utf8');
  const lines = text.slice(text.indexOf('Samples:\n'), text.indexOf('\nLocations')).split('\n').slice(2);
  const out = new Map();
  let total = 0;
  for (let i = 0; i < lines.length; i++) {
    const v = lines[i].match(/^\s+(\d+): /);
    if (!v) continue;
    total += Number(v[1]);
    const next = lines[i + 1] ?? '';
    if (/^\s+\S+:\[/.test(next)) {
      for (const m of next.matchAll(/(\S+):\[([^\]]*)\]/g)) {
        const k = `${m[1]}=${m[2]}`;
        out.set(k, (out.get(k) ?? 0) + Number(v[1]));
      }
    }
  }
  return { total, byLabel: out };
}

// The agent's gzip (GzipSink: header 1f 8b 08 00, mtime 0, xfl 0, OS 0; level BEST_SPEED).
function agentGzip(data) {
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(zlib.crc32(data) >>> 0, 0);
  trailer.writeUInt32LE(data.length >>> 0, 4);
  return Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0]), zlib.deflateRawSync(data, { level: 1 }), trailer]);
}

// OkHttp's HttpUrl.addQueryParameter encoding (QUERY_COMPONENT_ENCODE_SET, '+' too).
const okEncode = (s) => [...Buffer.from(s, 'utf8')].map((c) =>
  c <= 0x20 || c >= 0x7f || ' !"#$&\'(),/:;<=>?@[]\\^`{|}~+'.includes(String.fromCharCode(c))
    ? `%${c.toString(16).toUpperCase().padStart(2, '0')}` : String.fromCharCode(c)).join('');

// PyroscopeExporter with its defaults (format JFR, event itimer, 100 Hz,
// compression BEST_SPEED for both parts) over OkHttp 4: the request as bytes.
function agentRequest(host, app, jfr, labels, from, until) {
  const boundary = crypto.randomUUID();
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="jfr"; filename="jfr"\r\n\r\n`), agentGzip(jfr),
    Buffer.from(`\r\n--${boundary}\r\nContent-Disposition: form-data; name="labels"; filename="labels"\r\n` +
      'Content-Type: application/x-protobuf\r\n\r\n'), agentGzip(labels),
    Buffer.from(`\r\n--${boundary}--\r\n`)]);
  const q = [['name', app], ['units', 'samples'], ['aggregationType', 'sum'], ['from', String(from)],
    ['until', String(until)], ['spyName', 'javaspy'], ['sampleRate', '100'], ['format', 'jfr']]
    .map(([k, v]) => `${k}=${okEncode(v)}`).join('&');
  const chunks = [];
  for (let i = 0; i < body.length; i += 8192) {
    const c = body.subarray(i, i + 8192);
    chunks.push(Buffer.from(`${c.length.toString(16)}\r\n`), c, Buffer.from('\r\n'));
  }
  return Buffer.concat([Buffer.from(`POST /ingest?${q} HTTP/1.1\r\n` +
    `Content-Type: multipart/form-data; boundary=${boundary}\r\nTransfer-Encoding: chunked\r\n` +
    `Host: ${host}\r\nConnection: Keep-Alive\r\nAccept-Encoding: gzip\r\nUser-Agent: okhttp/4.12.0\r\n\r\n`),
  ...chunks, Buffer.from('0\r\n\r\n')]);
}

// Sends raw bytes, resolves with the status line's code and the body of the first response.
function sendRaw(url, bytes) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(u.port), u.hostname, () => sock.write(bytes));
    let got = Buffer.alloc(0);
    const timer = setTimeout(() => { sock.destroy(); reject(new Error(`no answer: ${got}`)); }, 60000);
    sock.on('data', (d) => {
      got = Buffer.concat([got, d]);
      const text = got.toString('latin1');
      const head = text.indexOf('\r\n\r\n');
      if (head < 0) return;
      const len = Number((text.slice(0, head).match(/\r\ncontent-length: *(\d+)/i) ?? [])[1] ?? 0);
      if (got.length < head + 4 + len) return;
      clearTimeout(timer);
      sock.destroy();
      resolve({ status: Number(text.slice(9, 12)), text: got.subarray(head + 4, head + 4 + len).toString('utf8') });
    });
    sock.on('error', (e) => { clearTimeout(timer); reject(e); });
  });
}

test('format=jfr labels: dump1 with its labels part, label.thread_name filters equal the oracle\'s per-label sums', async () => {
  const from = nowS() - 300;
  const svc = uniqueName('jfr-labels');
  const r = await ingest(svc, agentForm(read('dump1.jfr.gz'), read('dump1.labels.pb.gz')), from);
  assert.equal(r.status, 200, r.text);
  const { total, byLabel } = oracleByLabel('dump1');
  assert.equal(byLabel.size, 4);
  const type = 'process_cpu:cpu:nanoseconds';
  const all = await getJson(server.uiUrl, '/api/flamegraph', { service: svc, type, from: from - 60, until: from + 60 });
  assert.equal(all.total, total);
  let labelled = 0;
  for (const [kv, want] of byLabel) {
    const [k, v] = kv.split('=');
    const fg = await getJson(server.uiUrl, '/api/flamegraph', { service: svc, type, from: from - 60, until: from + 60, [`label.${k}`]: v });
    assert.equal(fg.total, want, kv);
    labelled += want;
  }
  assert.ok(labelled > 0 && labelled < total, 'some samples have no context');
});

test('format=jfr spans: new_spancontext\'s span ids link samples; /api/span totals equal the oracle\'s (the agent\'s request, byte for byte)', async () => {
  const from = nowS() - 300;
  const svc = uniqueName('jfr-span');
  const app = `${svc}{otel.scope.name=com.grafana.pyroscope/java,process.runtime.name=OpenJDK Runtime Environment,process.runtime.version=17.0.9+9}`;
  const host = new URL(server.uploadUrl).host;
  const req = agentRequest(host, app, zlib.gunzipSync(read('new_spancontext.jfr.gz')), zlib.gunzipSync(read('new_spancontext.labels.gz')), from, from + 10);
  const r = await sendRaw(server.uploadUrl, req);
  assert.equal(r.status, 200, `${r.text}\n${tail(server.stderr())}`);
  assert.equal(r.text, '');
  const { total, byLabel } = oracleByLabel('new_spancontext');
  const type = 'process_cpu:cpu:nanoseconds';
  const all = await getJson(server.uiUrl, '/api/flamegraph', { service: svc, type, from: from - 60, until: from + 60, 'label.process.runtime.version': '17.0.9+9' });
  assert.equal(all.total, total);
  const spans = [...byLabel].filter(([k]) => k.startsWith('profile_id='));
  assert.equal(spans.length, 2);
  for (const [kv, want] of spans) {
    const id = kv.slice('profile_id='.length);
    const sp = await getJson(server.uiUrl, '/api/span', { span_id: id, service: svc });
    assert.equal(sp.service, svc, JSON.stringify(sp).slice(0, 300));
    assert.equal(sp.type, 'cpu:nanoseconds');
    assert.equal(sp.total, want, kv);
  }
  for (const [kv, want] of byLabel) {
    if (kv.startsWith('profile_id=')) continue;
    const [k, v] = kv.split('=');
    const fg = await getJson(server.uiUrl, '/api/flamegraph', { service: svc, type, from: from - 60, until: from + 60, [`label.${k}`]: v });
    assert.equal(fg.total, want, kv);
  }
});

test('kiln upload FILE.jfr[.gz] detects JFR and pushes it to /ingest?format=jfr: the oracle\'s totals', async () => {
  const from = nowS() - 300;
  const raw = path.join(mkTemp('jfr-upload'), 'cortex-cpu.jfr');
  fs.writeFileSync(raw, zlib.gunzipSync(read('cortex-dev-01__kafka-0__cpu__0.jfr.gz')));
  const cases = [['example', path.join(DIR, 'example.jfr.gz'), 7], ['cortex-dev-01__kafka-0__cpu__0', raw, 1]];
  for (const [rec, file, types] of cases) {
    const svc = uniqueName('jfr-cli');
    const r = await runKiln(['upload', file, '--service', svc, '--label', 'env=test', '--from', String(from),
      '--until', String(from + 10), '--url', server.uploadUrl]);
    assert.equal(r.code, 0, `${rec}: exit ${r.code}; stderr: ${r.stderr}`);
    assert.equal(r.stdout.toString(), '');
    assert.equal(await checkOracles(svc, rec, from), types, rec);
    const want = oracles(rec).find((o) => o.name === 'process_cpu').types[0].total;
    const fg = await getJson(server.uiUrl, '/api/flamegraph', { service: svc, type: 'process_cpu:cpu:nanoseconds', from: from - 60, until: from + 60, 'label.env': 'test' });
    assert.equal(fg.total, want, `${rec}: --label env=test is a series label`);
  }
});
