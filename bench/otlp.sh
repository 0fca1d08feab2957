#!/usr/bin/env bash
# OTLP ingest with durability on: the eBPF profiler fixture
# (tests/data/otlp/ebpf-profiler-v1.10.pb, 82 profiles, 5,321 sample
# points per request), its timestamps first moved to a minute ago
# (build/bench/otlp_rebase: recorded weeks ago, it lies outside the time
# window), sent over OTLP/gRPC by h2load (one gRPC frame per request) and over
# OTLP/HTTP by wrk, with concurrent clients. Also the decoder alone
# (build/bench/otlp_decode: MB/s of uncompressed OTLP on one core).
#
#   bench/otlp.sh [decode] [grpc] [http]      (default: all three)
# Environment: DURATION (20), WARMUP (3), HTTP_CONNS ("8 32": wrk connections),
#   GRPC_STREAMS ("8 32": concurrent streams = h2load -c STREAMS/4 -m 4),
#   SERVER_ENV (e.g. "MALLOC_TRIM_THRESHOLD_=16777216": environment of kiln serve).
# Every run gets a fresh server and data dir; afterwards the sum of the flame
# graph totals of every (service, type) ÷ that of one request must equal the
# number of requests answered (h2load cannot see grpc-status, so this is also
# what tells that gRPC answers were successes).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_bins otlp_rebase otlp_decode
OTLP_FIXTURE=${KILN_OTLP_FIXTURE:-$(dirname "$TESTDATA")/otlp/ebpf-profiler-v1.10.pb}
[ -f "$OTLP_FIXTURE" ] || die "$OTLP_FIXTURE missing"

DURATION=${DURATION:-20}
WARMUP=${WARMUP:-3}
HTTP_CONNS=${HTTP_CONNS:-"8 32"}
GRPC_STREAMS=${GRPC_STREAMS:-"8 32"}
POINTS=5321 # sample points one request stores (otlp_decode's "samples")
TARGET=1000000
GRPC_PATH=/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export
REQ=$TMPD/otlp-req.pb
REQ_GRPC=$TMPD/otlp-req.grpc

# Like start_server, with both OTLP listeners on (a fresh data dir each time).
start_otlp_server() {
	rm -rf "$1"
	start_kiln "$BENCH_CONFIG" "$1" "$2" ui otlp_http otlp_grpc
}

# store_total FROM UNTIL: the sum of the flame graph totals of every service
# and type Kiln lists in the window.
store_total() {
	node -e '
		const [port, from, until] = process.argv.slice(1);
		const q = (p) => fetch(`http://127.0.0.1:${port}${p}`).then((r) => {
			if (!r.ok) throw new Error(`${p}: ${r.status}`);
			return r.json();
		});
		(async () => {
			let total = 0n;
			const s = await q(`/api/services?from=${from}&until=${until}`);
			for (const svc of s.services)
				for (const t of svc.types) {
					const f = await q(`/api/flamegraph?service=${encodeURIComponent(svc.name)}` +
						`&type=${encodeURIComponent(t)}&from=${from}&until=${until}`);
					total += BigInt(f.total);
				}
			process.stdout.write(total.toString());
		})().catch((e) => { console.error(e.message); process.exit(1); });' "$UI_PORT" "$1" "$2"
}

# The fixture with its timestamps a minute ago, as a protobuf body and as one
# gRPC frame.
prepare() {
	"$BENCH_BIN/otlp_rebase" "$OTLP_FIXTURE" "$REQ" 60 "$REQ_GRPC" >"$TMPD/otlp-rebase.json"
	log "otlp: $(cat "$TMPD/otlp-rebase.json")"
}

# One request over HTTP into a fresh server: the store total of one request.
PER_REQ=
calibrate() {
	start_otlp_server "$TMPD/otlp-cal-data" "$TMPD/otlp-cal.log"
	curl -sf -H 'Content-Type: application/x-protobuf' --data-binary @"$REQ" \
		"http://127.0.0.1:$OTLP_HTTP_PORT/v1development/profiles" -o /dev/null || die "calibration request failed"
	local now
	now=$(date +%s)
	PER_REQ=$(store_total $((now - 3600)) $((now + 600)))
	stop_server || true
	log "otlp: one request stores a flame graph total of $PER_REQ (all services and types)"
}

