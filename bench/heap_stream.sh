#!/usr/bin/env bash
# Heap stream: bytes on disk of a real Go program's heap profiles pushed once
# a second (issue 15: the storage figure for the engine's next version,
# docs/STORE.md "Next version of the embedded engine", 4).
#
#   bench/heap_stream.sh
# bench/go/pprofserve runs with -churn (an allocation-heavy workload whose
# heap profile changes over time); its live net/http/pprof
# /debug/pprof/heap is fetched once a second N times (gzipped bodies kept
# in $TMPD/heap-stream/), and each body is pushed at once to a fresh kiln
# (embedded engine unless KILN_BENCH_ENGINE=clickhouse) through
# POST /profiling/upload with from = the profile's own time_nanos (seconds).
# After a clean stop (SIGTERM: the store checkpoints its WAL) it reports the
# sum of the gzipped bytes, the bytes of the project's day file(s) with their
# -wal, the ratio, and `dbstat` per b-tree of each day file.
# Check: Kiln's alloc_objects and alloc_space flame graph totals over the
# stream equal the sums of the fetched files' totals (build/bench/pprof_total).
# Environment: N (600), CHURN (4 workload goroutines), WAVE (120s: period of
# its retained-set wave), PORT (0: ephemeral; pprofserve's control port),
# SHIFT (86400: each profile is pushed this many seconds before its own
# time, so its hour has ended and the store seals it into a block before
# the bytes are counted, as a day's hours are once they end; 0 pushes it
# at its own time, and the hours of the run are not sealed yet).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_bins pprof_total
command -v go >/dev/null || die "go missing (scripts/deps.sh installs golang)"
command -v sqlite3 >/dev/null || [ "$ENGINE" != local ] || die "sqlite3 missing (apt-get install sqlite3)"

N=${N:-600}
CHURN=${CHURN:-4}
WAVE=${WAVE:-120s}
SHIFT=${SHIFT:-86400}
SVC=heap-stream
OUT=$TMPD/heap-stream
rm -rf "$OUT"
mkdir -p "$OUT"

cleanup() {
	cleanup_server
	[ -z "$PS_PID" ] || { kill "$PS_PID" 2>/dev/null && wait "$PS_PID" 2>/dev/null || true; }
}
trap cleanup EXIT

# pprof_time_s FILE: the profile's time_nanos (field 9 of Profile) in unix seconds.
pprof_time_s() {
	node -e '
		const b = require("zlib").gunzipSync(require("fs").readFileSync(process.argv[1]));
		let i = 0;
		const varint = () => { let v = 0n, s = 0n; for (;;) { const c = b[i++]; v |= BigInt(c & 127) << s; s += 7n; if (c < 128) return v; } };
		while (i < b.length) {
			const key = Number(varint()), f = key >> 3, w = key & 7;
			if (w === 0) { const v = varint(); if (f === 9) { process.stdout.write(String(v / 1000000000n)); process.exit(0); } }
			else if (w === 2) { const n = Number(varint()); i += n; }
			else if (w === 1) i += 8;
			else if (w === 5) i += 4;
			else throw new Error("wire type " + w);
		}
		throw new Error("no time_nanos");' "$1"
}

# 1. The Go program (no pod listeners; its control listener serves net/http/pprof).
start_pprofserve "$OUT/pprofserve.out" "$OUT/pprofserve.log" \
	-n 0 -control-port "${PORT:-0}" -churn "$CHURN" -wave "$WAVE" -cpu-capture 0
CTL=$PS_CTL

# 2. A fresh kiln.
data=$TMPD/heap-stream-data
rm -rf "$data"
start_server "$data" "$TMPD/heap-stream.log"
log "heap stream: pprofserve pid $PS_PID (control :$CTL, churn $CHURN), kiln pid $SERVER_PID; $N fetches, one a second; load: $(uptime)"

# 3. Fetch once a second (on a fixed schedule), push each at once.
gz_sum=0 first_s= last_s= late=0
tick0=$(date +%s.%N)
for i in $(seq 0 $((N - 1))); do
	f=$(printf '%s/h%04d.pb.gz' "$OUT" "$i")
	curl -sf -o "$f" "http://127.0.0.1:$CTL/debug/pprof/heap" || die "fetch $i failed"
	t=$(pprof_time_s "$f")
	[ -n "$first_s" ] || first_s=$t
	last_s=$t
	gz_sum=$((gz_sum + $(stat -c %s "$f")))
	code=$(curl -s -o "$OUT/push.out" -w '%{http_code}' --data-binary "@$f" \
		"http://127.0.0.1:$UPLOAD_PORT/profiling/upload?serviceName=$SVC&from=$((t - SHIFT))")
	[ "$code" = 200 ] || { cat "$OUT/push.out" >&2; die "push $i answered $code"; }
	wait_s=$(calc "$tick0 + $i + 1 - $(date +%s.%N)")
	if awk -v w="$wait_s" 'BEGIN { exit !(w > 0) }'; then
		sleep "$wait_s"
	elif awk -v w="$wait_s" 'BEGIN { exit !(w < -0.5) }'; then
		late=$((late + 1)) # the next fetch starts over half a second late
	fi
