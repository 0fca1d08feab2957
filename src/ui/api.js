// The JSON API (docs/API.md) and the page URL. Every request goes through
// api(), which sends a 401 to /login and tracks in-flight work so tests (and
// the busy indicator) can wait until the page has settled.

const pending = new Set();

export function track(p) {
  pending.add(p);
  document.documentElement.dataset.busy = '1';
  const done = () => { pending.delete(p); if (!pending.size) document.documentElement.dataset.busy = '0'; };
  p.then(done, done);
  return p;
}

// Resolves once no request or render is in flight (test hook).
export async function settled() {
  while (pending.size) await Promise.allSettled([...pending]);
}

export class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

const cache = new Map();

// GET path?params → JSON. params: object or URLSearchParams. A 401 sends the
// browser to the sign-in page. Answers are cached by URL for the page's life
// (refresh() forgets them).
export function api(path, params) {
  const qs = new URLSearchParams(params).toString();
  const url = qs ? `${path}?${qs}` : path;
  if (cache.has(url)) return cache.get(url);
  const p = track((async () => {
    const r = await fetch(url, { credentials: 'same-origin', headers: { accept: 'application/json' } });
    if (r.status === 401) { location.assign('/login'); throw new ApiError(401, 'sign in first'); }
    const text = await r.text();
    let json;
    try { json = JSON.parse(text); } catch { json = undefined; }
    if (!r.ok) throw new ApiError(r.status, json?.error ?? `${r.status} ${text.slice(0, 200)}`);
    return json;
  })());
  cache.set(url, p);
  p.catch(() => cache.delete(url));
  if (cache.size > 64) cache.delete(cache.keys().next().value);
  return p;
}

export function refresh() { cache.clear(); }

// The URL's query string as {key: value}, label filters as [[k, v]] under
// `labels` (label.K=V) and `cmpLabels` (cmp_label.K=V).
export function readState(loc = location) {
  const q = new URLSearchParams(loc.search);
  const s = { labels: [], cmpLabels: [] };
  for (const [k, v] of q) {
    if (k.startsWith('label.')) s.labels.push([k.slice(6), v]);
    else if (k.startsWith('cmp_label.')) s.cmpLabels.push([k.slice(10), v]);
    else if (k === 'zoom') s.zoom = v.split('\n');
    else s[k] = v;
  }
  return s;
}

export function stateQuery(s) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(s)) {
    if (v === undefined || v === null || v === '' || k === 'labels' || k === 'cmpLabels') continue;
    q.set(k, k === 'zoom' ? v.join('\n') : v);
  }
  for (const [k, v] of s.labels ?? []) q.append(`label.${k}`, v);
  for (const [k, v] of s.cmpLabels ?? []) q.append(`cmp_label.${k}`, v);
  return q;
}

// Query parameters of the data routes for a state: service, type, range, labels.
export function queryParams(s, { range = [s.from, s.until], labels = s.labels } = {}) {
  const q = new URLSearchParams({ service: s.service, type: s.type });
  if (range[0]) q.set('from', range[0]);
  if (range[1]) q.set('until', range[1]);
  for (const [k, v] of labels) q.append(`label.${k}`, v);
  return q;
}
