// The timeline above the flame graph: /api/timeline points as bars on a
// canvas; dragging across it selects a time range (onSelect(from, until) in
// unix seconds). Keyboard users pick ranges with the range picker instead.
import { fmtValue, fmtTime } from './format.js';

export class Timeline {
  constructor(canvas, { onSelect }) {
    this.canvas = canvas;
    this.onSelect = onSelect;
    this.data = null;
    let start = null;
    const sec = (e) => {
      const r = canvas.getBoundingClientRect();
      const f = Math.min(1, Math.max(0, (e.clientX - r.left) / r.width));
      return this.t0 + f * (this.t1 - this.t0);
    };
    canvas.addEventListener('mousedown', (e) => { if (this.data) { start = sec(e); this.sel = [start, start]; e.preventDefault(); } });
    window.addEventListener('mousemove', (e) => {
      if (start === null) return;
      this.sel = [Math.min(start, sec(e)), Math.max(start, sec(e))];
      this.draw();
    });
    window.addEventListener('mouseup', () => {
      if (start === null) return;
      start = null;
      const [a, b] = this.sel;
      this.sel = null;
      if ((b - a) / (this.t1 - this.t0) > 0.005) this.onSelect(Math.floor(a), Math.ceil(b));
      else this.draw();
    });
  }

  // data: /api/timeline answer; unit of its values.
  set(data, unit) {
    this.data = data;
    this.unit = unit;
    const pts = data.points;
    this.t0 = pts.length ? pts[0][0] : 0;
    this.t1 = pts.length ? pts[pts.length - 1][0] + data.step : 1;
    this.draw();
  }

  draw() {
    const c = this.canvas;
    const dpr = window.devicePixelRatio || 1;
    const w = c.clientWidth;
    const ht = c.clientHeight;
    c.width = Math.round(w * dpr);
    c.height = Math.round(ht * dpr);
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, ht);
    if (!this.data) return;
    const fg = getComputedStyle(c).color;
    const pts = this.data.points;
    const max = pts.reduce((m, p) => Math.max(m, p[1]), 0);
    const span = this.t1 - this.t0;
    g.fillStyle = '#e8590c';
    const top = 14;
    for (const [t, v] of pts) {
      if (!v) continue;
      const x = ((t - this.t0) / span) * w;
      const bw = Math.max(1, (this.data.step / span) * w - 1);
      const bh = (v / max) * (ht - top - 14);
      g.fillRect(x, ht - 14 - bh, bw, bh);
    }
    g.fillStyle = fg;
    g.font = '11px system-ui, sans-serif';
    g.textBaseline = 'top';
    g.fillText(`max ${fmtValue(max, this.unit)} per ${this.data.step}s`, 4, 1);
    g.textBaseline = 'bottom';
    g.fillText(fmtTime(this.t0), 4, ht);
    const end = fmtTime(this.t1);
    g.fillText(end, w - g.measureText(end).width - 4, ht);
    if (this.sel) {
      g.fillStyle = 'rgba(11, 87, 208, .25)';
      const a = ((this.sel[0] - this.t0) / span) * w;
      g.fillRect(a, 0, ((this.sel[1] - this.sel[0]) / span) * w, ht);
    }
  }
}
