// A real ClickHouse cluster for the tests of kiln's `store.cluster` mode
// (issue 8, OPS: Storage): one standalone ZooKeeper (Debian's `zookeeper`, run
// as a plain java process; ON CLUSTER DDL and Replicated* tables need it)
// and N clickhouse-server processes (Debian's 18.16), each its own shard of
// one replica, all on loopback with their data in a temporary directory and
// ports that were free a moment before.
//
//   const why = clusterUnavailable();      // null, or why it cannot run here
//   const c = await startCluster();        // {name, replicatedName, zk: {port}, servers: [{url, httpPort, tcpPort, query(sql)}], stop()}
//
// Every process this module starts dies with the test process (parent-death
// signal via setpriv, and an exit hook), and c.stop() stops them all.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { mkTemp } from './env.mjs';
import { CLICKHOUSE_BIN, freePort, chQuery, configXml } from './clickhouse.mjs';

export { CLICKHOUSE_BIN, freePort, chQuery };

export const ZOOKEEPER_JAR = process.env.KILN_ZOOKEEPER_JAR || '/usr/share/java/zookeeper.jar';
const JAVA = process.env.KILN_JAVA || 'java';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function onPath(cmd) {
  return spawnSync('sh', ['-c', `command -v "$1"`, 'sh', cmd], { stdio: 'ignore' }).status === 0;
}

// null when ZooKeeper and clickhouse-server can run here, else the reason
// (a test skips itself with it).
export function clusterUnavailable() {
  if (!fs.existsSync(ZOOKEEPER_JAR)) return `ZooKeeper is not installed (${ZOOKEEPER_JAR} missing; Debian package "zookeeper")`;
  if (!onPath(JAVA)) return `java is not installed (Debian package "default-jre-headless", a dependency of "zookeeper")`;
  if (!onPath(CLICKHOUSE_BIN)) return `${CLICKHOUSE_BIN} is not installed (Debian package "clickhouse-server")`;
  return null;
}

const PDEATHSIG = spawnSync('setpriv', ['--pdeathsig', 'KILL', 'true'], { stdio: 'ignore' }).status === 0;
const running = new Set();
process.on('exit', () => { for (const p of running) { try { p.kill('SIGKILL'); } catch { /* gone */ } } });

function tailOf(file, n) {
  try { return fs.readFileSync(file, 'utf8').split('\n').slice(-n).join('\n'); } catch { return `(no ${path.basename(file)})`; }
}

// Spawns cmd with its output appended to logFile; {proc, exited, stop()}.
function spawnLogged(cmd, args, logFile, cwd) {
  const out = fs.openSync(logFile, 'a');
  const [c, a] = PDEATHSIG ? ['setpriv', ['--pdeathsig', 'KILL', cmd, ...args]] : [cmd, args];
  const proc = spawn(c, a, { cwd, stdio: ['ignore', out, out] });
  fs.closeSync(out);
  running.add(proc);
  const exited = new Promise((resolve) => {
    proc.on('exit', (code, signal) => { running.delete(proc); resolve({ code, signal }); });
    proc.on('error', (e) => { running.delete(proc); resolve({ code: null, signal: null, error: e.message }); });
  });
  let gone = null;
  exited.then((e) => { gone = e; });
  return {
    proc, exited,
    gone: () => gone,
    async stop(timeoutMs = 20000) {
      if (gone) return gone;
      proc.kill('SIGTERM');
      const t = setTimeout(() => { try { proc.kill('SIGKILL'); } catch { /* gone */ } }, timeoutMs);
      const e = await exited;
      clearTimeout(t);
      return e;
    },
  };
}

// Polls probe() until it resolves true; throws after timeoutMs or when the
// process exits first, with the log tail.
async function waitFor(what, p, probe, logFile, timeoutMs) {
  const t0 = Date.now();
  for (;;) {
    try { if (await probe()) return Date.now() - t0; } catch { /* not yet */ }
    if (p.gone()) throw Object.assign(new Error(`${what} exited while starting (${JSON.stringify(p.gone())})\n--- ${logFile}:\n${tailOf(logFile, 40)}`), { exitedEarly: true, log: tailOf(logFile, 200) });
    if (Date.now() - t0 > timeoutMs) {
      await p.stop(1000);
      throw new Error(`${what} not ready within ${timeoutMs} ms\n--- ${logFile}:\n${tailOf(logFile, 40)}`);
    }
    await sleep(100);
  }
}

// ZooKeeper's four-letter "ruok" → "imok" when it serves.
function ruok(port) {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    let got = '';
    s.setTimeout(1000, () => s.destroy());
    s.on('connect', () => s.write('ruok'));
    s.on('data', (d) => { got += d; });
    s.on('close', () => resolve(got === 'imok'));
    s.on('error', () => resolve(false));
  });
}

async function startZooKeeper(dir, timeoutMs) {
  const port = await freePort();
  const data = path.join(dir, 'data');
  fs.mkdirSync(data, { recursive: true });
  const conf = path.join(dir, 'zoo.cfg');
  fs.writeFileSync(conf, [
    'tickTime=2000', 'initLimit=10', 'syncLimit=5',
    `dataDir=${data}`, `clientPort=${port}`, 'clientPortAddress=127.0.0.1',
    'admin.enableServer=false', '4lw.commands.whitelist=ruok', '',
  ].join('\n'));
  const log = path.join(dir, 'zookeeper.log');
  // The jar's manifest names its dependencies under /usr/share/java.
  const p = spawnLogged(JAVA, ['-Xmx256m', '-XX:+UseSerialGC', '-cp', ZOOKEEPER_JAR,
    'org.apache.zookeeper.server.quorum.QuorumPeerMain', conf], log, dir);
  const ms = await waitFor('ZooKeeper', p, () => ruok(port), log, timeoutMs);
  return { port, dir, log, startMs: ms, stop: p.stop, gone: p.gone };
}

