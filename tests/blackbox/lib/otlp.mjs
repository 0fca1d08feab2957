// OTLP Profiles for the black-box tests: our own protobuf schema
// (tests/blackbox/proto/*.proto, v1.10 wire format) loaded with protobufjs,
// so requests are encoded and decoded independently of Kiln's C decoder;
// OTLP/HTTP and OTLP/gRPC (@grpc/grpc-js) clients; google.rpc.Status and
// RetryInfo decoding; rebasing the fixture's timestamps to "now".
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import grpc from '@grpc/grpc-js';
import { TESTDATA } from './env.mjs';
import { startServer } from './server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
export const PROTO_DIR = path.resolve(here, '../proto');
export const OTLP_DIR = path.join(TESTDATA, 'otlp');
export const FIXTURE_PB = path.join(OTLP_DIR, 'ebpf-profiler-v1.10.pb');
export const FIXTURE_JSON = path.join(OTLP_DIR, 'ebpf-profiler-v1.10.json');
export const HTTP_PATH = '/v1development/profiles';
export const GRPC_SERVICE = 'opentelemetry.proto.collector.profiles.v1development.ProfilesService';
export const GRPC_PATH = `/${GRPC_SERVICE}/Export`;
export const MiB = 1 << 20;

const root = new protobuf.Root();
root.resolvePath = (_origin, target) => path.join(PROTO_DIR, path.basename(target));
root.loadSync(['profiles_service.proto', 'status.proto', 'error_details.proto'].map((f) => path.join(PROTO_DIR, f)));
root.resolveAll();
export const T = {
  Request: root.lookupType('opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest'),
  Response: root.lookupType('opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceResponse'),
  Profile: root.lookupType('opentelemetry.proto.profiles.v1development.Profile'),
  Sample: root.lookupType('opentelemetry.proto.profiles.v1development.Sample'),
  Status: root.lookupType('google.rpc.Status'),
  RetryInfo: root.lookupType('google.rpc.RetryInfo'),
  Any: root.lookupType('google.protobuf.Any'),
};

// --- encode / decode ------------------------------------------------------

// Decoded request as a plain object: 64-bit integers as decimal strings,
// bytes as Buffers, repeated fields always present (possibly empty).
export function decodeRequest(buf) {
  return T.Request.toObject(T.Request.decode(buf), { longs: String, arrays: true, defaults: false });
}

export function encodeRequest(obj) {
  const err = T.Request.verify(T.Request.fromObject(obj));
  if (err) throw new Error(`encodeRequest: ${err}`);
  return Buffer.from(T.Request.encode(T.Request.fromObject(obj)).finish());
}

export function decodeResponse(buf) {
  return T.Response.toObject(T.Response.decode(buf), { longs: String, defaults: false });
}

export function encodeResponse(obj) {
  return Buffer.from(T.Response.encode(T.Response.fromObject(obj)).finish());
}

const TYPE_URL_RETRY = 'type.googleapis.com/google.rpc.RetryInfo';

// google.rpc.Status bytes → {code, message, details:[{typeUrl, value, retryDelay?}]}
export function decodeStatus(buf) {
  const s = T.Status.toObject(T.Status.decode(buf), { longs: String, arrays: true, defaults: true });
  for (const d of s.details) {
    if (d.typeUrl === TYPE_URL_RETRY) {
      const ri = T.RetryInfo.toObject(T.RetryInfo.decode(d.value), { longs: String, defaults: true });
      const rd = ri.retryDelay ?? { seconds: '0', nanos: 0 };
      d.retryDelaySeconds = Number(rd.seconds) + (rd.nanos ?? 0) / 1e9;
    }
  }
  return s;
}

export function encodeStatus(obj) {
  return Buffer.from(T.Status.encode(T.Status.fromObject(obj)).finish());
}

export function encodeRetryInfo(seconds, nanos = 0) {
  return Buffer.from(T.RetryInfo.encode(T.RetryInfo.fromObject({ retryDelay: { seconds, nanos } })).finish());
}

export const RETRY_INFO_TYPE_URL = TYPE_URL_RETRY;

// --- rebasing -------------------------------------------------------------

// Every time in a decoded request: profiles' time_unix_nano and samples'
// timestamps_unix_nano. Returns [min, max] as BigInt (ignoring zeros).
export function timeRange(req) {
  let lo = null;
  let hi = null;
  const see = (s) => {
    const v = BigInt(s);
    if (v === 0n) return;
    if (lo === null || v < lo) lo = v;
    if (hi === null || v > hi) hi = v;
  };
  forEachProfile(req, (p) => {
    if (p.timeUnixNano !== undefined) see(p.timeUnixNano);
    for (const s of p.samples ?? []) for (const t of s.timestampsUnixNano ?? []) see(t);
  });
  return [lo, hi];
}

