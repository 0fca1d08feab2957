// The web UI in a real browser: Debian's chromium driven by playwright-core
// (no browser download). Pages wait on window.__kiln.settled(), which
// resolves once the UI has no request or render in flight.
//   KILN_CHROMIUM     browser executable (default /usr/bin/chromium)
//   KILN_SCREENSHOTS  where screenshots go (default tests/blackbox/screenshots)
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { REPO } from './env.mjs';

export const SHOTS = process.env.KILN_SCREENSHOTS || path.join(REPO, 'tests/blackbox/screenshots');

export function launch() {
  return chromium.launch({ executablePath: process.env.KILN_CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'], headless: true });
}

// Waits until the page's UI has settled (every fetch and render done).
export async function settle(page) {
  await page.waitForFunction(() => window.__kiln && document.readyState === 'complete');
  await page.evaluate(() => window.__kiln.settled());
}

// A page at url, settled. Pages are reused per browser and colour scheme
// (a new context costs a renderer process: seconds on a busy 2-core
// machine); fresh: true gives one of its own (no shared history or cookies).
// Page errors are collected in page.errors and requested URLs in
// page.requests (both reset by each open), so tests can assert there were no
// errors and no request left the server. Hand the page back with close().
const reused = new WeakMap(); // browser → {colorScheme: page}
export async function open(browser, url, opts = {}) {
  const scheme = opts.colorScheme ?? 'light';
  const mine = reused.get(browser) ?? {};
  reused.set(browser, mine);
  let page = opts.fresh ? null : mine[scheme];
  if (!page || page.isClosed()) {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: scheme });
    page = await ctx.newPage();
    page.on('pageerror', (e) => page.errors.push(e.message));
    page.on('request', (r) => page.requests.push(r.url()));
    page.fresh = !!opts.fresh;
    if (!opts.fresh) mine[scheme] = page;
  }
  page.errors = [];
  page.requests = [];
  await page.goto(url);
  if (opts.settle !== false) await settle(page);
  return page;
}

// Closes a fresh page's context; a reused page stays for the next open().
export async function close(page) {
  if (page.fresh) await page.context().close();
}

export async function screenshot(page, name, extraPath) {
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: false });
  if (extraPath) await page.screenshot({ path: extraPath, fullPage: false });
}

// Pixels of the canvas matched by a selector: {drawn: non-transparent count,
// colored: count of pixels equal to rgb (±8 per channel) when given}.
export function canvasPixels(page, selector, rgb) {
  return page.evaluate(([sel, c]) => {
    const cv = document.querySelector(sel);
    const d = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
    let drawn = 0;
    let colored = 0;
    for (let i = 0; i < d.length; i += 4) {
      if (d[i + 3] > 0) drawn++;
      if (c && d[i + 3] === 255 && Math.abs(d[i] - c[0]) <= 8 && Math.abs(d[i + 1] - c[1]) <= 8 && Math.abs(d[i + 2] - c[2]) <= 8) colored++;
    }
    return { drawn, colored };
  }, [selector, rgb ?? null]);
}

// The colour at CSS pixel (x, y) of a canvas, as [r, g, b].
export function pixelAt(page, selector, x, y) {
  return page.evaluate(([sel, px, py]) => {
    const cv = document.querySelector(sel);
    const k = cv.width / cv.clientWidth;
    return [...cv.getContext('2d').getImageData(Math.round(px * k), Math.round(py * k), 1, 1).data.slice(0, 3)];
  }, [selector, x, y]);
}

// The flame graph's drawn nodes (window.__kiln.flame.nodes()).
export function flameNodes(page, which = 'flame') {
  return page.evaluate((w) => {
    const k = window.__kiln;
    const g = w === 'flame' ? k.flame : k.sandwich?.[w];
    return g ? g.nodes() : null;
  }, which);
}

// Clicks the centre of the drawn node named name (first at the given depth).
export async function clickNode(page, name, depth, selector = 'canvas.flame') {
  const nodes = await flameNodes(page);
  const n = nodes.find((x) => x.name === name && (depth === undefined || x.depth === depth));
  if (!n) throw new Error(`no drawn node ${name}`);
  const box = await page.locator(selector).first().boundingBox();
  await page.mouse.click(box.x + n.x + Math.min(n.w / 2, 20), box.y + n.y + n.h / 2);
  await settle(page);
  return n;
}
