// kiln on a ClickHouse cluster (issue 8, `store.cluster`): a real cluster
// of two clickhouse-server 18.16 shards and one ZooKeeper (lib/chcluster.mjs).
// For each table layout — MergeTree, and `replicated: true`
// (ReplicatedMergeTree on '/clickhouse/tables/{shard}/<db>/<T>') — kiln A
// (store.url = shard 1) and kiln B (store.url = shard 2) share one database:
//   - the schema is created ON CLUSTER: T_local on both shards with the
//     layout's engine, and T a Distributed table over them;
//   - the fixture pprofs, pushed half to A and half to B, land on both shards
//     (count() of samples_local on each), as many rows as the uploads stored;
//   - every /api route of A and of B answers exactly what an embedded kiln
//     fed the same pushes answers, and the flame graph totals are the
//     fixtures' own (go tool pprof -raw);
//   - usage counts every push, also identical ones in separate flushes
//     (which a Replicated* table would drop as retried inserts);
//   - a key created through shard 1 (`kiln keys create --config`) lets a
//     request into B;
//   - after a restart with 14 days of retention, the startup sweep drops the
//     15-day-old (project, day) partitions of every table on both shards,
//     keeps the 13-day-old ones, and A, B and the embedded kiln still agree.
// The replicated layout runs on a cluster definition with
// <internal_replication>true</internal_replication>, which ClickHouse
// requires for ALTER ... ON CLUSTER on Replicated* tables (Code 371).
// Skipped, saying why, where ZooKeeper or clickhouse-server is not installed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { TESTDATA, mkTemp, uniqueName, nowS } from './lib/env.mjs';
import { tail } from './lib/server.mjs';
import { runKiln } from './lib/cli.mjs';
import { oracleForFile } from './lib/pprof.mjs';
import { clusterUnavailable, startCluster } from './lib/chcluster.mjs';
import { stopAll, startTracked, apiAs, uploadAs, brief, sleep, DAY } from './lib/s6.mjs';

const why = clusterUnavailable();
const skip = why ? `${why}: the ClickHouse cluster tests need it` : false;
if (why) console.log(`# clickhouse-cluster: skipped: ${why}`);

const T = nowS();
const RANGE = { from: T - 16 * DAY, until: T + 600 };
const LIMITS = 'limits: {samplesPerSecond: 1000000000}\n';
const RET30 = 'retention: {days: 30, maxDays: 30}\n';
const fixture = (f) => path.join(TESTDATA, 'pprof', f);

// What is pushed: [file, service suffix, seconds before T, kiln (A or B)].
// fib twice into one service (two chunks merged), and on two old days for
// retention (a fixture of many rows: rand() puts some on each shard).
const PUSHES = [
  ['go-cpu-fib.pb.gz', 'fib', 1200, 'A'],
  ['go-cpu-fib.pb.gz', 'fib', 600, 'B'],
  ['go-cpu-span-labels.pb.gz', 'span', 900, 'A'],
  ['go-cpu-two-stacks.pb.gz', 'two', 700, 'B'],
  ['go-heap-delta.pb.gz', 'heap', 800, 'A'],
  ['nodejs-wall.pb.gz', 'node', 500, 'B'],
  ['python-pyspy-not-gzipped.pb', 'py', 400, 'A'],
  ['go-cpu-fib.pb.gz', 'old15', 15 * DAY, 'A'],
  ['go-cpu-fib.pb.gz', 'old13', 13 * DAY, 'B'],
];
const OLD_DAY = Math.floor((T - 15 * DAY) / DAY);
const KEEP_DAY = Math.floor((T - 13 * DAY) / DAY);
const TABLES = ['frames', 'nodes', 'attrsets', 'series', 'samples', 'summed'];

let cluster;
const oracles = new Map(); // file -> oracleForFile
after(async () => {
  await stopAll();
  if (cluster) await cluster.stop();
});

before(async () => {
  if (why) return;
  cluster = await startCluster();
  console.log(`# clickhouse-cluster: ZooKeeper ready in ${cluster.startMs.zk} ms, two clickhouse-server in ${cluster.startMs.clickhouse} ms`);
  for (const [f] of PUSHES) if (!oracles.has(f)) oracles.set(f, await oracleForFile(fixture(f)));
});

