// Builds small OTLP requests (decoded shape, for protobufjs) from readable
// stacks, and encodes them with raw bytes spliced in at a chosen level —
// for wrong wire types and other inputs protobufjs cannot express.
import protobuf from 'protobufjs';
import { T, encodeRequest } from './otlp.mjs';
import { PbWriter, WT } from './pb.mjs';

export const nowNs = (offsetS = 0) => BigInt(Date.now() + offsetS * 1000) * 1000000n;

// spec = { resources: [{ attrs: {k: v}, profiles: [{ type: ['cpu','nanoseconds'],
//   periodType: ['cpu','nanoseconds'], period, timeNs, durationNs,
//   samples: [{ stack: ['leaf', …, 'root'], values: [..], timestamps: [BigInt..],
//               attrs: {k: v}, link: {traceId: hex32, spanId: hex16}, binary: true }] }] }],
//   kinds: {fnName: 'go'} }
// A stack entry '@/path/bin' is an unsymbolized frame of that binary.
export function buildRequest(spec) {
  const strings = [''];
  const sIx = new Map([['', 0]]);
  const str = (s) => {
    if (!sIx.has(s)) { sIx.set(s, strings.length); strings.push(s); }
    return sIx.get(s);
  };
  const mappingTable = [{}];
  const mapIx = new Map();
  const mappingOf = (file) => {
    if (!mapIx.has(file)) { mapIx.set(file, mappingTable.length); mappingTable.push({ memoryStart: '4194304', memoryLimit: '8388608', filenameStrindex: str(file) }); }
    return mapIx.get(file);
  };
  const attributeTable = [{}];
  const attrIx = new Map();
  const attrOf = (k, v) => {
    const key = `${k}\0${v}`;
    if (!attrIx.has(key)) { attrIx.set(key, attributeTable.length); attributeTable.push({ keyStrindex: str(k), value: { stringValue: String(v) } }); }
    return attrIx.get(key);
  };
  const functionTable = [{}];
  const locationTable = [{}];
  const locIx = new Map();
  const locOf = (name) => {
    if (!locIx.has(name)) {
      const ix = locationTable.length;
      locIx.set(name, ix);
      if (name.startsWith('@')) {
        locationTable.push({ mappingIndex: mappingOf(name.slice(1)), address: String(0x1000 + ix * 16), attributeIndices: [attrOf('profile.frame.type', 'native')] });
      } else {
        const fi = functionTable.length;
        functionTable.push({ nameStrindex: str(name), systemNameStrindex: str(name), filenameStrindex: str('main.go') });
        const kind = spec.kinds?.[name] ?? 'go';
        locationTable.push({ mappingIndex: mappingOf('/bin/app'), address: String(0x401000 + ix * 16), lines: [{ functionIndex: fi, line: String(10 + ix) }], attributeIndices: [attrOf('profile.frame.type', kind)] });
      }
    }
    return locIx.get(name);
  };
  const stackTable = [{}];
  const stackIx = new Map();
  const stackOf = (names) => {
    const k = names.join('\0');
    if (!stackIx.has(k)) { stackIx.set(k, stackTable.length); stackTable.push({ locationIndices: names.map(locOf) }); }
    return stackIx.get(k);
  };
  const linkTable = [{}];
  const linkIx = new Map();
  const linkOf = (l) => {
    const k = `${l.traceId}/${l.spanId}`;
    if (!linkIx.has(k)) { linkIx.set(k, linkTable.length); linkTable.push({ traceId: Buffer.from(l.traceId, 'hex'), spanId: Buffer.from(l.spanId, 'hex') }); }
    return linkIx.get(k);
  };
  const resourceProfiles = spec.resources.map((r) => ({
    resource: { attributes: Object.entries(r.attrs ?? {}).map(([k, v]) => ({ key: k, value: { stringValue: String(v) } })) },
    scopeProfiles: [{
      scope: { name: 'kiln-blackbox' },
      profiles: r.profiles.map((p) => {
        const out = {
          sampleType: { typeStrindex: str(p.type[0]), unitStrindex: str(p.type[1]) },
          samples: p.samples.map((s) => {
            const o = { stackIndex: stackOf(s.stack) };
            if (s.attrs) o.attributeIndices = Object.entries(s.attrs).map(([k, v]) => attrOf(k, v));
            if (s.link) o.linkIndex = linkOf(s.link);
            if (s.values) o.values = s.values.map(String);
            if (s.timestamps) o.timestampsUnixNano = s.timestamps.map(String);
            return o;
          }),
          timeUnixNano: String(p.timeNs ?? nowNs(-30)),
          durationNano: String(p.durationNs ?? 10_000_000_000n),
        };
        const pt = p.periodType ?? p.type;
        out.periodType = { typeStrindex: str(pt[0]), unitStrindex: str(pt[1]) };
        if (p.period !== undefined) out.period = String(p.period);
        return out;
      }),
    }],
  }));
  return {
    resourceProfiles,
    dictionary: { mappingTable, locationTable, functionTable, linkTable, stringTable: strings, attributeTable, stackTable },
  };
}

