// Starts the real build/kiln on a temp data dir with port-0 listeners and
// finds the ports from its logfmt "msg=listening" lines (race-free: the
// kernel picks the port, the server tells us which).
//
// Store engine: the embedded one, unless KILN_TEST_ENGINE=clickhouse (the
// second pass of tests/run-blackbox.sh) or opts.engine 'clickhouse' — then
// the config gets a `store:` block for the ClickHouse at opts.clickhouseUrl
// (default env KILN_TEST_CLICKHOUSE_URL) and a database of its own, so
// servers never see each other's data — except a server started again on
// the same data dir, which gets the database it had (as the embedded store
// keeps its files), so restart tests mean the same under both engines.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { KILN_BIN, mkTemp } from './env.mjs';
import { chQuery } from './clickhouse.mjs';

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

export const TEST_ENGINE = process.env.KILN_TEST_ENGINE || 'local';

// For a check that only makes sense on the embedded store (it reads the
// SQLite files under --data): the node:test `skip` option, e.g.
//   test('…', { skip: embeddedOnly('the partition files under DATA') }, …)
// false under the embedded engine, the reason under another.
export function embeddedOnly(why) {
  return TEST_ENGINE === 'local' ? false : `embedded engine only: ${why} (KILN_TEST_ENGINE=${TEST_ENGINE})`;
}

// A database name no other server of any test process uses.
let dbSeq = 0;
export function freshDatabase() {
  dbSeq++;
  return `kiln_t_${process.pid}_${dbSeq}_${Math.random().toString(36).slice(2, 8)}`;
}
const databaseOfDataDir = new Map();

// The `store:` block of a ClickHouse-backed server.
export function clickhouseStoreYaml({ url, database, user = 'default', password = '', cluster } = {}) {
  return ['store:', '  engine: clickhouse', `  url: ${JSON.stringify(url)}`, `  database: ${database}`,
    `  user: ${user}`, `  password: ${JSON.stringify(password)}`, ...(cluster ? [`  cluster: ${cluster}`] : []), ''].join('\n');
}

// → {config, engine, database}: the test's config with a store block for
// opts.engine (or KILN_TEST_ENGINE) added. A config that has its own
// top-level `store:` keeps it (YAML refuses a second one); its engine and
// database are read from it.
function withStore(config, opts, dataDir) {
  if (/^store\s*:/m.test(config)) {
    const block = config.slice(config.search(/^store\s*:/m)).split(/\n(?=\S)/)[0];
    const field = (k) => new RegExp(`\\b${k}\\s*:\\s*["']?([^"'\\s,}]+)`).exec(block)?.[1];
    const engine = field('engine') ?? 'local';
    if (engine !== 'clickhouse') return { config, engine, database: undefined };
    return { config, engine, database: field('database') ?? 'kiln', clickhouseUrl: field('url') ?? 'http://127.0.0.1:8123' };
  }
  const engine = opts.engine ?? TEST_ENGINE;
  if (engine !== 'clickhouse') return { config, engine: 'local', database: undefined };
  const url = opts.clickhouseUrl ?? process.env.KILN_TEST_CLICKHOUSE_URL;
  if (!url) throw new Error('startServer: engine clickhouse needs opts.clickhouseUrl or env KILN_TEST_CLICKHOUSE_URL (lib/clickhouse.mjs starts one)');
  const database = opts.database ?? databaseOfDataDir.get(dataDir) ?? freshDatabase();
  databaseOfDataDir.set(dataDir, database);
  const auth = { user: opts.clickhouseUser ?? 'default', password: opts.clickhousePassword ?? '' };
  const sep = config === '' || config.endsWith('\n') ? '' : '\n';
  return { config: `${config}${sep}${clickhouseStoreYaml({ url, database, ...auth })}`, engine, database, clickhouseUrl: url, clickhouseAuth: auth };
}

// How the CLI (kiln keys, kiln usage) reaches the store of a server on
// dataDir: ['--data', dataDir] on the embedded engine; under engine
// clickhouse (opts as startServer's), ['--config', FILE] with the same store
// block — the same database that server gets — since keys and usage live in
// ClickHouse then.
export function cliStoreArgs(dataDir, opts = {}) {
  const store = withStore('', opts, path.resolve(dataDir));
  if (store.engine !== 'clickhouse') return ['--data', dataDir];
  const f = path.join(mkTemp('config'), 'kiln.yaml');
  fs.writeFileSync(f, `data: ${JSON.stringify(dataDir)}\n${store.config}`);
  return ['--config', f];
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
// engine ('local' | 'clickhouse'; default env KILN_TEST_ENGINE or local),
// clickhouseUrl, database, clickhouseUser, clickhousePassword: the store
// (see the top of this file).
// Returns { proc, dataDir, uiUrl, uploadUrl, urls, configFile, engine, database,
//           stderr(), stop(), kill9(), exited }
export async function startServer(opts = {}) {
  const dataDir = opts.dataDir ?? mkTemp('data');
  const want = opts.listeners ?? ['upload', 'ui'];
  // Without a config of its own, a test server gets a rate limit far above
  // what any test sends: unauthenticated traffic is rate-limited under the key
  // "default" (OPS: Projects and keys) at 20,000 samples/s, and only the rate-limit tests
  // are about that.
  const store = withStore(opts.config ?? 'limits: {samplesPerSecond: 1000000000}\n', opts, path.resolve(dataDir));
  const { config } = store;
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
    if (store.engine === 'clickhouse' && opts.checkStore !== false) await awaitDatabase(store, () => errText);
  } catch (e) {
    try { proc.kill('SIGKILL'); } catch { /* already gone */ }
    throw e;
  }

  const server = {
    proc, dataDir, urls, exited, configFile,
    engine: store.engine, database: store.database, clickhouseUrl: store.clickhouseUrl,
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

// A kiln told to use ClickHouse creates its database (CREATE DATABASE IF
// NOT EXISTS) once it reaches ClickHouse; a kiln that ignored the store
// block would pass every test on its embedded store instead, so wait for
// the database to be there (pass checkStore: false when ClickHouse is
// deliberately unreachable).
async function awaitDatabase(store, stderr, timeoutMs = 15000) {
  const sql = `SELECT count() FROM system.databases WHERE name = '${store.database}'`;
  const t0 = Date.now();
  let last = '';
  for (;;) {
    try {
      if ((await chQuery(store.clickhouseUrl, sql, { ...store.clickhouseAuth, timeoutMs: 5000 })).trim() === '1') return;
      last = 'not there';
    } catch (e) { last = e.message; }
    if (Date.now() - t0 > timeoutMs) {
      throw new Error(`kiln serve (store engine clickhouse, url ${store.clickhouseUrl}) did not create database ${store.database} within ${timeoutMs} ms (${last}); is the store block ignored?\nstderr:\n${tail(stderr(), 20)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

// Keeps the last lines of stderr for assertion messages.
export function tail(text, n = 30) {
  return text.split('\n').slice(-n).join('\n');
}
