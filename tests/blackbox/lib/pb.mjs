// A tiny protobuf writer, enough to craft valid and deliberately broken pprof
// messages (github.com/google/pprof/proto/profile.proto) by hand.
//
// profile.proto field numbers used here:
//   Profile  1 sample_type(ValueType) 2 sample 3 mapping 4 location 5 function
//            6 string_table 9 time_nanos 10 duration_nanos 11 period_type
//            12 period 14 default_sample_type
//   ValueType 1 type(str) 2 unit(str)
//   Sample   1 location_id(packed u64) 2 value(packed i64) 3 label
//   Label    1 key(str) 2 str(str) 3 num 4 num_unit(str)
//   Mapping  1 id 2 memory_start 3 memory_limit 4 file_offset 5 filename(str) 6 build_id(str)
//   Location 1 id 2 mapping_id 3 address 4 line 5 is_folded
//   Line     1 function_id 2 line
//   Function 1 id 2 name(str) 3 system_name(str) 4 filename(str) 5 start_line

export const WT = { VARINT: 0, I64: 1, LEN: 2, SGROUP: 3, EGROUP: 4, I32: 5 };

export class PbWriter {
  constructor() { this.parts = []; }

  raw(bytes) { this.parts.push(Buffer.from(bytes)); return this; }

  // Unsigned varint of a number or BigInt; negative values are written as
  // their 64-bit two's complement (10 bytes), as protobuf does for int64.
  varint(v) {
    let n = BigInt(v);
    if (n < 0n) n = BigInt.asUintN(64, n);
    const out = [];
    do {
      let b = Number(n & 0x7fn);
      n >>= 7n;
      if (n !== 0n) b |= 0x80;
      out.push(b);
    } while (n !== 0n);
    return this.raw(out);
  }

  tag(field, wt) { return this.varint((BigInt(field) << 3n) | BigInt(wt)); }

  uint(field, v) { return this.tag(field, WT.VARINT).varint(v); }

  bytes(field, buf) {
    buf = Buffer.isBuffer(buf) ? buf : Buffer.from(buf);
    return this.tag(field, WT.LEN).varint(buf.length).raw(buf);
  }

  string(field, s) { return this.bytes(field, Buffer.from(s, 'utf8')); }

  // Embedded message: fn receives a fresh writer.
  message(field, fn) {
    const w = new PbWriter();
    fn(w);
    return this.bytes(field, w.finish());
  }

  packed(field, values) {
    const w = new PbWriter();
    for (const v of values) w.varint(v);
    return this.bytes(field, w.finish());
  }

  finish() { return Buffer.concat(this.parts); }
}

// Encodes a pprof Profile from explicit tables; indices and ids are written
// exactly as given, so any of them can be made out of range on purpose.
//   p = { stringTable: [...], sampleTypes: [{type, unit}], samples: [{locationIds,
//         values, labels: [{key, str, num}], unpacked}], mappings: [{id, filename}],
//         locations: [{id, mappingId, address, lines: [{functionId, line}]}],
//         functions: [{id, name, systemName, filename}], timeNanos,
//         durationNanos, periodType: {type, unit}, period }
export function encodeProfile(p) {
  const w = new PbWriter();
  for (const st of p.sampleTypes ?? []) {
    w.message(1, (m) => { m.uint(1, st.type); m.uint(2, st.unit); });
  }
  for (const s of p.samples ?? []) {
    w.message(2, (m) => {
      if (s.unpacked) {
        for (const id of s.locationIds) m.uint(1, id);
        for (const v of s.values) m.uint(2, v);
      } else {
        if (s.locationIds.length) m.packed(1, s.locationIds);
        if (s.values.length) m.packed(2, s.values);
      }
      for (const l of s.labels ?? []) {
        m.message(3, (lm) => {
          lm.uint(1, l.key);
          if (l.str !== undefined) lm.uint(2, l.str);
          if (l.num !== undefined) lm.uint(3, l.num);
        });
      }
    });
  }
  for (const mp of p.mappings ?? []) {
    w.message(3, (m) => {
      m.uint(1, mp.id);
      m.uint(2, mp.memoryStart ?? 0x400000);
      m.uint(3, mp.memoryLimit ?? 0x800000);
      if (mp.filename !== undefined) m.uint(5, mp.filename);
      if (mp.buildId !== undefined) m.uint(6, mp.buildId);
      m.uint(7, 1); // has_functions
    });
  }
  for (const loc of p.locations ?? []) {
    w.message(4, (m) => {
      m.uint(1, loc.id);
      if (loc.mappingId !== undefined) m.uint(2, loc.mappingId);
      if (loc.address !== undefined) m.uint(3, loc.address);
      for (const ln of loc.lines ?? []) {
        m.message(4, (lm) => { lm.uint(1, ln.functionId); if (ln.line !== undefined) lm.uint(2, ln.line); });
      }
    });
  }
  for (const f of p.functions ?? []) {
    w.message(5, (m) => {
      m.uint(1, f.id);
      m.uint(2, f.name);
      if (f.systemName !== undefined) m.uint(3, f.systemName);
      if (f.filename !== undefined) m.uint(4, f.filename);
    });
  }
  for (const s of p.stringTable ?? []) w.string(6, s);
  if (p.timeNanos !== undefined) w.uint(9, p.timeNanos);
  if (p.durationNanos !== undefined) w.uint(10, p.durationNanos);
  if (p.periodType) w.message(11, (m) => { m.uint(1, p.periodType.type); m.uint(2, p.periodType.unit); });
  if (p.period !== undefined) w.uint(12, p.period);
  if (p.extra) w.raw(p.extra); // trailing raw bytes (for broken inputs)
  return w.finish();
}

