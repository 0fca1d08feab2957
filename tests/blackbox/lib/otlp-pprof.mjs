// pprof → OTLP Profiles, the way the OpenTelemetry Collector's pprof
// receiver translates: one Profile per sample type, all of them sharing one
// ProfilesDictionary (string table, mapping/location/function tables with
// the zero entry 0, a stack_table of the samples' location lists, pprof
// labels as sample attributes). Decoding uses our proto/pprof.proto with
// protobufjs — nothing of Kiln.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import protobuf from 'protobufjs';
import { PROTO_DIR } from './otlp.mjs';

const root = protobuf.loadSync(path.join(PROTO_DIR, 'pprof.proto'));
const PprofProfile = root.lookupType('perftools.profiles.Profile');

export function readPprofFile(file) {
  let buf = fs.readFileSync(file);
  if (buf[0] === 0x1f && buf[1] === 0x8b) buf = zlib.gunzipSync(buf);
  return PprofProfile.toObject(PprofProfile.decode(buf), { longs: String, arrays: true, defaults: true });
}

// opts: {serviceName, timeUnixNano (BigInt), strindexAttrs (resource
// attributes as key_strindex/string_value_strindex), extraResourceAttrs}
// Returns a decoded-shape ExportProfilesServiceRequest (for encodeRequest).
export function pprofToOtlp(p, opts) {
  const S = p.stringTable;
  const strings = [''];
  const sIx = new Map([['', 0]]);
  const str = (s) => {
    if (!sIx.has(s)) { sIx.set(s, strings.length); strings.push(s); }
    return sIx.get(s);
  };
  const mappingTable = [{}];
  const mapIx = new Map();
  for (const m of p.mapping) {
    mapIx.set(String(m.id), mappingTable.length);
    mappingTable.push({
      memoryStart: m.memoryStart, memoryLimit: m.memoryLimit, fileOffset: m.fileOffset,
      filenameStrindex: str(S[Number(m.filename)] ?? ''),
    });
  }
  const functionTable = [{}];
  const fnIx = new Map();
  for (const f of p.function) {
    fnIx.set(String(f.id), functionTable.length);
    functionTable.push({
      nameStrindex: str(S[Number(f.name)] ?? ''),
      systemNameStrindex: str(S[Number(f.systemName)] ?? ''),
      filenameStrindex: str(S[Number(f.filename)] ?? ''),
      startLine: f.startLine,
    });
  }
  const locationTable = [{}];
  const locIx = new Map();
  for (const l of p.location) {
    locIx.set(String(l.id), locationTable.length);
    locationTable.push({
      mappingIndex: l.mappingId !== '0' ? mapIx.get(String(l.mappingId)) : 0,
      address: l.address,
      lines: l.line.map((ln) => ({ functionIndex: fnIx.get(String(ln.functionId)), line: ln.line })),
    });
  }
  const stackTable = [{}];
  const stackIx = new Map();
  const stackOf = (ids) => {
    const k = ids.join(',');
    if (!stackIx.has(k)) { stackIx.set(k, stackTable.length); stackTable.push({ locationIndices: ids.map((id) => locIx.get(String(id))) }); }
    return stackIx.get(k);
  };
  const attributeTable = [{}];
  const attrIx = new Map();
  const attrOf = (lb) => {
    const key = S[Number(lb.key)];
    const isStr = lb.str !== '0';
    const k = isStr ? `s\0${key}\0${S[Number(lb.str)]}` : `n\0${key}\0${lb.num}\0${lb.numUnit}`;
    if (!attrIx.has(k)) {
      attrIx.set(k, attributeTable.length);
      attributeTable.push(isStr
        ? { keyStrindex: str(key), value: { stringValue: S[Number(lb.str)] } }
        : { keyStrindex: str(key), value: { intValue: lb.num }, unitStrindex: lb.numUnit !== '0' ? str(S[Number(lb.numUnit)]) : 0 });
    }
    return attrIx.get(k);
  };
  const samples = p.sample.map((s) => ({ stackIndex: stackOf(s.locationId), attrs: s.label.map(attrOf), values: s.value }));
  const pt = p.periodType ?? { type: '0', unit: '0' };
  const profiles = p.sampleType.map((st, i) => ({
    sampleType: { typeStrindex: str(S[Number(st.type)]), unitStrindex: str(S[Number(st.unit)]) },
    samples: samples.map((s) => ({ stackIndex: s.stackIndex, attributeIndices: s.attrs, values: [s.values[i]] })),
    timeUnixNano: String(opts.timeUnixNano),
    durationNano: p.durationNanos,
    periodType: { typeStrindex: str(S[Number(pt.type)] ?? ''), unitStrindex: str(S[Number(pt.unit)] ?? '') },
    period: p.period,
  }));
  const attrs = [['service.name', opts.serviceName], ...Object.entries(opts.extraResourceAttrs ?? {})];
  const resourceAttrs = attrs.map(([k, v]) => (opts.strindexAttrs
    ? { keyStrindex: str(k), value: { stringValueStrindex: str(v) } }
    : { key: k, value: { stringValue: v } }));
  return {
    resourceProfiles: [{
      resource: { attributes: resourceAttrs },
      scopeProfiles: [{ scope: { name: 'kiln-blackbox-pprof-converter' }, profiles }],
    }],
    dictionary: { mappingTable, locationTable, functionTable, linkTable: [{}], stringTable: strings, attributeTable, stackTable },
  };
}

// Re-encodes a decoded pprof (e.g. after renaming a label key).
export function encodePprof(obj) {
  return Buffer.from(PprofProfile.encode(PprofProfile.fromObject(obj)).finish());
}
