// Helpers of the scrape tests: the Kubernetes API stand-in, /api/targets
// polling and the sensor's log lines.
import assert from 'node:assert/strict';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { REPO } from './env.mjs';
import { tail, parseLogfmt } from './server.mjs';
import { getJson, sleep } from './http.mjs';

// Starts tests/k8s-standin/server.mjs accepting token; resolves
// {proc, url, stop(), control(method, path, body)}.
export function startStandin(token) {
  return new Promise((resolve, reject) => {
    const proc = spawn('node', [path.join(REPO, 'tests/k8s-standin/server.mjs'), '--token', token], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /listening (\d+)/.exec(out);
      if (!m) return;
      const url = `http://127.0.0.1:${m[1]}`;
      resolve({
        proc, url,
        stop: () => { proc.kill('SIGTERM'); },
        control: async (method, p, body) => {
          const res = await fetch(`${url}${p}`, { method, body: body && JSON.stringify(body), headers: { 'content-type': 'application/json' } });
          assert.equal(res.status, 200, `${method} ${p}: ${await res.text()}`);
        },
      });
    });
    proc.on('exit', (c) => reject(new Error(`k8s stand-in exited ${c}`)));
  });
}

export async function targets(server) {
  return (await getJson(server.uiUrl, '/api/targets')).targets;
}

export async function target(server, key) {
  const t = (await targets(server)).find((x) => x.key === key);
  assert.ok(t, `target ${key} in /api/targets`);
  return t;
}

// Polls /api/targets until pred(target) holds (a missing target counts as not yet).
export async function waitTarget(server, key, pred, what, ms = 40000) {
  const end = Date.now() + ms;
  let t;
  while (Date.now() < end) {
    t = (await targets(server)).find((x) => x.key === key);
    if (t && pred(t)) return t;
    await sleep(200);
  }
  assert.fail(`${key}: ${what} within ${ms} ms; last ${JSON.stringify(t)}\n${tail(server.stderr())}`);
}

// The parsed log lines of server with msg="msg".
export const logLines = (server, msg) =>
  server.stderr().split('\n').filter((l) => l.includes(`msg="${msg}"`)).map(parseLogfmt);

// The lines with msg, once at least one is there (they may follow the listening lines).
export async function waitLog(server, msg, ms = 5000) {
  const end = Date.now() + ms;
  while (Date.now() < end && !logLines(server, msg).length) await sleep(50);
  return logLines(server, msg);
}

// Polls pred() until it returns something truthy; fails naming what.
export async function until(server, pred, what, ms = 25000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = await pred();
    if (v) return v;
    await sleep(200);
  }
  assert.fail(`${what} within ${ms} ms\n${tail(server.stderr())}`);
}

// A kiln config scraping the static targets given as YAML list items (each
// line indented by 8 spaces), with the test rate limit.
export function staticScrapeConfig(interval, items) {
  return `limits: {samplesPerSecond: 1000000000}
receivers:
  profiles:
    scrape:
      enabled: true
      interval: ${interval}
      static:
${items}`;
}
