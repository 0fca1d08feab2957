// What Kiln must show for an OTLP request, computed in JS from the request
// as decoded by protobufjs with our own .proto files (never from Kiln):
//   service   = resource service.name, else
//               process.environment_variable.OTEL_SERVICE_NAME, else
//               unknown_service:<process.executable.name>, else
//               unknown_service                                  (API: Services and naming)
//   type      = sample_type "type:unit"; samples:count with a cpu:nanoseconds
//               period is also cpu:nanoseconds (count × period)   (API: Profile types)
//               — unless its scope also carries a real cpu:nanoseconds
//               profile (a Go CPU pprof translated by the Collector has
//               both; deriving would count its CPU twice, and the pprof
//               upload of the same file does not)
//   value     = each of a sample's values; timestamps only = 1 each (API: OTLP decoder checks)
//   frames    = stack_table[stack_index].location_indices, leaf first; a
//               location's lines innermost first, each a frame named by its
//               function; a location without lines is named after its
//               mapping's file (the binary) and is unsymbolized   (API: Frames)
//   kind      = the location's profile.frame.type attribute
//   self/cum  = as go tool pprof: self by leaf, cum once per stack
//               (the same shape lib/check.mjs checkQueryAgainst expects).

// Attribute value as the label string Kiln is expected to filter on.
export function anyValueString(v, strings) {
  if (!v) return '';
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.stringValueStrindex !== undefined) return strings[v.stringValueStrindex];
  if (v.intValue !== undefined) return String(v.intValue);
  if (v.boolValue !== undefined) return String(v.boolValue);
  if (v.doubleValue !== undefined) return String(v.doubleValue);
  return '';
}

export function resourceAttrs(rp, strings) {
  const out = {};
  for (const kv of rp.resource?.attributes ?? []) {
    const k = kv.key !== undefined && kv.key !== '' ? kv.key : strings[kv.keyStrindex ?? 0];
    out[k] = anyValueString(kv.value, strings);
  }
  return out;
}

export function serviceOf(attrs) {
  if (attrs['service.name']) return attrs['service.name'];
  if (attrs['process.environment_variable.OTEL_SERVICE_NAME']) return attrs['process.environment_variable.OTEL_SERVICE_NAME'];
  if (attrs['process.executable.name']) return `unknown_service:${attrs['process.executable.name']}`;
  return 'unknown_service';
}

// Every sample of the request, flattened:
// {service, resAttrs, sampleAttrs, typeName, unit, periodType, derivesCpu, period,
//  values: BigInt[] (timestamps only → 1 each), timestamps: BigInt[],
//  frames: [{name, kind, unsymbolized}] leaf first, link: {traceId, spanId}|null}
export function flattenSamples(req) {
  const d = req.dictionary;
  const S = d.stringTable;
  const attr = (i) => {
    const a = d.attributeTable[i];
    return [S[a.keyStrindex ?? 0], anyValueString(a.value, S)];
  };
  const frameType = (loc) => {
    for (const i of loc.attributeIndices ?? []) {
      const [k, v] = attr(i);
      if (k === 'profile.frame.type') return v;
    }
    return undefined;
  };
  const framesOfLoc = (li) => {
    const loc = d.locationTable[li];
    const kind = frameType(loc);
    if (loc.lines && loc.lines.length) {
      return loc.lines.map((ln) => ({ name: S[d.functionTable[ln.functionIndex ?? 0].nameStrindex ?? 0], kind, unsymbolized: false }));
    }
    const m = d.mappingTable[loc.mappingIndex ?? 0];
    return [{ name: S[m.filenameStrindex ?? 0], kind, unsymbolized: true }];
  };
  const out = [];
  for (const rp of req.resourceProfiles ?? []) {
    const resAttrs = resourceAttrs(rp, S);
    const service = serviceOf(resAttrs);
    for (const sp of rp.scopeProfiles ?? []) {
      const typesHere = new Set((sp.profiles ?? []).map((p) => `${S[p.sampleType?.typeStrindex ?? 0]}:${S[p.sampleType?.unitStrindex ?? 0]}`));
      for (const p of sp.profiles ?? []) {
        const st = p.sampleType ?? {};
        const pt = p.periodType ?? {};
        const typeName = `${S[st.typeStrindex ?? 0]}:${S[st.unitStrindex ?? 0]}`;
        const periodType = `${S[pt.typeStrindex ?? 0]}:${S[pt.unitStrindex ?? 0]}`;
        const derivesCpu = typeName === 'samples:count' && periodType === 'cpu:nanoseconds' && !typesHere.has('cpu:nanoseconds');
        for (const s of p.samples ?? []) {
          const stack = d.stackTable[s.stackIndex ?? 0];
          const frames = (stack.locationIndices ?? []).flatMap(framesOfLoc);
          const ts = (s.timestampsUnixNano ?? []).map(BigInt);
          const values = s.values && s.values.length ? s.values.map(BigInt) : ts.map(() => 1n);
          const sampleAttrs = {};
          for (const i of s.attributeIndices ?? []) { const [k, v] = attr(i); sampleAttrs[k] = v; }
          let link = null;
          if (s.linkIndex) {
            const l = d.linkTable[s.linkIndex];
            link = { traceId: Buffer.from(l.traceId).toString('hex'), spanId: Buffer.from(l.spanId).toString('hex') };
          }
          out.push({
            service, resAttrs, sampleAttrs, typeName, unit: S[st.unitStrindex ?? 0], periodType, derivesCpu,
            period: BigInt(p.period ?? 0), timeUnixNano: BigInt(p.timeUnixNano ?? 0), values, timestamps: ts, frames, link,
          });
        }
      }
    }
  }
  return out;
}

