// The oracle: `go tool pprof` (Debian golang-go) is the reference reader of
// pprof files. Everything the tests expect about a pprof file is derived
// from `go tool pprof -raw`, never from Kiln and never from our own decoder.
//
// Why -raw: it prints every sample's values exactly (integers, no unit
// scaling, no node dropping) and every location with its lines, so sums are
// exact. (-top rounds to units like "28.61s"/"1.2MB" and drops small nodes.)
//
// -raw output (github.com/google/pprof/profile Profile.String()):
//   PeriodType: cpu nanoseconds
//   Samples:
//   samples/count cpu/nanoseconds            <- sample types, in index order
//           386 3860000000: 1 2 3 4 5         <- values : location ids, leaf first
//                   foo:[bar]                 <- labels (kept for label-filter oracles)
//   Locations
//        1: 0x50400c M=1 math/big.addVV /usr/.../arith_amd64.s:50 s=0
//        5: 0x1a M=1 inner pkg/a.go:10 s=0    <- first line = innermost (inlined) function
//                outer pkg/a.go:20 s=0        <- continuation: its inline callers
//   Mappings
//
// From that we compute, per sample index, exactly what `go tool pprof -top`
// computes at its default granularity (functions):
//   total       = sum of the sample's value over all samples, those with no
//                 location included (-raw does not list them; withUnlisted
//                 below takes them from -top's total) (signed; note
//                 pprof's own "of N total" header uses |value|, which differs
//                 only for profiles with negative values such as heap deltas;
//                 the sum of the flat column is the signed sum, and that is
//                 what a flame graph root must show);
//   self[f]     = sum of values of samples whose leaf is f, where the leaf is
//                 the FIRST line of the FIRST location (innermost inlined
//                 frame) — pprof's "flat";
//   cum[f]      = sum of values of samples in whose stack f occurs at least
//                 once, counted once per sample however often f recurs —
//                 pprof's "cum".
// Every inlined line is its own function node, as in pprof. Function identity
// is the function name (pprof's functions granularity ignores the file).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { goEnv } from './env.mjs';

const execFileP = promisify(execFile);

export async function goTool(args, opts = {}) {
  const { stdout, stderr } = await execFileP('go', ['tool', ...args], {
    env: goEnv(),
    maxBuffer: 256 << 20,
    timeout: opts.timeout ?? 120000,
  });
  return { stdout, stderr };
}

// go tool pprof -raw FILE → parsed profile, with the samples -raw does not
// list added back (withUnlisted).
export async function pprofRaw(file) {
  const { stdout } = await goTool(['pprof', '-raw', '-symbolize=none', file]);
  return withUnlisted(parseRaw(stdout), file);
}

// -top prints its total in the sample unit with these -unit values, so the
// number is exact ("of 29740000000ns total"); counts print as plain integers.
const TOP_UNIT = { nanoseconds: 'ns', microseconds: 'us', milliseconds: 'ms', seconds: 's', bytes: 'B' };

// go tool pprof -top's "of N total" for sample index i of FILE: the sum of
// |value| over every sample, those with no location included. null when it
// does not print an exact integer.
export async function topTotal(file, index, unit) {
  const args = ['pprof', '-top', '-symbolize=none', `-sample_index=${index}`];
  if (TOP_UNIT[unit]) args.push(`-unit=${TOP_UNIT[unit]}`);
  const { stdout } = await goTool([...args, file]);
  const m = /of (-?\d+)[a-zA-Z]* total/.exec(stdout);
  return m ? BigInt(m[1]) : null;
}

// -raw does not list a sample with no location (Go's goroutine profile has
// one: the goroutine whose stack could not be taken), but -top counts it in
// its total. Per sample type, what -top counts beyond the listed samples
// becomes one more sample with no location (locs []), so `total` below is
// go tool pprof's, and such a sample counts under no function. Assumes those
// samples are not negative (-top sums |value|; goroutine counts never are).
async function withUnlisted(prof, file) {
  const extra = await Promise.all(prof.sampleTypes.map(async (st, i) => {
    const top = await topTotal(file, i, st.unit);
    let abs = 0n;
    for (const s of prof.samples) abs += s.values[i] < 0n ? -s.values[i] : s.values[i];
    return top !== null && top > abs ? top - abs : 0n;
  }));
  if (extra.some((v) => v !== 0n)) prof.samples.push({ values: extra, locs: [], unlisted: true });
  return prof;
}

const SAMPLE_RE = /^\s*(-?\d+(?:\s+-?\d+)*):((?:\s+\d+)*)\s*$/;
const LOC_RE = /^\s*(\d+): (0x[0-9a-fA-F]+) (?:M=(\d+) )?(?:\[F\] )?(.*)$/;
// "name file:line s=start" + optional "(systemname)". The name may contain
// spaces ("unwind failed"); the file normally does not, and may be empty.
const LINE_RE = /^(.*?) (\S*):(-?\d+)(?::\d+)? s=(-?\d+)(?:\((.*)\))?$/;

