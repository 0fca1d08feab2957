// Comparisons of Kiln's query answers with an expected {total, self, cum}
// (from the go tool pprof oracle or from a hand-built profile).
// Values in the oracle are BigInt; JSON numbers are compared exactly after
// conversion (every total in the test data is far below 2^53).
import assert from 'node:assert/strict';
import { getJson } from './http.mjs';
import { acceptableSampleCounts } from './pprof.mjs';

const num = (v) => (typeof v === 'bigint' ? Number(v) : v);

function fmtMapDiff(label, exp, got, limit = 8) {
  const lines = [];
  const keys = new Set([...exp.keys(), ...got.keys()]);
  for (const k of keys) {
    const e = exp.get(k) ?? 0;
    const g = got.get(k) ?? 0;
    if (num(e) !== num(g)) lines.push(`  ${k}: expected ${e} got ${g}`);
    if (lines.length >= limit) { lines.push('  …'); break; }
  }
  return `${label}:\n${lines.join('\n')}`;
}

// Walks a flame graph: per name, self sum and cum (totals of nodes with no
// ancestor of the same name, i.e. counted once per stack). Also checks that
// every node's total = self + sum(children totals).
export function flameStats(root) {
  const self = new Map();
  const cum = new Map();
  const bad = [];
  let nodes = 0;
  const walk = (n, ancestors, path) => {
    nodes++;
    if (typeof n.name !== 'string' || typeof n.self !== 'number' || typeof n.total !== 'number') {
      bad.push(`node without name/self/total at ${path}: ${JSON.stringify(n).slice(0, 200)}`);
      return;
    }
    const kids = n.children ?? [];
    for (let i = 1; i < kids.length; i++) {
      if (kids[i - 1].total < kids[i].total) { bad.push(`${path}: children not sorted by total desc`); break; }
    }
    const sum = kids.reduce((a, c) => a + (c.total ?? 0), 0);
    if (n.total !== n.self + sum) bad.push(`${path}: total ${n.total} != self ${n.self} + children ${sum}`);
    if (ancestors !== null) {
      self.set(n.name, (self.get(n.name) ?? 0) + n.self);
      if (!ancestors.has(n.name)) cum.set(n.name, (cum.get(n.name) ?? 0) + n.total);
    }
    const next = ancestors === null ? new Set() : new Set(ancestors).add(n.name);
    for (const c of kids) walk(c, next, `${path} > ${c.name}`);
  };
  walk(root, null, root.name);
  return { self, cum, bad, nodes };
}

