#!/usr/bin/env bash
# Instruction profiles of the server under valgrind --tool=callgrind: counts
# instructions, not time, so the figures repeat whatever else the machine is
# doing. Not part of run.sh (slow: ~50x); for finding hot spots.
#
#   bench/callgrind.sh [ingest-cpu] [ingest-heap] [query]   (default: all three)
#     ingest-cpu   2,000 uploads of go-cpu-fib.pb.gz (8 connections)
#     ingest-heap  100 uploads of go-heap-delta.pb.gz
#     query        one 24 h flame graph over the data dir bench/query.sh left
#                  ($TMPD/query-data: run bench/query.sh first)
# Writes $TMPD/callgrind-NAME.out and prints the top functions by self and
# by inclusive instructions, and instructions per upload / per query.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_bins upload
command -v valgrind >/dev/null || die "valgrind missing (apt-get install valgrind)"

# Like start_server, under callgrind (startup takes seconds).
start_cg() {
	local data=$1 out=$2 logf=$3
	valgrind --tool=callgrind --callgrind-out-file="$out" "$KILN" serve --config "$BENCH_CONFIG" --data "$data" \
		--ui 127.0.0.1:0 --upload 127.0.0.1:0 --otlp-http off --otlp-grpc off 2>"$logf" >/dev/null &
	SERVER_PID=$!
	for _ in $(seq 1 600); do
		UPLOAD_PORT=$(sed -n 's/.*msg=listening.*listener=upload.*addr=[0-9.]*:\([0-9]*\).*/\1/p' "$logf" | head -1)
		UI_PORT=$(sed -n 's/.*msg=listening.*listener=ui.*addr=[0-9.]*:\([0-9]*\).*/\1/p' "$logf" | head -1)
		[ -n "$UPLOAD_PORT" ] && [ -n "$UI_PORT" ] && return 0
		sleep 0.1
	done
	die "kiln under callgrind did not start"
}

report() {
	local out=$1 per=$2 what=$3
	set +o pipefail # head closes the pipes early
	local total
	total=$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
	log "$(basename "$out"): $total instructions, $(calc "$total / $per") per $what"
	echo "== self (top 25)"
	callgrind_annotate "$out" 2>/dev/null | grep -E '^ *[0-9,]+ \(' | grep -v 'PROGRAM TOTALS' | head -25 |
		sed 's|/[^ ]*/src/|src/|; s|\[/[^]]*\]||' | sed 's/ *$//' | awk '!seen[$0]++'
	echo "== inclusive (top 40)"
	callgrind_annotate --inclusive=yes "$out" 2>/dev/null | grep -E '^ *[0-9,]+ \(' | grep -v 'PROGRAM TOTALS' | head -40 |
		sed 's|/[^ ]*/src/|src/|; s|\[/[^]]*\]||' | sed 's/ *$//' | awk '!seen[$0]++'
	set -o pipefail
}

cg_ingest() {
	local name=$1 file=$2 n=$3
	local data=$TMPD/cg-$name-data out=$TMPD/callgrind-$name.out
	rm -rf "$data" "$out"
	start_cg "$data" "$out" "$TMPD/cg-$name.log"
	local t0=$(($(date +%s) / 3600 * 3600 - 7200))
	"$BENCH_BIN/upload" --port "$UPLOAD_PORT" --service "cg-$name" --conc 8 --repeat "$n" --t0 "$t0" --step 1 "$file" >&2
	stop_server || true
	report "$out" "$n" upload
}

cg_query() {
	local data=$TMPD/query-data out=$TMPD/callgrind-query.out
	[ -d "$data" ] || die "$data missing: run bench/query.sh first"
	rm -f "$out"
	start_cg "$data" "$out" "$TMPD/cg-query.log"
	local T0=$(($(date +%s) / 3600 * 3600 - 86400))
	# query.sh's window started on the hour 24 h before it ran; take 2 days around it.
	curl -sf -o "$TMPD/cg-query.json" \
		"http://127.0.0.1:$UI_PORT/api/flamegraph?service=q24h&type=cpu:nanoseconds&from=$((T0 - 86400))&until=$((T0 + 86400))" ||
		die "query failed"
	log "flame graph total $(json_get "$TMPD/cg-query.json" 'j.total')"
	stop_server || true
	report "$out" 1 query
}

what=("$@")
[ ${#what[@]} -gt 0 ] || what=(ingest-cpu ingest-heap query)
for w in "${what[@]}"; do
	case $w in
	ingest-cpu) cg_ingest ingest-cpu "$TESTDATA/go-cpu-fib.pb.gz" 2000 ;;
	ingest-heap) cg_ingest ingest-heap "$TESTDATA/go-heap-delta.pb.gz" 100 ;;
	query) cg_query ;;
	*) die "unknown: $w" ;;
	esac
done
