// A real ClickHouse for the tests of the ClickHouse store engine (issue 8,
// OPS: Storage): Debian's clickhouse-server (18.16, scripts/deps.sh) started as
// the current user on loopback, with its data, temp files and logs in a
// temporary directory and ports that were free a moment before (a collision
// is retried with new ports).
//
//   const ch = await startClickHouse();       // {url, httpPort, tcpPort, dir, query(sql), stop(), kill(), restart(), logTail()}
//
// With env KILN_TEST_CLICKHOUSE_URL set (tests/run-blackbox.sh starts one
// server for the whole ClickHouse pass), startClickHouse() returns a handle
// on that server instead; stop() then leaves it running. Tests that must
// stop or kill ClickHouse ask for one of their own: startClickHouse({own: true}).
// A server this module started is killed when the test process exits
// (parent-death signal via setpriv, and an exit hook).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { mkTemp } from './env.mjs';

export const CLICKHOUSE_BIN = process.env.KILN_CLICKHOUSE_BIN || 'clickhouse-server';
export const SHARED_URL = process.env.KILN_TEST_CLICKHOUSE_URL || '';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A port nobody listened on a moment ago (the kernel's choice for port 0).
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// Runs sql over the HTTP interface of url; resolves with the answer text,
// throws with ClickHouse's message on any other status than 200.
// opts: {database, user, password, timeoutMs}
export async function chQuery(url, sql, opts = {}) {
  const u = new URL(url);
  if (opts.database) u.searchParams.set('database', opts.database);
  if (opts.user !== undefined) u.searchParams.set('user', opts.user);
  if (opts.password !== undefined) u.searchParams.set('password', opts.password);
  const res = await fetch(u, { method: 'POST', body: sql, signal: AbortSignal.timeout(opts.timeoutMs ?? 30000) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`ClickHouse ${url}: ${sql.slice(0, 200)} → HTTP ${res.status}: ${text.slice(0, 1000)}`);
  return text;
}

const xmlText = (v) => String(v).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

// users.xml with the given users ({name: password}), all from loopback,
// with Debian's default profile and an unlimited quota.
function usersXml(users) {
  const u = Object.entries(users).map(([name, pw]) => `    <${name}>
      <password>${xmlText(pw)}</password>
      <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
    </${name}>`).join('\n');
  return `<?xml version="1.0"?>
<!-- written by tests/blackbox/lib/clickhouse.mjs -->
<yandex>
  <profiles><default><max_memory_usage>10000000000</max_memory_usage></default></profiles>
  <users>
${u}
  </users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>
</yandex>
`;
}

// A clickhouse-server config: loopback, ports, everything under dir,
// small caches, quick shutdown; extra: more XML inside <yandex> (a cluster's
// ZooKeeper, remote_servers, macros — lib/chcluster.mjs).
export function configXml(dir, { httpPort, tcpPort, timezone, usersFile = '/etc/clickhouse-server/users.xml', extra = '' }) {
  const p = (x) => path.join(dir, x) + (x.endsWith('.log') ? '' : '/');
  return `<?xml version="1.0"?>
<!-- written by tests/blackbox/lib/clickhouse.mjs -->
<yandex>
  <logger>
    <level>warning</level>
    <log>${p('clickhouse-server.log')}</log>
    <errorlog>${p('clickhouse-server.err.log')}</errorlog>
    <size>10M</size>
    <count>1</count>
  </logger>
  <http_port>${httpPort}</http_port>
  <tcp_port>${tcpPort}</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>${p('data')}</path>
  <tmp_path>${p('tmp')}</tmp_path>
  <user_files_path>${p('user_files')}</user_files_path>
  <format_schema_path>${p('format_schemas')}</format_schema_path>
  <users_config>${usersFile}</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>5368709</mark_cache_size>
  <uncompressed_cache_size>5368709</uncompressed_cache_size>
  <max_concurrent_queries>100</max_concurrent_queries>
  <keep_alive_timeout>1</keep_alive_timeout>
  <shutdown_wait_unfinished>1</shutdown_wait_unfinished>${timezone ? `\n  <timezone>${timezone}</timezone>` : ''}
${extra}</yandex>
`;
}

// The server dies with the process that started it, however that process
// ends (setpriv is util-linux; without it the exit hook below still runs).
const PDEATHSIG = spawnSync('setpriv', ['--pdeathsig', 'KILL', 'true'], { stdio: 'ignore' }).status === 0;
const running = new Set();
process.on('exit', () => { for (const p of running) { try { p.kill('SIGKILL'); } catch { /* gone */ } } });

function tailOf(file, n) {
  try { return fs.readFileSync(file, 'utf8').split('\n').slice(-n).join('\n'); } catch { return `(no ${path.basename(file)})`; }
}

// opts: { own: true (never the shared server), timezone ('UTC', 'Asia/Kolkata' …;
//         default: the machine's), timeoutMs (ready wait, default 30000), dir,
//         users: {name: password} (default: Debian's users.xml, user default
//         without password), auth: {user, password} (what this module's own
//         queries use; needed when users gives default a password) }
export async function startClickHouse(opts = {}) {
  if (SHARED_URL && !opts.own) return sharedHandle(SHARED_URL);
  const dir = opts.dir ?? mkTemp('clickhouse');
  const confFile = path.join(dir, 'config.xml');
  const timeoutMs = opts.timeoutMs ?? 30000;
  const auth = opts.auth ?? {};
  let usersFile = '/etc/clickhouse-server/users.xml';
  if (opts.users) {
    usersFile = path.join(dir, 'users.xml');
    fs.writeFileSync(usersFile, usersXml(opts.users));
  }
  let proc = null;
  let exited = null;
  let out = '';
  let httpPort = 0;
  let tcpPort = 0;

  const logTail = (n = 30) => [
    `--- ${dir}/clickhouse-server.err.log:`, tailOf(path.join(dir, 'clickhouse-server.err.log'), n),
    '--- stdout/stderr:', out.split('\n').slice(-n).join('\n'),
  ].join('\n');

  function spawnServer() {
    const args = [`--config-file=${confFile}`];
    const [cmd, argv] = PDEATHSIG ? ['setpriv', ['--pdeathsig', 'KILL', CLICKHOUSE_BIN, ...args]] : [CLICKHOUSE_BIN, args];
    out = '';
    const p = spawn(cmd, argv, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    p.stdout.on('data', (d) => { out = (out + d).slice(-65536); });
    p.stderr.on('data', (d) => { out = (out + d).slice(-65536); });
    running.add(p);
    exited = new Promise((resolve) => {
      p.on('exit', (code, signal) => { running.delete(p); resolve({ code, signal }); });
      p.on('error', (e) => { running.delete(p); resolve({ code: null, signal: null, error: e.message }); });
    });
    proc = p;
  }

  // Polls SELECT 1 until it answers; rejects when the process exits first
  // or after timeoutMs, with the log tail.
  async function waitReady() {
    const url = `http://127.0.0.1:${httpPort}/`;
    const t0 = Date.now();
    let gone = null;
    exited.then((e) => { gone = e; });
    for (;;) {
      try {
        if ((await chQuery(url, 'SELECT 1', { ...auth, timeoutMs: 2000 })).trim() === '1') return;
      } catch { /* not yet */ }
      if (gone) throw Object.assign(new Error(`clickhouse-server exited while starting (${JSON.stringify(gone)})\n${logTail()}`), { exitedEarly: true });
      if (Date.now() - t0 > timeoutMs) {
        try { proc.kill('SIGKILL'); } catch { /* gone */ }
        throw new Error(`clickhouse-server did not answer SELECT 1 on ${url} within ${timeoutMs} ms\n${logTail()}`);
      }
      await sleep(100);
    }
  }

  // First start: fresh ports, retried when one was taken in the meantime.
  for (let attempt = 1; ; attempt++) {
    httpPort = await freePort();
    do tcpPort = await freePort(); while (tcpPort === httpPort);
    fs.writeFileSync(confFile, configXml(dir, { httpPort, tcpPort, timezone: opts.timezone, usersFile }));
    spawnServer();
    try {
      await waitReady();
      break;
    } catch (e) {
      const collided = /address already in use|Net Exception: Address/i.test(logTail(200));
      if (!e.exitedEarly || !collided || attempt >= 5) throw e;
    }
  }

  const url = `http://127.0.0.1:${httpPort}`;
  const ch = {
    url, httpPort, tcpPort, dir, shared: false,
    pid: () => proc?.pid,
    running: () => proc !== null && running.has(proc),
    logTail,
    query: (sql, o) => chQuery(url, sql, { ...auth, ...o }),
    // SIGTERM and wait (SIGKILL after timeoutMs); resolves {code, signal}.
    async stop(timeoutMs = 30000) {
      if (!proc || !running.has(proc)) return exited;
      proc.kill('SIGTERM');
      const t = setTimeout(() => { try { proc.kill('SIGKILL'); } catch { /* gone */ } }, timeoutMs);
      const e = await exited;
      clearTimeout(t);
      return e;
    },
    async kill() {
      if (!proc || !running.has(proc)) return exited;
      proc.kill('SIGKILL');
      return exited;
    },
    // Starts it again on the same data directory and ports (stops it first
    // if it runs). A port taken by someone else meanwhile is an error.
    async restart() {
      await ch.stop();
      for (let attempt = 1; ; attempt++) {
        spawnServer();
        try {
          await waitReady();
          return ch;
        } catch (e) {
          // A killed server's sockets may linger a moment.
          if (!e.exitedEarly || attempt >= 20) throw e;
          await sleep(250);
        }
      }
    },
    // Stops it and deletes its directory (unless KILN_TEST_KEEP_CLICKHOUSE).
    async destroy() {
      await ch.stop();
      if (!process.env.KILN_TEST_KEEP_CLICKHOUSE) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  return ch;
}

function sharedHandle(url) {
  const u = new URL(url);
  const refuse = (what) => async () => { throw new Error(`${what}: the shared ClickHouse (KILN_TEST_CLICKHOUSE_URL=${url}) is not this test's; use startClickHouse({own: true})`); };
  return {
    url: url.replace(/\/+$/, ''), httpPort: Number(u.port), tcpPort: undefined, dir: undefined, shared: true,
    pid: () => undefined,
    running: () => true,
    logTail: () => `(shared ClickHouse at ${url}: see the log of tests/run-blackbox.sh's launcher)`,
    query: (sql, o) => chQuery(url, sql, o),
    async stop() { return null; },
    async destroy() { return null; },
    kill: refuse('kill'),
    restart: refuse('restart'),
  };
}
