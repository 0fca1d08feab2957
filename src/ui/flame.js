// The flame graph on a canvas: draws a FlatTree (tree.js) zoomed on one node,
// only rects at least half a pixel wide (runs of narrower siblings are merged
// into one plain rect), hit-tests the mouse, moves a keyboard focus between
// frames. It knows nothing of the API or the URL: the panel (panel.js) does.

const ROW = 18;
const MIN_PX = 0.5;
const LABEL_PX = 28;

// Hue bands by frame type (`kind`); the package picks a hue inside the band.
const BANDS = {
  '': [12, 48], go: [12, 48], native: [195, 225], kernel: [330, 355], jvm: [95, 130],
  cpython: [50, 68], python: [50, 68], v8js: [150, 175], dotnet: [260, 285], php: [235, 255],
  ruby: [0, 10], perl: [285, 300], beam: [170, 190],
};
export const KIND_LEGEND = [['go', 'Go / unknown'], ['native', 'native'], ['kernel', 'kernel'], ['jvm', 'JVM'], ['cpython', 'Python'], ['v8js', 'JavaScript']];

function hash(s) {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return (h >>> 0) / 4294967296;
}

// 'github.com/a/b/pkg.(*T).M' → 'github.com/a/b/pkg'; 'libc.so.6' stays.
export function packageOf(name) {
  const slash = name.lastIndexOf('/');
  const dot = name.indexOf('.', slash + 1);
  return dot > 0 ? name.slice(0, dot) : name;
}

// hsl → '#rrggbb' (the canvas parses hex colours fastest).
function hex(hue, sat, light) {
  const a = sat * Math.min(light, 1 - light);
  const f = (n) => {
    const k = (n + hue / 30) % 12;
    return Math.round(255 * (light - a * Math.max(-1, Math.min(k - 3, 9 - k, 1)))).toString(16).padStart(2, '0');
  };
  return `#${f(0)}${f(8)}${f(4)}`;
}

// 32 shades per band, computed once: a frame's colour is a palette entry
// picked by a hash of its package.
const SHADES = 32;
const PALETTES = {};
function palette(kind) {
  const band = BANDS[kind] ?? BANDS[''];
  const key = band.join();
  if (!PALETTES[key]) {
    PALETTES[key] = Array.from({ length: SHADES }, (_, k) => hex(band[0] + (k / SHADES) * (band[1] - band[0]), 0.75, 0.58 + (k % 4) * 0.03));
  }
  return PALETTES[key];
}

export function frameColor(name, kind) {
  return palette(kind)[Math.floor(hash(packageOf(name)) * SHADES)];
}

// Diff colour: red grew, green shrank, by the change of the node's share.
export function diffColor(a, b, ta, tb) {
  const sa = ta ? a / ta : 0;
  const sb = tb ? b / tb : 0;
  const rel = (sb - sa) / Math.max(sa, sb, 1e-12);
  if (Math.abs(rel) < 0.02) return '#c7c7c7';
  const l = 88 - Math.min(1, Math.abs(rel)) * 40;
  return rel > 0 ? hex(0, 0.8, l / 100) : hex(130, 0.6, l / 100);
}

export class FlameGraph {
  // opts: {inverted, onHover(i, ev), onClick(i), onFocus(i), colors: 'kind'|'diff', totals: [ta, tb]}
  constructor(canvas, opts = {}) {
    this.canvas = canvas;
    this.opts = opts;
    this.tree = null;
    this.zoom = 0;
    this.focus = -1;
    this.hit = null; // Uint8Array of search matches
    this.selected = ''; // function name outlined everywhere
    this.drawn = [];
    this.lastDrawMs = 0;
    canvas.addEventListener('mousemove', (e) => this.opts.onHover?.(this.at(e), e));
    canvas.addEventListener('mouseleave', (e) => this.opts.onHover?.(-1, e));
    canvas.addEventListener('click', (e) => { const i = this.at(e); if (i >= 0) this.opts.onClick?.(i); });
    canvas.addEventListener('keydown', (e) => this.key(e));
    canvas.addEventListener('focus', () => { if (this.tree) this.setFocus(this.focus < 0 ? this.zoom : this.focus); });
    canvas.addEventListener('blur', () => { if (this.tree) this.draw(); });
  }

