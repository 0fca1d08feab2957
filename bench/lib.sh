# Shared helpers for the benchmark scripts (sourced, not run).
# Everything generated goes under $KILN_BENCH_TMP (default /tmp/kiln-bench),
# never into the repository.

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$BENCH_DIR/.." && pwd)
KILN=${KILN_BIN:-$REPO/build/kiln}
BENCH_BIN=${KILN_BENCH_BIN:-$REPO/build/bench}
TESTDATA=${KILN_TESTDATA:-$REPO/../shared/testdata/pprof}
[ -d "$TESTDATA" ] || TESTDATA=/work/shared/testdata/pprof
TMPD=${KILN_BENCH_TMP:-/tmp/kiln-bench}
RESULTS=${KILN_BENCH_RESULTS:-$TMPD/results.tsv}
mkdir -p "$TMPD"

SERVER_PID=
UPLOAD_PORT=
UI_PORT=

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

need_bins() {
	[ -x "$KILN" ] || die "$KILN missing: run make build/kiln"
	for b in "$@"; do
		[ -x "$BENCH_BIN/$b" ] || die "$BENCH_BIN/$b missing: run make bench"
	done
}

# The benchmarks measure throughput: the per-key rate limit (default 20,000
# samples/s, docs/OPERATIONS.md) is raised to its maximum, or it would be
# what they measure.
BENCH_CONFIG=$TMPD/bench-config.yaml
printf 'limits:\n  samplesPerSecond: 1000000000\n' >"$BENCH_CONFIG"

# start_kiln CONFIG DATA_DIR LOG_FILE LISTENER...: kiln serve with the named
# listeners (upload, ui, otlp_http, otlp_grpc) on ephemeral ports and the
# others off; waits until each logged its address. Sets SERVER_PID,
# UPLOAD_PORT, UI_PORT, OTLP_HTTP_PORT, OTLP_GRPC_PORT (empty when off).
# SERVER_ENV (e.g. "MALLOC_TRIM_THRESHOLD_=16777216") is kiln's environment.
start_kiln() {
	local config=$1 data=$2 logf=$3 l
	shift 3
	local -A addr=([upload]=off [ui]=off [otlp_http]=off [otlp_grpc]=off)
	for l in "$@"; do addr[$l]=127.0.0.1:0; done
	mkdir -p "$data"
	env ${SERVER_ENV:-} "$KILN" serve --config "$config" --data "$data" --ui "${addr[ui]}" --upload "${addr[upload]}" \
		--otlp-http "${addr[otlp_http]}" --otlp-grpc "${addr[otlp_grpc]}" 2>"$logf" >/dev/null &
	SERVER_PID=$!
	UPLOAD_PORT= UI_PORT= OTLP_HTTP_PORT= OTLP_GRPC_PORT=
	local port_of missing
	port_of() { sed -n "s/.*msg=listening.*listener=$1 .*addr=[0-9.]*:\([0-9]*\).*/\1/p" "$logf" | head -1; }
	for _ in $(seq 1 200); do
		UPLOAD_PORT=$(port_of upload) UI_PORT=$(port_of ui)
		OTLP_HTTP_PORT=$(port_of otlp_http) OTLP_GRPC_PORT=$(port_of otlp_grpc)
		missing=0
		for l in "$@"; do
			case $l in
			upload) [ -n "$UPLOAD_PORT" ] || missing=1 ;;
			ui) [ -n "$UI_PORT" ] || missing=1 ;;
			otlp_http) [ -n "$OTLP_HTTP_PORT" ] || missing=1 ;;
			otlp_grpc) [ -n "$OTLP_GRPC_PORT" ] || missing=1 ;;
			esac
		done
		[ $missing = 0 ] && return 0
		kill -0 "$SERVER_PID" 2>/dev/null || { cat "$logf" >&2; die "kiln serve exited"; }
		sleep 0.05
	done
	cat "$logf" >&2
	die "kiln serve did not log its listeners ($*) within 10 s"
}

