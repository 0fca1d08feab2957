// The Profiles screen: services (busiest first), type and time-range pickers,
// label filters, the timeline, and one of three views of the flame graph
// (flame, sandwich of one function, diff of two ranges or label sets), with
// the top table below. Everything it shows follows from the URL state.
import { api, queryParams, ApiError } from './api.js';
import { h, table } from './dom.js';
import { FlamePanel } from './panel.js';
import { KIND_LEGEND, frameColor } from './flame.js';
import { FlatTree, sandwich, diffTrees } from './tree.js';
import { Timeline } from './timeline.js';
import { fmtValue, fmtPct, typeLabel, pickType, unitOf, fmtTime, resolveTime } from './format.js';
import { firstRun } from './firstrun.js';

export const PRESETS = [['now-15m', '15 minutes'], ['now-1h', '1 hour'], ['now-6h', '6 hours'], ['now-24h', '24 hours'], ['now-7d', '7 days']];
const TOP_ROWS = 300;

// datetime-local value ↔ unix seconds (local time).
const toLocal = (s) => { const d = new Date((s ?? Date.now() / 1000) * 1000); d.setMinutes(d.getMinutes() - d.getTimezoneOffset()); return d.toISOString().slice(0, 19); };
const fromLocal = (v) => Math.floor(new Date(v).getTime() / 1000);

// The time-range picker: presets and an absolute from/until. onRange(from, until).
export function rangePicker(s, onRange) {
  const from = s.from ?? 'now-1h';
  const preset = PRESETS.some(([v]) => v === from) && (!s.until || s.until === 'now') ? from : 'custom';
  const sel = h('select', { 'aria-label': 'Time range', class: 'range' },
    ...PRESETS.map(([v, l]) => h('option', { value: v, selected: v === preset ? '' : undefined }, `Last ${l}`)),
    h('option', { value: 'custom', selected: preset === 'custom' ? '' : undefined }, 'Custom…'));
  const a = h('input', { type: 'datetime-local', step: '1', 'aria-label': 'From', value: toLocal(resolveTime(from)) });
  const b = h('input', { type: 'datetime-local', step: '1', 'aria-label': 'Until', value: toLocal(resolveTime(s.until ?? 'now')) });
  const apply = h('button', { type: 'button' }, 'Apply');
  const custom = h('span', { class: 'custom', hidden: preset === 'custom' ? undefined : '' }, a, ' – ', b, ' ', apply);
  sel.addEventListener('change', () => {
    if (sel.value === 'custom') { custom.hidden = false; a.focus(); } else onRange(sel.value, undefined);
  });
  apply.addEventListener('click', () => { if (a.value && b.value) onRange(String(fromLocal(a.value)), String(fromLocal(b.value))); });
  return h('span', { class: 'rangepicker' }, sel, ' ', custom);
}

// The label-filter editor: chips for the filters and a key=value form with
// suggestions from /api/labels (free text when the server lacks the route).
function labelEditor(labels, suggest, onChange, legend) {
  const chips = labels.map(([k, v], n) => {
    const x = h('button', { type: 'button', 'aria-label': `Remove filter ${k}=${v}` }, '×');
    x.addEventListener('click', () => onChange(labels.filter((_, m) => m !== n)));
    return h('span', { class: 'chip' }, `${k}=${v} `, x);
  });
  const id = `lbl${Math.random().toString(36).slice(2, 8)}`;
  const key = h('input', { list: `${id}k`, placeholder: 'label', 'aria-label': `${legend} label name`, size: '16' });
  const val = h('input', { list: `${id}v`, placeholder: 'value', 'aria-label': `${legend} label value`, size: '16' });
  const keys = h('datalist', { id: `${id}k` });
  const vals = h('datalist', { id: `${id}v` });
  const note = h('span', { class: 'muted' });
  const add = h('button', { type: 'submit' }, 'Add filter');
  const form = h('form', { class: 'labels', 'aria-label': legend }, h('span', { class: 'legend' }, `${legend}:`), ...chips, key, '=', val, add, keys, vals, note);
  suggest.then((sugg) => {
    if (!sugg) { note.textContent = 'value suggestions unavailable; type any label and value'; return; }
    keys.replaceChildren(...sugg.map((l) => h('option', { value: l.name })));
    const fill = () => vals.replaceChildren(...(sugg.find((l) => l.name === key.value)?.values ?? []).map((v) => h('option', { value: v })));
    key.addEventListener('input', fill);
    fill();
  });
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (key.value.trim() && val.value !== '') onChange([...labels, [key.value.trim(), val.value]]);
  });
  return form;
}

