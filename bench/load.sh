#!/usr/bin/env bash
# Load far above the rate limit (issue 7): 1,000 concurrent connections push
# for DURATION seconds at several times the default per-key limit (20,000
# samples/s) — pprof uploads over HTTP/1.1 with wrk, OTLP over gRPC with
# h2load. Passes when every answer is 200 or an intended 429 (gRPC:
# RESOURCE_EXHAUSTED, counted by kiln as 429), no connection fails, and the
# store holds exactly the uploads answered 200. Prints p50/p99 latency, peak
# RSS (VmHWM) and CPU; figures go to docs/RELIABILITY.md.
#
#   bench/load.sh [http] [grpc]        (default: both)
# Environment: DURATION (60), CONNS (1000).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_bins otlp_rebase
DURATION=${DURATION:-60}
CONNS=${CONNS:-1000}
FILE=$TESTDATA/go-cpu-fib.pb.gz
OTLP_FIXTURE=${KILN_OTLP_FIXTURE:-$(dirname "$TESTDATA")/otlp/ebpf-profiler-v1.10.pb}
GRPC_PATH=/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export
CONFIG=$TMPD/load-config.yaml
printf 'limits:\n  samplesPerSecond: 20000\n' >"$CONFIG"
ulimit -n 20000 2>/dev/null || true

GRPC_PORT=
start_load_server() {
	local data=$1 logf=$2
	rm -rf "$data"
	mkdir -p "$data"
	"$KILN" serve --config "$CONFIG" --data "$data" --ui 127.0.0.1:0 --upload 127.0.0.1:0 \
		--otlp-http off --otlp-grpc 127.0.0.1:0 2>"$logf" >/dev/null &
	SERVER_PID=$!
	for _ in $(seq 1 200); do
		UPLOAD_PORT=$(sed -n 's/.*msg=listening.*listener=upload.*addr=[0-9.]*:\([0-9]*\).*/\1/p' "$logf" | head -1)
		UI_PORT=$(sed -n 's/.*msg=listening.*listener=ui.*addr=[0-9.]*:\([0-9]*\).*/\1/p' "$logf" | head -1)
		GRPC_PORT=$(sed -n 's/.*msg=listening.*listener=otlp_grpc.*addr=[0-9.]*:\([0-9]*\).*/\1/p' "$logf" | head -1)
		[ -n "$UPLOAD_PORT" ] && [ -n "$UI_PORT" ] && [ -n "$GRPC_PORT" ] && return 0
		kill -0 "$SERVER_PID" 2>/dev/null || { cat "$logf" >&2; die "kiln serve exited"; }
		sleep 0.05
	done
	die "kiln serve did not log its listeners"
}

# metric NAME_AND_LABELS: its value on /metrics (0 when absent).
metric() {
	curl -sf "http://127.0.0.1:$UI_PORT/metrics" | awk -v m="$1" '$1 == m {v = $2} END {print v + 0}'
}

# Requests of listener L answered with a status other than 200 and 429.
unexpected_statuses() {
	curl -sf "http://127.0.0.1:$UI_PORT/metrics" |
		awk -v l="listener=\"$1\"" 'index($1, "kiln_requests_total{") == 1 && index($1, l) && $1 !~ /status="(200|429)"/ {n += $2} END {print n + 0}'
}

# measure START|END: CPU ticks and wall time around a run.
T0= K0=
run_http() {
	start_load_server "$TMPD/load-http-data" "$TMPD/load-http.log"
	local one_svc=load-one svc=load-http now one
	curl -sf --data-binary @"$FILE" "http://127.0.0.1:$UPLOAD_PORT/profiling/upload?serviceName=$one_svc" >/dev/null
	now=$(date +%s)
	one=$(flame_total "$one_svc" cpu:nanoseconds $((now - 3600)) $((now + 600)))
	sleep 1.5 # a full bucket again
	log "load http: wrk -t2 -c$CONNS -d${DURATION}s --timeout 30s -s bench/load.lua (upload $FILE)"
	K0=$(cpu_ticks "$SERVER_PID") T0=$(now_s)
	wrk -t2 -c"$CONNS" -d"${DURATION}s" --timeout 30s --latency -s "$BENCH_DIR/load.lua" \
		"http://127.0.0.1:$UPLOAD_PORT" -- "$FILE" "$svc" >"$TMPD/load-http.txt"
	local k1 t1 line hwm
	k1=$(cpu_ticks "$SERVER_PID") t1=$(now_s)
	hwm=$(status_kib "$SERVER_PID" VmHWM)
	line=$(grep KILN_LOAD "$TMPD/load-http.txt")
	log "load http: $line"
	local kv
	for kv in $line; do case "$kv" in *=*) eval "W_${kv%%=*}=${kv#*=}" ;; esac; done
	local stored unexpected cpu acked
	now=$(date +%s)
	stored=$(flame_total "$svc" cpu:nanoseconds $((now - 3600)) $((now + 600)))
	unexpected=$(unexpected_statuses upload)
	# Kiln's own count of 200s, less the calibration upload: wrk stops
	# counting with requests still in flight, kiln does not.
	acked=$(($(metric 'kiln_requests_total{listener="upload",status="200"}') - 1))
	cpu=$(calc "100 * ($k1 - $K0) / $(clk_tck) / ($t1 - $T0)")
	stop_server
	local rate
	rate=$(calc "$W_s200 + $W_s429")
	printf 'LOAD http conns=%s duration=%ss requests=%s ok=%s rate_limited=%s other=%s socket_errors=%s p50=%.1fms p99=%.1fms max=%.1fms vmhwm=%.1fMiB cpu=%.0f%% acked_by_kiln=%s stored_uploads=%s\n' \
		"$CONNS" "$DURATION" "$rate" "$W_s200" "$W_s429" "$W_other" \
		"$((W_connect + W_read + W_write + W_timeout))" "$(calc "$W_p50_us / 1000")" "$(calc "$W_p99_us / 1000")" \
		"$(calc "$W_max_us / 1000")" "$(calc "$hwm / 1024")" "$cpu" "$acked" "$(calc "$stored / $one")"
	[ "$W_other" = 0 ] || die "http: $W_other answers other than 200/429"
	[ "$unexpected" = 0 ] || die "http: kiln counted $unexpected answers other than 200/429"
	[ "$((W_connect + W_read + W_write + W_timeout))" = 0 ] || die "http: socket errors"
	[ "$W_s429" -gt "$W_s200" ] || die "http: the load was not above the rate limit"
	[ "$(calc "$stored / $one")" = "$acked" ] || die "http: stored $(calc "$stored / $one") uploads, answered 200 to $acked"
	[ "$acked" -ge "$W_s200" ] && [ "$acked" -le "$((W_s200 + CONNS))" ] || die "http: kiln answered 200 $acked times, wrk saw $W_s200"
	result load "http $CONNS conns p99" "$(calc "$W_p99_us / 1000") ms" "no failures" met "bench/load.sh http"
}