  setTree(tree) {
    this.tree = tree;
    this.zoom = 0;
    this.focus = -1;
    this.hit = null;
    this.colors = new Array(tree.n); // filled as nodes are first drawn
  }

  color(i) {
    let c = this.colors[i];
    if (c) return c;
    const t = this.tree;
    const [ta, tb] = this.opts.totals ?? [0, 0];
    c = this.opts.colors === 'diff' ? diffColor(t.a[i], t.b[i], ta, tb)
      : t.unsym[i] ? '#b3b3b3' : frameColor(t.names[i], t.kinds[i]);
    this.colors[i] = c;
    return c;
  }

  // Draws at the canvas's CSS width; returns the milliseconds it took.
  draw() {
    const t0 = performance.now();
    const t = this.tree;
    const c = this.canvas;
    const dpr = window.devicePixelRatio || 1;
    const width = c.clientWidth || c.parentElement.clientWidth;
    const height = t ? (t.maxDepth + 1) * ROW : ROW;
    if (c.width !== Math.round(width * dpr) || c.height !== Math.round(height * dpr)) {
      c.width = Math.round(width * dpr);
      c.height = Math.round(height * dpr);
      c.style.height = `${height}px`;
    }
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, width, height);
    this.drawn = [];
    this.width = width;
    if (!t || !t.total[0]) { this.lastDrawMs = performance.now() - t0; return this.lastDrawMs; }
    const style = getComputedStyle(c);
    g.font = `12px ${style.fontFamily}`;
    g.textBaseline = 'middle';
    const charW = g.measureText('abcdefghijklmnopqrstuvwxyz').width / 26;
    const z = this.zoom;
    const scale = width / t.total[z];
    const x0 = t.x[z];
    const y = (d) => (this.opts.inverted ? (t.maxDepth - d) * ROW : d * ROW);
    const hatch = this.hatch(g);
    const drawn = this.drawn;
    const rect = (i, px, w) => {
      const top = y(t.depth[i]);
      g.globalAlpha = this.hit && !this.hit[i] ? 0.35 : 1;
      g.fillStyle = this.hit && this.hit[i] ? '#d61fd6' : this.color(i);
      g.fillRect(px, top, w - (w > 2 ? 1 : 0), ROW - 1);
      if (t.unsym[i] && hatch) { g.fillStyle = hatch; g.fillRect(px, top, w - 1, ROW - 1); }
      if (w >= LABEL_PX) {
        const max = Math.floor((w - 6) / charW);
        const name = t.names[i];
        g.fillStyle = '#111';
        g.fillText(name.length > max ? `${name.slice(0, Math.max(1, max - 1))}…` : name, px + 3, top + ROW / 2);
      }
      drawn.push(i);
    };
    // Ancestors of the zoomed node span the whole width.
    for (let p = t.parent[z]; p >= 0; p = t.parent[p]) rect(p, 0, width);
    // The zoomed subtree; runs of too-narrow siblings become one grey rect.
    const pend = new Map(); // depth → [x, x+w] of the pending merged run
    const flush = (d) => {
      const r = pend.get(d);
      if (r && r[1] - r[0] >= MIN_PX) {
        g.globalAlpha = 1;
        g.fillStyle = '#9996';
        g.fillRect(r[0], y(d), r[1] - r[0], ROW - 1);
      }
      pend.delete(d);
    };
    for (let i = z; i < t.end[z];) {
      const w = t.total[i] * scale;
      const px = (t.x[i] - x0) * scale;
      if (w < MIN_PX) {
        const d = t.depth[i];
        const r = pend.get(d);
        if (r && Math.abs(r[1] - px) < 0.01) r[1] = px + w;
        else { flush(d); pend.set(d, [px, px + w]); }
        i = t.end[i];
        continue;
      }
      rect(i, px, w);
      i++;
    }
    for (const d of [...pend.keys()]) flush(d);
    g.globalAlpha = 1;
    this.outline(g, y);
    this.lastDrawMs = performance.now() - t0;
    return this.lastDrawMs;
  }

  // Outlines the selected function's frames and the keyboard focus.
  outline(g, y) {
    const t = this.tree;
    const box = (i, color, lw) => {
      const [px, w] = this.box(i);
      g.strokeStyle = color;
      g.lineWidth = lw;
      g.strokeRect(px + lw / 2, y(t.depth[i]) + lw / 2, Math.max(w - lw - 1, 1), ROW - 1 - lw);
    };
    if (this.selected) for (const i of this.drawn) if (t.names[i] === this.selected) box(i, '#0b57d0', 2);
    if (this.focus >= 0 && document.activeElement === this.canvas && this.drawn.includes(this.focus)) box(this.focus, getComputedStyle(this.canvas).color, 2);
  }

  hatch(g) {
    if (this._hatch !== undefined) return this._hatch;
    const p = document.createElement('canvas');
    p.width = p.height = 6;
    const h = p.getContext('2d');
    h.strokeStyle = 'rgba(0,0,0,.45)';
    h.beginPath(); h.moveTo(0, 6); h.lineTo(6, 0); h.stroke();
    this._hatch = g.createPattern(p, 'repeat');
    return this._hatch;
  }

  // Node index under a mouse event, or -1 (also over merged slivers).
  at(e) {
    const t = this.tree;
    if (!t) return -1;
    const r = this.canvas.getBoundingClientRect();
    const mx = e.clientX - r.left;
    let d = Math.floor((e.clientY - r.top) / ROW);
    if (this.opts.inverted) d = t.maxDepth - d;
    const z = this.zoom;
    if (d < 0 || d > t.maxDepth) return -1;
    if (d <= t.depth[z]) return t.path(z)[d];
    const v = t.x[z] + (mx / this.width) * t.total[z];
    let i = z;
    while (t.depth[i] < d) {
      const next = t.children(i).find((j) => v >= t.x[j] && v < t.x[j] + t.total[j]);
      if (next === undefined) return -1;
      i = next;
    }
    return t.total[i] * (this.width / t.total[z]) >= MIN_PX ? i : -1;
  }

  setFocus(i) {
    this.focus = i;
    this.draw();
    this.opts.onFocus?.(i);
  }

  // Arrow keys move between drawn frames, Enter zooms, Escape zooms out.
  key(e) {
    const t = this.tree;
    if (!t) return;
    let f = this.focus < 0 ? this.zoom : this.focus;
    const down = this.opts.inverted ? 'ArrowUp' : 'ArrowDown';
    const up = this.opts.inverted ? 'ArrowDown' : 'ArrowUp';
    const sameRow = (dir) => {
      const row = this.drawn.filter((j) => t.depth[j] === t.depth[f]).sort((p, q) => t.x[p] - t.x[q]);
      const k = row.indexOf(f) + dir;
      return k >= 0 && k < row.length ? row[k] : f;
    };
    if (e.key === up && t.parent[f] >= 0) f = t.parent[f];
    else if (e.key === down) f = t.children(f).find((j) => this.drawn.includes(j)) ?? f;
    else if (e.key === 'ArrowLeft') f = sameRow(-1);
    else if (e.key === 'ArrowRight') f = sameRow(1);
    else if (e.key === 'Enter' || e.key === ' ') { this.opts.onClick?.(f); e.preventDefault(); return; }
    else if (e.key === 'Escape') { this.opts.onZoomOut?.(); e.preventDefault(); return; }
    else return;
    e.preventDefault();
    this.setFocus(f);
  }

  // Left edge and width in CSS pixels of drawn node i.
  box(i) {
    const t = this.tree;
    const z = this.zoom;
    if (t.depth[i] <= t.depth[z]) return [0, this.width];
    const scale = this.width / t.total[z];
    return [(t.x[i] - t.x[z]) * scale, t.total[i] * scale];
  }

  // The drawn frames (test hook): name, self, total, depth, and where they
  // are (x, y of the top-left corner and w, in CSS pixels).
  nodes() {
    const t = this.tree;
    return this.drawn.map((i) => ({
      name: t.names[i], self: t.self[i], total: t.total[i], depth: t.depth[i],
      x: this.box(i)[0], w: this.box(i)[1], y: (this.opts.inverted ? t.maxDepth - t.depth[i] : t.depth[i]) * ROW, h: ROW,
      ...(t.diff ? { a: t.a[i], b: t.b[i] } : {}), ...(t.unsym[i] ? { unsymbolized: true } : {}),
    }));
  }
}
