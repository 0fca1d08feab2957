// Profile names keep kinds apart (API: Profile names, Type ids): Go's block
// and mutex profiles carry the same sample types (contentions:count,
// delay:nanoseconds). Pushed for one service with /profiling/upload?profile=
// or /ingest?name=APP{__name__=…}, and scraped from one program, they are
// listed apart as NAME:SAMPLE:UNIT, each id answers exactly its own profile
// (oracle: go tool pprof -raw on the pushed file), and an old SAMPLE:UNIT
// link answers every kind summed. The profiles come from the real Go program
// tests/go/cpusplit (tests/data has no Go block or mutex profile).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { uniqueName, mkTemp } from './lib/env.mjs';
import { startServer, tail } from './lib/server.mjs';
import { upload, get, getJson, wideWindow, services } from './lib/http.mjs';
import { oracleForFile } from './lib/pprof.mjs';
import { checkQueryAgainst } from './lib/check.mjs';
import { goBuild, startGoServer } from './lib/goprog.mjs';
import { staticScrapeConfig, waitTarget } from './lib/scrape.mjs';

let server, scraper, prog;
const dir = mkTemp('pnames');
const files = {}; // kind → file
const oracles = {}; // kind → [{typeName, total, …}] per sample type
const svcScrape = uniqueName('pn-scrape');
const KINDS = ['block', 'mutex'];
const IDS = ['block:contentions:count', 'mutex:contentions:count', 'block:delay:nanoseconds', 'mutex:delay:nanoseconds'];

before(async () => {
  const bin = await goBuild('cpusplit');
  prog = await startGoServer(bin, ['-parked=3'], 10000);
  // The scraping kiln: block and mutex of one program for one service, 1 s
  // windows (block and mutex need a 40 s interval: OPS: Scraped profile types).
  const item = (name, kind) => `        - name: ${name}
          url: ${prog.url}
          service: ${svcScrape}
          types:
            ${kind}: {scrape: true, path: "/debug/pprof/${kind}?seconds=1"}
`;
  [server, scraper] = await Promise.all([
    startServer(),
    startServer({ config: staticScrapeConfig('40s', item('gob', 'block') + item('gom', 'mutex')) }),
  ]);
  // Let the workload run so both profiles have content (both are cumulative
  // since the program started).
  await new Promise((r) => setTimeout(r, 1500));
  for (const kind of KINDS) {
    const res = await fetch(`${prog.url}/debug/pprof/${kind}`, { signal: AbortSignal.timeout(30000) });
    assert.equal(res.status, 200, `GET /debug/pprof/${kind}`);
    files[kind] = path.join(dir, `${kind}.pb.gz`);
    fs.writeFileSync(files[kind], Buffer.from(await res.arrayBuffer()));
    oracles[kind] = (await oracleForFile(files[kind])).types;
    assert.deepEqual(oracles[kind].map((o) => o.typeName), ['contentions:count', 'delay:nanoseconds'], `${kind} types`);
    for (const o of oracles[kind]) assert.ok(o.total > 0n, `${kind} ${o.typeName} has samples`);
  }
});

after(async () => {
  for (const s of [server, scraper]) if (s) await s.stop();
  if (prog) await prog.stop();
});

const types = async (s, service) => (await getJson(s.uiUrl, '/api/types', { service, ...wideWindow() })).types;

// Each kind's ids answer exactly its own profile; the plain ids sum both.
async function checkApart(service, what) {
  assert.deepEqual(await types(server, service), IDS, `${what}: /api/types`);
  const listed = (await services(server)).find((s) => s.name === service);
  assert.deepEqual(listed, { name: service, types: IDS, cpu_nanoseconds: 0 }, `${what}: /api/services`);
  for (const kind of KINDS) {
    for (const o of oracles[kind]) {
      const id = `${kind}:${o.typeName}`;
      await checkQueryAgainst(server, service, { ...o, typeName: id }, wideWindow(), what);
      // The timeline of the id sums to the same total.
      const tl = await getJson(server.uiUrl, '/api/timeline', { service, type: id, ...wideWindow() });
      assert.equal(tl.type, id);
      assert.equal(tl.points.reduce((a, p) => a + p[1], 0), Number(o.total), `${what}: timeline of ${id}`);
      // Label suggestions do not offer __name__: the id selects it.
      const labels = await getJson(server.uiUrl, '/api/labels', { service, type: id, ...wideWindow() });
      assert.ok(!labels.labels.some((l) => l.name === '__name__'), JSON.stringify(labels));
    }
  }
  // An old SAMPLE:UNIT link: every kind of that type, summed.
  for (const [i, typeName] of ['contentions:count', 'delay:nanoseconds'].entries()) {
    const fg = await getJson(server.uiUrl, '/api/flamegraph', { service, type: typeName, ...wideWindow() });
    assert.equal(fg.type, typeName);
    assert.equal(fg.total, Number(oracles.block[i].total + oracles.mutex[i].total), `${what}: old link ${typeName}`);
  }
}

test('/profiling/upload?profile=block|mutex: listed apart, totals exact per kind, old links sum both', async () => {
  const svc = uniqueName('pn-upload');
  for (const kind of KINDS) {
    const r = await upload(server, fs.readFileSync(files[kind]), { serviceName: svc, profile: kind });
    assert.equal(r.status, 200, `${r.text}\n${tail(server.stderr())}`);
  }
  await checkApart(svc, 'upload');
});