const pb = () => new PbWriter();
const enc = (type, obj) => Buffer.from(type.encode(type.fromObject(obj)).finish());
const field = (n, bytes) => pb().bytes(n, bytes).finish();

// Encodes req like encodeRequest, with raw bytes at
// resource_profiles[0].scope_profiles[0].profiles[0](.samples[0]):
//   patch = { sample: Buffer (appended to samples[0]), sampleReplace: Buffer,
//             profile: Buffer (appended to profiles[0]), dictionary: Buffer
//             (appended), dictionaryReplace: Buffer (whole field 2 bytes
//             incl. tag, or empty), request: Buffer (appended) }
export function encodeWithRaw(req, patch) {
  const Sample = T.Sample;
  const Profile = T.Profile;
  const root = T.Request.root;
  const Scope = root.lookupType('opentelemetry.proto.profiles.v1development.ScopeProfiles');
  const RP = root.lookupType('opentelemetry.proto.profiles.v1development.ResourceProfiles');
  const Dict = root.lookupType('opentelemetry.proto.profiles.v1development.ProfilesDictionary');
  const rp0 = req.resourceProfiles[0];
  const sp0 = rp0.scopeProfiles[0];
  const p0 = sp0.profiles[0];
  const samples = p0.samples.map((s, i) => {
    if (i !== 0) return enc(Sample, s);
    if (patch.sampleReplace) return patch.sampleReplace;
    return Buffer.concat([enc(Sample, s), patch.sample ?? Buffer.alloc(0)]);
  });
  const profBytes = Buffer.concat([
    enc(Profile, { ...p0, samples: [] }),
    ...samples.map((b) => field(2, b)),
    patch.profile ?? Buffer.alloc(0),
  ]);
  const scopeBytes = Buffer.concat([
    enc(Scope, { ...sp0, profiles: [] }),
    field(2, profBytes),
    ...sp0.profiles.slice(1).map((p) => field(2, enc(Profile, p))),
  ]);
  const rpBytes = Buffer.concat([
    enc(RP, { ...rp0, scopeProfiles: [] }),
    field(2, scopeBytes),
    ...rp0.scopeProfiles.slice(1).map((s) => field(2, enc(Scope, s))),
  ]);
  const dict = patch.dictionaryReplace !== undefined
    ? patch.dictionaryReplace
    : field(2, Buffer.concat([enc(Dict, req.dictionary), patch.dictionary ?? Buffer.alloc(0)]));
  return Buffer.concat([
    field(1, rpBytes),
    ...req.resourceProfiles.slice(1).map((r) => field(1, enc(RP, r))),
    dict,
    patch.request ?? Buffer.alloc(0),
  ]);
}

export { PbWriter, WT, encodeRequest, protobuf };