function labelSuggestions(s) {
  return api('/api/labels', queryParams(s, { labels: [] })).then((j) => j.labels ?? [], (e) => {
    if (e instanceof ApiError && (e.status === 404 || e.status === 400)) return null;
    return null;
  });
}

// The default baseline of a diff: the same range when it compares label
// sets, else the range of the same length just before.
function defaultBaseline(s) {
  if (s.cmpLabels.length) return [s.from ?? 'now-1h', s.until ?? 'now'];
  const now = Math.floor(Date.now() / 1000);
  const f = resolveTime(s.from ?? 'now-1h', now);
  const u = resolveTime(s.until ?? 'now', now);
  return [String(f - (u - f)), String(f)];
}

export class ProfilesScreen {
  // go(patch, push): changes the URL state and re-renders.
  constructor(root, go) {
    this.root = root;
    this.go = go;
    this.gen = 0;
    this.panels = {};
    this.hooks = {};
  }

  async update(s) {
    const gen = ++this.gen;
    const stale = () => gen !== this.gen;
    const services = (await api('/api/services', { from: s.from ?? 'now-1h', until: s.until ?? 'now' })).services;
    if (stale()) return;
    if (!services.length && !s.service) { this.root.replaceChildren(firstRun(s, (f, u) => this.go({ from: f, until: u }, true))); return; }
    const svc = services.find((x) => x.name === s.service);
    if (!s.service) { this.go({ service: services[0].name }, false, true); return; }
    const types = svc ? svc.types : (await api('/api/types', { service: s.service, from: s.from ?? 'now-1h', until: s.until ?? 'now' })).types;
    if (stale()) return;
    if (!s.type || !types.includes(s.type)) {
      if (types.length) { this.go({ type: pickType(types, s.type) }, false, true); return; }
    }
    this.layout(s, services, types);
    if (!s.type) { this.view.replaceChildren(h('p', {}, `No profiles of ${s.service} in this range.`)); return; }
    const unit = unitOf(s.type);
    const qp = queryParams(s);
    await Promise.all([this.timeline(s, qp, unit, stale), this.showView(s, qp, unit, stale), this.topTable(s, qp, unit, stale)]);
  }