test('/ingest?name=APP{__name__=block|mutex}: listed apart, totals exact per kind', async () => {
  const app = uniqueName('pn-ingest');
  for (const kind of KINDS) {
    const r = await upload(server, fs.readFileSync(files[kind]), { name: `${app}{__name__=${kind},env=prod}` }, {}, { path: '/ingest' });
    assert.equal(r.status, 200, `${r.text}\n${tail(server.stderr())}`);
    assert.equal(r.text, '');
  }
  await checkApart(app, 'ingest');
  // The other labels stay filters; __name__ is no label.
  const labels = await getJson(server.uiUrl, '/api/labels', { service: app, type: 'mutex:delay:nanoseconds', ...wideWindow() });
  assert.deepEqual(labels.labels.filter((l) => l.source === 'series'), [{ name: 'env', source: 'series', values: ['prod'] }]);
});

test('one name per type keeps SAMPLE:UNIT; the NAME:SAMPLE:UNIT id works too; unnamed series join it', async () => {
  const svc = uniqueName('pn-one');
  let r = await upload(server, fs.readFileSync(files.block), { serviceName: svc, profile: 'block' });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(await types(server, svc), ['contentions:count', 'delay:nanoseconds']);
  const [c, d] = oracles.block;
  await checkQueryAgainst(server, svc, d, wideWindow(), 'one name, plain id');
  await checkQueryAgainst(server, svc, { ...c, typeName: 'block:contentions:count' }, wideWindow(), 'one name, named id');
  const fgOf = async (q) => (await getJson(server.uiUrl, '/api/flamegraph', { service: svc, ...wideWindow(), ...q })).total;
  assert.equal(await fgOf({ type: 'mutex:delay:nanoseconds' }), 0);
  // __name__ filters as a series label.
  assert.equal(await fgOf({ type: 'delay:nanoseconds', 'label.__name__': 'block' }), Number(d.total));
  assert.equal(await fgOf({ type: 'delay:nanoseconds', 'label.__name__': 'mutex' }), 0);
  // label.__name__ of an upload does not name it: only profile= does.
  const svc2 = uniqueName('pn-label');
  r = await upload(server, fs.readFileSync(files.mutex), { serviceName: svc2, 'label.__name__': 'mutex', 'label.env': 'x' });
  assert.equal(r.status, 200, r.text);
  const q2 = { service: svc2, type: 'delay:nanoseconds', ...wideWindow() };
  assert.equal((await getJson(server.uiUrl, '/api/flamegraph', q2)).total, Number(oracles.mutex[1].total));
  assert.equal((await getJson(server.uiUrl, '/api/flamegraph', { ...q2, type: 'mutex:delay:nanoseconds' })).total, 0);
  // A push without a name (as before names existed) joins the single name.
  r = await upload(server, fs.readFileSync(files.mutex), { serviceName: svc });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(await types(server, svc), ['contentions:count', 'delay:nanoseconds']);
  const fg = await getJson(server.uiUrl, '/api/flamegraph', { service: svc, type: 'delay:nanoseconds', ...wideWindow() });
  assert.equal(fg.total, Number(d.total + oracles.mutex[1].total));
});

test('bad profile names are refused whole: profile= 400, /ingest __name__ 400 invalid_argument', async () => {
  const svc = uniqueName('pn-bad');
  for (const bad of ['Block', 'a:b', 'a b', 'x'.repeat(65)]) {
    const r = await upload(server, fs.readFileSync(files.block), { serviceName: svc, profile: bad });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error, `profile=${bad.length > 64 ? `${bad.slice(0, 64)}…` : bad} is not a profile name: 1 to 64 of a-z 0-9 _ . - (e.g. block, mutex, process_cpu)`);
  }
  const r = await upload(server, fs.readFileSync(files.block), { name: `${svc}{__name__=Mutex}` }, {}, { path: '/ingest' });
  assert.equal(r.status, 400, r.text);
  assert.deepEqual(r.json, { code: 'invalid_argument', message: 'profile name "Mutex" is not 1 to 64 bytes of [a-z0-9_.-]' });
  assert.deepEqual(await types(server, svc), []);
  // A malformed type id is a 400 naming both forms.
  const g = await get(server.uiUrl, '/api/flamegraph', { service: svc, type: 'block:', ...wideWindow() });
  assert.equal(g.status, 400);
  assert.match(g.json.error, /^type must be SAMPLE_TYPE:UNIT or NAME:SAMPLE_TYPE:UNIT/);
});

test('the scraper names block and mutex series apart for one service', async () => {
  await Promise.all(['gob/block', 'gom/mutex'].map((k) => waitTarget(scraper, `static/${k}`, (t) => t.results.ok >= 1, 'a scrape', 90000)));
  let ty;
  for (let i = 0; i < 50 && (ty = await types(scraper, svcScrape)).length < 4; i++) await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(ty, IDS);
  const q = { service: svcScrape, ...wideWindow(), limit: 0 };
  const top = async (type) => getJson(scraper.uiUrl, '/api/top', { ...q, type });
  const [b, m, all] = await Promise.all(['block:delay:nanoseconds', 'mutex:delay:nanoseconds', 'delay:nanoseconds'].map(top));
  assert.ok(b.total > 0 && m.total > 0, `block ${b.total}, mutex ${m.total}`);
  assert.equal(all.total, b.total + m.total);
  // The channel waits are blocking, not lock contention.
  assert.ok(b.rows.some((r) => r.name === 'main.chanReceiver' && r.total > 0), JSON.stringify(b.rows.slice(0, 8)));
  assert.ok(!m.rows.some((r) => r.name === 'main.chanReceiver'), JSON.stringify(m.rows.slice(0, 8)));
  assert.ok(m.rows.some((r) => r.name === 'main.mutexer' && r.total > 0), JSON.stringify(m.rows.slice(0, 8)));
});
