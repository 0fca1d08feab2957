#!/usr/bin/env bash
# Runs the black-box suite (tests/blackbox/*.test.mjs) against the real
# build/kiln over HTTP, in two passes:
#   local       every suite, kiln on its embedded store (SQLite under --data);
#   clickhouse  the suites that are about stored data (CH_SUITES below) again,
#               with KILN_TEST_ENGINE=clickhouse: every kiln gets a `store:`
#               block for the run's ClickHouse and a database of its own;
#               plus the suites that need ClickHouse itself (CH_ONLY).
# One ClickHouse serves the whole run (lib/clickhouse.mjs; stopped at the end
# whatever happens), named in KILN_TEST_CLICKHOUSE_URL for both passes, so a
# suite of the local pass can use it too (deploy.test.mjs runs the scale-out
# pods on it). Without clickhouse-server, the local pass runs without it and
# the clickhouse pass fails.
# Prints one line per pass and a total CI can read:
#   blackbox[local]: N tests, P passed, F failed (Ts)
#   blackbox[clickhouse]: N tests, P passed, F failed (Ts)
#   blackbox: N tests, P passed, F failed (Ts)
# and fails if either pass fails.
# Env: KILN_BIN (default build/kiln), KILN_TESTDATA (default tests/data),
#      KILN_BB_CONCURRENCY (test files run at once, default 2),
#      KILN_BB_ENGINES (passes to run, default "local clickhouse"),
#      KILN_TEST_CLICKHOUSE_URL (use this ClickHouse instead of starting
#      one), KILN_TEST_CLICKHOUSE_TZ (the started
#      ClickHouse's server time zone, default Asia/Kolkata: not UTC, so an
#      engine that lets ClickHouse pick the day or the step boundaries shows it).
# The web UI tests (ui-*.test.mjs) drive KILN_CHROMIUM (default /usr/bin/chromium)
# and save screenshots in KILN_SCREENSHOTS (default tests/blackbox/screenshots/).
# Args: optional test files (default: all); each runs in the passes it belongs to.
set -u
cd "$(dirname "$0")/.."
export KILN_BIN="${KILN_BIN:-$(pwd)/build/kiln}"
export KILN_TESTDATA="${KILN_TESTDATA:-$(pwd)/tests/data}"
if [ ! -x "$KILN_BIN" ]; then echo "blackbox: $KILN_BIN not found (run make)"; exit 1; fi
command -v node >/dev/null || { echo "blackbox: node not found"; exit 1; }
command -v go >/dev/null || { echo "blackbox: go not found (go tool pprof is the oracle)"; exit 1; }
# Go works offline with the standard library only; its cache must be writable.
export GOFLAGS=-mod=mod GOPROXY=off
if [ -z "${GOCACHE:-}" ] && ! [ -w "${HOME:-/nonexistent}" ]; then
  export GOCACHE="${TMPDIR:-/tmp}/kiln-bb-go/cache" GOPATH="${TMPDIR:-/tmp}/kiln-bb-go/gopath"
fi
# The OTLP tests encode with protobufjs and call gRPC with @grpc/grpc-js
# (tests/blackbox/package.json); install them when missing or when the lock
# file changed since the last install (npm ci writes node_modules/.package-lock.json).
bb=tests/blackbox
if [ ! -f "$bb/node_modules/.package-lock.json" ] || [ "$bb/package-lock.json" -nt "$bb/node_modules/.package-lock.json" ]; then
  command -v npm >/dev/null || { echo "blackbox: npm not found (needed for $bb/package.json)"; exit 1; }
  echo "blackbox: npm ci in $bb"
  (cd "$bb" && npm ci --no-audit --no-fund --loglevel=error) || { echo "blackbox: npm ci failed in $bb"; exit 1; }
fi
# The clickhouse pass: suites that run on both engines, and suites that need
# ClickHouse (not run in the local pass).
CH_SUITES=(badinput cli restart testdata pprof-export gosplit
  otlp-fixture otlp-grpc otlp-oldformats otlp-vs-pprof otlp-bad
  span usage retention isolation labels pyroscope-ingest profile-names pyroscope-folded
  empty-stacks pyroscope-multipart pyroscope-connect pyroscope-querier pyroscope-render perses
  queue-busy queue-load pyroscope-jfr crash-projects hours)
CH_ONLY=(engines-compare scaleout clickhouse-down clickhouse-credentials clickhouse-ceiling)
in_list() { local x=$1; shift; for y in "$@"; do [ "$x" = "$y" ] && return 0; done; return 1; }
suite_of() { local b; b=$(basename "$1"); echo "${b%.test.mjs}"; }

