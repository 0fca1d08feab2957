// Starts the real build/kiln on a temp data dir with port-0 listeners and
// finds the ports from its logfmt "msg=listening" lines (race-free: the
// kernel picks the port, the server tells us which).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { KILN_BIN, mkTemp } from './env.mjs';

// Parses one logfmt line into an object (quoted values supported).
export function parseLogfmt(line) {
  const out = {};
  const re = /([\w.\-]+)=("(?:[^"\\]|\\.)*"|\S*)/g;
  let m;
  while ((m = re.exec(line))) {
    let v = m[2];
    if (v.startsWith('"')) {
      try { v = JSON.parse(v); } catch { v = v.slice(1, -1); }
    }
    out[m[1]] = v;
  }
  return out;
}

function toUrl(addr, scheme = 'http') {
  // "127.0.0.1:40123", "[::]:40123", ":40123", "0.0.0.0:40123" → loopback URL.
  const k = addr.lastIndexOf(':');
  const host = addr.slice(0, k).replace(/^\[|\]$/g, '');
  const port = addr.slice(k + 1);
  const h = host === '' || host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return `${scheme}://${h}:${port}`;
}

// opts: { dataDir, listeners: ['upload','ui'], otlp: false, extraArgs, timeoutMs, env,
//         config, https }
// otlp: true also opens the OTLP/HTTP and OTLP/gRPC listeners on port 0
// (listener names otlp_http, otlp_grpc); otherwise they are off.
// config: YAML text, written to a file in a temp dir and passed as --config
// (before the address flags, which override its listener addrs).
// https: names of listeners configured with TLS: their urls are https://.
// Returns { proc, dataDir, uiUrl, uploadUrl, urls, configFile, stderr(), stop(), kill9(), exited }
export async function startServer(opts = {}) {
  const dataDir = opts.dataDir ?? mkTemp('data');
  const want = opts.listeners ?? ['upload', 'ui'];
  // Without a config of its own, a test server gets a rate limit far above
  // what any test sends: unauthenticated traffic is rate-limited under the key
  // "default" (SPEC S1) at 20,000 samples/s, and only the rate-limit tests
  // are about that.
  const config = opts.config ?? 'limits: {samplesPerSecond: 1000000000}\n';
  const configFile = path.join(mkTemp('config'), 'kiln.yaml');
  fs.writeFileSync(configFile, config);
  const https = new Set(opts.https ?? []);
  const args = [
    'serve', '--config', configFile, '--data', dataDir,
    '--ui', '127.0.0.1:0', '--upload', '127.0.0.1:0',
    '--otlp-http', opts.otlp ? '127.0.0.1:0' : 'off',
    '--otlp-grpc', opts.otlp ? '127.0.0.1:0' : 'off',
    ...(opts.extraArgs ?? []),
  ];
  if (!fs.existsSync(KILN_BIN)) throw new Error(`kiln binary not found: ${KILN_BIN} (run make)`);
  const proc = spawn(KILN_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...(opts.env ?? {}) } });
  let errText = '';
  let outText = '';
  const urls = {};
  let exitInfo = null;
  const exited = new Promise((resolve) => {
    proc.on('exit', (code, signal) => { exitInfo = { code, signal }; resolve(exitInfo); });
  });
  proc.stdout.on('data', (d) => { outText += d; });

  const ready = new Promise((resolve, reject) => {
    let pending = '';
    const timer = setTimeout(() => reject(new Error(
      `kiln serve did not log listening lines for ${want.join(',')} within ${opts.timeoutMs ?? 15000} ms; stderr:\n${errText}`)),
      opts.timeoutMs ?? 15000);
    proc.stderr.on('data', (d) => {
      errText += d;
      if (errText.length > 4 << 20) errText = errText.slice(-(1 << 20));
      pending += d;
      let k;
      while ((k = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, k);
        pending = pending.slice(k + 1);
        if (!/msg=("?)listening\1(\s|$)/.test(line)) continue;
        const f = parseLogfmt(line);
        if (f.listener && f.addr) urls[f.listener] = toUrl(f.addr, https.has(f.listener) ? 'https' : 'http');
        if (want.every((l) => urls[l])) { clearTimeout(timer); resolve(); }
      }
    });
    exited.then((e) => { clearTimeout(timer); reject(new Error(`kiln serve exited early (${JSON.stringify(e)}); stderr:\n${errText}`)); });
    proc.on('error', (e) => { clearTimeout(timer); reject(e); });
  });
  try {
    await ready;
  } catch (e) {
    try { proc.kill('SIGKILL'); } catch { /* already gone */ }
    throw e;
  }

  const server = {
    proc, dataDir, urls, exited, configFile,
    uiUrl: urls.ui,
    uploadUrl: urls.upload,
    pid: proc.pid,
    stderr: () => errText,
    stdout: () => outText,
    exitInfo: () => exitInfo,
    // SIGTERM; resolves with {code, signal}. Kills hard after timeoutMs.
    async stop(timeoutMs = 10000) {
      if (exitInfo) return exitInfo;
      proc.kill('SIGTERM');
      const t = setTimeout(() => { try { proc.kill('SIGKILL'); } catch { /* gone */ } }, timeoutMs);
      const e = await exited;
      clearTimeout(t);
      return e;
    },
    async kill9() {
      if (exitInfo) return exitInfo;
      proc.kill('SIGKILL');
      return exited;
    },
  };
  return server;
}

// Keeps the last lines of stderr for assertion messages.
export function tail(text, n = 30) {
  return text.split('\n').slice(-n).join('\n');
}
