#!/usr/bin/env bash
# JFR ingest throughput through HTTP (issue 18): wrk POSTs the Java agent's
# 10 s CPU + lock + allocation recording (tests/data/jfr/cortex-dev-01__
# kafka-0__cpu_lock_alloc__0.jfr.gz) as the agent sends it (bench/upload_jfr.lua)
# over C keep-alive connections, after a warm-up; then the flame graph
# total of its process_cpu profile over the run's window, divided by one
# calibration upload's, tells how many uploads were stored.
#
#   bench/ingest_jfr.sh          Environment: CONNS ("8 32"), DURATION (20), WARMUP (5)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_bins
command -v wrk >/dev/null || die "wrk missing: bench/run.sh installs it (apt-get install wrk)"

DURATION=${DURATION:-20}
WARMUP=${WARMUP:-5}
CONNS=${CONNS:-"8 32"}
FILE=$REPO/tests/data/jfr/cortex-dev-01__kafka-0__cpu_lock_alloc__0.jfr.gz
LUA=$BENCH_DIR/upload_jfr.lua
TYPE=process_cpu:cpu:nanoseconds

data=$TMPD/ingest-jfr-data
rm -rf "$data"
start_server "$data" "$TMPD/ingest-jfr.log"
base=$(($(date +%s) - 600))

# One calibration upload (curl, the same body): the total one upload stores.
boundary=8d5c3b9e-2f41-4c1a-9a57-0b6f3d2e7c10
{
	printf -- '--%s\r\nContent-Disposition: form-data; name="jfr"; filename="jfr"\r\n\r\n' "$boundary"
	cat "$FILE"
	printf -- '\r\n--%s--\r\n' "$boundary"
} >"$TMPD/jfr-body"
curl -sf -o /dev/null -H "Content-Type: multipart/form-data; boundary=$boundary" --data-binary @"$TMPD/jfr-body" \
	"http://127.0.0.1:$UPLOAD_PORT/ingest?name=bench-jfr-one&from=$base&until=$((base + 10))&sampleRate=100&format=jfr" ||
	die "calibration upload failed"
per_upload=$(flame_total bench-jfr-one "$TYPE" $((base - 30)) $((base + 40)))
log "one upload stores $per_upload ns of cpu"

wrk -t1 -c8 -d"${WARMUP}s" -s "$LUA" "http://127.0.0.1:$UPLOAD_PORT" -- "$FILE" bench-jfr-warm "$base" $((base + 10)) >/dev/null
for c in $CONNS; do
	w=$((base - 60 * c)) # every run its own window, within retention and not ahead of now
	wait_quiet
	tk0=$(cpu_ticks "$SERVER_PID")
	read -r mb0 mt0 < <(proc_stat)
	t0=$(now_s)
	wrk -t1 -c"$c" -d"${DURATION}s" --latency -s "$LUA" "http://127.0.0.1:$UPLOAD_PORT" \
		-- "$FILE" "bench-jfr-c$c" "$w" $((w + 10)) >"$TMPD/ingest-jfr-c$c-wrk.txt"
	t1=$(now_s)
	read -r mb1 mt1 < <(proc_stat)
	tk1=$(cpu_ticks "$SERVER_PID")
	wrk_out="$TMPD/ingest-jfr-c$c-wrk.txt"
	requests=$(wrk_kv "$wrk_out" requests) non2xx=$(wrk_kv "$wrk_out" non2xx) dur_us=$(wrk_kv "$wrk_out" duration_us)
	ok=$((requests - non2xx))
	rps=$(calc "$ok / ($dur_us / 1e6)")
	sleep 1
	stored=$(calc "$(flame_total "bench-jfr-c$c" "$TYPE" $((w - 30)) $((w + 40))) / $per_upload")
	result ingest "jfr cpu_lock_alloc uploads/s (c=$c)" "$rps" ">= 100" \
		"$(awk -v r="$rps" 'BEGIN { print (r >= 100) ? "met" : "MISSED" }')" \
		"wrk -t1 -c$c -d${DURATION}s -s bench/upload_jfr.lua http://127.0.0.1:PORT -- FILE bench-jfr-c$c FROM UNTIL"
	result ingest "jfr c=$c p50 / p99 ms" "$(calc "$(wrk_kv "$wrk_out" p50_us) / 1000") / $(calc "$(wrk_kv "$wrk_out" p99_us) / 1000")" "-" "-" "wrk --latency"
	result ingest "jfr c=$c server CPU % (of 200)" "$(calc "100 * ($tk1 - $tk0) / $(clk_tck) / ($t1 - $t0)")" "-" "-" "/proc/PID/stat"
	result ingest "jfr c=$c machine CPU % (all)" "$(busy_pct "$mb0" "$mt0" "$mb1" "$mt1")" "-" "-" "/proc/stat"
	result ingest "jfr c=$c stored / answered 200" "$stored / $ok" "equal" "-" "flame graph total / per-upload total"
done
stop_server