files=("$@")
[ ${#files[@]} -eq 0 ] && files=(tests/blackbox/*.test.mjs)
local_files=()
ch_files=()
for f in "${files[@]}"; do
  s=$(suite_of "$f")
  in_list "$s" "${CH_ONLY[@]}" || local_files+=("$f")
  if in_list "$s" "${CH_SUITES[@]}" || in_list "$s" "${CH_ONLY[@]}"; then ch_files+=("$f"); fi
done
engines=" ${KILN_BB_ENGINES:-local clickhouse} "
[[ "$engines" == *" local "* ]] || local_files=()
[[ "$engines" == *" clickhouse "* ]] || ch_files=()

tmp=$(mktemp -d)
ch_pid=
cleanup() {
  if [ -n "$ch_pid" ]; then kill "$ch_pid" 2>/dev/null; wait "$ch_pid" 2>/dev/null; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

total_n=0 total_p=0 total_f=0 rc_all=0
start_all=$(date +%s)
# run_pass LABEL FILE...: one node --test run; its summary line; adds to the totals.
run_pass() {
  local label=$1; shift
  local tap="$tmp/$label.tap" start rc n p f
  start=$(date +%s)
  node --test --test-concurrency="${KILN_BB_CONCURRENCY:-2}" --test-timeout=600000 \
    --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination="$tap" \
    "$@"
  rc=$?
  n=$(sed -n 's/^# tests \([0-9]*\)$/\1/p' "$tap" | tail -1)
  p=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$tap" | tail -1)
  f=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$tap" | tail -1)
  echo "blackbox[$label]: ${n:-0} tests, ${p:-0} passed, ${f:-0} failed ($(( $(date +%s) - start ))s)"
  if [ "${f:-0}" != 0 ]; then
    echo "blackbox[$label]: failing tests:"
    grep -E '^\s*not ok ' "$tap" | sed 's/^/  /'
  fi
  total_n=$((total_n + ${n:-0})) total_p=$((total_p + ${p:-0})) total_f=$((total_f + ${f:-0}))
  [ $rc = 0 ] || rc_all=$rc
}
# fail_pass LABEL MESSAGE: a pass that could not run counts as one failure.
fail_pass() {
  echo "blackbox[$1]: $2"
  total_n=$((total_n + 1)) total_f=$((total_f + 1)) rc_all=1
}

# The run's ClickHouse, stopped by cleanup() whatever happens.
ch_error=
if [ ${#local_files[@]} -gt 0 ] || [ ${#ch_files[@]} -gt 0 ]; then
  if [ -n "${KILN_TEST_CLICKHOUSE_URL:-}" ]; then
    echo "blackbox: ClickHouse at $KILN_TEST_CLICKHOUSE_URL (given)"
  elif ! command -v "${KILN_CLICKHOUSE_BIN:-clickhouse-server}" >/dev/null; then
    ch_error="clickhouse-server not found (scripts/deps.sh installs it)"
  else
    node tests/blackbox/lib/clickhouse-main.mjs --timezone "${KILN_TEST_CLICKHOUSE_TZ:-Asia/Kolkata}" >"$tmp/ch.out" 2>&1 &
    ch_pid=$!
    for _ in $(seq 1 600); do
      grep -q '^url=' "$tmp/ch.out" && break
      kill -0 "$ch_pid" 2>/dev/null || break
      sleep 0.1
    done
    url=$(sed -n 's/^url=//p' "$tmp/ch.out")
    if [ -z "$url" ]; then
      ch_error="could not start ClickHouse: $(sed 's/^/  /' "$tmp/ch.out")"
    else
      export KILN_TEST_CLICKHOUSE_URL="$url"
      echo "blackbox: ClickHouse at $url ($(sed -n 's/^dir=//p' "$tmp/ch.out"), time zone ${KILN_TEST_CLICKHOUSE_TZ:-Asia/Kolkata})"
    fi
  fi
fi

[ ${#local_files[@]} -gt 0 ] && KILN_TEST_ENGINE=local run_pass local "${local_files[@]}"

if [ ${#ch_files[@]} -gt 0 ]; then
  if [ -n "$ch_error" ]; then
    fail_pass clickhouse "$ch_error"
  else
    KILN_TEST_ENGINE=clickhouse run_pass clickhouse "${ch_files[@]}"
  fi
fi
if [ -n "$ch_pid" ] && ! kill -0 "$ch_pid" 2>/dev/null; then
  fail_pass clickhouse "the run's ClickHouse died during the run:"
  grep -v '^url=\|^dir=' "$tmp/ch.out" | sed 's/^/  /'
fi

echo "blackbox: ${total_n} tests, ${total_p} passed, ${total_f} failed ($(( $(date +%s) - start_all ))s)"
exit $rc_all