  // The static parts, rebuilt when the service list, type or filters change.
  layout(s, services, types) {
    const key = JSON.stringify([services.map((x) => x.name), s.service, s.type, s.from, s.until, s.labels, s.view, s.cmp_from, s.cmp_until, s.cmpLabels]);
    if (key === this.layoutKey) { this.sideList(s, services); return; }
    this.layoutKey = key;
    const filter = h('input', { type: 'search', placeholder: 'Filter services', 'aria-label': 'Filter services', value: this.filterText ?? '' });
    filter.addEventListener('input', () => { this.filterText = filter.value; this.sideList(s, services); });
    this.list = h('ul', { class: 'services', 'aria-label': 'Services, busiest first' });
    this.sideList(s, services);
    const typeSel = h('select', { 'aria-label': 'Profile type', id: 'type' },
      ...types.map((t) => h('option', { value: t, selected: t === s.type ? '' : undefined }, typeLabel(t))));
    typeSel.addEventListener('change', () => this.go({ type: typeSel.value, zoom: undefined, sel: undefined, fn: undefined }, true));
    const dl = s.type ? h('a', { class: 'button', href: `/api/pprof?${queryParams(s)}`, download: `${s.service}-${s.type.replaceAll(':', '-')}.pb.gz` }, 'Download pprof') : null;
    const tabs = h('div', { role: 'tablist', class: 'tabs', 'aria-label': 'View' },
      ...[['flame', 'Flame graph'], ['sandwich', 'Sandwich'], ['diff', 'Diff']].map(([v, l]) => {
        const b = h('button', { type: 'button', role: 'tab', 'data-view': v, 'aria-selected': String((s.view ?? 'flame') === v) }, l);
        b.addEventListener('click', () => this.go({ view: v === 'flame' ? undefined : v }, true));
        return b;
      }));
    this.tl = h('canvas', { class: 'timeline', 'aria-label': 'Timeline: drag to select a time range' });
    this.timelineChart = new Timeline(this.tl, { onSelect: (f, u) => this.go({ from: String(f), until: String(u), zoom: undefined }, true) });
    this.view = h('div', { class: 'view' });
    this.selbar = h('div', { class: 'selbar', 'aria-live': 'polite' });
    this.top = h('div', { class: 'top' });
    const diffForm = s.view === 'diff' ? this.diffControls(s) : null;
    const legend = h('ul', { class: 'legend', 'aria-label': 'Colours' },
      ...KIND_LEGEND.map(([k, l]) => h('li', {}, h('span', { class: 'swatch', style: `background:${frameColor('pkg.f', k)}` }), l)),
      h('li', {}, h('span', { class: 'swatch unsym' }), 'unsymbolized'),
      h('li', {}, h('span', { class: 'swatch', style: 'background:#d61fd6' }), 'search match'));
    this.root.replaceChildren(h('div', { class: 'profiles' },
      h('aside', { class: 'side' }, h('h2', {}, 'Services'), filter, this.list),
      h('section', { class: 'content' },
        h('div', { class: 'controls' }, h('label', {}, 'Type ', typeSel), rangePicker(s, (f, u) => this.go({ from: f, until: u, zoom: undefined }, true)), dl),
        labelEditor(s.labels, labelSuggestions(s), (labels) => this.go({ labels, zoom: undefined }, true), 'Filters'),
        this.tl,
        h('div', { class: 'viewbar' }, tabs, legend),
        diffForm, this.selbar, this.view, this.top)));
    this.panels = {};
  }

  sideList(s, services) {
    const f = (this.filterText ?? '').toLowerCase();
    this.list.replaceChildren(...services.filter((x) => x.name.toLowerCase().includes(f)).map((x) => {
      const a = h('a', { href: `/?service=${encodeURIComponent(x.name)}${s.from ? `&from=${encodeURIComponent(s.from)}` : ''}${s.until ? `&until=${encodeURIComponent(s.until)}` : ''}`,
        'aria-current': x.name === s.service ? 'page' : undefined }, h('span', { class: 'name' }, x.name), h('span', { class: 'cpu' }, x.cpu_nanoseconds ? `${fmtValue(x.cpu_nanoseconds, 'nanoseconds')} CPU` : ''));
      a.addEventListener('click', (e) => { e.preventDefault(); this.go({ service: x.name, type: undefined, labels: [], zoom: undefined, sel: undefined, fn: undefined, q: undefined }, true); });
      return h('li', {}, a);
    }));
  }

  diffControls(s) {
    const [bf, bu] = defaultBaseline(s);
    const from = h('input', { 'aria-label': 'Baseline from', value: s.cmp_from ?? bf, size: '12' });
    const until = h('input', { 'aria-label': 'Baseline until', value: s.cmp_until ?? bu, size: '12' });
    const apply = h('button', { type: 'button' }, 'Compare');
    apply.addEventListener('click', () => this.go({ cmp_from: from.value, cmp_until: until.value }, true));
    return h('div', { class: 'diffbar' },
      h('p', {}, 'Diff: the baseline below against the selected range and filters above (baseline filters compare two label sets; the baseline range then defaults to the same range). ',
        h('span', { class: 'swatch', style: 'background:hsl(0 80% 55%)' }), ' grew, ',
        h('span', { class: 'swatch', style: 'background:hsl(130 60% 55%)' }), ' shrank (share of each side\'s total).'),
      h('div', {}, 'Baseline: ', from, ' – ', until, ' (unix seconds or now-2h) ', apply),
      labelEditor(s.cmpLabels, labelSuggestions(s), (cmpLabels) => this.go({ cmpLabels }, true), 'Baseline filters'));
  }

