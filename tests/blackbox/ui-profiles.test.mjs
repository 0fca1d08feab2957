// The Profiles screen in a real browser (issue 6, API: Query): real profiles are
// uploaded through /profiling/upload, then every figure the page shows is
// checked against the JSON API it is built from: services order, type picker,
// flame graph nodes and totals, zoom and breadcrumbs, search share, share
// URL, top table, sandwich and diff. Screenshots go to $KILN_SCREENSHOTS;
// KILN_UPDATE_DOCS_IMG=1 also rewrites docs/img/profiles.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { TESTDATA, REPO, nowS } from './lib/env.mjs';
import { startServer } from './lib/server.mjs';
import { upload, getJson } from './lib/http.mjs';
import { buildProfile, encodeProfile } from './lib/pb.mjs';
import { launch, open, close, settle, screenshot, canvasPixels, pixelAt, flameNodes, clickNode } from './lib/browser.mjs';

let server;
let browser;
const CPU = 'cpu:nanoseconds';
const now = nowS();
// The diff service: a baseline two hours ago and a comparison 30 minutes ago.
const BASE = { from: now - 7200, until: now - 7190 };
const COMP = { from: now - 1800, until: now - 1790 };

before(async () => {
  [server, browser] = await Promise.all([startServer(), launch()]);
  const send = async (file, params) => {
    const r = await upload(server, fs.readFileSync(path.join(TESTDATA, 'pprof', file)), params);
    assert.equal(r.status, 200, `${file}: ${r.text}`);
  };
  await send('go-cpu-fib.pb.gz', { serviceName: 'checkout', namespace: 'shop', pod: 'checkout-1' });
  await send('go-cpu-span-labels.pb.gz', { serviceName: 'payments', namespace: 'shop', pod: 'payments-1' });
  await send('go-heap-delta.pb.gz', { serviceName: 'cart', namespace: 'shop', pod: 'cart-1' });
  const diffProfile = (a, b, c) => buildProfile({
    sampleTypes: [['cpu', 'nanoseconds']],
    samples: [
      { stack: ['main.a', 'main.work', 'main.main'], values: [a] },
      { stack: ['main.b', 'main.work', 'main.main'], values: [b] },
      ...(c ? [{ stack: ['main.c', 'main.main'], values: [c] }] : []),
    ],
  }).bytes;
  // A native frame without symbols: a location with no lines in libc's mapping.
  const nat = buildProfile({ sampleTypes: [['cpu', 'nanoseconds']], samples: [
    { stack: ['main.f', 'main.main'], values: [10e6] }, { stack: ['LIBC', 'main.main'], values: [30e6] }] });
  const t = nat.tables;
  const loc = t.locations.find((l) => t.stringTable[t.functions[l.lines[0].functionId - 1].name] === 'LIBC');
  Object.assign(loc, { lines: [], mappingId: 2, address: 0x7f0000001000 });
  t.mappings.push({ id: 2, filename: nat.str('/usr/lib/x86_64-linux-gnu/libc.so.6'), memoryStart: 0x7f0000000000, memoryLimit: 0x7f0000100000 });
  assert.equal((await upload(server, encodeProfile(t), { serviceName: 'native' })).status, 200);
  for (const [pod, body] of [['pod-a', diffProfile(100e6, 100e6, 0)], ['pod-b', diffProfile(100e6, 0, 200e6)]]) {
    assert.equal((await upload(server, body, { serviceName: 'pods', pod })).status, 200);
  }
  // Go block and mutex profiles of one service (API: Profile names): the same sample types.
  for (const [profile, leaf, n] of [['block', 'main.recv', 3], ['mutex', 'main.unlock', 5]]) {
    const body = buildProfile({ sampleTypes: [['contentions', 'count'], ['delay', 'nanoseconds']],
      samples: [{ stack: [leaf, 'main.main'], values: [n, n * 1e6] }] }).bytes;
    assert.equal((await upload(server, body, { serviceName: 'locks', profile })).status, 200);
  }
  for (const [body, w] of [[diffProfile(100e6, 100e6, 0), BASE], [diffProfile(300e6, 100e6, 100e6), COMP]]) {
    const r = await upload(server, body, { serviceName: 'diffsvc', ...w });
    assert.equal(r.status, 200, r.text);
  }
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

const ui = (q) => `${server.uiUrl}/?${new URLSearchParams(q)}`;

// Every node of an /api/flamegraph tree with its depth and parent.
function apiNodes(root) {
  const out = [];
  const walk = (n, depth, parent) => { out.push({ name: n.name, total: n.total, self: n.self, depth, parent, node: n }); for (const c of n.children) walk(c, depth + 1, n); };
  walk(root, 0, null);
  return out;
}

// Drawn nodes must be API nodes (same name, depth, total, self), and every
// API node of the zoomed subtree at least half a pixel wide must be drawn.
function assertNodesMatch(drawn, fg, width, zoomTotal = fg.total, ctx = '') {
  const key = (n) => `${n.depth}\0${n.name}\0${n.total}\0${n.self}`;
  const api = new Map();
  for (const n of apiNodes(fg.root)) api.set(key(n), (api.get(key(n)) ?? 0) + 1);
  for (const n of drawn) assert.ok(api.has(key(n)), `${ctx}: drawn node ${n.name} (depth ${n.depth}, total ${n.total}) is not in /api/flamegraph`);
  return drawn.filter((n) => n.total * (width / zoomTotal) >= 0.5).length;
}

test('services list is busiest first, as /api/services; the filter box narrows it', async () => {
  const api = await getJson(server.uiUrl, '/api/services', {});
  assert.deepEqual(api.services.slice(0, 2).map((s) => s.name), ['checkout', 'payments'], 'fib is the busiest upload');
  const page = await open(browser, `${server.uiUrl}/`);
  const names = await page.locator('ul.services .name').allTextContents();
  assert.deepEqual(names, api.services.map((s) => s.name));
  assert.match(page.url(), /service=checkout/, 'the busiest service is opened by default');
  await page.fill('input[aria-label="Filter services"]', 'pay');
  assert.deepEqual(await page.locator('ul.services .name').allTextContents(), ['payments']);
  assert.deepEqual(page.errors, []);
  await close(page);
});

test('type picker lists the service\'s types with their units, never mixed', async () => {
  const types = (await getJson(server.uiUrl, '/api/types', { service: 'cart' })).types;
  const page = await open(browser, ui({ service: 'cart' }));
  const opts = await page.locator('select#type option').evaluateAll((os) => os.map((o) => [o.value, o.textContent]));
  assert.deepEqual(opts.map((o) => o[0]), types);
  for (const [t, label] of opts) {
    const unit = t.split(':')[1];
    assert.ok(label.includes(unit), `${t}: label "${label}" names the unit`);
    assert.ok(label.includes(unit === 'bytes' ? 'bytes' : 'count'), `${t}: label "${label}" says what it measures`);
  }
  await page.selectOption('select#type', 'inuse_space:bytes');
  await settle(page);
  const fg = await getJson(server.uiUrl, '/api/flamegraph', { service: 'cart', type: 'inuse_space:bytes' });
  const nodes = await flameNodes(page);
  assert.equal(nodes[0].total, fg.total, 'the graph shows the picked type');
  await close(page);
});

test('block and mutex of one service: the picker shows them apart by name; an old SAMPLE:UNIT link opens the first', async () => {
  const types = (await getJson(server.uiUrl, '/api/types', { service: 'locks' })).types;
  assert.deepEqual(types, ['block:contentions:count', 'mutex:contentions:count', 'block:delay:nanoseconds', 'mutex:delay:nanoseconds']);
  const page = await open(browser, ui({ service: 'locks', type: 'delay:nanoseconds' }));
  assert.equal(new URL(page.url()).searchParams.get('type'), 'block:delay:nanoseconds', 'an old link opens the first kind of its type');
  const opts = await page.locator('select#type option').evaluateAll((os) => os.map((o) => [o.value, o.textContent]));
  assert.deepEqual(opts, [['block:contentions:count', 'contentions (block) — count'], ['mutex:contentions:count', 'contentions (mutex) — count'],
    ['block:delay:nanoseconds', 'delay (block) — time (nanoseconds)'], ['mutex:delay:nanoseconds', 'delay (mutex) — time (nanoseconds)']]);
  assert.equal((await flameNodes(page))[0].total, 3e6, 'block delay');
  await page.selectOption('select#type', 'mutex:delay:nanoseconds');
  await settle(page);
  const nodes = await flameNodes(page);
  assert.equal(nodes[0].total, 5e6, 'mutex delay');
  assert.ok(nodes.some((n) => n.name === 'main.unlock') && !nodes.some((n) => n.name === 'main.recv'));
  assert.equal(await page.getAttribute('a[download]', 'download'), 'locks-mutex-delay-nanoseconds.pb.gz');
  assert.deepEqual(page.errors, []);
  await close(page);
});

test('flame graph: drawn nodes and totals equal /api/flamegraph; zoom, breadcrumbs, keyboard, search, share URL', async () => {
  const fg = await getJson(server.uiUrl, '/api/flamegraph', { service: 'checkout', type: CPU });
  const page = await open(browser, ui({ service: 'checkout', type: CPU }));
  const pixels = await canvasPixels(page, 'canvas.flame');
  assert.ok(pixels.drawn > 20000, `canvas drawn: ${JSON.stringify(pixels)}`);
  const width = await page.evaluate(() => window.__kiln.flame.width);
  let drawn = await flameNodes(page);
  assert.equal(drawn[0].name, 'total');
  assert.equal(drawn[0].total, fg.total);
  const wide = apiNodes(fg.root).filter((n) => n.total * (width / fg.total) >= 0.5).length;
  assert.equal(assertNodesMatch(drawn, fg, width, fg.total, 'unzoomed'), wide, 'every node ≥ 0.5 px is drawn');
  await screenshot(page, 'profiles', process.env.KILN_UPDATE_DOCS_IMG ? path.join(REPO, 'docs/img/profiles.png') : undefined);

  // Tooltip: name, total and self in the type's unit and as a share.
  const calc = fg.root.children[0];
  const cn = drawn.find((n) => n.name === calc.name);
  const cbox = await page.locator('canvas.flame').boundingBox();
  await page.mouse.move(cbox.x + cn.x + 30, cbox.y + cn.y + 8);
  const tip = await page.locator('.tooltip').textContent();
  const sec = (ns) => `${new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 }).format(ns / 1e9)} s`;
  assert.ok(tip.includes(calc.name), tip);
  assert.ok(tip.includes(`Total${sec(calc.total)} (${((100 * calc.total) / fg.total).toFixed(1)}%)`), `tooltip "${tip}" vs total ${calc.total}`);
  assert.ok(tip.includes(`Self${calc.self ? sec(calc.self) : '0 ns'}`), tip);
  await page.mouse.move(0, 0);

  // Zoom by clicking a frame: it spans the width, breadcrumbs lead back.
  const FIB = 'github.com/polarsignals/pprof-example-app-go/fib.Fibonacci';
  await clickNode(page, FIB, 2);
  const fib = apiNodes(fg.root).find((n) => n.name === FIB && n.depth === 2).node;
  assert.deepEqual(new URL(page.url()).searchParams.get('zoom').split('\n'), ['main.calculateFib', FIB]);
  drawn = await flameNodes(page);
  const z = drawn.find((n) => n.name === FIB);
  assert.equal(Math.round(z.w), Math.round(width), 'zoomed frame is full width');
  const inSub = apiNodes(fib).filter((n) => n.total * (width / fib.total) >= 0.5).length;
  assert.equal(drawn.filter((n) => n.depth >= 2).length, inSub, 'the zoomed subtree is drawn at the new scale');
  assert.deepEqual(await page.locator('nav.crumbs button').allTextContents(), ['total', 'main.calculateFib', FIB]);
  assert.equal(await page.locator('tr[aria-selected] .fn').textContent(), FIB, 'clicking a frame selects its top-table row');
  await page.click('nav.crumbs button:text-is("total")');
  await settle(page);
  assert.equal(new URL(page.url()).searchParams.get('zoom'), null, 'breadcrumb "total" zooms out');

  // Keyboard: focus the graph, ArrowDown to the first child, Enter zooms, Escape zooms out.
  await page.focus('canvas.flame');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  await settle(page);
  assert.equal(new URL(page.url()).searchParams.get('zoom'), fg.root.children[0].name);
  await page.keyboard.press('Escape');
  await settle(page);
  assert.equal(new URL(page.url()).searchParams.get('zoom'), null);

  // Search: matches are highlighted and their share of the total is shown.
  await page.fill('input[aria-label="Search frames"]', 'addVV');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('q') === 'addVV');
  await settle(page);
  let share = 0;
  const walk = (n) => { if (n.name.toLowerCase().includes('addvv')) share += n.total; else n.children.forEach(walk); };
  walk(fg.root);
  const text = await page.locator('.share').textContent();
  const pct = Number(/\(([\d.]+)% of total\)/.exec(text)?.[1]);
  assert.ok(Math.abs(pct - (100 * share) / fg.total) < 0.05, `share "${text}" vs ${(100 * share) / fg.total}%`);
  const hl = await canvasPixels(page, 'canvas.flame', [0xd6, 0x1f, 0xd6]);
  assert.ok(hl.colored > 500, `highlighted pixels: ${JSON.stringify(hl)}`);
  await clickNode(page, FIB, 2);
  await screenshot(page, 'profiles-zoom-search');

  // The URL restores the same view in a fresh page.
  const before = await flameNodes(page);
  const again = await open(browser, page.url(), { fresh: true });
  assert.deepEqual(await flameNodes(again), before, 'same drawn nodes');
  assert.equal(await again.inputValue('input[aria-label="Search frames"]'), 'addVV');
  assert.deepEqual(await again.locator('nav.crumbs button').allTextContents(), ['total', 'main.calculateFib', FIB]);
  assert.equal(await again.locator('.share').textContent(), text);
  assert.deepEqual([...page.errors, ...again.errors], []);
  const away = [...page.requests, ...again.requests].filter((u) => !u.startsWith(`${server.uiUrl}/`));
  assert.deepEqual(away, [], 'no request leaves the server (no CDN, no web font)');
  assert.ok(page.requests.some((u) => u.includes('/api/flamegraph?')), 'requests were recorded');
  await close(again);
  await close(page);
});

test('top table equals /api/top, sorts, and is linked both ways with the graph', async () => {
  const top = await getJson(server.uiUrl, '/api/top', { service: 'checkout', type: CPU, limit: 0 });
  const page = await open(browser, ui({ service: 'checkout', type: CPU }));
  const rows = () => page.locator('.top tbody tr').evaluateAll((trs) => trs.map((tr) => ({
    name: tr.querySelector('.fn').textContent,
    self: Number(tr.cells[1].querySelector('[data-value]').dataset.value),
    total: Number(tr.cells[3].querySelector('[data-value]').dataset.value),
  })));
  const got = await rows();
  assert.equal(got.length, Math.min(300, top.rows.length));
  const apiRows = new Map(top.rows.map((r) => [r.name, r]));
  for (const r of got) assert.deepEqual(r, apiRows.get(r.name), `row ${r.name}`);
  assert.deepEqual(got.map((r) => r.self), top.rows.slice(0, got.length).map((r) => r.self), 'sorted by self like /api/top');
  await page.click('.top th button[data-sort="total"]');
  await settle(page);
  const byTotal = await rows();
  for (let i = 1; i < byTotal.length; i++) assert.ok(byTotal[i - 1].total >= byTotal[i].total, 'sorted by total');
  // Row → graph: the function's frames are outlined and its share shown.
  await page.click('.top tbody tr:has-text("math/big.nat.add") >> nth=0');
  await settle(page);
  assert.equal(await page.evaluate(() => window.__kiln.flame.selected), 'math/big.nat.add');
  assert.match(await page.locator('.selbar').textContent(), /math\/big\.nat\.add/);
  // Keyboard: rows are focusable, arrows move, Enter picks.
  await page.focus('.top tbody tr >> nth=0');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  await settle(page);
  assert.equal(new URL(page.url()).searchParams.get('sel'), byTotal[1].name);
  await close(page);
});

test('sandwich view: callers and callees of one function, computed from the tree', async () => {
  const fg = await getJson(server.uiUrl, '/api/flamegraph', { service: 'checkout', type: CPU });
  const FN = 'math/big.nat.add';
  // Outermost occurrences of FN: their totals and their callers.
  let total = 0;
  const callers = new Map();
  const walk = (n, parent) => {
    if (n.name === FN) { total += n.total; callers.set(parent.name, (callers.get(parent.name) ?? 0) + n.total); return; }
    for (const c of n.children) walk(c, n);
  };
  walk(fg.root, null);
  const page = await open(browser, ui({ service: 'checkout', type: CPU, sel: FN }));
  await page.click('.selbar button:text-is("Sandwich")');
  await settle(page);
  const callees = await flameNodes(page, 'callees');
  assert.equal(callees[0].name, FN);
  assert.equal(callees[0].total, total);
  const up = await flameNodes(page, 'callers');
  assert.equal(up[0].name, FN);
  assert.equal(up[0].total, total);
  const got = new Map(up.filter((n) => n.depth === 1).map((n) => [n.name, n.total]));
  assert.deepEqual(got, callers, 'direct callers and their totals');
  assert.ok((await canvasPixels(page, 'canvas.flame')).drawn > 0);
  await screenshot(page, 'profiles-sandwich');
  await close(page);
});

test('diff view: two time ranges of one type, coloured by change of share', async () => {
  const page = await open(browser, ui({
    service: 'diffsvc', type: CPU, from: COMP.from - 60, until: COMP.until + 60,
    view: 'diff', cmp_from: BASE.from - 60, cmp_until: BASE.until + 60,
  }));
  const nodes = await flameNodes(page);
  const by = Object.fromEntries(nodes.map((n) => [n.name, n]));
  assert.equal(by['main.a'].a, 100e6);
  assert.equal(by['main.a'].b, 300e6);
  assert.equal(by['main.b'].b, 100e6);
  assert.equal(by['main.c'].a, 0, 'main.c is new');
  assert.equal(by['main.c'].b, 100e6);
  const box = await page.locator('canvas.flame').boundingBox();
  const color = async (n) => pixelAt(page, 'canvas.flame', n.x + n.w / 2, n.y + 4);
  const [cr, cg] = await color(by['main.c']);
  assert.ok(cr > cg + 40, `main.c (new) is red: ${await color(by['main.c'])}`);
  const [br, bg] = await color(by['main.b']);
  assert.ok(bg > br + 40, `main.b (50% → 20% of the total) is green: ${await color(by['main.b'])}`);
  const [ar, ag] = await color(by['main.a']);
  assert.ok(ar > ag + 20, `main.a (50% → 60%) is red: ${await color(by['main.a'])}`);
  assert.ok(box.width > 0);
  await screenshot(page, 'profiles-diff');
  assert.deepEqual(page.errors, []);
  await close(page);
});

test('download link is /api/pprof with the same parameters', async () => {
  const page = await open(browser, ui({ service: 'checkout', type: CPU, 'label.k8s.pod.name': 'checkout-1' }));
  const href = await page.getAttribute('a[download]', 'href');
  const u = new URL(href, server.uiUrl);
  assert.equal(u.pathname, '/api/pprof');
  assert.equal(u.searchParams.get('service'), 'checkout');
  assert.equal(u.searchParams.get('type'), CPU);
  assert.equal(u.searchParams.get('label.k8s.pod.name'), 'checkout-1');
  const r = await fetch(u);
  assert.equal(r.status, 200);
  const buf = Buffer.from(await r.arrayBuffer());
  assert.equal(buf[0], 0x1f, 'gzip');
  // The filter applies: the graph's total is the filtered one.
  const fg = await getJson(server.uiUrl, '/api/flamegraph', { service: 'checkout', type: CPU, 'label.k8s.pod.name': 'checkout-1' });
  assert.equal((await flameNodes(page))[0].total, fg.total);
  assert.ok(fg.total > 0);
  await close(page);
});

test('unsymbolized frames are marked: grey and hatched, with a legend entry', async () => {
  const fg = await getJson(server.uiUrl, '/api/flamegraph', { service: 'native', type: CPU });
  const libc = fg.root.children[0].children.find((n) => n.unsymbolized);
  assert.ok(libc, `an unsymbolized frame: ${JSON.stringify(fg)}`);
  const page = await open(browser, ui({ service: 'native', type: CPU }));
  const n = (await flameNodes(page)).find((x) => x.name === libc.name);
  assert.equal(n.unsymbolized, true);
  const colors = new Set();
  for (let dx = 10; dx < 40; dx++) colors.add(String(await pixelAt(page, 'canvas.flame', n.x + dx, n.y + 8)));
  assert.ok(colors.size >= 2, `hatched: ${[...colors]}`);
  for (const c of colors) {
    const [r, g, b] = c.split(',').map(Number);
    assert.ok(Math.max(r, g, b) - Math.min(r, g, b) < 12, `grey: ${c}`);
  }
  const m = (await flameNodes(page)).find((x) => x.name === 'main.f');
  const [r, g, b] = await pixelAt(page, 'canvas.flame', m.x + m.w / 2, m.y + 8);
  assert.ok(Math.max(r, g, b) - Math.min(r, g, b) > 40, 'symbolized frames are coloured');
  assert.match(await page.locator('ul.legend').textContent(), /unsymbolized/);
  await close(page);
});

test('label filters: suggestions from /api/labels, and a filter narrows the graph', async () => {
  const q = { service: 'checkout', type: CPU };
  const labels = (await getJson(server.uiUrl, '/api/labels', q)).labels;
  const pod = labels.find((l) => l.name === 'k8s.pod.name');
  assert.deepEqual(pod?.values, ['checkout-1'], JSON.stringify(labels));
  const page = await open(browser, ui(q));
  const form = page.locator('form[aria-label="Filters"]');
  const names = await form.locator('datalist >> nth=0').locator('option').evaluateAll((os) => os.map((o) => o.value));
  assert.deepEqual(names, labels.map((l) => l.name));
  await form.locator('input[aria-label="Filters label name"]').fill('k8s.pod.name');
  const values = await form.locator('datalist >> nth=1').locator('option').evaluateAll((os) => os.map((o) => o.value));
  assert.deepEqual(values, pod.values);
  await form.locator('input[aria-label="Filters label value"]').fill('checkout-1');
  await form.locator('button[type=submit]').click();
  await settle(page);
  assert.equal(new URL(page.url()).searchParams.get('label.k8s.pod.name'), 'checkout-1');
  assert.match(await page.locator('.chip').textContent(), /k8s\.pod\.name=checkout-1/);
  const fg = await getJson(server.uiUrl, '/api/flamegraph', { ...q, 'label.k8s.pod.name': 'checkout-1' });
  assert.equal((await flameNodes(page))[0].total, fg.total);
  // A value no profile has: the graph is empty, and says so.
  await page.click('.chip button');
  await settle(page);
  await form.locator('input[aria-label="Filters label name"]').fill('k8s.pod.name');
  await form.locator('input[aria-label="Filters label value"]').fill('nope');
  await form.locator('button[type=submit]').click();
  await settle(page);
  assert.match(await page.locator('.view').textContent(), /No samples match/);
  assert.deepEqual(page.errors, []);
  await close(page);
});

test('time range: presets and dragging across the timeline set from/until', async () => {
  const page = await open(browser, ui({ service: 'diffsvc', type: CPU, from: 'now-6h' }));
  const tl = await getJson(server.uiUrl, '/api/timeline', { service: 'diffsvc', type: CPU, from: 'now-6h' });
  assert.ok(tl.points.filter((p) => p[1] > 0).length >= 2, 'both uploads are on the timeline');
  assert.equal(await page.inputValue('select.range'), 'now-6h');
  // Drag over the last fifth (the last 72 minutes): only the comparison
  // upload (30 minutes ago) is in it, not the baseline (2 hours ago).
  const box = await page.locator('canvas.timeline').boundingBox();
  await page.mouse.move(box.x + box.width * 0.8, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.9, box.y + box.height / 2, { steps: 4 });
  await page.mouse.move(box.x + box.width - 1, box.y + box.height / 2, { steps: 4 });
  await page.mouse.up();
  await settle(page);
  const u = new URL(page.url()).searchParams;
  const t0 = tl.points[0][0];
  const t1 = tl.points[tl.points.length - 1][0] + tl.step;
  const from = Number(u.get('from'));
  const until = Number(u.get('until'));
  assert.ok(Math.abs(from - (t0 + (t1 - t0) * 0.8)) <= (t1 - t0) / 50, `from ${from} is 80% into ${t0}..${t1}`);
  assert.ok(until <= t1 && until >= t1 - (t1 - t0) / 50, `until ${until} is the end of ${t0}..${t1}`);
  assert.equal(await page.inputValue('select.range'), 'custom');
  const fg = await getJson(server.uiUrl, '/api/flamegraph', { service: 'diffsvc', type: CPU, from, until });
  assert.equal(fg.total, 500e6, 'only the comparison upload');
  assert.equal((await flameNodes(page))[0].total, fg.total);
  await page.selectOption('select.range', 'now-15m');
  await settle(page);
  assert.equal(new URL(page.url()).searchParams.get('from'), 'now-15m');
  assert.equal(new URL(page.url()).searchParams.get('until'), null);
  await close(page);
});

test('diff view: two label sets over the same range', async () => {
  const page = await open(browser, ui({ service: 'pods', type: CPU, view: 'diff', 'label.k8s.pod.name': 'pod-b', 'cmp_label.k8s.pod.name': 'pod-a' }));
  const by = Object.fromEntries((await flameNodes(page)).map((n) => [n.name, n]));
  const [a, b] = await Promise.all(['pod-a', 'pod-b'].map((pod) => getJson(server.uiUrl, '/api/flamegraph', { service: 'pods', type: CPU, 'label.k8s.pod.name': pod })));
  assert.equal(by.total.a, a.total);
  assert.equal(by.total.b, b.total);
  assert.deepEqual([by['main.a'].a, by['main.a'].b], [100e6, 100e6]);
  assert.equal(by['main.b']?.b ?? 0, 0, 'main.b is only in pod-a');
  assert.equal(by['main.b'].a, 100e6);
  assert.deepEqual([by['main.c'].a, by['main.c'].b], [0, 200e6]);
  await close(page);
});

test('a bad parameter in the URL shows the API\'s 400 message, not a blank page', async () => {
  const r = await fetch(`${server.uiUrl}/api/services?from=bogus&until=now`);
  assert.equal(r.status, 400);
  const { error } = await r.json();
  const page = await open(browser, ui({ service: 'checkout', type: CPU, from: 'bogus' }));
  assert.equal(await page.locator('main [role=alert]').textContent(), error);
  assert.equal(await page.getAttribute('main a', 'href'), '/');
  assert.deepEqual(page.errors, []);
  await close(page);
});
