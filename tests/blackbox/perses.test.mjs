// The real Perses client against Kiln: npm @perses-dev/pyroscope-plugin's
// lib/cjs/model/pyroscope-client.js, loaded as Perses loads it, with only
// its @perses-dev/core import (a fetch wrapper) answered by
// lib/perses-core/index.cjs (the real package brings React). Its calls are
// what the Perses Pyroscope data source sends: searchServices,
// searchProfileTypes, searchLabelNames, searchLabelValues (Connect JSON to
// querier.v1.QuerierService) and searchProfiles (GET /pyroscope/render).
// Oracles: go tool pprof on the pushed fixtures and the sample types it
// prints, named as Pyroscope names them (API: Query: querier.v1).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Module, { createRequire } from 'node:module';
import path from 'node:path';
import fs from 'node:fs';
import { TESTDATA, uniqueName, mkTemp } from './lib/env.mjs';
import { startServer } from './lib/server.mjs';
import { upload } from './lib/http.mjs';
import { createKey } from './lib/s6.mjs';
import { oracleForFile, pprofRaw } from './lib/pprof.mjs';

const require = createRequire(import.meta.url);
const fixture = (f) => path.join(TESTDATA, 'pprof', f);
const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';

// The client module, its '@perses-dev/core' resolved to the shim while it loads.
function loadClient() {
  const shim = require.resolve('./lib/perses-core/index.cjs');
  const resolve = Module._resolveFilename;
  Module._resolveFilename = function (request, ...rest) {
    return request === '@perses-dev/core' ? shim : resolve.call(this, request, ...rest);
  };
  try {
    return require('@perses-dev/pyroscope-plugin/lib/cjs/model/pyroscope-client.js');
  } finally {
    Module._resolveFilename = resolve;
  }
}

const perses = loadClient();
const SVC = { go: uniqueName('p-go'), node: uniqueName('p-node') };
let server;
let cpu; // go tool pprof's cpu:nanoseconds of go-cpu-fib

before(async () => {
  server = await startServer();
  const r1 = await upload(server, fs.readFileSync(fixture('go-cpu-fib.pb.gz')), { serviceName: SVC.go, 'label.env': 'prod' });
  const r2 = await upload(server, fs.readFileSync(fixture('nodejs-wall.pb.gz')), { name: `${SVC.node}{region="eu-1"}`, format: 'pprof' }, {}, { path: '/ingest' });
  assert.equal(r1.status, 200, r1.text);
  assert.equal(r2.status, 200, r2.text);
  cpu = (await oracleForFile(fixture('go-cpu-fib.pb.gz'))).types.find((t) => t.typeName === 'cpu:nanoseconds');
});
after(async () => {
  if (server) await server.stop();
});

// What the Perses data source passes: its URL, and the headers of its spec
// (the Connect calls add content-type: application/json, as use-query.js does).
const opts = (headers = {}) => ({ datasourceUrl: server.uiUrl, headers });
const json = { 'content-type': 'application/json' };

// Self per function from flamebearer levels ([x, total, self, name] per node; level 0 is the root).
function selfOf(fb) {
  const self = new Map();
  fb.levels.slice(1).forEach((v) => {
    for (let i = 0; i < v.length; i += 4) {
      const name = fb.names[v[i + 3]];
      if (v[i + 2]) self.set(name, (self.get(name) ?? 0) + v[i + 2]);
    }
  });
  return [...self].sort((a, b) => (a[0] < b[0] ? -1 : 1));
}
const oracleSelf = (o) => [...o.self].filter(([, v]) => Number(v) !== 0).map(([k, v]) => [k, Number(v)]).sort((a, b) => (a[0] < b[0] ? -1 : 1));

test('Perses: services, profile types, label names and values as the plugin asks for them', async () => {
  const types = (await pprofRaw(fixture('go-cpu-fib.pb.gz'))).sampleTypes.map((t) => `${t.type}:${t.unit}`);
  assert.deepEqual(types, ['samples:count', 'cpu:nanoseconds'], 'go tool pprof');
  assert.deepEqual((await pprofRaw(fixture('nodejs-wall.pb.gz'))).sampleTypes.map((t) => `${t.type}:${t.unit}`), ['samples:count', 'wall:microseconds']);
  assert.deepEqual(await perses.searchServices({}, opts(json)), { names: [SVC.go, SVC.node].sort() });
  const pt = await perses.searchProfileTypes({}, opts(json), {});
  assert.deepEqual(pt.profileTypes, [
    { ID: CPU, name: 'process_cpu', sampleType: 'cpu', sampleUnit: 'nanoseconds', periodType: 'cpu', periodUnit: 'nanoseconds' },
    { ID: 'process_cpu:samples:count:cpu:nanoseconds', name: 'process_cpu', sampleType: 'samples', sampleUnit: 'count', periodType: 'cpu', periodUnit: 'nanoseconds' },
    { ID: 'wall:samples:count:wall:microseconds', name: 'wall', sampleType: 'samples', sampleUnit: 'count', periodType: 'wall', periodUnit: 'microseconds' },
    { ID: 'wall:wall:microseconds:wall:microseconds', name: 'wall', sampleType: 'wall', sampleUnit: 'microseconds', periodType: 'wall', periodUnit: 'microseconds' },
  ]);
  const names = await perses.searchLabelNames({}, opts(json), {});
  assert.deepEqual(names, { names: ['__name__', '__period_type__', '__period_unit__', '__profile_type__', '__type__', '__unit__', 'env', 'region', 'service_name'] });
  assert.deepEqual(await perses.searchLabelValues({}, opts(json), { name: 'env' }), { names: ['prod'] });
  assert.deepEqual(await perses.searchLabelValues({}, opts(json), { name: 'region' }), { names: ['eu-1'] });
});

