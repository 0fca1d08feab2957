// The span, usage and targets screens: each fetches one route and shows it.
import { api } from './api.js';
import { h, table } from './dom.js';
import { FlamePanel } from './panel.js';
import { FlatTree } from './tree.js';
import { fmtValue, fmtTime, fmtInt, typeLabel } from './format.js';

function failed(root, e) { root.replaceChildren(h('p', { class: 'error', role: 'alert' }, e.message)); }

// /span?trace_id=&span_id=[&type=]: the flame graph of the span's samples, or
// why there is none and a link to its service's profiles over its minutes.
export async function spanScreen(root, s, go, hooks) {
  const q = { trace_id: s.trace_id ?? '', span_id: s.span_id ?? '' };
  for (const k of ['type', 'service', 'from', 'until']) if (s[k]) q[k] = s[k];
  let j;
  try { j = await api('/api/span', q); } catch (e) { failed(root, e); return; }
  const title = h('h2', {}, 'Span ', h('code', {}, q.span_id), q.trace_id ? [' of trace ', h('code', {}, q.trace_id)] : null);
  const profiles = `/?${new URLSearchParams({ service: j.service ?? '', from: String(j.from), until: String(j.until) })}`;
  const link = h('a', { href: profiles, class: 'button', id: 'span-profiles' }, `Open ${j.service} from ${fmtTime(j.from)} to ${fmtTime(j.until)}`);
  if (!j.samples) {
    root.replaceChildren(h('section', { class: 'span' }, title,
      h('p', { class: 'empty', role: 'status' }, 'No profile samples are linked to this span.'),
      h('p', {}, 'The profiles of its service over the span\'s minutes may still show what it did: ', link)));
    hooks.flame = null;
    return;
  }
  const sel = h('select', { 'aria-label': 'Profile type' }, ...(j.types ?? [j.type]).map((t) => h('option', { value: t, selected: t === j.type ? '' : undefined }, typeLabel(t))));
  sel.addEventListener('change', () => go({ type: sel.value, zoom: undefined }, true));
  const key = JSON.stringify(q);
  if (hooks.spanKey !== key) {
    hooks.spanKey = key;
    hooks.spanPanel = new FlamePanel({ unit: j.unit, search: true, onState: (p, push) => go(p, push), label: 'Flame graph of the span' });
    hooks.spanPanel.setTree(new FlatTree(j.root));
  }
  const p = hooks.spanPanel;
  if (!root.contains(p.el)) {
    root.replaceChildren(h('section', { class: 'span' }, title,
      h('p', {}, `${fmtInt(j.samples)} samples of ${j.service}, ${fmtValue(j.total, j.unit)} in total. `, h('label', {}, 'Type ', sel), ' ', link),
      p.el));
  }
  p.apply(s);
  hooks.flame = p.graph;
}

const USAGE_RANGES = [['now-24h', 'Today and yesterday'], ['now-7d', 'Last 7 days'], ['now-14d', 'Last 14 days']];
const REASONS = ['rate_limited', 'too_large', 'invalid', 'out_of_window'];

// /usage: samples accepted and rejected per UTC day and key, by reason.
export async function usageScreen(root, s, go) {
  const from = s.from ?? 'now-7d';
  let j;
  try { j = await api('/api/usage', { from, until: 'now' }); } catch (e) { failed(root, e); return; }
  const pick = h('select', { 'aria-label': 'Days' }, ...USAGE_RANGES.map(([v, l]) => h('option', { value: v, selected: v === from ? '' : undefined }, l)));
  pick.addEventListener('change', () => go({ from: pick.value }, true));
  const rows = j.days.map((d) => ({ ...d, ...Object.fromEntries(REASONS.map((r) => [r, d.rejected_by_reason?.[r] ?? 0])) }));
  const sort = s.sort ? { key: s.sort.split(':')[0], desc: s.sort.endsWith(':desc') } : { key: 'day', desc: true };
  const n = (k) => ({ key: k, label: k.replace(/_/g, ' '), num: true, render: (r) => fmtInt(r[k]) });
  root.replaceChildren(h('section', { class: 'usage' }, h('h2', {}, 'Usage'),
    h('p', {}, 'Samples pushed with this project\'s keys, per UTC day and key. ', pick),
    rows.length ? table({
      columns: [{ key: 'day', label: 'day (UTC)' }, { key: 'key', label: 'key' }, n('accepted'), n('rejected'), ...REASONS.map(n)],
      rows, sort, onSort: (o) => go({ sort: `${o.key}:${o.desc ? 'desc' : 'asc'}` }, false),
    }) : h('p', { class: 'empty' }, 'Nothing was pushed in this range.')));
}

// /targets: the scrape targets with their last result and failures.
export async function targetsScreen(root, s, go) {
  let j;
  try { j = await api('/api/targets'); } catch (e) { failed(root, e); return; }
  const when = (t) => (t ? h('time', { datetime: t }, t.replace('T', ' ').replace(/\.\d+Z$/, 'Z')) : 'never');
  const sort = s.sort ? { key: s.sort.split(':')[0], desc: s.sort.endsWith(':desc') } : { key: 'key', desc: false };
  root.replaceChildren(h('section', { class: 'targets' }, h('h2', {}, 'Scrape targets'),
    j.targets.length ? table({
      caption: `${j.targets.length} targets of this process`,
      columns: [
        { key: 'key', label: 'target' }, { key: 'type', label: 'type' }, { key: 'service', label: 'service' },
        { key: 'last_result', label: 'last result', render: (t) => h('span', { class: t.last_result === 'ok' ? 'ok' : t.last_result ? 'bad' : 'muted' }, t.last_result ?? 'not yet') },
        { key: 'last_success', label: 'last success', render: (t) => when(t.last_success) },
        { key: 'last_scrape', label: 'last scrape', render: (t) => when(t.last_scrape) },
        { key: 'consecutive_failures', label: 'consecutive failures', num: true },
        { key: 'url', label: 'url', render: (t) => h('code', {}, t.url) },
      ],
      rows: j.targets, sort, onSort: (o) => go({ sort: `${o.key}:${o.desc ? 'desc' : 'asc'}` }, false),
    }) : h('p', { class: 'empty' }, 'No scrape targets: this process does not scrape (role ingest or query, scraping off, or no annotated pods yet). See docs/OPERATIONS.md.')));
}
