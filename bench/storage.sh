#!/usr/bin/env bash
# Storage: bytes on disk per stored profile after 1,000 uploads, against the
# gzip size of the uploaded pprof. du of the data dir after a clean shutdown
# (SIGTERM: the store checkpoints its WAL), divided by 1,000.
#
#   bench/storage.sh
# Cases: "similar" (1,000 generated profiles, one every 10 s: the target) and
# "identical" (go-cpu-fib.pb.gz 1,000 times, one every 10 s).
# A third case uploads 8,640 generated profiles (a day at one per 10 s;
# DAY=0 skips it) to show how the fixed cost per partition amortizes.
# Environment: COUNT (1000), CONC (4), DAY (1).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_bins gen_profiles upload pprof_total

COUNT=${COUNT:-1000}
CONC=${CONC:-4}
# gen N: the generated set of N profiles (kept between runs).
gen() {
	local g=$PROFILES_DIR/profiles-$1
	if [ ! -s "$g.json" ] || [ "$(ls "$g" 2>/dev/null | wc -l)" != "$1" ]; then
		rm -rf "$g"
		"$BENCH_BIN/gen_profiles" --in "$TESTDATA/go-cpu-fib.pb.gz" --out "$g" --count "$1" --t0 1700000000 --step 10 --seed 1 >"$g.json"
	fi
	echo "$g"
}

# project_files DATA FORMAT: find -printf FORMAT for every file of the
# project directories (not DIR/_wal, keys.db, usage.db).
project_files() {
	local d
	for d in "$1"/*/; do
		[ "$(basename "$d")" = _wal ] || find "$d" -type f -printf "$2"
	done
}

# run_case NAME COUNT: similar (generated) or identical (go-cpu-fib itself).
run_case() {
	local name=$1 COUNT=$2 gz_avg GEN
	local data=$TMPD/storage-$name-$COUNT-data
	rm -rf "$data"
	start_server "$data" "$TMPD/storage-$name-$COUNT.log"
	# From yesterday's 00:00 UTC: up to 8,640 profiles (a day) in one day file.
	local t0=$(($(date +%s) / 86400 * 86400 - 86400))
	local args
	if [ "$name" != identical ]; then
		GEN=$(gen "$COUNT")
		args=("$GEN"/p*.pb.gz)
		gz_avg=$(calc "$(json_get "$GEN.json" 'j.gz_bytes') / $COUNT")
	else
		args=(--repeat "$COUNT" "$TESTDATA/go-cpu-fib.pb.gz")
		gz_avg=$(stat -c %s "$TESTDATA/go-cpu-fib.pb.gz")
	fi
	"$BENCH_BIN/upload" --port "$UPLOAD_PORT" --service "st-$name" --conc "$CONC" --t0 "$t0" --step 10 "${args[@]}" >"$TMPD/storage-$name-$COUNT-upload.json"
	[ "$(json_get "$TMPD/storage-$name-$COUNT-upload.json" 'j.ok')" = "$COUNT" ] || die "not every upload answered 200"
	# Every profile is in an hour that ended long ago: sealed into blocks
	# before the bytes are counted (docs/STORE.md, Blocks).
	[ "$ENGINE" != local ] || wait_sealed "$((COUNT * $(types_of "${args[-1]}")))"
	local live
	live=$(store_bytes "$data")
	stop_server || log "WARNING: kiln serve exited non-zero on SIGTERM"
	local apparent alloc
	if [ "$ENGINE" = clickhouse ]; then
		# Every table merged to one part per partition, then the active parts:
		# sum(bytes_on_disk), and du of their directories (allocated).
		ch_optimize
		apparent=$(ch_bytes)
		alloc=$(ch_query "SELECT path FROM system.parts WHERE database = '$CH_DB' AND active" | xargs -d '\n' du -sB1 -c | tail -1 | cut -f1)
		log "storage $name: ClickHouse database $CH_DB while running $live B, after OPTIMIZE FINAL $apparent B, $alloc B allocated:"
		ch_query "SELECT table, sum(rows), sum(bytes_on_disk), sum(data_compressed_bytes), sum(data_uncompressed_bytes), count() FROM system.parts WHERE database = '$CH_DB' AND active GROUP BY table ORDER BY table FORMAT PrettyCompactMonoBlock" >&2
		ch_query "SELECT table, name, data_compressed_bytes, data_uncompressed_bytes FROM system.columns WHERE database = '$CH_DB' ORDER BY data_compressed_bytes DESC LIMIT 12 FORMAT PrettyCompactMonoBlock" >&2
	else
		# The profiles' bytes: the project directories (day files and their
		# merged hours), not DIR/_wal: the store's log is reused, bounded
		# (LIMIT_STORE_WAL_BYTES) and empty after a clean stop, a cost per
		# data directory, not per profile (its size is logged).
		local whole logb
		whole=$(du -sb "$data" | cut -f1)
		logb=$(du -sb "$data/_wal" | cut -f1)
		apparent=$(project_files "$data" '%s\n' | awk '{ t += $1 } END { print t + 0 }')
		alloc=$(project_files "$data" '%b\n' | awk '{ t += $1 * 512 } END { print t + 0 }')
		log "storage $name: data dir while running $live B (with WAL), after SIGTERM $whole B ($logb B of them the store's log), day files $apparent B apparent, $alloc B allocated:"
		find "$data" -type f -printf '  %p %s\n' >&2
	fi
	local per ratio
	per=$(calc "$apparent / $COUNT")
	ratio=$(calc "100 * $per / $gz_avg")
	local cmd="upload $COUNT $name profiles (one per 10 s), kill -TERM, bytes of DATA/<project>/* / $COUNT"
	[ "$ENGINE" = local ] || cmd="upload $COUNT $name profiles (one per 10 s), kill -TERM, OPTIMIZE TABLE … FINAL, sum(bytes_on_disk) of active parts / $COUNT"
	local target="<= 10%"
	[ "$COUNT" = 1000 ] || target="- (10%)"
	result storage "$name x$COUNT: bytes/profile (% of gzip)" "$(printf '%.0f' "$per") ($(printf '%.1f' "$ratio")% of $(printf '%.0f' "$gz_avg"))" \
		"$target" "$(awk -v r="$ratio" 'BEGIN { if (r <= 10) print "met"; else printf "MISSED: %.1fx the target", r / 10 }')" "$cmd"
	result storage "$name x$COUNT: du alloc / running+WAL" "$(calc "$alloc / $COUNT") / $(calc "$live / $COUNT") B/profile" "-" "-" \
		"$([ "$ENGINE" = local ] && echo "blocks of DATA/<project>/* after stop; du -sb DATA while running" || echo "du -sB1 of the active parts; bytes_on_disk before OPTIMIZE")"
}

run_case similar "$COUNT"
run_case identical "$COUNT"
# The same generator over a full day (8,640 profiles, two day partitions):
# how the per-partition dictionaries (frames, stack nodes) amortize.
[ "${DAY:-1}" = 0 ] || run_case similar 8640
