#!/usr/bin/env bash
# Where a server's CPU goes under the ingest load, thread by thread: one
# `kiln serve` on a new data directory, a WARMUP (5) s wrk run, then a
# measured one of DURATION (15) s per connection count in CONNS ("64"),
# each with bench/upload.lua and go-cpu-fib.pb.gz. Prints, per run:
# uploads/s, wrk's p50 and p99, each thread name's CPU % (utime + stime
# from /proc/PID/task/*/stat; 100 % = one core), the server's CPU per
# upload, the machine's split from /proc/stat (user, system, idle,
# iowait, softirq, steal; 200 % = both cores), the group commits (mean,
# p50, p99: kiln_store_commit_seconds), and the p50 and p99 of the store's
# ack time (kiln_store_ack_seconds: from the write queue to the durable
# ack, the part of a push's latency the group commit decides).
# Not part of run.sh: for comparing builds (KILN_BIN), alternated.
#
#   CONNS="8 64" DURATION=15 KILN_BIN=/path/to/kiln bash bench/threads.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"
command -v wrk >/dev/null || die "wrk missing: bench/run.sh installs it (apt-get install wrk)"

CONNS=${CONNS:-64}
THREADS=${THREADS:-1}
DURATION=${DURATION:-15}
WARMUP=${WARMUP:-5}
FILE=$TESTDATA/go-cpu-fib.pb.gz

data=$TMPD/threads-data
rm -rf "$data"
start_server "$data" "$TMPD/threads.log"
base=$(($(date +%s) / 3600 * 3600 - 7200))
wrk -t1 -c"${CONNS##* }" -d"${WARMUP}s" -s "$BENCH_DIR/upload.lua" "http://127.0.0.1:$UPLOAD_PORT" \
	-- "$FILE" threads-warm "$base" $((base + 10)) >/dev/null
i=1
for conns in $CONNS; do
	wait_quiet
	w=$((base + 600 * i))
	thread_ticks "$SERVER_PID" >"$TMPD/threads-t0"
	head -1 /proc/stat >"$TMPD/threads-s0"
	read -r cc0 cs0 < <(commit_stats)
	hist_buckets kiln_store_ack_seconds >"$TMPD/threads-a0"
	hist_buckets kiln_store_commit_seconds >"$TMPD/threads-g0"
	wrk -t"$THREADS" -c"$conns" -d"${DURATION}s" --latency -s "$BENCH_DIR/upload.lua" "http://127.0.0.1:$UPLOAD_PORT" \
		-- "$FILE" "threads-c$conns" "$w" $((w + 10)) >"$TMPD/threads-wrk-c$conns.txt"
	thread_ticks "$SERVER_PID" >"$TMPD/threads-t1"
	head -1 /proc/stat >"$TMPD/threads-s1"
	read -r cc1 cs1 < <(commit_stats)
	hist_buckets kiln_store_ack_seconds >"$TMPD/threads-a1"
	hist_buckets kiln_store_commit_seconds >"$TMPD/threads-g1"
	out=$TMPD/threads-wrk-c$conns.txt
	kv() { wrk_kv "$out" "$1"; }
	ok=$(($(kv requests) - $(kv non2xx)))
	secs=$(calc "$(kv duration_us) / 1e6")
	tck=$(clk_tck)
	echo "== c=$conns: $(calc "$ok / $secs") uploads/s, p50 $(calc "$(kv p50_us) / 1000") ms, p99 $(calc "$(kv p99_us) / 1000") ms"
	join "$TMPD/threads-t0" "$TMPD/threads-t1" |
		awk -v s="$secs" -v t="$tck" -v n="$ok" '{c = 100 * ($3 - $2) / t / s; tot += c; printf "  %-12s %5.1f %%\n", $1, c}
			END {printf "  %-12s %5.1f %%  = %.1f µs per upload\n", "server", tot, tot / 100 * s / n * 1e6}'
	paste "$TMPD/threads-s0" "$TMPD/threads-s1" | awk -v n="$(nproc)" '{
		h = "- user nice system idle iowait irq softirq steal"; split(h, name, " ")
		k = NF / 2; for (i = 2; i <= 9; i++) { d[i] = $(i + k) - $i; tot += d[i] }
		printf "  machine:"; for (i = 2; i <= 9; i++) if (i != 3 && i != 7) printf " %s %.0f %%", name[i], 100 * n * d[i] / tot
		printf "\n" }'
	if [ $((cc1 - cc0)) -gt 0 ]; then
		mean=$(calc "1000 * ($cs1 - $cs0) / ($cc1 - $cc0)")
		read -r g50 g99 < <(hist_quantiles "$TMPD/threads-g0" "$TMPD/threads-g1")
		echo "  group commits: $((cc1 - cc0)), $(calc "$ok / ($cc1 - $cc0)") uploads each, mean $mean ms, p50 $g50, p99 $g99"
		read -r a50 a99 < <(hist_quantiles "$TMPD/threads-a0" "$TMPD/threads-a1")
		echo "  store ack (queued to durable): p50 $a50 ms, p99 $a99 ms = $(calc "$a99 / $mean") mean group commits"
	fi
	i=$((i + 1))
done
stop_server || log "WARNING: kiln serve exited non-zero on SIGTERM"