function emptyExp(typeName) {
  return { typeName, unit: typeName.slice(typeName.indexOf(':') + 1), total: 0n, self: new Map(), cum: new Map(), kinds: new Map(), unsymbolized: new Set(), samples: 0 };
}

function add(exp, frames, v) {
  exp.total += v;
  exp.samples++;
  if (frames.length === 0) return;
  const leaf = frames[0].name;
  exp.self.set(leaf, (exp.self.get(leaf) ?? 0n) + v);
  for (const n of new Set(frames.map((f) => f.name))) exp.cum.set(n, (exp.cum.get(n) ?? 0n) + v);
  for (const f of frames) {
    if (!exp.kinds.has(f.name)) exp.kinds.set(f.name, new Set());
    if (f.kind) exp.kinds.get(f.name).add(f.kind);
    if (f.unsymbolized) exp.unsymbolized.add(f.name);
  }
}

// Map service → Map typeName → expectation. filter(sample) restricts.
export function expectRequest(req, filter = null) {
  return expectSamples(flattenSamples(req), filter);
}

export function expectSamples(samples, filter = null) {
  const out = new Map();
  const get = (svc, t) => {
    if (!out.has(svc)) out.set(svc, new Map());
    const m = out.get(svc);
    if (!m.has(t)) m.set(t, emptyExp(t));
    return m.get(t);
  };
  for (const s of samples) {
    if (filter && !filter(s)) continue;
    const sum = s.values.reduce((a, b) => a + b, 0n);
    add(get(s.service, s.typeName), s.frames, sum);
    if (s.derivesCpu) {
      add(get(s.service, 'cpu:nanoseconds'), s.frames, sum * s.period);
    }
  }
  return out;
}

// Walks a Kiln flame graph and returns problems with "kind"/"unsymbolized"
// against the expectation: every unsymbolized frame must carry
// unsymbolized:true, symbolized ones must not, and kind must be the frame
// type (when the expectation knows exactly one).
export function checkKinds(root, exp) {
  const problems = [];
  let seenUnsym = 0;
  const walk = (n, depth) => {
    if (depth > 0) {
      const kinds = exp.kinds.get(n.name);
      if (exp.unsymbolized.has(n.name)) {
        seenUnsym++;
        if (n.unsymbolized !== true) problems.push(`"${n.name}" is an unsymbolized frame (no lines; named after its binary) but has unsymbolized=${JSON.stringify(n.unsymbolized)}`);
      } else if (n.unsymbolized === true) {
        problems.push(`"${n.name}" has unsymbolized:true but is a symbolized function`);
      }
      if (kinds && kinds.size === 1) {
        const k = [...kinds][0];
        if (n.kind !== k) problems.push(`"${n.name}" kind ${JSON.stringify(n.kind)}, expected "${k}" (profile.frame.type)`);
      }
    }
    for (const c of n.children ?? []) walk(c, depth + 1);
    if (problems.length > 10) problems.length = 10;
  };
  walk(root, 0);
  return { problems, seenUnsym };
}