done
log "heap stream: $N profiles fetched and pushed in $(calc "$(date +%s.%N) - $tick0") s ($late fetches over 0.5 s late), time_nanos $first_s .. $last_s; load: $(uptime)"

# 4. The stored totals against the files' own (window types: summed), read
# from the blocks once the hours are sealed.
[ "$ENGINE" != local ] || [ "$SHIFT" = 0 ] || wait_sealed "$((N * $(types_of "$OUT/h0000.pb.gz")))"
for ty in alloc_objects:count alloc_space:bytes; do
	want=$(for f in "$OUT"/h*.pb.gz; do "$BENCH_BIN/pprof_total" "$f"; done | awk -v t="$ty" '$1 == t { s += $2 } END { printf "%.0f", s }')
	got=$(flame_total "$SVC" "$ty" "$((first_s - SHIFT))" "$((last_s + 1 - SHIFT))")
	result heap "$ty total kiln / files" "$got / $want" "equal" "$([ "$got" = "$want" ] && echo yes || echo NO)" \
		"/api/flamegraph total vs sum of pprof_total over the $N files"
done
stop_server || log "WARNING: kiln serve exited non-zero on SIGTERM"

# 5. Bytes on disk after the clean stop.
gz_avg=$(calc "$gz_sum / $N")
if [ "$ENGINE" = clickhouse ]; then
	ch_optimize
	disk=$(ch_bytes)
	what="sum(bytes_on_disk) of $CH_DB's active parts after OPTIMIZE FINAL"
	ch_query "SELECT table, sum(rows), sum(bytes_on_disk) FROM system.parts WHERE database = '$CH_DB' AND active GROUP BY table ORDER BY 3 DESC FORMAT PrettyCompactMonoBlock" >&2
else
	mapfile -t days < <(find "$data" -mindepth 2 -name '*.db' | sort)
	[ "${#days[@]}" -gt 0 ] || die "no day file under $data"
	disk=0
	for d in "${days[@]}"; do
		for f in "$d" "$d-wal"; do
			[ -f "$f" ] && disk=$((disk + $(stat -c %s "$f")))
		done
		log "heap stream: $d $(stat -c %s "$d") B (-wal: $(stat -c %s "$d-wal" 2>/dev/null || echo absent)); rows: $(sqlite3 "$d" "SELECT (SELECT count(*) FROM chunks) || ' chunks, ' || (SELECT count(*) FROM payloads) || ' payloads, ' || (SELECT coalesce(sum(n), 0) FROM node_runs) || ' nodes, ' || (SELECT count(*) FROM blocks) || ' blocks, ' || (SELECT count(*) FROM frames) || ' frames'"); per b-tree:"
		sqlite3 -header -column "$d" "SELECT name, SUM(pgsize) AS bytes, ROUND(100.0 * SUM(pgsize) / (SELECT SUM(pgsize) FROM dbstat), 1) AS pct, SUM(ncell) AS cells FROM dbstat GROUP BY name ORDER BY bytes DESC" |
			tee "$OUT/dbstat-$(basename "$d" .db).txt" >&2
	done
	what="day file(s) of the project + -wal after SIGTERM: ${days[*]#"$data/"}"
fi
log "heap stream: $N profiles, $gz_sum gzip bytes (mean $gz_avg), on disk $disk B ($what)"
ratio=$(calc "100 * $disk / $gz_sum")
result heap "stream x$N: bytes/profile (% of gzip)" "$(calc "$disk / $N") ($(printf '%.1f' "$ratio")% of $(printf '%.0f' "$gz_avg"))" "- (10%)" "-" \
	"bench/heap_stream.sh: $N heap profiles of pprofserve -churn $CHURN, one a second, pushed; $what"
result heap "stream x$N: gzip / on disk bytes" "$gz_sum / $disk" "-" "-" "sum of the fetched bodies; $what"