function serverXml(dir, s, shards, name, zkPort) {
  const shardXml = (ir) => shards.map((x) => `      <shard>${ir ? '<internal_replication>true</internal_replication>' : ''}<replica><host>127.0.0.1</host><port>${x.tcpPort}</port></replica></shard>`).join('\n');
  return configXml(dir, {
    httpPort: s.httpPort,
    tcpPort: s.tcpPort,
    extra: `  <interserver_http_port>${s.interPort}</interserver_http_port>
  <interserver_http_host>127.0.0.1</interserver_http_host>
  <zookeeper><node><host>127.0.0.1</host><port>${zkPort}</port></node></zookeeper>
  <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>
  <remote_servers>
    <${name}>
${shardXml(false)}
    </${name}>
    <${name}_repl>
${shardXml(true)}
    </${name}_repl>
  </remote_servers>
  <macros><shard>${s.shard}</shard><replica>${s.replica}</replica></macros>
`,
  });
}

async function startServers(dir, n, name, zkPort, timeoutMs) {
  const taken = new Set();
  const port = async () => { let q; do q = await freePort(); while (taken.has(q)); taken.add(q); return q; };
  const servers = [];
  for (let i = 0; i < n; i++) {
    const sdir = path.join(dir, `ch${i + 1}`);
    fs.mkdirSync(sdir, { recursive: true });
    servers.push({
      dir: sdir, httpPort: await port(), tcpPort: await port(), interPort: await port(),
      shard: String(i + 1).padStart(2, '0'), replica: `r${i + 1}`,
    });
  }
  for (const s of servers) {
    s.conf = path.join(s.dir, 'config.xml');
    s.log = path.join(s.dir, 'clickhouse-server.err.log');
    fs.writeFileSync(s.conf, serverXml(s.dir, s, servers, name, zkPort));
    s.p = spawnLogged(CLICKHOUSE_BIN, [`--config-file=${s.conf}`], path.join(s.dir, 'stdout.log'), s.dir);
    s.url = `http://127.0.0.1:${s.httpPort}`;
    s.query = (sql, o) => chQuery(s.url, sql, { timeoutMs: 60000, ...o });
  }
  try {
    // Ready: answers, and reaches ZooKeeper (what ON CLUSTER needs).
    await Promise.all(servers.map((s) => waitFor(`clickhouse-server ${s.url}`, s.p,
      async () => (await s.query("SELECT count() FROM system.zookeeper WHERE path = '/'", { timeoutMs: 2000 })).trim() !== '',
      s.log, timeoutMs)));
  } catch (e) {
    await Promise.all(servers.map((s) => s.p.stop(2000)));
    throw e;
  }
  return servers;
}

// opts: { shards (default 2), name (default 'kiln_test'), timeoutMs (each
// start, default 60000), dir }.
// Two cluster definitions over the same shards: `name` (the default
// internal_replication false, for MergeTree tables) and `name_repl`
// (internal_replication true, which ClickHouse requires of the shards of
// Replicated* tables before it runs ALTER … ON CLUSTER on them, Code 371).
// → { name, replicatedName, dir, zk: {port, startMs}, servers: [{url, httpPort, tcpPort,
//     shard, replica, query(sql, {database})}], startMs: {zk, clickhouse},
//     logTail(), stop() }
export async function startCluster(opts = {}) {
  const why = clusterUnavailable();
  if (why) throw new Error(why);
  const name = opts.name ?? 'kiln_test';
  const dir = opts.dir ?? mkTemp('chcluster');
  const timeoutMs = opts.timeoutMs ?? 60000;
  const zk = await startZooKeeper(path.join(dir, 'zk'), timeoutMs);
  let servers;
  const t0 = Date.now();
  try {
    // A port taken between freePort() and the server's bind: new ports.
    for (let attempt = 1; ; attempt++) {
      try {
        servers = await startServers(dir, opts.shards ?? 2, name, zk.port, timeoutMs);
        break;
      } catch (e) {
        if (!e.exitedEarly || !/address already in use/i.test(e.log ?? '') || attempt >= 5) throw e;
      }
    }
  } catch (e) {
    await zk.stop();
    throw e;
  }
  const c = {
    name, replicatedName: `${name}_repl`, dir, servers,
    zk: { port: zk.port },
    startMs: { zk: zk.startMs, clickhouse: Date.now() - t0 },
    logTail: (n = 30) => [
      `--- ${zk.log}:`, tailOf(zk.log, n),
      ...servers.flatMap((s) => [`--- ${s.log}:`, tailOf(s.log, n)]),
    ].join('\n'),
    // Stops every process, then deletes the directory (unless KILN_TEST_KEEP_CLICKHOUSE).
    async stop() {
      await Promise.all(servers.map((s) => s.p.stop()));
      await zk.stop();
      if (!process.env.KILN_TEST_KEEP_CLICKHOUSE && !opts.dir) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  return c;
}
