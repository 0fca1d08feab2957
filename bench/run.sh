#!/usr/bin/env bash
# Runs every benchmark (or those named) and prints a summary table.
#
#   bench/run.sh [ingest] [otlp] [query] [storage] [memory] [scrape]
# Installs wrk, hyperfine and faketime with apt-get when they are missing, builds
# build/kiln and build/bench/* (NO_BUILD=1 skips that), writes everything it
# generates under $KILN_BENCH_TMP (default /tmp/kiln-bench). Each script's
# own environment knobs (CONNS, DURATION, COUNT, TOTAL, PERF=1, ...) pass through.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh

missing=()
command -v wrk >/dev/null || missing+=(wrk)
command -v hyperfine >/dev/null || missing+=(hyperfine)
command -v curl >/dev/null || missing+=(curl)
command -v h2load >/dev/null || missing+=(nghttp2-client)
command -v faketime >/dev/null || missing+=(faketime)
if [ ${#missing[@]} -gt 0 ]; then
	log "installing ${missing[*]}"
	if [ "$(id -u)" = 0 ]; then
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
	else
		sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
	fi
fi
if [ "${NO_BUILD:-0}" != 1 ]; then
	make -s build/kiln bench
fi

benches=("$@")
[ ${#benches[@]} -gt 0 ] || benches=(ingest otlp query storage memory scrape)
: >"$RESULTS"
failed=()
for b in "${benches[@]}"; do
	[ -x "bench/$b.sh" ] || die "no bench/$b.sh"
	log "=== $b"
	bash "bench/$b.sh" || failed+=("$b")
done

echo
echo "Kiln benchmarks — $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
{
	printf 'bench\tfigure\tvalue\ttarget\tstatus\n'
	cut -f1-5 "$RESULTS"
} | column -t -s $'\t'
echo
echo "Commands per row: $RESULTS (6th column); logs and perf reports: $TMPD"
if [ ${#failed[@]} -gt 0 ]; then
	log "benchmarks that failed to run: ${failed[*]}"
	exit 1
fi
