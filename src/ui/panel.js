// A flame graph with its controls: search box and share, zoom breadcrumbs,
// tooltip, and a line announcing the focused or selected frame. State (search,
// zoom path, selected function) comes in through apply() and goes out through
// onState(patch, push), so the page's URL stays the single source of truth.
import { FlameGraph } from './flame.js';
import { fmtValue, fmtPct } from './format.js';
import { h } from './dom.js';

export class FlamePanel {
  // opts: {unit, search: bool, selectable: bool (a click also selects the
  // function), inverted, colors, totals, label, onState(patch, push)}
  constructor(opts) {
    this.opts = opts;
    this.tree = null;
    this.search = opts.search ? h('input', { type: 'search', placeholder: 'Search frames (regex or text)', 'aria-label': 'Search frames', class: 'search' }) : null;
    this.share = h('span', { class: 'share', 'aria-live': 'polite' });
    this.crumbs = h('nav', { class: 'crumbs', 'aria-label': 'Zoom path' });
    this.canvas = h('canvas', { tabindex: '0', class: 'flame', role: 'img', 'aria-label': `${opts.label ?? 'Flame graph'}: arrow keys move between frames, Enter zooms, Escape zooms out` });
    this.tip = h('div', { class: 'tooltip', role: 'tooltip', hidden: '' });
    this.status = h('p', { class: 'status', 'aria-live': 'polite' });
    this.graph = new FlameGraph(this.canvas, {
      inverted: opts.inverted, colors: opts.colors, totals: opts.totals,
      onHover: (i, e) => this.hover(i, e),
      onClick: (i) => this.clicked(i),
      onFocus: (i) => { this.status.textContent = this.describe(i); },
      onZoomOut: () => { const p = this.tree.parent[this.graph.zoom]; if (p >= 0) this.zoomTo(p); },
    });
    if (this.search) {
      let timer;
      this.search.addEventListener('input', () => {
        clearTimeout(timer);
        timer = setTimeout(() => opts.onState({ q: this.search.value || undefined }, false), 150);
      });
    }
    this.el = h('div', { class: 'flame-panel' },
      this.search ? h('div', { class: 'tools' }, this.search, this.share) : null,
      this.crumbs,
      h('div', { class: 'canvas-wrap' }, this.canvas, this.tip),
      this.status);
    this.resize = new ResizeObserver(() => { if (this.tree && this.canvas.clientWidth !== this.graph.width) this.graph.draw(); });
    this.resize.observe(this.el);
  }

  setTree(tree) {
    this.tree = tree;
    this.graph.setTree(tree);
    this.q = undefined;
    this.zoomPath = undefined;
  }

  // state: {q, zoom: [names], sel}
  apply(state) {
    const t = this.tree;
    if (!t) return;
    const zoomKey = (state.zoom ?? []).join('\n');
    if (zoomKey !== this.zoomPath) { this.zoomPath = zoomKey; this.graph.zoom = this.graph.focus = t.find(state.zoom ?? []); }
    if (this.search && state.q !== this.q) {
      this.q = state.q;
      if (document.activeElement !== this.search) this.search.value = state.q ?? '';
      this.applySearch(state.q);
    }
    this.graph.selected = state.sel ?? '';
    this.renderCrumbs();
    this.graph.draw();
  }

  applySearch(q) {
    const t = this.tree;
    if (!q) { this.graph.hit = null; this.share.textContent = ''; this.matchInfo = null; return; }
    let re;
    try { re = new RegExp(q, 'i'); } catch { re = null; }
    const lq = q.toLowerCase();
    const m = t.match(re ? (s) => re.test(s) : (s) => s.toLowerCase().includes(lq));
    this.graph.hit = m.hit;
    this.matchInfo = { count: m.count, value: m.value, pct: t.total[0] ? (100 * m.value) / t.total[0] : 0 };
    this.share.textContent = m.count
      ? `${m.count} frames match: ${this.value(m.value)} (${fmtPct(m.value, t.total[0])} of total)`
      : 'no frame matches';
  }

  value(v) { return this.opts.colors === 'diff' ? fmtPct(v, 1) : fmtValue(v, this.opts.unit); }

  renderCrumbs() {
    const t = this.tree;
    const path = t.path(this.graph.zoom);
    this.crumbs.replaceChildren(...path.flatMap((i, k) => {
      const b = h('button', { type: 'button', class: 'crumb' }, t.names[i]);
      if (k === path.length - 1) b.setAttribute('aria-current', 'true');
      b.addEventListener('click', () => this.zoomTo(i));
      return k ? [h('span', { 'aria-hidden': 'true' }, ' › '), b] : [b];
    }));
  }

  // Zooms on node i (and selects its function when select is set).
  zoomTo(i, select = false) {
    const names = this.tree.path(i).slice(1).map((j) => this.tree.names[j]);
    const patch = { zoom: names.length ? names : undefined };
    if (select && this.opts.selectable) patch.sel = i > 0 ? this.tree.names[i] : undefined;
    this.opts.onState(patch, true);
  }

  clicked(i) {
    this.graph.focus = i;
    this.zoomTo(i, true);
  }

  describe(i) {
    const t = this.tree;
    if (i < 0) return '';
    if (t.diff) {
      const [ta, tb] = this.opts.totals;
      return `${t.names[i]}: baseline ${fmtValue(t.a[i], this.opts.unit)} (${fmtPct(t.a[i], ta)}), comparison ${fmtValue(t.b[i], this.opts.unit)} (${fmtPct(t.b[i], tb)})`;
    }
    return `${t.names[i]}: total ${fmtValue(t.total[i], this.opts.unit)} (${fmtPct(t.total[i], t.total[0])}), self ${fmtValue(t.self[i], this.opts.unit)} (${fmtPct(t.self[i], t.total[0])})`;
  }

  hover(i, e) {
    const t = this.tree;
    if (i < 0 || !t) { this.tip.hidden = true; return; }
    const u = this.opts.unit;
    const rows = t.diff ? (() => {
      const [ta, tb] = this.opts.totals;
      const sa = ta ? t.a[i] / ta : 0;
      const sb = tb ? t.b[i] / tb : 0;
      return [['Baseline', `${fmtValue(t.a[i], u)} (${fmtPct(t.a[i], ta)})`],
        ['Comparison', `${fmtValue(t.b[i], u)} (${fmtPct(t.b[i], tb)})`],
        ['Change', `${sb >= sa ? '+' : ''}${(100 * (sb - sa)).toFixed(2)} points of the total`]];
    })() : [['Total', `${fmtValue(t.total[i], u)} (${fmtPct(t.total[i], t.total[0])})`],
      ['Self', `${fmtValue(t.self[i], u)} (${fmtPct(t.self[i], t.total[0])})`]];
    this.tip.replaceChildren(
      h('strong', {}, t.names[i]),
      t.unsym[i] ? h('div', { class: 'muted' }, 'unsymbolized (binary name only)') : null,
      t.kinds[i] ? h('div', { class: 'muted' }, `frame type: ${t.kinds[i]}`) : null,
      h('table', {}, ...rows.map(([k, v]) => h('tr', {}, h('th', {}, k), h('td', {}, v)))));
    this.tip.hidden = false;
    const wrap = this.canvas.getBoundingClientRect();
    const x = e.clientX - wrap.left + 14;
    const y = e.clientY - wrap.top + 14;
    this.tip.style.left = `${Math.min(x, wrap.width - this.tip.offsetWidth - 4)}px`;
    this.tip.style.top = `${y}px`;
  }
}