run_grpc() {
	"$BENCH_BIN/otlp_rebase" "$OTLP_FIXTURE" "$TMPD/load-req.pb" 60 "$TMPD/load-req.grpc" >/dev/null
	start_load_server "$TMPD/load-grpc-data" "$TMPD/load-grpc.log"
	local lf=$TMPD/load-grpc-requests.log
	log "load grpc: h2load -c$CONNS -m1 -D$DURATION (OTLP fixture, one gRPC frame per request)"
	K0=$(cpu_ticks "$SERVER_PID") T0=$(now_s)
	h2load -t2 -c"$CONNS" -m1 -D"$DURATION" -d "$TMPD/load-req.grpc" -H 'content-type: application/grpc' \
		-H 'te: trailers' --log-file="$lf" "http://127.0.0.1:$GRPC_PORT$GRPC_PATH" >"$TMPD/load-grpc.txt"
	local k1 t1 hwm
	k1=$(cpu_ticks "$SERVER_PID") t1=$(now_s)
	hwm=$(status_kib "$SERVER_PID" VmHWM)
	local req failed errored ok rl unexpected p50 p99 cpu
	req=$(sed -n 's/^requests: \([0-9]*\) total.*/\1/p' "$TMPD/load-grpc.txt")
	failed=$(sed -n 's/.* \([0-9]*\) failed, \([0-9]*\) errored.*/\1/p' "$TMPD/load-grpc.txt")
	errored=$(sed -n 's/.* \([0-9]*\) failed, \([0-9]*\) errored.*/\2/p' "$TMPD/load-grpc.txt")
	ok=$(metric 'kiln_requests_total{listener="otlp_grpc",status="200"}')
	rl=$(metric 'kiln_requests_total{listener="otlp_grpc",status="429"}')
	unexpected=$(unexpected_statuses otlp_grpc)
	read -r p50 p99 < <(awk '{print $3}' "$lf" | sort -n | awk '{a[NR] = $1} END {print a[int(NR * 0.5) + 1] / 1000, a[int(NR * 0.99) + 1] / 1000}')
	cpu=$(calc "100 * ($k1 - $K0) / $(clk_tck) / ($t1 - $T0)")
	stop_server
	printf 'LOAD grpc conns=%s duration=%ss requests=%s ok=%s resource_exhausted=%s other=%s h2load_failed=%s errored=%s p50=%sms p99=%sms vmhwm=%.1fMiB cpu=%.0f%%\n' \
		"$CONNS" "$DURATION" "$req" "$ok" "$rl" "$unexpected" "$failed" "$errored" "$p50" "$p99" "$(calc "$hwm / 1024")" "$cpu"
	[ "$unexpected" = 0 ] || die "grpc: $unexpected answers other than OK/RESOURCE_EXHAUSTED"
	[ "${failed:-1}" = 0 ] && [ "${errored:-1}" = 0 ] || die "grpc: h2load saw failed/errored requests"
	[ "$rl" -gt "$ok" ] || die "grpc: the load was not above the rate limit"
	result load "grpc $CONNS conns p99" "$p99 ms" "no failures" met "bench/load.sh grpc"
}

want=("$@")
[ ${#want[@]} -eq 0 ] && want=(http grpc)
for w in "${want[@]}"; do
	case "$w" in
	http) run_http ;;
	grpc) run_grpc ;;
	*) die "unknown part $w (http, grpc)" ;;
	esac
done