  async timeline(s, qp, unit, stale) {
    try {
      const j = await api('/api/timeline', qp);
      if (!stale()) this.timelineChart.set(j, unit);
    } catch (e) { if (!stale()) this.tl.replaceWith(h('p', { class: 'error' }, `timeline: ${e.message}`)); }
  }

  // A panel kept across renders while its data key holds (zoom/search/selection
  // then only redraw).
  panel(name, key, tree, opts) {
    let p = this.panels[name];
    if (!p || p.key !== key) {
      p = new FlamePanel(opts);
      p.key = key;
      p.setTree(tree);
      this.panels[name] = p;
    }
    return p;
  }

  async showView(s, qp, unit, stale) {
    const view = s.view ?? 'flame';
    const onState = (patch, push) => this.go(patch, push);
    try {
      if (view === 'diff') return await this.diffView(s, unit, stale);
      const fg = await api('/api/flamegraph', qp);
      if (stale()) return;
      const key = `${qp}`;
      const tree = this.trees?.key === key ? this.trees.tree : new FlatTree(fg.root);
      this.trees = { key, tree };
      this.hooks = { total: fg.total };
      this.selection(s, unit, tree, fg.total);
      if (view === 'sandwich') return this.sandwichView(s, unit, tree, key);
      const p = this.panel('flame', key, tree, { unit, search: true, selectable: true, onState, label: `Flame graph of ${s.service}` });
      if (!fg.total) { this.view.replaceChildren(h('p', { class: 'empty' }, 'No samples match this range and these filters.')); this.hooks.flame = p.graph; return; }
      if (p.el.parentNode !== this.view) this.view.replaceChildren(p.el);
      p.apply(s);
      this.hooks.flame = p.graph;
      this.hooks.panel = p;
    } catch (e) {
      if (!stale()) this.view.replaceChildren(h('p', { class: 'error' }, e.message));
    }
  }

  selection(s, unit, tree, total) {
    if (!s.sel) { this.selbar.replaceChildren(); return; }
    const m = tree.match((n) => n === s.sel);
    const sw = h('button', { type: 'button' }, 'Sandwich');
    sw.addEventListener('click', () => this.go({ view: 'sandwich', fn: s.sel }, true));
    const clear = h('button', { type: 'button' }, 'Clear');
    clear.addEventListener('click', () => this.go({ sel: undefined }, true));
    this.selbar.replaceChildren(h('span', {}, 'Selected ', h('strong', {}, s.sel), `: ${fmtValue(m.value, unit)} (${fmtPct(m.value, total)} of total) `), sw, ' ', clear);
  }

  sandwichView(s, unit, tree, key) {
    const fn = s.fn ?? s.sel;
    if (!fn) { this.view.replaceChildren(h('p', { class: 'empty' }, 'Pick a function for the sandwich: click a frame or a row of the top table, then "Sandwich".')); return; }
    const sw = sandwich(tree, fn);
    // The two panels keep their zoom to themselves (not in the URL).
    const local = (name) => (patch) => { const p = this.panels[name]; p.local = { ...p.local, ...patch }; p.apply(p.local); };
    const callers = this.panel('callers', `${key}\n${fn}`, new FlatTree(sw.callers), { unit, inverted: true, onState: local('callers'), label: `Callers of ${fn}` });
    const callees = this.panel('callees', `${key}\n${fn}`, new FlatTree(sw.callees), { unit, onState: local('callees'), label: `Callees of ${fn}` });
    this.view.replaceChildren(
      h('h3', {}, `Callers of ${fn}`, h('span', { class: 'muted' }, ' (each caller below the function it called)')), callers.el,
      h('h3', {}, `Callees of ${fn}`, h('span', { class: 'muted' }, ` (${fmtValue(sw.callees.total, unit)}, ${fmtPct(sw.callees.total, tree.total[0])} of total)`)), callees.el);
    callers.apply(callers.local ?? {});
    callees.apply(callees.local ?? {});
    this.hooks.sandwich = { callers: callers.graph, callees: callees.graph };
  }

