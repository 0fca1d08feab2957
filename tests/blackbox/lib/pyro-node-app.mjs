// A small Node.js service profiled by the real npm SDK @pyroscope/nodejs
// (0.6.4), for tests/blackbox/pyroscope-nodejs.test.mjs. Run as a child
// process; its settings come from the environment:
//   PYRO_SERVER    the SDK's serverAddress (the test's recording proxy)
//   PYRO_APP       appName
//   PYRO_MAX_MS    the longest it works; it stops earlier when a line
//                  "stop" arrives on stdin (the test sends it once it has
//                  seen enough pushes), and the SDK then flushes
//   PYRO_FLUSH_MS  flushIntervalMs
//   PYRO_TOKEN     authToken (optional)
//   PYRO_TENANT    tenantID, sent as X-Scope-OrgID (optional)
// The work: CPU-heavy recursion under the dynamic label handler=fib,
// allocation under handler=alloc (both through wrapWithLabels), and some
// unlabelled hashing; static tags env and region. Prints "stopped" once the
// SDK's last export is done.
import Pyroscope from '@pyroscope/nodejs';
import crypto from 'node:crypto';

const env = process.env;
const maxMs = Number(env.PYRO_MAX_MS ?? 60000);
let stopRequested = false;
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => { if (d.includes('stop')) stopRequested = true; });

Pyroscope.init({
  serverAddress: env.PYRO_SERVER,
  appName: env.PYRO_APP,
  flushIntervalMs: Number(env.PYRO_FLUSH_MS ?? 2000),
  tags: { env: 'sdk-test', region: 'eu-1' },
  wall: { samplingIntervalMicros: 1000 },
  heap: { samplingIntervalBytes: 16 * 1024, stackDepth: 64 },
  ...(env.PYRO_TOKEN ? { authToken: env.PYRO_TOKEN } : {}),
  ...(env.PYRO_TENANT ? { tenantID: env.PYRO_TENANT } : {}),
});
Pyroscope.start();

function fib(n) {
  return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

const kept = [];
function allocate(rounds) {
  for (let i = 0; i < rounds; i++) {
    const block = new Array(256).fill(0).map((_, k) => ({ k, s: `item-${i}-${k}` }));
    kept.push(block);
  }
  if (kept.length > 4000) kept.splice(0, 2000); // in-use memory stays bounded but non-zero
}

function hashLoop(n) {
  let h = 'seed';
  for (let i = 0; i < n; i++) h = crypto.createHash('sha256').update(h).digest('hex');
  return h;
}

const t0 = Date.now();
let sink = 0;
while (!stopRequested && Date.now() - t0 < maxMs) {
  Pyroscope.wrapWithLabels({ handler: 'fib' }, () => { sink += fib(24); });
  Pyroscope.wrapWithLabels({ handler: 'alloc' }, () => allocate(20));
  sink += hashLoop(200).length;
  // Yield so that the SDK's flush timers run.
  await new Promise((resolve) => setImmediate(resolve));
}
// The SDK 0.6.4 races its own stop(): a flush timer that fired just before
// stop() has queued its profiling round with setImmediate (or re-armed itself
// from one), and that round then throws "Wall profiler is not started" /
// "Heap profiler is not enabled." as an unhandled rejection, before it exports
// anything. Such a round sends nothing, so it is counted and ignored; any
// other rejection fails the app. After stop() the app exits: a round re-armed
// by the race would otherwise keep it alive.
let stopping = false;
let raced = 0;
process.on('unhandledRejection', (e) => {
  if (stopping && /^(Wall profiler is not started|Heap profiler is not enabled\.)$/.test(e?.message)) {
    raced++;
    return;
  }
  process.stderr.write(`unhandled rejection: ${e?.stack ?? e}\n`);
  process.exit(2);
});
stopping = true;
await Pyroscope.stop();
process.stdout.write(`stopped ${sink > 0} ${kept.length} raced=${raced} after=${Date.now() - t0}ms\n`);
process.exit(0);