function storeYaml(server, db, replicated) {
  const name = replicated ? cluster.replicatedName : cluster.name;
  return `store:\n  engine: clickhouse\n  url: ${server.url}\n  database: ${db}\n  cluster: ${name}\n${replicated ? '  replicated: true\n' : ''}`;
}

async function jsonRows(server, sql) {
  const text = await server.query(`${sql} FORMAT JSONEachRow`);
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

// The day of a system.parts partition string "('default',20420)".
const partDay = (p) => Number(/,\s*(\d+)\)$/.exec(p)?.[1] ?? -1);

async function partsByDay(server, db) {
  const rows = await jsonRows(server, `SELECT table, partition, sum(rows) AS rows FROM system.parts WHERE database = '${db}' AND active GROUP BY table, partition`);
  return rows.map((r) => ({ table: r.table, day: partDay(r.partition), rows: Number(r.rows) }));
}

// Every query route over the pushed services, as [label, route, params].
function routes(svcs) {
  const out = [['services', '/api/services', RANGE]];
  for (const [svc, types] of svcs) {
    out.push([`types ${svc}`, '/api/types', { service: svc, ...RANGE }]);
    for (const type of types) {
      const q = { service: svc, type, ...RANGE };
      out.push([`flamegraph ${svc} ${type}`, '/api/flamegraph', q]);
      out.push([`top ${svc} ${type}`, '/api/top', { ...q, limit: 0 }]);
      out.push([`timeline ${svc} ${type}`, '/api/timeline', { ...q, step: '1h' }]);
      out.push([`labels ${svc} ${type}`, '/api/labels', q]);
    }
  }
  return out;
}

async function answer(server, route, params) {
  const r = await apiAs(server, route, params);
  assert.equal(r.status, 200, `${route} ${JSON.stringify(params)} on ${server.uiUrl}: ${brief(r)}\n${tail(server.stderr(), 10)}`);
  return r.json;
}

// A, B (each a cluster kiln) and E (embedded) answer every route alike.
// Four routes at a time.
async function assertSameAnswers(kilns, E, list, what) {
  for (let i = 0; i < list.length; i += 4) {
    await Promise.all(list.slice(i, i + 4).map(async ([label, route, params]) => {
      const want = await answer(E, route, params);
      for (const [name, k] of Object.entries(kilns)) {
        assert.deepEqual(await answer(k, route, params), want, `${what}: /api ${label}: kiln ${name} (ClickHouse cluster) differs from the embedded kiln`);
      }
    }));
  }
}

// Usage is flushed every second: poll until the cluster kilns agree with E.
async function assertSameUsage(kilns, E, what) {
  const q = { from: T - DAY, until: T + DAY };
  let want;
  let got;
  const t0 = Date.now();
  for (;;) {
    want = await answer(E, '/api/usage', q);
    got = await Promise.all(Object.values(kilns).map((k) => answer(k, '/api/usage', q)));
    if (got.every((g) => JSON.stringify(g) === JSON.stringify(want)) || Date.now() - t0 > 10000) break;
    await sleep(250);
  }
  assert.ok(want.days?.length > 0, `${what}: the embedded kiln counted no usage: ${JSON.stringify(want)}`);
  Object.keys(kilns).forEach((name, i) => assert.deepEqual(got[i], want, `${what}: /api/usage of kiln ${name} differs from the embedded kiln`));
}