  async diffView(s, unit, stale) {
    const [bf, bu] = defaultBaseline(s);
    const qa = queryParams(s, { range: [s.cmp_from ?? bf, s.cmp_until ?? bu], labels: s.cmpLabels.length ? s.cmpLabels : s.labels });
    const qb = queryParams(s);
    const [a, b] = await Promise.all([api('/api/flamegraph', qa), api('/api/flamegraph', qb)]);
    if (stale()) return;
    const d = diffTrees(a.root, b.root);
    const key = `diff\n${qa}\n${qb}`;
    const p = this.panel('diff', key, new FlatTree(d.root), { unit, search: true, colors: 'diff', totals: [d.totalA, d.totalB], onState: (patch, push) => this.go(patch, push), label: 'Diff flame graph' });
    const info = h('p', { class: 'muted' }, `Baseline ${fmtTime(Number(qa.get('from')) || 0)} – ${fmtTime(Number(qa.get('until')) || 0)}: ${fmtValue(d.totalA, unit)}; selected range: ${fmtValue(d.totalB, unit)}. Frames are sized by the mean of their two shares.`);
    this.view.replaceChildren(info, p.el);
    p.apply(s);
    this.hooks = { flame: p.graph, panel: p, diff: { totalA: d.totalA, totalB: d.totalB } };
  }

  async topTable(s, qp, unit, stale) {
    let j;
    try {
      j = await api('/api/top', new URLSearchParams([...qp, ['limit', '0']]));
    } catch (e) { if (!stale()) this.top.replaceChildren(h('p', { class: 'error' }, `top: ${e.message}`)); return; }
    if (stale()) return;
    const [key, dir] = (s.sort ?? 'self:desc').split(':');
    const pct = (v) => fmtPct(v, j.total);
    this.top.replaceChildren(h('h3', {}, 'Top functions'), table({
      caption: `${j.rows.length} functions; values in ${unit}. Click a row to highlight it in the graph.`,
      columns: [
        { key: 'name', label: 'Function', render: (r) => h('span', { class: 'fn', title: r.name }, r.name) },
        { key: 'self', label: 'Self', num: true, render: (r) => h('span', { 'data-value': r.self }, fmtValue(r.self, unit)) },
        { key: 'selfPct', label: 'Self %', num: true, render: (r) => pct(r.self) },
        { key: 'total', label: 'Total', num: true, render: (r) => h('span', { 'data-value': r.total }, fmtValue(r.total, unit)) },
        { key: 'totalPct', label: 'Total %', num: true, render: (r) => pct(r.total) },
      ],
      rows: j.rows.map((r) => ({ ...r, selfPct: r.self, totalPct: r.total })),
      sort: { key, desc: dir !== 'asc' },
      onSort: (o) => this.go({ sort: `${o.key}:${o.desc ? 'desc' : 'asc'}` }, false),
      onPick: (r) => this.go({ sel: r.name === s.sel ? undefined : r.name }, true),
      rowKey: (r) => r.name,
      selectedKey: s.sel,
      limit: TOP_ROWS,
    }));
    const row = this.top.querySelector('tr[aria-selected]');
    // Bring the selected row into the table's own scroll box (not the page).
    const box = row?.closest('table, div');
    if (row && box && this.top.dataset.scrolledTo !== s.sel) {
      if (row.offsetTop < box.scrollTop || row.offsetTop > box.scrollTop + box.clientHeight - row.offsetHeight) box.scrollTop = row.offsetTop - box.clientHeight / 2;
      this.top.dataset.scrolledTo = s.sel;
    }
  }
}