// Full check of /api/flamegraph and /api/top for one (service, type) against
// exp = {typeName, unit, total, self: Map, cum: Map, hasNegative, unnamed}.
// params: extra query parameters (from, until, label.K=V).
export async function checkQueryAgainst(server, service, exp, params = {}, what = '') {
  const ctx = `${what} service=${service} type=${exp.typeName}`;
  const q = { service, type: exp.typeName, ...params };

  // --- flame graph ---
  const fg = await getJson(server.uiUrl, '/api/flamegraph', q);
  assert.equal(fg.type, exp.typeName, `${ctx}: flamegraph "type"`);
  if (exp.unit !== undefined) assert.equal(fg.unit, exp.unit, `${ctx}: flamegraph "unit"`);
  assert.equal(fg.total, num(exp.total), `${ctx}: flamegraph "total" (expected = sum of values per go tool pprof -raw, and -top for samples with no location)`);
  assert.ok(fg.root && typeof fg.root === 'object', `${ctx}: flamegraph has no root`);
  assert.equal(fg.root.name, 'total', `${ctx}: flamegraph root name`);
  assert.equal(fg.root.total, num(exp.total), `${ctx}: flamegraph root.total`);
  const fs = flameStats(fg.root);
  assert.deepEqual(fs.bad, [], `${ctx}: flamegraph node totals inconsistent`);
  if (!exp.unnamed) {
    const es = new Map([...exp.self].filter(([, v]) => v !== 0n).map(([k, v]) => [k, num(v)]));
    const gs = new Map([...fs.self].filter(([, v]) => v !== 0));
    assert.ok(mapsEqual(es, gs), `${ctx}: ${fmtMapDiff('flamegraph self per function differs from go tool pprof flat', es, gs)}`);
    const ec = new Map([...exp.cum].filter(([, v]) => v !== 0n).map(([k, v]) => [k, num(v)]));
    const gc = new Map([...fs.cum].filter(([, v]) => v !== 0));
    assert.ok(mapsEqual(ec, gc), `${ctx}: ${fmtMapDiff('flamegraph cumulative per function differs from go tool pprof cum', ec, gc)}`);
  }

  // --- top, all rows ---
  const all = await getJson(server.uiUrl, '/api/top', { ...q, limit: 0 } /* 0 = all (docs/API.md) */);
  assert.equal(all.total, num(exp.total), `${ctx}: /api/top "total"`);
  if (all.type !== undefined) assert.equal(all.type, exp.typeName, `${ctx}: /api/top "type"`);
  assert.ok(Array.isArray(all.rows), `${ctx}: /api/top has no rows array`);
  for (let i = 1; i < all.rows.length; i++) {
    assert.ok(all.rows[i - 1].self >= all.rows[i].self,
      `${ctx}: /api/top rows not sorted by self desc at ${i}: ${all.rows[i - 1].self} then ${all.rows[i].self}`);
  }
  const names = new Set();
  for (const r of all.rows) {
    assert.ok(!names.has(r.name), `${ctx}: /api/top lists "${r.name}" twice`);
    names.add(r.name);
    if (exp.unnamed && !exp.cum.has(r.name)) continue;
    assert.ok(exp.cum.has(r.name) || (r.self === 0 && r.total === 0), `${ctx}: /api/top row "${r.name}" is no function of the profile`);
    assert.equal(r.self, num(exp.self.get(r.name) ?? 0n), `${ctx}: /api/top self of "${r.name}" (go tool pprof flat)`);
    assert.equal(r.total, num(exp.cum.get(r.name) ?? 0n), `${ctx}: /api/top total of "${r.name}" (go tool pprof cum, once per stack)`);
  }
  if (!exp.unnamed) {
    for (const [n, v] of exp.self) {
      if (v !== 0n) assert.ok(names.has(n), `${ctx}: /api/top misses "${n}" (self ${v})`);
    }
  }

  // --- top-10: the 10 largest self values, names where values are unique ---
  const top = await getJson(server.uiUrl, '/api/top', { ...q, limit: 10 });
  assert.ok(Array.isArray(top.rows) && top.rows.length <= 10, `${ctx}: /api/top limit=10 returned ${top.rows?.length} rows`);
  const sorted = [...exp.self.values()].filter((v) => v > 0n).sort((a, b) => (b > a ? 1 : b < a ? -1 : 0));
  const expPos = sorted.slice(0, 10).map(Number);
  const gotPos = top.rows.map((r) => r.self).filter((v) => v > 0);
  assert.deepEqual(gotPos, expPos, `${ctx}: top-10 self values differ from go tool pprof (expected ${expPos}, got ${gotPos})`);
  const count = new Map();
  for (const v of exp.self.values()) count.set(num(v), (count.get(num(v)) ?? 0) + 1);
  for (const r of top.rows) {
    if (r.self > 0 && count.get(r.self) === 1) {
      const want = [...exp.self].find(([, v]) => num(v) === r.self)[0];
      assert.equal(r.name, want, `${ctx}: top-10 row with self ${r.self} should be "${want}"`);
    }
  }
  return { fg, top, all };
}

function mapsEqual(a, b) {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}

// Parses `go tool pprof -raw` of a Kiln-produced pprof and compares it with
// the same expectation (used by the export tests).
export function assertOracleEqual(got, exp, ctx) {
  assert.equal(num(got.total), num(exp.total), `${ctx}: total`);
  const es = new Map([...exp.self].filter(([, v]) => v !== 0n).map(([k, v]) => [k, num(v)]));
  const gs = new Map([...got.self].filter(([, v]) => v !== 0n).map(([k, v]) => [k, num(v)]));
  assert.ok(mapsEqual(es, gs), `${ctx}: ${fmtMapDiff('self per function', es, gs)}`);
  const ec = new Map([...exp.cum].filter(([, v]) => v !== 0n).map(([k, v]) => [k, num(v)]));
  const gc = new Map([...got.cum].filter(([, v]) => v !== 0n).map(([k, v]) => [k, num(v)]));
  assert.ok(mapsEqual(ec, gc), `${ctx}: ${fmtMapDiff('cum per function', ec, gc)}`);
}

// The upload reply {"profiles": sample types, "samples": M}; M per
// acceptableSampleCounts() (rows × types, or after merging/dropping zeros).
export function assertUploadReply(json, prof, ctx) {
  assert.ok(json && typeof json === 'object', `${ctx}: reply is not JSON`);
  assert.equal(json.profiles, prof.sampleTypes.length, `${ctx}: "profiles" = number of sample types`);
  const ok = acceptableSampleCounts(prof);
  assert.ok(ok.has(json.samples), `${ctx}: "samples" ${json.samples}, expected one of ${[...ok].join(', ')} (rows × types, or merged without zero values)`);
}