test('Perses: searchProfiles (GET /pyroscope/render) gives go tool pprof\'s total and per-function self', async () => {
  const query = `${CPU}{service_name="${SVC.go}"}`;
  // The panel's default range, then an absolute one as getUnixTimeRange sends it (whole seconds).
  const now = Date.now();
  for (const params of [{ query, from: 'now-1h' }, { query, from: Math.ceil((now - 3600_000) / 1000), until: Math.ceil((now + 60_000) / 1000) }]) {
    const res = await perses.searchProfiles(params, opts());
    assert.equal(res.flamebearer.numTicks, Number(cpu.total), JSON.stringify(params));
    assert.equal(res.flamebearer.levels[0][1], Number(cpu.total));
    assert.deepEqual(selfOf(res.flamebearer), oracleSelf(cpu));
    assert.deepEqual(res.metadata, { format: 'single', spyName: '', sampleRate: 1e9, units: 'samples', name: 'cpu' });
    assert.equal(res.timeline.samples.reduce((a, v) => a + v, 0), Number(cpu.total));
  }
  // The panel's maxNodes: the total stays, the rest goes to `other`.
  const cut = await perses.searchProfiles({ query, from: 'now-1h', maxNodes: 2 }, opts());
  assert.equal(cut.flamebearer.numTicks, Number(cpu.total));
  assert.ok(cut.flamebearer.names.includes('other'));
  assert.equal(cut.flamebearer.levels.flatMap((v) => v.filter((_, i) => i % 4 === 2)).reduce((a, v) => a + v, 0), Number(cpu.total));
  // Filters as the panel writes them (service, then label filters).
  const prod = await perses.searchProfiles({ query: `${CPU}{service_name="${SVC.go}",env="prod"}`, from: 'now-1h' }, opts());
  assert.equal(prod.flamebearer.numTicks, Number(cpu.total));
  const dev = await perses.searchProfiles({ query: `${CPU}{service_name="${SVC.go}",env="dev"}`, from: 'now-1h' }, opts());
  assert.equal(dev.flamebearer.numTicks, 0);
});

test('Perses with a key in the data source\'s headers (auth required): its project only; without it the client fails with 401', async () => {
  const dataDir = mkTemp('perses-auth');
  const ingest = await createKey(dataDir, 'pa', 'pa-ingest', 'ingest');
  const query = await createKey(dataDir, 'pa', 'pa-query', 'query');
  const ingestB = await createKey(dataDir, 'pb', 'pb-ingest', 'ingest');
  const s = await startServer({ dataDir, extraArgs: ['--auth', 'required'] });
  try {
    const svc = uniqueName('pa'), svcB = uniqueName('pb');
    const body = fs.readFileSync(fixture('go-cpu-fib.pb.gz'));
    assert.equal((await upload(s, body, { serviceName: svc }, { 'x-kiln-key': ingest })).status, 200);
    assert.equal((await upload(s, body, { serviceName: svcB }, { 'x-kiln-key': ingestB })).status, 200);
    const auth = { authorization: `Bearer ${query}` };
    const o = (headers) => ({ datasourceUrl: s.uiUrl, headers });
    assert.deepEqual(await perses.searchServices({}, o({ ...json, ...auth })), { names: [svc] });
    const res = await perses.searchProfiles({ query: `${CPU}{service_name="${svc}"}`, from: 'now-1h' }, o(auth));
    assert.equal(res.flamebearer.numTicks, Number(cpu.total));
    const other = await perses.searchProfiles({ query: `${CPU}{service_name="${svcB}"}`, from: 'now-1h' }, o(auth));
    assert.equal(other.flamebearer.numTicks, 0, 'another project\'s service');
    await assert.rejects(perses.searchProfiles({ query: `${CPU}{service_name="${svc}"}`, from: 'now-1h' }, o({})), /^Error: 401: .*requires a key/);
    await assert.rejects(perses.searchProfileTypes({}, o(json), {}), /^Error: 401: /);
    await assert.rejects(perses.searchProfiles({ query: `${CPU}{service_name="${svc}"}` }, o({ authorization: `Bearer ${ingest}` })), /^Error: 403: .*scope query/);
  } finally {
    await s.stop();
  }
});