# verify NAME OK CONC: stored requests (store total / one request's) against
# the answered ones (warm-up and run); up to CONC more per run are requests
# the client abandoned at its end that the server still stored.
verify() {
	local name=$1 ok=$2 conc=$3 now total stored verified=yes
	sleep 1
	now=$(date +%s)
	total=$(store_total $((now - 3600)) $((now + 600)))
	stored=$(calc "$total / $PER_REQ")
	awk -v s="$stored" -v ok="$ok" -v c="$conc" 'BEGIN { exit !(s >= ok && s <= ok + 2 * c) }' || verified=NO
	log "otlp $name: $ok answered, $stored stored (total $total / $PER_REQ per request): $verified"
	result otlp "$name stored = answered" "$stored / $ok" "equal" "$verified" "sum of flame graph totals / one request's"
}

# report NAME RPS P99_MS CPU HWM_KIB CMD (and CH_CPU: ClickHouse's CPU %, when this script started it)
report() {
	local name=$1 rps=$2 p99=$3 cpu=$4 hwm=$5 cmd=$6 sps status
	sps=$(calc "$rps * $POINTS")
	status=$(awk -v r="$sps" -v t="$TARGET" 'BEGIN { if (r >= t) print "met"; else printf "MISSED by %.0f%%", 100 * (t - r) / t }')
	result otlp "$name requests/s" "$rps" "-" "-" "$cmd"
	result otlp "$name samples/s" "$sps" ">= $TARGET" "$status" "$cmd"
	result otlp "$name p99 ms" "$p99" "-" "-" "$cmd"
	result otlp "$name server CPU % (of $(($(nproc) * 100)))" "$cpu" "-" "-" "$cmd"
	[ -z "$CH_PID" ] || result otlp "$name clickhouse CPU % (of $(($(nproc) * 100)))" "$CH_CPU" "-" "-" "/proc/CH_PID/stat over the run"
	result otlp "$name peak RSS MiB (VmHWM)" "$(calc "$hwm / 1024")" "-" "-" "/proc/PID/status after the run"
}

run_http() {
	local conns=$1
	local name="http c=$conns"
	local cmd="wrk -t1 -c$conns -d${DURATION}s --latency -s bench/otlp_http.lua http://127.0.0.1:OTLP_HTTP -- otlp-req.pb"
	start_otlp_server "$TMPD/otlp-http-data" "$TMPD/otlp-http.log"
	wrk -t1 -c"$conns" -d"${WARMUP}s" -s "$BENCH_DIR/otlp_http.lua" "http://127.0.0.1:$OTLP_HTTP_PORT" -- "$REQ" \
		>"$TMPD/otlp-http-c$conns-warm.txt"
	local warm_ok
	warm_ok=$(($(wrk_kv "$TMPD/otlp-http-c$conns-warm.txt" requests) - $(wrk_kv "$TMPD/otlp-http-c$conns-warm.txt" non2xx)))
	log "otlp $name: $cmd"
	wait_quiet
	local tk0 tk1 t0 t1 ck0
	tk0=$(cpu_ticks "$SERVER_PID") ck0=$(ch_ticks)
	t0=$(now_s)
	wrk -t1 -c"$conns" -d"${DURATION}s" --latency -s "$BENCH_DIR/otlp_http.lua" "http://127.0.0.1:$OTLP_HTTP_PORT" \
		-- "$REQ" >"$TMPD/otlp-http-c$conns.txt"
	t1=$(now_s)
	tk1=$(cpu_ticks "$SERVER_PID")
	CH_CPU=$(calc "100 * ($(ch_ticks) - $ck0) / $(clk_tck) / ($t1 - $t0)")
	cat "$TMPD/otlp-http-c$conns.txt" >&2
	local wrk_out
	wrk_out="$TMPD/otlp-http-c$conns.txt"
	local requests non2xx ok rps
	requests=$(wrk_kv "$wrk_out" requests)
	non2xx=$(wrk_kv "$wrk_out" non2xx)
	ok=$((requests - non2xx))
	rps=$(calc "$ok / ($(wrk_kv "$wrk_out" duration_us) / 1e6)")
	report "$name" "$rps" "$(calc "$(wrk_kv "$wrk_out" p99_us) / 1000")" "$(calc "100 * ($tk1 - $tk0) / $(clk_tck) / ($t1 - $t0)")" \
		"$(status_kib "$SERVER_PID" VmHWM)" "$cmd"
	[ "$non2xx" = 0 ] || log "WARNING: $non2xx non-2xx answers"
	verify "$name" $((ok + warm_ok)) "$1"
	stop_server || log "WARNING: kiln serve exited non-zero on SIGTERM"
}