for (const replicated of [false, true]) {
  const layout = replicated ? 'ReplicatedMergeTree' : 'MergeTree';
  const db = `kiln_${replicated ? 'r' : 'm'}_${process.pid}`;
  const tag = replicated ? 'r' : 'm';
  const svc = (s) => `cc-${tag}-${s}-${process.pid}`;
  const S = {}; // the state of this layout's tests
  const dataDir = {}; // kiln -> its --data, kept across restarts
  const start = (who, retention) => startTracked({
    dataDir: (dataDir[who] ??= mkTemp(`cc-${tag}-${who}`)),
    config: LIMITS + retention + (who === 'E' ? '' : storeYaml(cluster.servers[who === 'A' ? 0 : 1], db, replicated)),
    engine: 'local', // E stays embedded whatever KILN_TEST_ENGINE says; A and B have their own store block
    timeoutMs: 60000,
  });

  test(`${layout}: kilns on shard 1 and on shard 2 create the tables ON CLUSTER: ${layout} T_local and Distributed T on both shards`, { skip }, async () => {
    [S.A, S.B, S.E] = await Promise.all([start('A', RET30), start('B', RET30), start('E', RET30)]);
    const want = {};
    for (const t of TABLES) {
      want[`${t}_local`] = `${replicated ? 'Replicated' : ''}${t === 'samples' ? '' : 'Replacing'}MergeTree`;
      want[t] = 'Distributed';
    }
    want.usage_local = `${replicated ? 'Replicated' : ''}SummingMergeTree`;
    want.keys_local = `${replicated ? 'Replicated' : ''}ReplacingMergeTree`;
    want.usage = want.keys = 'Distributed';
    for (const s of cluster.servers) {
      const rows = await jsonRows(s, `SELECT name, engine, engine_full FROM system.tables WHERE database = '${db}'`);
      const got = Object.fromEntries(rows.map((r) => [r.name, r.engine]));
      assert.deepEqual(got, want, `tables of ${db} on ${s.url}`);
      for (const r of rows.filter((x) => x.engine === 'Distributed')) {
        const name = replicated ? cluster.replicatedName : cluster.name;
        assert.ok(r.engine_full.startsWith(`Distributed(${name}, ${db}, ${r.name}_local`), `${r.name} on ${s.url}: ${r.engine_full}`);
      }
      if (replicated) {
        const zk = await jsonRows(s, `SELECT zookeeper_path, replica_name FROM system.replicas WHERE database = '${db}' AND table = 'samples_local'`);
        assert.deepEqual(zk, [{ zookeeper_path: `/clickhouse/tables/${s.shard}/${db}/samples_local`, replica_name: s.replica }], `replica of samples_local on ${s.url}`);
      }
    }
  });

  test(`${layout}: the fixtures pushed half through shard 1, half through shard 2 are stored on both shards, every row once`, { skip }, async () => {
    assert.ok(S.A && S.B && S.E, 'the kilns did not start');
    S.svcs = new Map();
    let rows = 0;
    for (const [file, name, ago, who] of PUSHES) {
      const body = fs.readFileSync(fixture(file));
      const q = { serviceName: svc(name), from: T - ago, until: T - ago + 10 };
      const r = await uploadAs(S[who], body, q);
      assert.equal(r.status, 200, `${file} into kiln ${who}: ${brief(r)}\n${tail(S[who].stderr(), 10)}`);
      const e = await uploadAs(S.E, body, q);
      assert.equal(e.status, 200, `${file} into the embedded kiln: ${brief(e)}`);
      assert.deepEqual(JSON.parse(r.text), JSON.parse(e.text), `${file}: the cluster kiln's reply differs from the embedded kiln's`);
      rows += JSON.parse(r.text).samples;
      S.svcs.set(svc(name), oracles.get(file).types.filter((o) => o.total !== 0n).map((o) => o.typeName));
    }
    // One push each refused as invalid: usage counts it as rejected.
    for (const k of [S.A, S.E]) assert.equal((await uploadAs(k, Buffer.from('not a pprof'), { serviceName: svc('bad') })).status, 400);
    // Three pushes of equal size, each alone in its usage flush (every
    // second): three usage blocks of identical bytes, two of them on one
    // shard, which a Replicated* table must not drop as a retried insert.
    const body = fs.readFileSync(fixture('go-cpu-two-stacks.pb.gz'));
    for (let i = 0; i < 3; i++) {
      await sleep(1200);
      const q = { serviceName: svc('same'), from: T - 300 + i, until: T - 290 + i };
      const r = await uploadAs(S.A, body, q);
      assert.equal(r.status, 200, `two-stacks into kiln A: ${brief(r)}`);
      assert.equal((await uploadAs(S.E, body, q)).status, 200);
      rows += JSON.parse(r.text).samples;
    }
    S.svcs.set(svc('same'), oracles.get('go-cpu-two-stacks.pb.gz').types.filter((o) => o.total !== 0n).map((o) => o.typeName));

    // Acknowledged means on the shards (insert_distributed_sync): no waiting.
    // Entries (series != 0), and one head row (series 0) per stored chunk;
    // rows go to a random shard each (rand() sharding), head rows too.
    const local = [];
    let heads = 0;
    for (const s of cluster.servers) {
      const [entries, h] = (await s.query(`SELECT countIf(series != 0), countIf(series = 0) FROM ${db}.samples_local FORMAT TSV`)).trim().split('\t').map(Number);
      local.push(entries);
      heads += h;
    }
    const chunks = Number((await cluster.servers[0].query(`SELECT uniqExact(chunk) FROM ${db}.samples WHERE series != 0`)).trim());
    assert.equal(heads, chunks, 'head rows over both shards: one per chunk with entries');
    assert.ok(local.every((n) => n > 0), `samples_local rows per shard ${local}: both shards must hold some`);
    assert.equal(local[0] + local[1], rows, `samples_local rows per shard ${local}: together the uploads' "samples" sum`);
    for (const s of cluster.servers) assert.equal(Number((await s.query(`SELECT count() FROM ${db}.samples WHERE series != 0`)).trim()), rows, `count() of the Distributed samples on ${s.url}`);
  });

  test(`${layout}: kiln A (shard 1) and kiln B (shard 2) answer every /api route exactly as an embedded kiln fed the same pushes`, { skip }, async () => {
    assert.ok(S.svcs, 'nothing was pushed');
    // The fixtures' own totals, through the embedded kiln (A and B must equal it).
    const fib = oracles.get('go-cpu-fib.pb.gz').types.find((o) => o.typeName === 'cpu:nanoseconds');
    const fg = await answer(S.E, '/api/flamegraph', { service: svc('fib'), type: 'cpu:nanoseconds', ...RANGE });
    assert.equal(BigInt(fg.total), 2n * fib.total, 'fib pushed twice: twice the fixture total');
    for (const [file, name] of PUSHES) {
      if (name === 'fib') continue;
      for (const o of oracles.get(file).types.filter((x) => x.total !== 0n)) {
        const j = await answer(S.E, '/api/flamegraph', { service: svc(name), type: o.typeName, ...RANGE });
        assert.equal(BigInt(j.total), o.total, `${file} ${o.typeName}: total`);
      }
    }
    await assertSameAnswers({ A: S.A, B: S.B }, S.E, routes(S.svcs), layout);

    // A span of the pprof span fixture (Pyroscope's profile_id label).
    const raw = oracles.get('go-cpu-span-labels.pb.gz').prof;
    const ids = [...new Set(raw.samples.map((s) => s.labels?.profile_id).filter(Boolean))].sort().slice(0, 3);
    assert.ok(ids.length > 0, 'the span fixture has profile_id labels');
    const spans = ids.map((id) => [`span ${id}`, '/api/span', { span_id: id }]);
    await assertSameAnswers({ A: S.A, B: S.B }, S.E, spans, layout);
    const sp = await answer(S.A, '/api/span', { span_id: ids[0] });
    assert.ok(sp.samples > 0 && sp.service === svc('span'), `/api/span?span_id=${ids[0]}: ${JSON.stringify(sp).slice(0, 300)}`);

    await assertSameUsage({ A: S.A, B: S.B }, S.E, layout);
  });

  test(`${layout}: a key created through shard 1 opens kiln B's listeners on shard 2`, { skip }, async () => {
    const name = `cc-${tag}-key`;
    const cfg = path.join(mkTemp(`cc-${tag}-cfg`), 'kiln.yaml');
    fs.writeFileSync(cfg, storeYaml(cluster.servers[0], db, replicated));
    const r = await runKiln(['keys', 'create', '--config', cfg, '--project', 'cc', '--name', name, '--scope', 'both']);
    assert.equal(r.code, 0, `kiln keys create --config: ${r.stdout} ${r.stderr}`);
    const key = r.stdout.toString().split('\n').map((l) => l.trim()).find((l) => l.length >= 16 && !/\s/.test(l));
    assert.ok(key, `no key in ${r.stdout}`);
    const listed = await runKiln(['keys', 'list', '--config', cfg]);
    assert.match(listed.stdout.toString(), new RegExp(name), 'kiln keys list --config lists it');
    const B = await startTracked({
      dataDir: mkTemp(`cc-${tag}-kb`),
      // Its retention as A's: any process with a shorter one would sweep the shared store.
      config: `${LIMITS}${RET30}listeners: {upload: {auth: required}, ui: {auth: required}}\n${storeYaml(cluster.servers[1], db, replicated)}`,
      timeoutMs: 60000,
    });
    try {
      const body = fs.readFileSync(fixture('go-cpu-two-stacks.pb.gz'));
      assert.equal((await uploadAs(B, body, { serviceName: svc('keyed') })).status, 401, 'no key: 401');
      let up;
      for (const t0 = Date.now(); ; await sleep(250)) { // keys are re-read every 250 ms
        up = await uploadAs(B, body, { serviceName: svc('keyed') }, { key });
        if (up.status !== 401 || Date.now() - t0 > 5000) break;
      }
      assert.equal(up.status, 200, `the key from shard 1 on kiln B: ${brief(up)}`);
      const s = await apiAs(B, '/api/services', {}, { key });
      assert.equal(s.status, 200, brief(s));
      assert.deepEqual(s.json.services.map((x) => x.name), [svc('keyed')], 'project cc holds only what its key pushed');
    } finally { await B.stop(); }
  });

  test(`${layout}: restarted with 14 days of retention, the sweep drops the 15-day-old partitions of every table on both shards and keeps the 13-day-old ones`, { skip }, async () => {
    assert.ok(S.svcs, 'nothing was pushed');
    const tablesOf = async (s, day) => [...new Set((await partsByDay(s, db)).filter((p) => p.day === day).map((p) => p.table))].sort();
    const keepBefore = [];
    for (const s of cluster.servers) {
      for (const day of [OLD_DAY, KEEP_DAY]) assert.ok((await tablesOf(s, day)).includes('samples_local'), `no samples_local partition of day ${day} on ${s.url} before the sweep`);
      keepBefore.push(await tablesOf(s, KEEP_DAY));
    }
    await Promise.all([S.A.stop(), S.B.stop(), S.E.stop()]);
    S.A = await start('A', ''); // the default: 14 days; the sweep runs at startup
    let left;
    for (const t0 = Date.now(); ; await sleep(200)) {
      left = [];
      for (const s of cluster.servers) left.push(...(await partsByDay(s, db)).filter((p) => p.day === OLD_DAY).map((p) => `${s.url} ${p.table}`));
      // The log line comes after the last table's DROP: wait for both.
      if ((left.length === 0 && /retention deleted partitions/.test(S.A.stderr())) || Date.now() - t0 > 20000) break;
    }
    assert.deepEqual(left, [], `partitions of day ${OLD_DAY} (15 days ago) left after the sweep\n${tail(S.A.stderr(), 10)}`);
    for (const [i, s] of cluster.servers.entries()) assert.deepEqual(await tablesOf(s, KEEP_DAY), keepBefore[i], `tables with a partition of day ${KEEP_DAY} (13 days ago) on ${s.url}`);
    assert.match(S.A.stderr(), /retention deleted partitions|expired partitions deleted/, 'kiln A logs the sweep');
    [S.B, S.E] = await Promise.all([start('B', ''), start('E', '')]);
    // The embedded kiln swept its own files: the three agree again.
    const old = await answer(S.E, '/api/flamegraph', { service: svc('old15'), type: 'cpu:nanoseconds', ...RANGE });
    assert.equal(old.total, 0, 'the 15-day-old profile is gone from the embedded kiln too');
    const swept = routes(new Map(['old15', 'old13', 'fib'].map((n) => [svc(n), ['cpu:nanoseconds']]))).filter(([l]) => !/^(top|labels) /.test(l));
    await assertSameAnswers({ A: S.A, B: S.B }, S.E, swept, `${layout} after the sweep`);
  });
}
