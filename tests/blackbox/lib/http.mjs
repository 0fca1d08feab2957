// HTTP helpers: upload pprof bodies, read the JSON query API.
import http from 'node:http';

function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params ?? {})) {
    if (v === undefined || v === null) continue;
    u.append(k, String(v));
  }
  const s = u.toString();
  return s ? `?${s}` : '';
}

async function readResponse(res) {
  const buf = Buffer.from(await res.arrayBuffer());
  const text = buf.toString('utf8');
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, headers: res.headers, buf, text, json };
}

// POST body to the upload listener. params: query parameters (serviceName, …).
export async function upload(server, body, params = {}, headers = {}, opts = {}) {
  const url = `${server.uploadUrl}${opts.path ?? '/profiling/upload'}${qs(params)}`;
  const res = await fetch(url, {
    method: opts.method ?? 'POST',
    body: opts.method === 'GET' ? undefined : body,
    headers: { 'content-type': 'application/octet-stream', ...headers },
    signal: AbortSignal.timeout(opts.timeoutMs ?? 60000),
  });
  return readResponse(res);
}

// GET on base + path with params; returns {status, json, text, buf}.
export async function get(base, path, params = {}, opts = {}) {
  const res = await fetch(`${base}${path}${qs(params)}`, { signal: AbortSignal.timeout(opts.timeoutMs ?? 60000) });
  return readResponse(res);
}

// GET that must answer 200 with JSON; throws a descriptive error otherwise.
export async function getJson(base, path, params = {}) {
  const r = await get(base, path, params);
  if (r.status !== 200 || r.json === undefined) {
    throw new Error(`GET ${path}${qs(params)} → ${r.status}: ${r.text.slice(0, 500)}`);
  }
  return r.json;
}

// Raw request with node:http, for bodies fetch cannot express (chunked with
// no Content-Length, a Content-Length larger than what we send, …).
//   opts = { method, path, headers, chunks: async iterator/array of Buffers,
//            endAfterChunks: true, waitMs }
// Resolves with {status, text, json, sentBytes, error} as soon as a complete
// response arrived; write errors after the response (EPIPE/ECONNRESET: the
// server closed before reading the rest) are recorded, not thrown.
export function rawRequest(baseUrl, opts) {
  const u = new URL(opts.path, baseUrl);
  return new Promise((resolve, reject) => {
    let sentBytes = 0;
    let done = false;
    let writeError = null;
    const timer = setTimeout(() => {
      if (done) return;
      done = true;
      req.destroy();
      reject(new Error(`no response within ${opts.waitMs ?? 30000} ms (sent ${sentBytes} bytes${writeError ? `, write error ${writeError.code}` : ''})`));
    }, opts.waitMs ?? 30000);
    const req = http.request({
      host: u.hostname, port: u.port, path: u.pathname + u.search,
      method: opts.method ?? 'POST', headers: opts.headers ?? {},
      agent: false,
    });
    req.on('response', (res) => {
      const parts = [];
      res.on('data', (d) => parts.push(d));
      res.on('end', () => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        const text = Buffer.concat(parts).toString('utf8');
        let json;
        try { json = JSON.parse(text); } catch { json = undefined; }
        resolve({ status: res.statusCode, headers: res.headers, text, json, sentBytes, writeError });
        req.destroy();
      });
      res.on('error', () => { /* closed after headers; handled by end/timeout */ });
    });
    req.on('error', (e) => {
      // EPIPE / ECONNRESET while we were still writing: the server answered
      // (or is about to) and closed. Wait for the response or the timeout.
      writeError = e;
      if (!['EPIPE', 'ECONNRESET'].includes(e.code) && !done) {
        done = true;
        clearTimeout(timer);
        reject(e);
      }
    });
    (async () => {
      for await (const c of opts.chunks ?? []) {
        if (done || writeError) return;
        sentBytes += c.length;
        const ok = req.write(c);
        if (!ok) await new Promise((r) => { req.once('drain', r); req.once('close', r); });
      }
      if (opts.endAfterChunks !== false && !done && !writeError) req.end();
    })().catch((e) => { writeError = e; });
  });
}

// The services list over a wide window (so nothing is missed at the edges).
export async function services(server, params = {}) {
  const now = Math.floor(Date.now() / 1000);
  const j = await getJson(server.uiUrl, '/api/services', { from: now - 7200, until: now + 3600, ...params });
  if (!Array.isArray(j.services)) throw new Error(`/api/services: no "services" array: ${JSON.stringify(j).slice(0, 300)}`);
  return j.services;
}

export async function serviceNames(server) {
  return new Set((await services(server)).map((s) => s.name));
}

// Query window around "now" used by tests that upload without from/until.
export function wideWindow() {
  const now = Math.floor(Date.now() / 1000);
  return { from: now - 3600, until: now + 600 };
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
