// Writes tests/data/store/v1-datadir.tar.gz: a data directory as a Kiln
// whose embedded engine has no log (format-1 day files, no DIR/_wal) writes
// it, for tests/blackbox/olddir.test.mjs. Provenance and expected answers:
// tests/data/store/README.md. Run with the OLD binary, from the repo root:
//   KILN_BIN=/path/to/old/build/kiln node tests/data/store/make-v1-datadir.mjs
// It pushes what v1-datadir.json lists through the real HTTP API (run 1:
// projects by X-Scope-OrgID; run 2: --auth required, the one key), records
// each upload reply and the usage the old binary answers into the manifest,
// stops the server cleanly (SIGTERM, exit 0) and tars the directory
// deterministically (sorted names, fixed mtime, owner 0).
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { TESTDATA, mkTemp } from '../../blackbox/lib/env.mjs';
import { startServer, tail } from '../../blackbox/lib/server.mjs';
import { runKiln } from '../../blackbox/lib/cli.mjs';

const here = path.dirname(new URL(import.meta.url).pathname);
const MANIFEST = path.join(here, 'v1-datadir.json');
const TAR = path.join(here, 'v1-datadir.tar.gz');
const m = JSON.parse(fs.readFileSync(MANIFEST, 'utf8'));

// The config both runs use: retention long enough for the fixed days.
const CONFIG = `limits: {samplesPerSecond: 1000000000}
retention: {days: 3650, maxDays: 3650}
listeners:
  upload: {trustScopeOrgId: true}
  ui: {trustScopeOrgId: true}
`;
const KEYED_CONFIG = 'limits: {samplesPerSecond: 1000000000}\nretention: {days: 3650, maxDays: 3650}\n';

function authHeaders(project) {
  return project === m.key.project ? { 'x-kiln-key': m.key.secret } : project === 'default' ? {} : { 'x-scope-orgid': project };
}

async function push(s, p) {
  const body = fs.readFileSync(path.join(TESTDATA, 'pprof', p.fixture));
  const q = new URLSearchParams({ serviceName: p.service, from: String(p.from), until: String(p.until) });
  const r = await fetch(`${s.uploadUrl}/profiling/upload?${q}`, {
    method: 'POST', body, headers: { 'content-type': 'application/octet-stream', ...authHeaders(p.project) },
  });
  const text = await r.text();
  if (r.status !== 200) throw new Error(`push ${JSON.stringify(p)} → ${r.status} ${text}\n${tail(s.stderr())}`);
  p.reply = JSON.parse(text);
}

async function stop(s) {
  const e = await s.stop();
  if (e.code !== 0) throw new Error(`old kiln did not stop cleanly: ${JSON.stringify(e)}\n${tail(s.stderr())}`);
}

const dataDir = path.join(mkTemp('v1-datadir'), 'data');
fs.mkdirSync(dataDir);
// The key: created by the old CLI, its secret kept in the manifest (test data only).
const k = await runKiln(['keys', 'create', '--data', dataDir, '--project', m.key.project, '--name', m.key.name, '--scope', m.key.scope]);
if (k.code !== 0) throw new Error(`kiln keys create: ${k.stderr}`);
m.key.secret = k.stdout.toString().split('\n').map((l) => l.trim()).find((l) => l && !/\s/.test(l) && l.length >= 16);

let s = await startServer({ dataDir, config: CONFIG });
for (const p of m.pushes.filter((x) => x.project !== m.key.project)) await push(s, p);
await stop(s);
s = await startServer({ dataDir, config: KEYED_CONFIG, extraArgs: ['--auth', 'required'] });
for (const p of m.pushes.filter((x) => x.project === m.key.project)) await push(s, p);
// Usage is flushed every second; wait for it, then record what the old binary answers.
await new Promise((r) => setTimeout(r, 2500));
const u = await fetch(`${s.uiUrl}/api/usage?from=${m.usage.from}&until=${m.usage.until}`, { headers: { 'x-kiln-key': m.key.secret } });
m.usage.answer = await u.json();
await stop(s);
// m.written_by is set in the manifest by hand: the old binary has no --version.
fs.rmSync(path.join(dataDir, 'LOCK'), { force: true });
fs.writeFileSync(MANIFEST, `${JSON.stringify(m, null, 2)}\n`);

execFileSync('tar', ['--sort=name', '--mtime=@0', '--owner=0', '--group=0', '--numeric-owner', '--format=gnu',
  '-C', path.dirname(dataDir), '-cf', `${TAR}.tmp`, 'data']);
execFileSync('sh', ['-c', `gzip -9n < "${TAR}.tmp" > "${TAR}" && rm "${TAR}.tmp"`]);
console.log(execFileSync('tar', ['-tvzf', TAR], { encoding: 'utf8' }));
