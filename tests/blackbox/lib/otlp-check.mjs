// Assertions shared by the OTLP tests: a sent request was accepted, the
// query API agrees with an expectation from lib/otlp-expect.mjs, and the
// query answers of two servers can be compared whole.
import assert from 'node:assert/strict';
import { getJson, services, wideWindow } from './http.mjs';
import { checkQueryAgainst } from './check.mjs';
import { checkKinds } from './otlp-expect.mjs';
import { describe, describeGrpc, rejectedOf } from './otlp.mjs';
import { tail } from './server.mjs';

export function assertAccepted(r, ctx, server) {
  if ('ok' in r) {
    assert.ok(r.ok, `${ctx}: gRPC Export → ${describeGrpc(r)}${server ? `\n${tail(server.stderr())}` : ''}`);
    const rej = Number(r.response?.partialSuccess?.rejectedProfiles ?? 0);
    assert.equal(rej, 0, `${ctx}: gRPC partial_success ${JSON.stringify(r.response)}`);
    return;
  }
  assert.equal(r.status, 200, `${ctx}: ${describe(r)}${server ? `\n${tail(server.stderr())}` : ''}`);
  assert.equal(r.parseError, undefined, `${ctx}: 200 reply must be an ExportProfilesServiceResponse: ${r.parseError}`);
  assert.equal(rejectedOf(r), 0, `${ctx}: partial_success says profiles were rejected: ${describe(r)}`);
}

// Every (service, type) of exp against /api/flamegraph + /api/top, kinds,
// unsymbolized frames; /api/services lists exactly exp's services (when
// exact) with their types and cpu_nanoseconds.
export async function checkServerAgainst(server, exp, ctx, opts = {}) {
  const list = await services(server);
  const byName = new Map(list.map((s) => [s.name, s]));
  if (opts.exactServices) {
    assert.deepEqual([...byName.keys()].sort(), [...exp.keys()].sort(), `${ctx}: /api/services names (naming from resource attributes, API: Services and naming)`);
  }
  for (const [svc, types] of exp) {
    const e = byName.get(svc);
    assert.ok(e, `${ctx}: /api/services lacks "${svc}"; has ${JSON.stringify([...byName.keys()])}`);
    for (const t of types.keys()) assert.ok(e.types.includes(t), `${ctx}: /api/services "${svc}" lacks type ${t}: ${JSON.stringify(e.types)}`);
    const cpu = types.get('cpu:nanoseconds');
    assert.equal(e.cpu_nanoseconds ?? 0, Number(cpu?.total ?? 0n), `${ctx}: /api/services "${svc}" cpu_nanoseconds`);
    for (const [, x] of types) {
      const { fg } = await checkQueryAgainst(server, svc, x, opts.params ?? wideWindow(), ctx);
      const k = checkKinds(fg.root, x);
      assert.deepEqual(k.problems, [], `${ctx} ${svc} ${x.typeName}: frame kind / unsymbolized flags`);
      if (x.unsymbolized.size) assert.ok(k.seenUnsym > 0, `${ctx} ${svc} ${x.typeName}: no unsymbolized frame in the flame graph; expected ${[...x.unsymbolized]}`);
    }
  }
}

// Services list + flame graph + full top of every listed (service, type):
// the whole JSON, for comparing two servers fed the same data.
export async function snapshot(server, params = wideWindow()) {
  const list = await services(server);
  const out = { services: list, queries: {} };
  for (const s of list) {
    for (const t of s.types) {
      const q = { service: s.name, type: t, ...params };
      out.queries[`${s.name} ${t}`] = {
        flamegraph: await getJson(server.uiUrl, '/api/flamegraph', q),
        top: await getJson(server.uiUrl, '/api/top', { ...q, limit: 0 }),
      };
    }
  }
  return out;
}

// First difference between two JSON values, as a path and both sides.
export function firstDiff(a, b, p = '$') {
  if (typeof a !== typeof b || Array.isArray(a) !== Array.isArray(b) || (a === null) !== (b === null)) return `${p}: ${JSON.stringify(a)?.slice(0, 200)} vs ${JSON.stringify(b)?.slice(0, 200)}`;
  if (a && typeof a === 'object') {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) {
      const d = firstDiff(a[k], b[k], Array.isArray(a) ? `${p}[${k}]` : `${p}.${k}`);
      if (d) return d;
    }
    return null;
  }
  return a === b ? null : `${p}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
}
