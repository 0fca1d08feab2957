// Values in a profile type's unit, for people: bytes as KiB/MiB, time units
// as ms/s, counts with thousands separators. Pure functions, no DOM.

const NS = { nanoseconds: 1, microseconds: 1e3, milliseconds: 1e6, seconds: 1e9 };
const num = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });
const int = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

// 'cpu:nanoseconds' → 'nanoseconds'
export function unitOf(type) {
  const k = (type ?? '').lastIndexOf(':');
  return k < 0 ? '' : type.slice(k + 1);
}

// What a unit measures, as shown in the type picker: time, bytes or count.
export function unitKind(unit) {
  if (unit in NS) return 'time';
  if (unit === 'bytes') return 'bytes';
  return unit === 'count' || unit === '' ? 'count' : unit;
}

// A type id is SAMPLE:UNIT or NAME:SAMPLE:UNIT (API: Type ids): the profile
// name (block, mutex, …) and the SAMPLE:UNIT of an id.
// 'block:delay:nanoseconds' → { profile: 'block', type: 'delay:nanoseconds' }
export function splitType(id) {
  const m = /^([a-z0-9_.-]{1,64}):([^:]+:.+)$/.exec(id ?? '');
  return m ? { profile: m[1], type: m[2] } : { profile: '', type: id ?? '' };
}

// 'cpu:nanoseconds' → 'cpu — time (nanoseconds)',
// 'block:delay:nanoseconds' → 'delay (block) — time (nanoseconds)'
export function typeLabel(id) {
  const { profile, type } = splitType(id);
  const unit = unitOf(type);
  const name = type.slice(0, type.length - unit.length - 1) + (profile ? ` (${profile})` : '');
  const kind = unitKind(unit);
  return kind === unit ? `${name} — ${unit}` : `${name} — ${kind} (${unit})`;
}

// The id of types to open for type: itself when listed; for an old
// SAMPLE:UNIT link whose kinds are listed apart, the first of them; else
// CPU time (of any name), else the first type.
export function pickType(types, type) {
  if (types.includes(type)) return type;
  return types.find((t) => splitType(t).profile && splitType(t).type === type)
    ?? types.find((t) => splitType(t).type === 'cpu:nanoseconds') ?? types[0];
}

function scaled(v, steps) {
  let i = 0;
  while (i + 1 < steps.length && Math.abs(v) >= steps[i + 1][0]) i++;
  return `${num.format(v / steps[i][0])} ${steps[i][1]}`;
}

const TIME = [[1, 'ns'], [1e3, 'µs'], [1e6, 'ms'], [1e9, 's'], [60e9, 'min'], [3600e9, 'h']];
const BYTES = [[1, 'B'], [1024, 'KiB'], [1024 ** 2, 'MiB'], [1024 ** 3, 'GiB'], [1024 ** 4, 'TiB']];

export function fmtValue(v, unit) {
  if (unit in NS) return scaled(v * NS[unit], TIME);
  if (unit === 'bytes') return scaled(v, BYTES);
  if (Math.abs(v) >= 1e6) return `${num.format(v / 1e6)} M`;
  return Number.isInteger(v) ? int.format(v) : num.format(v);
}

export function fmtPct(part, whole) {
  if (!whole) return '0%';
  const p = (100 * part) / whole;
  return `${p >= 10 || p === 0 ? p.toFixed(1) : p.toPrecision(2)}%`;
}

export function fmtInt(v) { return int.format(v); }

// Unix seconds → 'YYYY-MM-DD HH:MM:SS' in local time.
export function fmtTime(s) {
  const d = new Date(s * 1000);
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

const DUR = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };

// 'now', 'now-1h', '1764670800' → unix seconds (relative to nowS).
export function resolveTime(t, nowS = Math.floor(Date.now() / 1000)) {
  if (t === undefined || t === null || t === '') return undefined;
  if (/^\d+$/.test(t)) return Number(t);
  const m = /^now(?:-(\d+)([smhdw]))?$/.exec(t);
  if (!m) return undefined;
  return m[1] ? nowS - Number(m[1]) * DUR[m[2]] : nowS;
}