// High-level: a valid profile from readable stacks.
//   spec = { sampleTypes: [['cpu','nanoseconds'], ...], periodType: ['cpu','nanoseconds'],
//            period, timeNanos, durationNanos,
//            samples: [{ stack: ['leaf', ..., 'root'], values: [..], labels: {k: v} }] }
// Returns the tables (for tweaking) and the encoded bytes.
export function buildProfile(spec) {
  const strings = [''];
  const sIndex = new Map([['', 0]]);
  const str = (s) => {
    if (!sIndex.has(s)) { sIndex.set(s, strings.length); strings.push(s); }
    return sIndex.get(s);
  };
  const functions = [];
  const locations = [];
  const fnId = new Map();
  const fileIx = str('main.go');
  const mapFile = str('/bin/app');
  const locOf = (name) => {
    if (!fnId.has(name)) {
      const id = functions.length + 1;
      fnId.set(name, id);
      functions.push({ id, name: str(name), systemName: str(name), filename: fileIx });
      locations.push({ id, mappingId: 1, address: 0x401000 + id * 16, lines: [{ functionId: id, line: 10 + id }] });
    }
    return fnId.get(name);
  };
  const sampleTypes = spec.sampleTypes.map(([t, u]) => ({ type: str(t), unit: str(u) }));
  const samples = spec.samples.map((s) => ({
    locationIds: s.stack.map(locOf),
    values: s.values,
    labels: Object.entries(s.labels ?? {}).map(([k, v]) => ({ key: str(k), str: str(v) })),
  }));
  const pt = spec.periodType ?? spec.sampleTypes[spec.sampleTypes.length - 1];
  const p = {
    stringTable: null,
    sampleTypes,
    samples,
    mappings: [{ id: 1, filename: mapFile }],
    locations,
    functions,
    timeNanos: spec.timeNanos ?? BigInt(Date.now()) * 1000000n,
    durationNanos: spec.durationNanos ?? 10_000_000_000n,
    periodType: { type: str(pt[0]), unit: str(pt[1]) },
    period: spec.period ?? 10_000_000,
  };
  p.stringTable = strings;
  return { tables: p, str, bytes: encodeProfile(p) };
}

// Expected results of a buildProfile() spec, per sample index, computed the
// same way as the go tool pprof oracle (self by leaf, cum once per stack).
export function expectedOf(spec, index = 0) {
  const self = new Map();
  const cum = new Map();
  let total = 0n;
  for (const s of spec.samples) {
    const v = BigInt(s.values[index]);
    total += v;
    self.set(s.stack[0], (self.get(s.stack[0]) ?? 0n) + v);
    for (const n of new Set(s.stack)) cum.set(n, (cum.get(n) ?? 0n) + v);
  }
  return { total, self, cum };
}