export function parseRaw(text) {
  const lines = text.split('\n');
  let i = 0;
  const prof = { header: {}, sampleTypes: [], samples: [], locations: new Map() };
  for (; i < lines.length && lines[i] !== 'Samples:'; i++) {
    const m = /^(\w[\w ]*?): (.*)$/.exec(lines[i]);
    if (m) prof.header[m[1]] = m[2];
  }
  if (i >= lines.length) throw new Error('pprof -raw: no "Samples:" line');
  i++;
  // Sample type header: "type/unit[dflt] type/unit"; the type may be empty.
  prof.sampleTypes = lines[i].trim().split(/\s+/).filter(Boolean).map((s) => {
    s = s.replace(/\[dflt\]$/, '');
    const k = s.indexOf('/');
    return { type: s.slice(0, k), unit: s.slice(k + 1) };
  });
  i++;
  for (; i < lines.length && lines[i] !== 'Locations'; i++) {
    const m = SAMPLE_RE.exec(lines[i]);
    if (!m) {
      // The first label line after a sample holds its string labels
      // ("foo:[bar] function:[slow]"); a second one, numeric labels.
      const last = prof.samples[prof.samples.length - 1];
      if (last && last.labels === undefined && /:\[/.test(lines[i])) {
        last.labels = {};
        for (const lm of lines[i].matchAll(/(\S+?):\[(.*?)\]/g)) last.labels[lm[1]] = lm[2];
      }
      continue;
    }
    const values = m[1].trim().split(/\s+/).map(BigInt);
    const locs = m[2].trim() === '' ? [] : m[2].trim().split(/\s+/).map(Number);
    if (values.length !== prof.sampleTypes.length) {
      throw new Error(`pprof -raw: sample with ${values.length} values, ${prof.sampleTypes.length} types: ${lines[i]}`);
    }
    prof.samples.push({ values, locs });
  }
  i++;
  let cur = null;
  for (; i < lines.length && lines[i] !== 'Mappings'; i++) {
    const l = lines[i];
    if (l.trim() === '') continue;
    const m = LOC_RE.exec(l);
    let rest;
    if (m && !/^\s{13}\S/.test(l)) {
      cur = { id: Number(m[1]), address: m[2], mapping: m[3] ? Number(m[3]) : 0, lines: [] };
      prof.locations.set(cur.id, cur);
      rest = m[4];
    } else {
      if (!cur) throw new Error(`pprof -raw: continuation before location: ${l}`);
      rest = l.trim();
    }
    if (rest === '' || rest === undefined) continue; // location without lines
    if (rest === '??') { cur.lines.push({ name: null }); continue; }
    const lm = LINE_RE.exec(rest);
    if (!lm) throw new Error(`pprof -raw: cannot parse location line: ${l}`);
    cur.lines.push({ name: lm[1], file: lm[2], line: Number(lm[3]), systemName: lm[5] });
  }
  return prof;
}

// A stack as function names, leaf first (inlined frames expanded, innermost
// first). A location without lines has no name: null.
export function stackNames(prof, sample) {
  const out = [];
  for (const id of sample.locs) {
    const loc = prof.locations.get(id);
    if (!loc) throw new Error(`pprof -raw: sample refers to unknown location ${id}`);
    if (loc.lines.length === 0) out.push(null);
    for (const ln of loc.lines) out.push(ln.name);
  }
  return out;
}

// Per sample index: { type, unit, typeName, total, self: Map, cum: Map,
// hasNegative, unnamed } with BigInt values.
// filter(sample) → bool restricts the samples (e.g. by label).
export function oracle(prof, index, filter = null) {
  const st = prof.sampleTypes[index];
  const self = new Map();
  const cum = new Map();
  let total = 0n;
  let hasNegative = false;
  let unnamed = false;
  for (const s of prof.samples) {
    const v = s.values[index];
    if (v === 0n) continue;
    if (filter && !filter(s)) continue;
    if (v < 0n) hasNegative = true;
    total += v;
    const names = stackNames(prof, s);
    if (names.length === 0) continue;
    if (names.includes(null)) unnamed = true;
    const leaf = names[0];
    self.set(leaf, (self.get(leaf) ?? 0n) + v);
    for (const n of new Set(names)) cum.set(n, (cum.get(n) ?? 0n) + v);
  }
  return {
    type: st.type, unit: st.unit, typeName: `${st.type}:${st.unit}`,
    total, self, cum, hasNegative, unnamed,
  };
}

// Oracle for a whole file, every sample index.
export async function oracleForFile(file) {
  const prof = await pprofRaw(file);
  return { prof, types: prof.sampleTypes.map((_, i) => oracle(prof, i)) };
}

// Sorted [name, self] by self desc, then name (pprof -top order for
// non-negative profiles).
export function sortedSelf(o) {
  return [...o.self.entries()].sort((a, b) => (a[1] === b[1] ? (a[0] < b[0] ? -1 : 1) : (b[1] > a[1] ? 1 : -1)));
}

// What an upload reply's "samples" may be for this file: the contract says
// rows × sample types; docs/API.md refines it to values stored after merging
// rows with identical stack (frames = function name + file) and labels and
// dropping zero values. Whether numeric labels (pprof -raw prints them like
// string labels) count as labels is the server's choice, so both merged
// counts are acceptable.
export function acceptableSampleCounts(prof) {
  const nTypes = prof.sampleTypes.length;
  const out = new Set([prof.samples.length * nTypes]);
  for (const withLabels of [true, false]) {
    const rows = new Map();
    for (const s of prof.samples) {
      const frames = [];
      for (const id of s.locs) {
        const loc = prof.locations.get(id);
        if (loc.lines.length === 0) frames.push(`@${loc.mapping}:${loc.address}`);
        for (const ln of loc.lines) frames.push(`${ln.name}\u0000${ln.file}`);
      }
      const key = frames.join('\u0001') + (withLabels ? `\u0002${JSON.stringify(s.labels ?? {})}` : '');
      const acc = rows.get(key) ?? new Array(nTypes).fill(0n);
      s.values.forEach((v, i) => { acc[i] += v; });
      rows.set(key, acc);
    }
    let n = 0;
    for (const acc of rows.values()) for (const v of acc) if (v !== 0n) n++;
    out.add(n);
  }
  return out;
}
