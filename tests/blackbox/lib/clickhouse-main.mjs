// One ClickHouse for a whole test run (tests/run-blackbox.sh's ClickHouse
// pass): starts it with lib/clickhouse.mjs, prints `url=http://127.0.0.1:PORT`
// and `dir=DIR` on stdout, and runs until SIGTERM/SIGINT, then stops it and
// deletes its directory — or when the process that started this one is
// gone (a runner killed with SIGKILL leaves no ClickHouse behind). If
// ClickHouse dies meanwhile, this exits 1 (the tests then fail with
// connection errors, and the log tail is printed here).
//   node tests/blackbox/lib/clickhouse-main.mjs [--timezone TZ]
import { startClickHouse } from './clickhouse.mjs';

const tzArg = process.argv.indexOf('--timezone');
const timezone = tzArg > 0 ? process.argv[tzArg + 1] : undefined;
let ch;
try {
  ch = await startClickHouse({ own: true, timezone });
} catch (e) {
  console.error(`clickhouse: ${e.message}`);
  process.exit(1);
}
console.log(`url=${ch.url}`);
console.log(`dir=${ch.dir}`);

let stopping = false;
const parent = process.ppid;
async function shutdown() {
  if (stopping) return;
  stopping = true;
  clearInterval(watch);
  await ch.destroy();
  process.exit(0);
}
const watch = setInterval(() => {
  if (stopping) return;
  if (process.ppid !== parent) { shutdown(); return; }
  if (ch.running()) return;
  clearInterval(watch);
  console.error(`clickhouse: the shared server at ${ch.url} died\n${ch.logTail(40)}`);
  process.exit(1);
}, 500);

for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, shutdown);
