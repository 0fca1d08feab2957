// The store block's user and password reach ClickHouse (issue 8 config
// contract: store.user, store.password). Every other ClickHouse test logs in
// as `default` without a password, which a kiln that ignored the two keys
// would pass too; here ClickHouse has no password-less user: `default` and
// `kiln` both have passwords, kiln's full of characters that need quoting
// in YAML, URLs and headers. With the right ones kiln creates its database
// and stores what it acknowledges; with a wrong password it acknowledges
// nothing and creates nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { TESTDATA, nowS } from './lib/env.mjs';
import { upload, getJson } from './lib/http.mjs';
import { oracleForFile } from './lib/pprof.mjs';
import { startClickHouse } from './lib/clickhouse.mjs';
import { startServer, freshDatabase, tail } from './lib/server.mjs';

const FIB = path.join(TESTDATA, 'pprof', 'go-cpu-fib.pb.gz');
const USER = 'kiln';
const PASSWORD = 'p@ss w0rd&x=1%2F"\'\\:#';
let ch;

before(async () => {
  ch = await startClickHouse({
    own: true,
    users: { default: 'not-for-kiln-4711', [USER]: PASSWORD },
    auth: { user: USER, password: PASSWORD },
  });
});
after(async () => { await ch?.destroy(); });

test('store.user and store.password with characters that need quoting: kiln logs in, creates its database, stores what it acknowledges', async () => {
  const s = await startServer({ engine: 'clickhouse', clickhouseUrl: ch.url, clickhouseUser: USER, clickhousePassword: PASSWORD });
  try {
    const fib = await oracleForFile(FIB);
    const r = await upload(s, fs.readFileSync(FIB), { serviceName: 'cred' });
    assert.equal(r.status, 200, `${r.text}\n${tail(s.stderr(), 10)}`);
    for (const o of fib.types) {
      const fg = await getJson(s.uiUrl, '/api/flamegraph', { service: 'cred', type: o.typeName, from: nowS() - 3600, until: nowS() + 60 });
      assert.equal(fg.total, Number(o.total), o.typeName);
    }
    const tables = await ch.query(`SELECT count() FROM system.tables WHERE database = '${s.database}'`);
    assert.ok(Number(tables) > 0, `no tables in ${s.database}`);
  } finally {
    await s.stop();
  }
});

test('a wrong password: no push is acknowledged and nothing is created (kiln exits naming the problem, or refuses with 503)', async (t) => {
  const database = freshDatabase();
  let s;
  try {
    s = await startServer({ engine: 'clickhouse', clickhouseUrl: ch.url, database, clickhouseUser: USER, clickhousePassword: `${PASSWORD}-wrong`, checkStore: false, timeoutMs: 15000 });
  } catch (e) {
    assert.match(e.message, /password|authenticat|credential|denied|ClickHouse/i, `kiln exited without saying why: ${e.message}`);
    t.diagnostic('kiln refused to start');
    return;
  }
  try {
    for (let i = 0; i < 3; i++) {
      const r = await upload(s, fs.readFileSync(FIB), { serviceName: 'cred-wrong' });
      assert.equal(r.status, 503, `push ${i} with a wrong ClickHouse password: ${r.status} ${r.text}\n${tail(s.stderr(), 10)}`);
      assert.match(r.headers.get('retry-after') ?? '', /^[1-9]\d*$/, 'Retry-After');
    }
    const db = await ch.query(`SELECT count() FROM system.databases WHERE name = '${database}'`);
    assert.equal(db.trim(), '0', `database ${database} created with a wrong password`);
    t.diagnostic(`kiln started and refused pushes with 503; its log: ${tail(s.stderr(), 3).replace(/\n/g, ' | ')}`);
  } finally {
    await s.stop();
  }
});
