#!/usr/bin/env bash
# Runs the black-box suite (tests/blackbox/*.test.mjs) against the real
# build/kiln over HTTP; prints one summary line CI can read:
#   blackbox: N tests, P passed, F failed
# Env: KILN_BIN (default build/kiln), KILN_TESTDATA (default ../shared/testdata),
#      KILN_BB_CONCURRENCY (test files run at once, default 2).
# The web UI tests (ui-*.test.mjs) drive KILN_CHROMIUM (default /usr/bin/chromium)
# and save screenshots in KILN_SCREENSHOTS (default tests/blackbox/screenshots/).
# Args: optional test files (default: all).
set -u
cd "$(dirname "$0")/.."
export KILN_BIN="${KILN_BIN:-$(pwd)/build/kiln}"
export KILN_TESTDATA="${KILN_TESTDATA:-$(cd .. && pwd)/shared/testdata}"
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
files=("$@")
[ ${#files[@]} -eq 0 ] && files=(tests/blackbox/*.test.mjs)
tap=$(mktemp)
trap 'rm -f "$tap"' EXIT
start=$(date +%s)
node --test --test-concurrency="${KILN_BB_CONCURRENCY:-2}" --test-timeout=600000 \
  --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=tap --test-reporter-destination="$tap" \
  "${files[@]}"
rc=$?
n=$(sed -n 's/^# tests \([0-9]*\)$/\1/p' "$tap" | tail -1)
p=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$tap" | tail -1)
f=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$tap" | tail -1)
echo "blackbox: ${n:-0} tests, ${p:-0} passed, ${f:-0} failed ($(( $(date +%s) - start ))s)"
if [ "${f:-0}" != 0 ]; then
  echo "blackbox: failing tests:"
  grep -E '^\s*not ok ' "$tap" | sed 's/^/  /'
fi
exit $rc
