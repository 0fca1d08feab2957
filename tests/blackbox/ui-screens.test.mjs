// The other screens in a real browser (issue 6): the first-run guide on an
// empty store, the span screen with and without linked samples, usage,
// scrape targets, and the sign-in redirect when auth is on. Each shows what
// its /api route answers (the oracle), for data sent through the real
// endpoints here. Screenshots go to $KILN_SCREENSHOTS.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkTemp, nowS } from './lib/env.mjs';
import { startServer } from './lib/server.mjs';
import { upload, getJson, sleep } from './lib/http.mjs';
import { buildProfile } from './lib/pb.mjs';
import { createKey } from './lib/s6.mjs';
import { staticScrapeConfig } from './lib/scrape.mjs';
import { launch, open, close, settle, screenshot, canvasPixels, flameNodes } from './lib/browser.mjs';

const TRACE = 'aa000000000000000000000000000042';
const SPAN = 'bb00000000000042';
const SPAN_NONE = 'bb000000000000ff';
let browser;
const servers = [];
const start = async (opts) => { const s = await startServer(opts); servers.push(s); return s; };

before(async () => { browser = await launch(); });
after(async () => {
  await browser?.close();
  await Promise.all(servers.map((s) => s.stop()));
});

test('empty store: the Profiles screen shows how to send data', async () => {
  const server = await start();
  const page = await open(browser, `${server.uiUrl}/`);
  const text = await page.locator('main').textContent();
  assert.match(text, /No profiles yet/);
  assert.match(text, /curl --data-binary @cpu\.pb\.gz 'http:\/\/127\.0\.0\.1:8028\/profiling\/upload\?serviceName=/, 'pprof upload command (docs/API.md form)');
  assert.match(text, /otlp\/kiln:[\s\S]*endpoint: 127\.0\.0\.1:4317[\s\S]*otlphttp\/kiln:[\s\S]*endpoint: http:\/\/127\.0\.0\.1:4318/, 'Collector config with both exporters');
  assert.match(text, /--feature-gates=service\.profilesSupport/);
  assert.match(text, /profiles\.kiln\.dev\/cpu\.scrape: "true"/, 'pod annotations (OPS: Annotations)');
  assert.equal(await page.locator('.copyblock button.copy').count(), 3, 'each block can be copied');
  await screenshot(page, 'first-run');
  assert.deepEqual(page.errors, []);
  await close(page);
});

test('span screen: the flame graph of a span\'s samples, and the link when it has none', async () => {
  const server = await start();
  const { bytes } = buildProfile({
    sampleTypes: [['samples', 'count'], ['cpu', 'nanoseconds']],
    samples: [
      { stack: ['main.query', 'main.handle', 'main.main'], values: [3, 30e6], labels: { trace_id: TRACE, span_id: SPAN } },
      { stack: ['main.render', 'main.handle', 'main.main'], values: [1, 10e6], labels: { trace_id: TRACE, span_id: SPAN } },
      { stack: ['main.idle', 'main.main'], values: [5, 50e6] },
    ],
  });
  const r = await upload(server, bytes, { serviceName: 'orders' });
  assert.equal(r.status, 200, r.text);

  const api = await getJson(server.uiUrl, '/api/span', { trace_id: TRACE, span_id: SPAN });
  assert.ok(api.samples > 0, JSON.stringify(api));
  const page = await open(browser, `${server.uiUrl}/span?trace_id=${TRACE}&span_id=${SPAN}`);
  const nodes = await flameNodes(page);
  assert.equal(nodes[0].total, api.total);
  assert.deepEqual(nodes.map((n) => [n.name, n.total]).sort(), (() => {
    const out = [];
    const walk = (n) => { out.push([n.name, n.total]); n.children.forEach(walk); };
    walk(api.root);
    return out.sort();
  })());
  assert.ok(!nodes.some((n) => n.name === 'main.idle'), 'unlinked samples are not in the span');
  assert.ok((await canvasPixels(page, 'canvas.flame')).drawn > 1000);
  assert.match(await page.locator('main').textContent(), new RegExp(`${api.samples} samples of orders`));
  await screenshot(page, 'span');
  await close(page);

  const none = await getJson(server.uiUrl, '/api/span', { trace_id: TRACE, span_id: SPAN_NONE, service: 'orders' });
  assert.equal(none.samples, 0);
  const empty = await open(browser, `${server.uiUrl}/span?trace_id=${TRACE}&span_id=${SPAN_NONE}&service=orders`);
  assert.match(await empty.locator('main').textContent(), /No profile samples are linked to this span/);
  const href = new URL(await empty.getAttribute('#span-profiles', 'href'), server.uiUrl);
  assert.equal(href.pathname, '/');
  assert.equal(href.searchParams.get('service'), none.service);
  assert.equal(href.searchParams.get('from'), String(none.from));
  assert.equal(href.searchParams.get('until'), String(none.until));
  await screenshot(empty, 'span-no-samples');
  await empty.click('#span-profiles');
  await settle(empty);
  assert.equal(await empty.locator('ul.services a[aria-current] .name').textContent(), 'orders', 'one click opens the service\'s profiles');
  const fg = await getJson(server.uiUrl, '/api/flamegraph', { service: 'orders', type: 'cpu:nanoseconds', from: none.from, until: none.until });
  assert.equal((await flameNodes(empty))[0].total, fg.total, 'over the span\'s minutes');
  assert.deepEqual(empty.errors, []);
  await close(empty);
});

test('usage screen shows /api/usage per day and key, rejected by reason', async () => {
  const server = await start();
  for (let i = 0; i < 3; i++) {
    const { bytes } = buildProfile({ sampleTypes: [['cpu', 'nanoseconds']], samples: [{ stack: ['main.f'], values: [10e6] }, { stack: ['main.g'], values: [20e6] }] });
    assert.equal((await upload(server, bytes, { serviceName: `u${i}` })).status, 200);
  }
  // An upload dated 20 days ago is refused and counted as out_of_window.
  const old = buildProfile({ sampleTypes: [['cpu', 'nanoseconds']], samples: [{ stack: ['main.f'], values: [1] }] }).bytes;
  assert.equal((await upload(server, old, { serviceName: 'old', from: nowS() - 20 * 86400 })).status, 400);
  await sleep(1200); // usage is flushed every second
  const api = await getJson(server.uiUrl, '/api/usage', { from: 'now-7d', until: 'now' });
  assert.ok(api.days.length > 0, JSON.stringify(api));
  const page = await open(browser, `${server.uiUrl}/usage`);
  const head = await page.locator('table.data thead th').allTextContents();
  const rows = await page.locator('table.data tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  const col = (name) => head.findIndex((h) => h.startsWith(name));
  const fmt = (n) => new Intl.NumberFormat('en-US').format(n);
  const want = [...api.days].sort((a, b) => (a.day < b.day ? 1 : -1));
  assert.equal(rows.length, want.length);
  want.forEach((d, i) => {
    assert.equal(rows[i][col('day')], d.day);
    assert.equal(rows[i][col('key')], d.key);
    assert.equal(rows[i][col('accepted')], fmt(d.accepted));
    assert.equal(rows[i][col('rejected')], fmt(d.rejected));
    for (const [reason, n] of Object.entries(d.rejected_by_reason ?? {})) assert.equal(rows[i][col(reason.replace(/_/g, ' '))], fmt(n), reason);
  });
  await screenshot(page, 'usage');
  await close(page);
  // Dark: the page follows prefers-color-scheme.
  const dark = await open(browser, `${server.uiUrl}/usage`, { colorScheme: 'dark' });
  const bg = await dark.evaluate(() => getComputedStyle(document.body).backgroundColor);
  const fg = await dark.evaluate(() => getComputedStyle(document.body).color);
  const lum = (c) => c.match(/\d+/g).slice(0, 3).map(Number).reduce((a, b) => a + b, 0) / 3;
  assert.ok(lum(bg) < 60 && lum(fg) > 180, `dark theme: background ${bg}, text ${fg}`);
  await screenshot(dark, 'usage-dark');
  await close(dark);
});

test('targets screen shows /api/targets: type, last result, last success, failures, url', async () => {
  const server = await start({
    config: staticScrapeConfig('10s', '        - {name: down, url: "http://127.0.0.1:9", service: billing, types: {memory: {scrape: true}, goroutine: {scrape: true}}}\n'),
  });
  // Scrapes are spread over the 10 s interval, so the first result of each
  // target may come up to 10 s after start (longer under ASan): wait for both.
  let api;
  for (let i = 0; i < 150; i++) {
    api = await getJson(server.uiUrl, '/api/targets');
    if (api.targets.length === 2 && api.targets.every((t) => t.last_result)) break;
    await sleep(200);
  }
  assert.equal(api.targets.length, 2, JSON.stringify(api));
  assert.ok(api.targets.every((t) => t.last_result), JSON.stringify(api));
  // A scrape between reading /api/targets and rendering the page changes the
  // failure count: compare only when the API answered the same before and after.
  let page, head, rows;
  for (let attempt = 0; ; attempt++) {
    const before = await getJson(server.uiUrl, '/api/targets');
    page = await open(browser, `${server.uiUrl}/targets`);
    head = await page.locator('table.data thead th').allTextContents();
    rows = await page.locator('table.data tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
    api = await getJson(server.uiUrl, '/api/targets');
    if (JSON.stringify(before) === JSON.stringify(api)) break;
    assert.ok(attempt < 5, 'the targets kept changing while the page was read');
    await close(page);
  }
  const col = (name) => head.indexOf(name);
  assert.equal(rows.length, api.targets.length);
  api.targets.forEach((t, i) => {
    assert.equal(rows[i][col('target')], t.key);
    assert.equal(rows[i][col('type')], t.type);
    assert.equal(rows[i][col('last result')], t.last_result);
    assert.equal(rows[i][col('consecutive failures')], String(t.consecutive_failures));
    assert.equal(rows[i][col('url')], t.url);
    assert.equal(rows[i][col('last success')], t.last_success ? t.last_success.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : 'never');
  });
  await screenshot(page, 'targets');
  await close(page);
});

test('with auth on, the UI sends a 401 to /login, and signing in opens the UI', async () => {
  const dataDir = mkTemp('ui-auth');
  const key = await createKey(dataDir, 'default', 'ui-query', 'both');
  const server = await start({ dataDir, extraArgs: ['--auth', 'required'] });
  const { bytes } = buildProfile({ sampleTypes: [['cpu', 'nanoseconds']], samples: [{ stack: ['main.f'], values: [10e6] }] });
  assert.equal((await upload(server, bytes, { serviceName: 'secret' }, { 'x-kiln-key': key })).status, 200);
  const page = await open(browser, `${server.uiUrl}/`, { settle: false, fresh: true });
  await page.waitForURL(/\/login$/);
  await page.fill('#key', key);
  await Promise.all([page.waitForURL(/\/(\?.*)?$/), page.click('button[type=submit]')]);
  await settle(page);
  assert.deepEqual(await page.locator('ul.services .name').allTextContents(), ['secret']);
  await close(page);
});
