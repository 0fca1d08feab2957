#!/usr/bin/env bash
# Ingest throughput through HTTP with durability on: wrk POSTs one real pprof
# file per request over several keep-alive connections, after a warm-up.
# Afterwards the flame graph total over the run's time window, divided by the
# total of one calibration upload, tells how many uploads were really stored.
#
#   bench/ingest.sh [cpu|heap|fresh ...]       (default: cpu heap)
#     fresh: the cpu file into a new data directory with no warm-up, as a
#     new install sees it (the log's first segments are still being made);
#     reports the longest latency and the longest group commit too.
# Environment: CONNS (one measured run per value; default "8 32 64" for cpu,
#              "8 32" for heap, "8" for fresh), THREADS (1), DURATION (20), WARMUP (5),
#              PERF=1 also records `perf record -g` of the server under the
#              same load for 10 s after the measured run (report in $TMPD).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_bins pprof_total decode commit
command -v wrk >/dev/null || die "wrk missing: bench/run.sh installs it (apt-get install wrk)"

THREADS=${THREADS:-1}
DURATION=${DURATION:-20}
WARMUP=${WARMUP:-5}
LUA=$BENCH_DIR/upload.lua

# measure NAME FILE TYPE TARGET CONNS WINDOW PER_UPLOAD: one measured wrk run.
measure() {
	local name=$1 file=$2 type=$3 target=$4 conns=$5 w_run=$6 per_upload=$7
	local cmd="wrk -t$THREADS -c$conns -d${DURATION}s --latency -s bench/upload.lua http://127.0.0.1:PORT -- $(basename "$file") bench-$name-c$conns FROM UNTIL"
	log "ingest $name: $cmd"
	local tk0 tk1 t0 t1 mb0 mt0 mb1 mt1 ck0 ck1 since cc0 cs0 cc1 cs1
	wait_quiet
	since=$(date +%s)
	read -r cc0 cs0 < <(commit_stats)
	read -r mb0 mt0 < <(proc_stat)
	tk0=$(cpu_ticks "$SERVER_PID") ck0=$(ch_ticks)
	t0=$(now_s)
	wrk -t"$THREADS" -c"$conns" -d"${DURATION}s" --latency -s "$LUA" "http://127.0.0.1:$UPLOAD_PORT" \
		-- "$file" "bench-$name-c$conns" "$w_run" $((w_run + 10)) >"$TMPD/ingest-$name-c$conns-wrk.txt"
	t1=$(now_s)
	tk1=$(cpu_ticks "$SERVER_PID") ck1=$(ch_ticks)
	read -r mb1 mt1 < <(proc_stat)
	read -r cc1 cs1 < <(commit_stats)
	cat "$TMPD/ingest-$name-c$conns-wrk.txt" >&2
	ch_log_report "$since" "$TMPD/ch-log-ingest-$name-c$conns.txt"
	local wrk_out
	wrk_out="$TMPD/ingest-$name-c$conns-wrk.txt"
	local requests non2xx dur_us p50 p99 rps cpu
	requests=$(wrk_kv "$wrk_out" requests) non2xx=$(wrk_kv "$wrk_out" non2xx) dur_us=$(wrk_kv "$wrk_out" duration_us)
	p50=$(calc "$(wrk_kv "$wrk_out" p50_us) / 1000") p99=$(calc "$(wrk_kv "$wrk_out" p99_us) / 1000")
	rps=$(calc "($requests - $non2xx) / ($dur_us / 1e6)")
	cpu=$(calc "100 * ($tk1 - $tk0) / $(clk_tck) / ($t1 - $t0)")

	sleep 1 # uploads wrk gave up on at the end are still answered by the server
	local stored_total stored
	stored_total=$(flame_total "bench-$name-c$conns" "$type" $((w_run - 30)) $((w_run + 40)))
	stored=$(calc "$stored_total / $per_upload")
	local ok=$((requests - non2xx))
	log "ingest $name: $ok answered 200 (non-2xx $non2xx), $stored stored (flame graph total $stored_total / $per_upload per upload)"
	local verified=yes
	awk -v s="$stored" -v ok="$ok" -v c="$conns" 'BEGIN { exit !(s >= ok && s <= ok + c) }' || verified=NO

	local status
	status=$(awk -v r="$rps" -v t="$target" 'BEGIN { if (r >= t) print "met"; else printf "MISSED by %.0f%%", 100 * (t - r) / t }')
	result ingest "$name uploads/s (c=$conns)" "$rps" ">= $target" "$status" "$cmd"
	result ingest "$name c=$conns p50 / p99 ms" "$p50 / $p99" "-" "-" "$cmd"
	result ingest "$name c=$conns server CPU % (of 200)" "$cpu" "-" "-" "$cmd"
	[ -z "$CH_PID" ] || result ingest "$name c=$conns clickhouse CPU % (of 200)" \
		"$(calc "100 * ($ck1 - $ck0) / $(clk_tck) / ($t1 - $t0)")" "-" "-" "/proc/CH_PID/stat over the run"
	# CPU per upload (kiln + ClickHouse): what the load costs, whatever else
	# the shared machine runs; and the writer's group commits: how many
	# uploads each carried and how long each took (window included).
	result ingest "$name c=$conns CPU ms/upload kiln + clickhouse" \
		"$(calc "10 * $cpu / $rps") + $(calc "1000 * ($ck1 - $ck0) / $(clk_tck) / ($t1 - $t0) / $rps")" "-" "-" "server (and clickhouse) CPU % / uploads/s"
	local ncommit=$((cc1 - cc0))
	[ "$ncommit" -gt 0 ] && result ingest "$name c=$conns commits: uploads each / mean ms" \
		"$(calc "($requests - $non2xx) / $ncommit") / $(calc "1000 * ($cs1 - $cs0) / $ncommit")" "-" "-" "kiln_store_commit_seconds on /metrics over the run"
	result ingest "$name c=$conns machine CPU % (all)" "$(busy_pct "$mb0" "$mt0" "$mb1" "$mt1")" "-" "-" "/proc/stat over the run: server + wrk + anything else"
	result ingest "$name c=$conns stored = answered 200" "$stored / $ok" "equal" "$verified" "flame graph total / per-upload total"
	if [ "$name" = fresh ]; then
		result ingest "fresh c=$conns max latency ms" "$(calc "$(wrk_kv "$wrk_out" max_us) / 1000")" "-" "-" "$cmd"
		result ingest "fresh c=$conns longest group commit ms (since start)" \
			"$(calc "1000 * $(commit_max)")" "-" "-" "kiln_store_commit_seconds_max on /metrics"
	fi
	if [ "$name" = heap ]; then
		result ingest "heap c=$conns values/s (4 types)" "$(calc "$rps * 4942 * 4")" ">= 4e6" \
			"$(awk -v r="$rps" 'BEGIN { print (r * 4942 * 4 >= 4e6) ? "met" : "MISSED" }')" "$cmd"
	fi

}