run_grpc() {
	local streams=$1 c m=4 name
	c=$((streams / 4))
	[ "$c" -ge 1 ] || c=1
	name="grpc ${c}x${m} streams"
	local hdr=(-H 'content-type: application/grpc' -H 'te: trailers')
	local cmd="h2load -c$c -m$m -D$DURATION -d otlp-req.grpc -H 'content-type: application/grpc' -H 'te: trailers' http://127.0.0.1:OTLP_GRPC$GRPC_PATH"
	start_otlp_server "$TMPD/otlp-grpc-data" "$TMPD/otlp-grpc.log"
	h2load -c"$c" -m"$m" -D"$WARMUP" -d "$REQ_GRPC" "${hdr[@]}" "http://127.0.0.1:$OTLP_GRPC_PORT$GRPC_PATH" \
		>"$TMPD/otlp-grpc-s$streams-warm.txt"
	local warm_ok
	warm_ok=$(sed -n 's/.* \([0-9]*\) 2xx,.*/\1/p' "$TMPD/otlp-grpc-s$streams-warm.txt")
	log "otlp $name: $cmd"
	wait_quiet
	local tk0 tk1 t0 t1 ck0 lf=$TMPD/otlp-grpc-s$streams.log
	rm -f "$lf"
	tk0=$(cpu_ticks "$SERVER_PID") ck0=$(ch_ticks)
	t0=$(now_s)
	h2load -c"$c" -m"$m" -D"$DURATION" -d "$REQ_GRPC" "${hdr[@]}" --log-file="$lf" \
		"http://127.0.0.1:$OTLP_GRPC_PORT$GRPC_PATH" >"$TMPD/otlp-grpc-s$streams.txt"
	t1=$(now_s)
	tk1=$(cpu_ticks "$SERVER_PID")
	CH_CPU=$(calc "100 * ($(ch_ticks) - $ck0) / $(clk_tck) / ($t1 - $t0)")
	cat "$TMPD/otlp-grpc-s$streams.txt" >&2
	local ok secs rps p99
	ok=$(sed -n 's/.* \([0-9]*\) 2xx,.*/\1/p' "$TMPD/otlp-grpc-s$streams.txt")
	secs=$(sed -n 's/^finished in \([0-9.]*\)s,.*/\1/p' "$TMPD/otlp-grpc-s$streams.txt")
	rps=$(calc "$ok / $secs")
	# --log-file: start (µs), status, duration (µs) per request.
	p99=$(awk '$2 == 200 {print $3}' "$lf" | sort -n | awk '{v[NR] = $1} END {i = int(NR * 0.99); if (i < 1) i = 1; printf "%.1f", v[i] / 1000}')
	report "$name" "$rps" "$p99" "$(calc "100 * ($tk1 - $tk0) / $(clk_tck) / ($t1 - $t0)")" \
		"$(status_kib "$SERVER_PID" VmHWM)" "$cmd"
	verify "$name" $((ok + warm_ok)) "$streams"
	stop_server || log "WARNING: kiln serve exited non-zero on SIGTERM"
}

run_decode() {
	wait_quiet
	"$BENCH_BIN/otlp_decode" "$OTLP_FIXTURE" 3 >"$TMPD/otlp-decode.json"
	local mbs
	mbs=$(json_get "$TMPD/otlp-decode.json" 'j.mb_per_s')
	result otlp "decode MB/s per core (uncompressed)" "$mbs" ">= 300" \
		"$(awk -v r="$mbs" 'BEGIN { if (r >= 300) print "met"; else printf "MISSED by %.0f%%", 100 * (300 - r) / 300 }')" \
		"build/bench/otlp_decode ebpf-profiler-v1.10.pb 3"
	result otlp "decode minor faults / request" "$(json_get "$TMPD/otlp-decode.json" 'j.minflt_per_iter')" "-" "-" \
		"build/bench/otlp_decode (getrusage)"
}

what=("$@")
[ ${#what[@]} -gt 0 ] || what=(decode grpc http)
for w in "${what[@]}"; do
	case $w in
	decode) run_decode ;;
	grpc | http)
		[ -n "$PER_REQ" ] || { prepare; calibrate; }
		if [ "$w" = grpc ]; then
			command -v h2load >/dev/null || die "h2load missing (apt-get install nghttp2-client)"
			for s in $GRPC_STREAMS; do run_grpc "$s"; done
		else
			command -v wrk >/dev/null || die "wrk missing"
			for c in $HTTP_CONNS; do run_http "$c"; done
		fi
		;;
	*) die "unknown: $w (decode|grpc|http)" ;;
	esac
done