export function forEachProfile(req, fn) {
  (req.resourceProfiles ?? []).forEach((rp, ri) => (rp.scopeProfiles ?? []).forEach((sp, si) => (sp.profiles ?? []).forEach((p, pi) => fn(p, { rp, sp, ri, si, pi }))));
}

// Shifts every non-zero time by delta nanoseconds (BigInt); returns a copy.
export function shiftTimes(req, delta) {
  const out = structuredClone(req);
  const sh = (s) => (BigInt(s) === 0n ? s : (BigInt(s) + delta).toString());
  forEachProfile(out, (p) => {
    if (p.timeUnixNano !== undefined) p.timeUnixNano = sh(p.timeUnixNano);
    for (const s of p.samples ?? []) if (s.timestampsUnixNano) s.timestampsUnixNano = s.timestampsUnixNano.map(sh);
  });
  return out;
}

// The delta that moves the request's latest time to now - agoS seconds.
export function rebaseDelta(req, agoS = 60) {
  const [, hi] = timeRange(req);
  return BigInt(Date.now() - agoS * 1000) * 1000000n - hi;
}

// The same shift on the OTLP/JSON text: timeUnixNano and timestampsUnixNano
// are decimal strings (64-bit integers in OTLP/JSON).
export function shiftJson(obj, delta) {
  const sh = (s) => (BigInt(s) === 0n ? s : (BigInt(s) + delta).toString());
  const walk = (o) => {
    if (Array.isArray(o)) { o.forEach(walk); return; }
    if (!o || typeof o !== 'object') return;
    for (const [k, v] of Object.entries(o)) {
      if (k === 'timeUnixNano') o[k] = sh(v);
      else if (k === 'timestampsUnixNano') o[k] = v.map(sh);
      else walk(v);
    }
  };
  const out = structuredClone(obj);
  walk(out);
  return out;
}

// The fixture, decoded and rebased so its last sample is agoS seconds ago.
export function loadFixture(agoS = 60) {
  const raw = fs.readFileSync(FIXTURE_PB);
  const req = decodeRequest(raw);
  const delta = rebaseDelta(req, agoS);
  const rebased = shiftTimes(req, delta);
  const json = shiftJson(JSON.parse(fs.readFileSync(FIXTURE_JSON, 'utf8')), delta);
  return { raw, original: req, req: rebased, pb: encodeRequest(rebased), json, delta };
}

// --- content encodings ----------------------------------------------------

export function hasZstdCli() {
  return spawnSync('zstd', ['--version'], { stdio: 'ignore' }).status === 0;
}

export function compress(buf, enc) {
  switch (enc) {
    case undefined: case null: case 'identity': return buf;
    case 'gzip': return zlib.gzipSync(buf);
    case 'deflate': return zlib.deflateSync(buf); // HTTP "deflate" = zlib stream
    case 'zstd': {
      if (typeof zlib.zstdCompressSync === 'function') return zlib.zstdCompressSync(buf);
      const r = spawnSync('zstd', ['-q', '-c', '-3'], { input: buf, maxBuffer: 256 * MiB });
      if (r.status !== 0) throw new Error(`zstd CLI failed: ${r.stderr}`);
      return r.stdout;
    }
    default: throw new Error(`unknown encoding ${enc}`);
  }
}

// --- OTLP/HTTP ------------------------------------------------------------

// POST body (already encoded/compressed) to the OTLP/HTTP listener.
// opts: {contentType, encoding (header only), method, headers, path}
// Returns {status, headers, contentType, buf, text, json, response, rpcStatus,
// parseError}: response = decoded ExportProfilesServiceResponse on 200,
// rpcStatus = decoded google.rpc.Status on errors (protobuf or JSON).
export async function postOtlp(server, body, opts = {}) {
  const headers = { 'content-type': opts.contentType ?? 'application/x-protobuf', ...(opts.headers ?? {}) };
  if (opts.encoding) headers['content-encoding'] = opts.encoding;
  const method = opts.method ?? 'POST';
  const res = await fetch(`${server.urls.otlp_http}${opts.path ?? HTTP_PATH}`, {
    method,
    body: method === 'GET' || method === 'HEAD' ? undefined : body,
    headers,
    signal: AbortSignal.timeout(opts.timeoutMs ?? 120000),
  });
  return parseOtlpReply(res.status, res.headers, Buffer.from(await res.arrayBuffer()));
}