# start_server DATA_DIR LOG_FILE: the upload and UI listeners with the bench config.
start_server() { start_kiln "$BENCH_CONFIG" "$1" "$2" upload ui; }

# stop_server: SIGTERM (the store checkpoints its WAL) and wait for exit.
stop_server() {
	[ -n "$SERVER_PID" ] || return 0
	kill -TERM "$SERVER_PID" 2>/dev/null || true
	local rc=0
	wait "$SERVER_PID" || rc=$?
	SERVER_PID=
	return $rc
}

# Kill the server we started if the script dies half-way.
cleanup_server() {
	if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
		kill -TERM "$SERVER_PID" 2>/dev/null
		wait "$SERVER_PID" 2>/dev/null || true
	fi
}
trap cleanup_server EXIT

# cpu_ticks PID: utime+stime of the process in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
clk_tck() { getconf CLK_TCK; }
now_s() { date +%s.%N; }

# status_kib PID FIELD: VmRSS / VmHWM in KiB.
status_kib() { awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"; }

# json_get FILE_OR_- EXPR: evaluates a JS expression on the parsed JSON (variable j).
json_get() {
	node -e '
		const fs = require("fs");
		const j = JSON.parse(fs.readFileSync(process.argv[1] === "-" ? 0 : process.argv[1], "utf8"));
		const v = eval(process.argv[2]);
		process.stdout.write(String(v));' "$1" "$2"
}

# calc EXPR: floating-point arithmetic (awk).
calc() { awk "BEGIN { printf \"%.6g\", $* }"; }

# result BENCH FIGURE VALUE TARGET STATUS COMMAND: one row of the summary.
result() {
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$6" >>"$RESULTS"
	printf 'RESULT  %-8s %-34s %-16s target %-14s %s\n' "$1" "$2" "$3" "$4" "$5"
}

# flame_total SERVICE TYPE FROM UNTIL: the flame graph total Kiln reports.
flame_total() {
	curl -sf "http://127.0.0.1:$UI_PORT/api/flamegraph?service=$1&type=$2&from=$3&until=$4" -o "$TMPD/flame_check.json" ||
		die "flamegraph query for $1 failed"
	json_get "$TMPD/flame_check.json" 'j.total'
}

# proc_stat: "busy total" jiffies of all CPUs together (/proc/stat).
proc_stat() { awk '/^cpu /{b = $2 + $3 + $4 + $7 + $8 + $9; print b, b + $5 + $6}' /proc/stat; }

# busy_pct B0 T0 B1 T1: machine CPU busy between two proc_stat readings, in %
# of ALL cores (nproc x 100 = everything).
busy_pct() { calc "$(nproc) * 100 * ($3 - $1) / ($4 - $2)"; }

# wait_quiet: the machine is shared (other builds, tests, benchmarks); wait up
# to QUIET_WAIT (300) s until other processes use under QUIET_PCT (15) % of a
# core, then go on either way (with a warning naming the busiest processes).
wait_quiet() {
	local limit=${QUIET_PCT:-15} max=${QUIET_WAIT:-300} waited=0 b0 t0 b1 t1 busy
	while :; do
		read -r b0 t0 < <(proc_stat)
		sleep 2
		read -r b1 t1 < <(proc_stat)
		busy=$(busy_pct "$b0" "$t0" "$b1" "$t1")
		if awk -v b="$busy" -v l="$limit" 'BEGIN { exit !(b <= l) }'; then
			[ $waited = 0 ] || log "machine quiet after ${waited}s ($busy% busy)"
			return 0
		fi
		if [ $waited -ge "$max" ]; then
			log "WARNING: the machine is still $busy% busy with other processes; measuring anyway:"
			top -b -n1 | sed -n '8,12p' >&2
			return 0
		fi
		[ $waited = 0 ] && { log "waiting for other processes to finish ($busy% of a core busy):"; top -b -n1 | sed -n '8,11p' >&2; }
		waited=$((waited + 2))
	done
}
