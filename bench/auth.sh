#!/usr/bin/env bash
# Ingest throughput with auth + rate limiting on (1,000 ingest keys, requests
# cycling through them) against the same server without auth: the issue's
# target is "within 10 %". go-cpu-fib.pb.gz, 64 connections, DURATION s each.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_bins
command -v wrk >/dev/null || die "wrk missing: bench/run.sh installs it (apt-get install wrk)"
DURATION=${DURATION:-15}
CONNS=${CONNS:-64}
FILE=$TESTDATA/go-cpu-fib.pb.gz
PROJECTS=${PROJECTS:-1} # projects the keys are spread over (each has its own partition files)
# Seconds of load before the measured run, on the same server: the first
# seconds create every project's partition file of the day and fill its
# dictionaries (1,000 files at PROJECTS=1000), a cost paid once a day per
# project; WARMUP measures the steady state after it. 0: measure from the
# first request (the cold figure, what a fresh data directory sees).
WARMUP=${WARMUP:-0}
# PERF=1: `perf record -g` of the server during each measured run (from its
# second second, for DURATION - 3 s); per-thread and per-symbol reports in
# $TMPD/perf-auth-LABEL-*.txt, to compare the two runs' CPU per upload.
PERF=${PERF:-0}

run_wrk() { # LABEL URL LUA ARGS...
	local label=$1 url=$2 lua=$3
	shift 3
	if [ "$WARMUP" -gt 0 ]; then
		wrk -t1 -c"$CONNS" -d"${WARMUP}s" -s "$lua" "$url" -- "$@" >"$TMPD/auth-$label-warmup.txt"
		log "$label: warm-up $(sed -n 's/.*requests=\([0-9]*\).*/\1/p' "$TMPD/auth-$label-warmup.txt") uploads in ${WARMUP} s"
	fi
	local perf_pid=
	if [ "$PERF" = 1 ]; then
		(sleep 1 && perf record -e cpu-clock -F 999 -g -p "$SERVER_PID" -o "$TMPD/perf-auth-$label.data" \
			-- sleep $((DURATION - 3)) >/dev/null 2>&1) &
		perf_pid=$!
	fi
	thread_ticks "$SERVER_PID" >"$TMPD/auth-$label-ticks0.txt"
	wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency -s "$lua" "$url" -- "$@" >"$TMPD/auth-$label.txt"
	thread_ticks "$SERVER_PID" >"$TMPD/auth-$label-ticks1.txt"
	if [ -n "$perf_pid" ]; then
		wait "$perf_pid" || true
		perf report -i "$TMPD/perf-auth-$label.data" --no-children -g none --sort comm --stdio 2>/dev/null |
			grep '%' | grep -v '^#' >"$TMPD/perf-auth-$label-threads.txt" || true
		perf report -i "$TMPD/perf-auth-$label.data" --no-children -g none --percent-limit 0.3 \
			--sort comm,dso,symbol --stdio 2>/dev/null | grep '%' | grep -v '^#' >"$TMPD/perf-auth-$label.txt" || true
		log "$label: perf reports in $TMPD/perf-auth-$label*.txt"
	fi
	local req dur non2xx
	req=$(wrk_kv "$TMPD/auth-$label.txt" requests)
	dur=$(wrk_kv "$TMPD/auth-$label.txt" duration_us)
	non2xx=$(wrk_kv "$TMPD/auth-$label.txt" non2xx)
	[ "$non2xx" = 0 ] || die "$label: $non2xx non-2xx answers (rate limited? keys wrong?)"
	# Where the server's CPU went, per thread name: µs per upload.
	thread_cost "$TMPD/auth-$label-ticks0.txt" "$TMPD/auth-$label-ticks1.txt" "$req" >"$TMPD/auth-$label-threads-us.txt"
	log "$label: server CPU µs per upload by thread: $(tr '\n' ' ' <"$TMPD/auth-$label-threads-us.txt")"
	calc "$req * 1000000 / $dur"
}

# Without auth (the default key, limit raised).
data=$TMPD/auth-off
rm -rf "$data"
start_server "$data" "$TMPD/auth-off.log"
wait_quiet
off=$(run_wrk off "http://127.0.0.1:$UPLOAD_PORT" bench/upload.lua "$FILE" auth-off)
stop_server

# With auth required and 1,000 keys, each limited to 20,000 samples/s (the
# default): 1,000 keys × 20,000 is far above what one machine ingests, so no
# request is refused, but every request is identified and admitted.
data=$TMPD/auth-on
rm -rf "$data"
mkdir -p "$data"
keys=$TMPD/auth-keys.txt
: >"$keys"
log "creating 1,000 keys"
for i in $(seq 1 1000); do
	"$KILN" keys create --data "$data" --project "p$((i % PROJECTS))" --name "k$i" --scope ingest >>"$keys" 2>/dev/null
done
printf 'listeners:\n  upload: {auth: required}\n' >"$TMPD/auth-on.yaml"
BENCH_CONFIG_SAVED=$BENCH_CONFIG
BENCH_CONFIG=$TMPD/auth-on.yaml
start_server "$data" "$TMPD/auth-on.log"
BENCH_CONFIG=$BENCH_CONFIG_SAVED
wait_quiet
on=$(run_wrk on "http://127.0.0.1:$UPLOAD_PORT" bench/upload_keys.lua "$FILE" auth-on "$keys")
stop_server

ratio=$(calc "$on / $off")
warm=""
[ "$WARMUP" = 0 ] || warm=", after ${WARMUP} s warm-up"
result auth "uploads/s without auth (c=$CONNS$warm)" "$off" "-" "-" "wrk -c$CONNS -d${DURATION}s -s bench/upload.lua"
result auth "uploads/s with auth + limits, 1,000 keys, $PROJECTS projects (c=$CONNS$warm)" "$on" "≥ 90 % of the above" "$ratio" "wrk -c$CONNS -d${DURATION}s -s bench/upload_keys.lua"
log "auth: off $off/s, on $on/s, ratio $ratio"