# The fresh case: server on a new directory, measured at once (no decode or
# store-only runs, no warm-up).
run_fresh() {
	local file=$1 type=$2 target=$3
	local data=$TMPD/ingest-fresh-data logf=$TMPD/ingest-fresh.log
	rm -rf "$data"
	start_server "$data" "$logf"
	log "ingest fresh: server pid $SERVER_PID on a new directory, upload :$UPLOAD_PORT"
	local w_run=$(($(date +%s) / 3600 * 3600 - 7200))
	curl -sf --data-binary @"$file" "http://127.0.0.1:$UPLOAD_PORT/profiling/upload?serviceName=cal-fresh&from=$w_run&until=$((w_run + 10))" >/dev/null ||
		die "calibration upload failed"
	local per_upload
	per_upload=$(flame_total cal-fresh "$type" $((w_run - 30)) $((w_run + 40)))
	local conns i=1
	for conns in $CONNS; do
		measure fresh "$file" "$type" "$target" "$conns" $((w_run + 600 * i)) "$per_upload"
		i=$((i + 1))
	done
	stop_server || log "WARNING: kiln serve exited non-zero on SIGTERM"
}

run_case() {
	local name=$1 file type target
	case $name in
	cpu | fresh) file=$TESTDATA/go-cpu-fib.pb.gz type=cpu:nanoseconds target=5000 ;;
	heap) file=$TESTDATA/go-heap-delta.pb.gz type=alloc_space:bytes target=200 ;;
	*) die "unknown case $name (cpu|heap|fresh)" ;;
	esac
	local CONNS=${CONNS:-}
	[ -n "$CONNS" ] || case $name in cpu) CONNS="8 32 64" ;; fresh) CONNS=8 ;; *) CONNS="8 32" ;; esac
	[ "$name" != fresh ] || { run_fresh "$file" "$type" "$target"; return; }
	# The worker's CPU per upload (gunzip + decode, one thread, no network, no
	# store): the ceiling the 2-core worker pool puts on this case.
	wait_quiet
	"$BENCH_BIN/decode" "$file" 3 >"$TMPD/ingest-$name-decode.json"
	local dec_us
	dec_us=$(json_get "$TMPD/ingest-$name-decode.json" 'j.total_us')
	result ingest "$name worker CPU/upload µs" "$dec_us" "-" "-" "build/bench/decode $(basename "$file") 3"
	result ingest "$name decode ceiling $(nproc) cores /s" "$(calc "$(nproc) * 1e6 / $dec_us")" ">= $target" \
		"$(awk -v c="$(calc "$(nproc) * 1e6 / $dec_us")" -v t="$target" 'BEGIN { print (c >= t) ? "-" : "below target" }')" \
		"nproc x 1e6 / (gz_inflate + pprof_decode µs)"

	# Group commit without HTTP (build/bench/commit): 8 threads decode and
	# store_write_sync in a loop, with no window (the writer's default) and
	# with the 2 ms window it had before issue 15; with ClickHouse once (no
	# window), into database kb_commit.
	if [ "$name" = cpu ] && [ "$ENGINE" = clickhouse ]; then
		ensure_clickhouse
		ch_query "DROP DATABASE IF EXISTS kb_commit" >/dev/null
		wait_quiet
		local out b0 t0 b1 t1 ck0 ck1
		read -r b0 t0 < <(proc_stat)
		ck0=$(ch_ticks)
		out=$("$BENCH_BIN/commit" "$file" 8 8 0 "$CH_URL/kb_commit")
		ck1=$(ch_ticks)
		read -r b1 t1 < <(proc_stat)
		result ingest "cpu store only, 8 thr (clickhouse)" \
			"$(json_get - 'j.per_s' <<<"$out")/s, $(json_get - 'j.mean_ms' <<<"$out") ms" "-" \
			"machine $(printf '%.0f' "$(busy_pct "$b0" "$t0" "$b1" "$t1")")%, clickhouse $(calc "100 * ($ck1 - $ck0) / $(clk_tck) / 8")%" \
			"build/bench/commit $(basename "$file") 8 8 0 $CH_URL/kb_commit"
	elif [ "$name" = cpu ]; then
		local w out b0 t0 b1 t1
		for w in 2 -1; do
			wait_quiet
			rm -rf "$TMPD/commit-data"
			read -r b0 t0 < <(proc_stat)
			out=$("$BENCH_BIN/commit" "$file" 8 8 "$w" "$TMPD/commit-data")
			read -r b1 t1 < <(proc_stat)
			result ingest "cpu store only, 8 thr, window $([ "$w" = 2 ] && echo "2 ms" || echo none)" \
				"$(json_get - 'j.per_s' <<<"$out")/s, $(json_get - 'j.mean_ms' <<<"$out") ms" "-" \
				"machine $(printf '%.0f' "$(busy_pct "$b0" "$t0" "$b1" "$t1")")%" "build/bench/commit $(basename "$file") 8 8 $w DIR"
		done
		rm -rf "$TMPD/commit-data"
	fi

	local data=$TMPD/ingest-$name-data logf=$TMPD/ingest-$name.log
	rm -rf "$data"
	start_server "$data" "$logf"
	log "ingest $name: server pid $SERVER_PID upload :$UPLOAD_PORT ui :$UI_PORT, $(basename "$file") ($(stat -c %s "$file") bytes)"

	# Windows (two hours ago): calibration, warm-up, then one per measured run.
	local base=$(($(date +%s) / 3600 * 3600 - 7200))
	local w_cal=$base w_warm=$((base + 300)) w_run=$((base + 900))

	curl -sf --data-binary @"$file" "http://127.0.0.1:$UPLOAD_PORT/profiling/upload?serviceName=cal-$name&from=$w_cal&until=$((w_cal + 10))" >/dev/null ||
		die "calibration upload failed"
	local per_upload expected
	per_upload=$(flame_total "cal-$name" "$type" $((w_cal - 30)) $((w_cal + 40)))
	expected=$("$BENCH_BIN/pprof_total" "$file" | awk -v t="$type" '$1 == t {print $2}')
	[ "$per_upload" = "$expected" ] || log "WARNING: one upload shows total $per_upload in Kiln, the file holds $expected"

	log "ingest $name: warm-up ${WARMUP}s"
	wrk -t"$THREADS" -c"${CONNS##* }" -d"${WARMUP}s" -s "$LUA" "http://127.0.0.1:$UPLOAD_PORT" \
		-- "$file" "warm-$name" "$w_warm" $((w_warm + 10)) >"$TMPD/ingest-$name-warm.txt"

	local conns i=0
	for conns in $CONNS; do
		measure "$name" "$file" "$type" "$target" "$conns" $((w_run + 600 * i)) "$per_upload"
		i=$((i + 1))
	done

	if [ "${PERF:-0}" = 1 ] && command -v perf >/dev/null; then
		log "ingest $name: perf record -g of the server under the same load (10 s)"
		wrk -t"$THREADS" -c"${CONNS##* }" -d12s -s "$LUA" "http://127.0.0.1:$UPLOAD_PORT" \
			-- "$file" "perf-$name" "$w_warm" $((w_warm + 10)) >/dev/null &
		local wrk_pid=$!
		sleep 1
		perf record -e cpu-clock -F 999 -g -p "$SERVER_PID" -o "$TMPD/perf-ingest-$name.data" -- sleep 10 2>/dev/null >/dev/null || true
		wait $wrk_pid || true
		perf report -i "$TMPD/perf-ingest-$name.data" --no-children -g none --percent-limit 0.5 --sort dso,symbol --stdio 2>/dev/null |
			grep -v '^#' | grep '%' | head -40 >"$TMPD/perf-ingest-$name.txt" || true
		perf report -i "$TMPD/perf-ingest-$name.data" --no-children -g none --sort dso --stdio 2>/dev/null |
			grep -v '^#' | grep '%' | head -15 >"$TMPD/perf-ingest-$name-dso.txt" || true
		log "perf: $TMPD/perf-ingest-$name.txt"
	fi
	stop_server || log "WARNING: kiln serve exited non-zero on SIGTERM"
}

cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(cpu heap)
for c in "${cases[@]}"; do run_case "$c"; done