export function parseOtlpReply(status, headers, buf) {
  const get = (k) => (typeof headers.get === 'function' ? headers.get(k) : headers[k]);
  const contentType = (get('content-type') ?? '').split(';')[0].trim().toLowerCase();
  const out = { status, headers, contentType, buf, text: buf.toString('utf8'), json: undefined, response: undefined, rpcStatus: undefined, parseError: undefined };
  try {
    if (contentType === 'application/json') {
      out.json = JSON.parse(out.text);
      if (status === 200) out.response = out.json;
      else out.rpcStatus = out.json;
    } else if (contentType === 'application/x-protobuf') {
      if (status === 200) out.response = decodeResponse(buf);
      else out.rpcStatus = decodeStatus(buf);
    } else {
      out.parseError = `unexpected content-type ${JSON.stringify(contentType)}`;
    }
  } catch (e) {
    out.parseError = `${contentType} body does not parse: ${e.message}`;
  }
  return out;
}

// Short description for assertion messages.
export function describe(r) {
  const body = r.rpcStatus ? JSON.stringify(r.rpcStatus) : r.response ? JSON.stringify(r.response) : JSON.stringify(r.text.slice(0, 400));
  return `HTTP ${r.status} (${r.contentType || 'no content-type'}) ${body}${r.parseError ? ` [${r.parseError}]` : ''}`;
}

export function sendPb(server, req, encoding) {
  const buf = Buffer.isBuffer(req) ? req : encodeRequest(req);
  return postOtlp(server, compress(buf, encoding), { encoding });
}

export function sendJson(server, obj, encoding) {
  const buf = Buffer.from(typeof obj === 'string' ? obj : JSON.stringify(obj));
  return postOtlp(server, compress(buf, encoding), { encoding, contentType: 'application/json' });
}

// rejected_profiles of a 200 reply (protobuf or JSON), as a Number.
export function rejectedOf(r) {
  const ps = r.response?.partialSuccess;
  return ps ? Number(ps.rejectedProfiles ?? 0) : 0;
}

// --- OTLP/gRPC ------------------------------------------------------------

const rawSer = (b) => b;
const rawDes = (b) => b;

// A grpc-js client for ProfilesService whose Export takes and returns raw
// bytes (so deliberately broken messages can be sent). method: method name.
export function grpcClient(server, opts = {}) {
  const methods = {};
  for (const m of opts.methods ?? ['Export']) {
    methods[m] = {
      path: `/${opts.service ?? GRPC_SERVICE}/${m}`,
      requestStream: false, responseStream: false,
      requestSerialize: rawSer, requestDeserialize: rawDes,
      responseSerialize: rawSer, responseDeserialize: rawDes,
    };
  }
  const Ctor = grpc.makeGenericClientConstructor(methods, 'ProfilesService');
  const addr = server.urls.otlp_grpc.replace(/^http:\/\//, '');
  return new Ctor(addr, grpc.credentials.createInsecure(), {
    'grpc.max_send_message_length': 256 * MiB,
    'grpc.max_receive_message_length': 64 * MiB,
    ...(opts.channelOptions ?? {}),
  });
}

// Unary call; resolves {ok, code, details, metadata, response, statusDetails}
// (never rejects for a gRPC status). statusDetails = decoded
// grpc-status-details-bin (google.rpc.Status with RetryInfo decoded).
export function grpcCall(client, method, buf, opts = {}) {
  return new Promise((resolve) => {
    const deadline = new Date(Date.now() + (opts.timeoutMs ?? 120000));
    client[method](buf, new grpc.Metadata(), { deadline }, (err, resp) => {
      if (!err) { resolve({ ok: true, code: 0, response: decodeResponse(resp), raw: resp }); return; }
      resolve({ ok: false, code: err.code, codeName: grpc.status[err.code], details: err.details, metadata: err.metadata, statusDetails: statusDetailsOf(err.metadata) });
    });
  });
}

export function grpcExport(client, req, opts) {
  return grpcCall(client, 'Export', Buffer.isBuffer(req) ? req : encodeRequest(req), opts);
}

export function statusDetailsOf(md) {
  const v = md?.get?.('grpc-status-details-bin');
  if (!v || v.length === 0) return undefined;
  const b = Buffer.isBuffer(v[0]) ? v[0] : Buffer.from(String(v[0]), 'base64');
  return decodeStatus(b);
}

export function describeGrpc(r) {
  if (r.ok) return `OK ${JSON.stringify(r.response)}`;
  return `${r.codeName ?? r.code} ${JSON.stringify(r.details)}${r.statusDetails ? ` details=${JSON.stringify(r.statusDetails)}` : ''}`;
}

export { grpc };

// --- server ---------------------------------------------------------------

// kiln serve with all four listeners on port 0.
export function startOtlpServer(opts = {}) {
  return startServer({ ...opts, otlp: true, listeners: ['upload', 'ui', 'otlp_http', 'otlp_grpc'] });
}
