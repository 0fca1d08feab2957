// Call trees as flat typed arrays in depth-first order (laid out once per
// tree, so drawing and zooming only read arrays), and the trees the UI
// derives from /api/flamegraph results on the client: the sandwich of one
// function and the diff of two results. No DOM here.

// A node object is {name, self, total, children, kind?, unsymbolized?, a?, b?}
// (the /api/flamegraph shape; a/b only in diff trees).
export class FlatTree {
  // Two recursive passes (count, then fill typed arrays): no per-node
  // allocation, so 50,000 nodes lay out in tens of milliseconds. Recursion
  // depth is the stack depth of the profile (hundreds of frames at most).
  constructor(root) {
    let maxDepth = 0;
    const count = (node, d) => {
      if (d > maxDepth) maxDepth = d;
      let k = 1;
      const ch = node.children;
      if (ch) for (let j = 0; j < ch.length; j++) k += count(ch[j], d + 1);
      return k;
    };
    const n = count(root, 0);
    this.n = n;
    this.maxDepth = maxDepth;
    this.names = new Array(n);
    this.kinds = new Array(n);
    this.self = new Float64Array(n);
    this.total = new Float64Array(n);
    this.x = new Float64Array(n); // start, in the unit of total
    this.depth = new Uint16Array(n);
    this.parent = new Int32Array(n);
    this.end = new Int32Array(n); // index just past the subtree
    this.unsym = new Uint8Array(n);
    this.diff = root.a !== undefined;
    if (this.diff) { this.a = new Float64Array(n); this.b = new Float64Array(n); }
    let i = 0;
    // Pre-order; children keep the API's order (largest first).
    const fill = (node, parent, d, x) => {
      const me = i++;
      this.names[me] = node.name;
      this.kinds[me] = node.kind ?? '';
      this.self[me] = node.self ?? 0;
      this.total[me] = node.total;
      this.x[me] = x;
      this.depth[me] = d;
      this.parent[me] = parent;
      if (node.unsymbolized) this.unsym[me] = 1;
      if (this.diff) { this.a[me] = node.a; this.b[me] = node.b; }
      const ch = node.children;
      let cx = x;
      if (ch) for (let j = 0; j < ch.length; j++) { fill(ch[j], me, d + 1, cx); cx += ch[j].total; }
      this.end[me] = i;
    };
    fill(root, -1, 0, 0);
  }

  // Indices of the children of i, in order.
  children(i) {
    const out = [];
    for (let j = i + 1; j < this.end[i]; j = this.end[j]) out.push(j);
    return out;
  }

  // Root-to-i path of indices.
  path(i) {
    const out = [];
    for (let j = i; j >= 0; j = this.parent[j]) out.push(j);
    return out.reverse();
  }

  // The node reached from the root by child names (the URL's zoom path); the
  // deepest match when a name is missing.
  find(names) {
    let i = 0;
    for (const name of names) {
      const next = this.children(i).find((j) => this.names[j] === name);
      if (next === undefined) break;
      i = next;
    }
    return i;
  }

  // Marks every node whose name matches; share = total of the outermost
  // matches (a function under itself counts once), as a part of the root.
  match(test) {
    const hit = new Uint8Array(this.n);
    let count = 0;
    for (let i = 0; i < this.n; i++) if (test(this.names[i])) { hit[i] = 1; count++; }
    let value = 0;
    for (let i = 1; i < this.n;) {
      if (hit[i]) { value += this.total[i]; i = this.end[i]; } else i++;
    }
    return { hit, count, value };
  }
}

// A growing object tree whose children are looked up by name.
function grow(name, extra) {
  return { name, self: 0, total: 0, kids: new Map(), ...extra };
}
function child(node, name, extra) {
  let c = node.kids.get(name);
  if (!c) { c = grow(name, extra); node.kids.set(name, c); }
  return c;
}
// kids maps → children arrays sorted by total, largest first.
function finish(node, selfFromChildren) {
  const stack = [node];
  while (stack.length) {
    const n = stack.pop();
    n.children = [...n.kids.values()].sort((p, q) => q.total - p.total || (p.name < q.name ? -1 : 1));
    delete n.kids;
    if (selfFromChildren) n.self = n.total - n.children.reduce((s, c) => s + c.total, 0);
    stack.push(...n.children);
  }
  return node;
}

// Sandwich of function fn over a flat tree: callers (fn at the root, each
// caller below the function it called) and callees (fn's subtrees merged).
// Only outermost occurrences count, so recursion does not double values.
export function sandwich(t, fn) {
  const callers = grow(fn);
  const callees = grow(fn, { kind: '' });
  const mergeInto = (dst, i) => {
    dst.total += t.total[i];
    dst.self += t.self[i];
    for (const j of t.children(i)) mergeInto(child(dst, t.names[j], { kind: t.kinds[j], unsymbolized: !!t.unsym[j] }), j);
  };
  for (let i = 1; i < t.n;) {
    if (t.names[i] !== fn) { i++; continue; }
    callees.kind = t.kinds[i];
    mergeInto(callees, i);
    callers.total += t.total[i];
    let c = callers;
    for (let p = t.parent[i]; p > 0; p = t.parent[p]) {
      c = child(c, t.names[p], { kind: t.kinds[p], unsymbolized: !!t.unsym[p] });
      c.total += t.total[i];
    }
    i = t.end[i];
  }
  return { callers: finish(callers, true), callees: finish(callees, false) };
}

// Two /api/flamegraph roots merged by call path. Each node keeps a and b
// (raw values of the baseline and the comparison) and is sized by the mean
// of its two shares, so a frame present in only one side stays visible.
export function diffTrees(rootA, rootB) {
  const ta = rootA.total || 0;
  const tb = rootB.total || 0;
  const out = grow(rootB.name || rootA.name, { a: 0, b: 0 });
  const add = (dst, src, side) => {
    dst[side] += src.total;
    for (const c of src.children ?? []) add(child(dst, c.name, { a: 0, b: 0, kind: c.kind, unsymbolized: c.unsymbolized }), c, side);
  };
  add(out, rootA, 'a');
  add(out, rootB, 'b');
  const stack = [out];
  while (stack.length) {
    const n = stack.pop();
    n.total = ((ta ? n.a / ta : 0) + (tb ? n.b / tb : 0)) / 2;
    stack.push(...n.kids.values());
  }
  finish(out, true);
  return { root: out, totalA: ta, totalB: tb };
}
