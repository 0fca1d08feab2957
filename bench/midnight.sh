#!/usr/bin/env bash
# A UTC midnight at 1,000 projects: the store alone (build/bench/commit, no
# HTTP) under faketime, whose clock the store reads too, so that a run's
# warm-up writes every project's file of the day and the measured part
# begins at 00:00, when every project's next file is first written. The same
# run 10 minutes before midnight is the steady figure it is compared with.
#
#   bench/midnight.sh
# Environment: PROJECTS (1000), THREADS (8), WARMUP (15, at most 59), DURATION (10),
#              REPS (2: alternated pairs). faketime is installed by
#              bench/run.sh (Debian package faketime).
# Prints, per run, uploads/s, p99 and max latency (submit to durable answer)
# and the CPU per upload of each store thread.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_bins commit
command -v faketime >/dev/null || die "faketime missing (bench/run.sh installs it: apt-get install faketime)"

PROJECTS=${PROJECTS:-1000}
THREADS=${THREADS:-8}
WARMUP=${WARMUP:-15}
DURATION=${DURATION:-10}
REPS=${REPS:-2}
SRC=$TESTDATA/go-cpu-fib.pb.gz
day=$(date -u +%F)

# run NAME START: one run whose clock starts at START today (UTC).
run() {
	local name=$1 start=$2 dir
	dir=$(mktemp -d "$TMPD/midnight-XXXXXX")
	local cmd="TZ=UTC FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f '@DAY $start' env DATED=now WARMUP=$WARMUP PROJECTS=$PROJECTS build/bench/commit go-cpu-fib.pb.gz $THREADS $DURATION 0 DIR"
	log "midnight $name: $cmd"
	wait_quiet
	local out
	out=$(TZ=UTC FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f "@$day $start" env DATED=now WARMUP="$WARMUP" \
		PROJECTS="$PROJECTS" "$BENCH_BIN/commit" "$SRC" "$THREADS" "$DURATION" 0 "$dir" 2>/dev/null)
	echo "$out" >"$TMPD/midnight-$name.json"
	log "midnight $name: $out"
	local per_s p99 max
	per_s=$(json_get "$TMPD/midnight-$name.json" 'j.per_s')
	p99=$(json_get "$TMPD/midnight-$name.json" 'j.p99_ms')
	max=$(json_get "$TMPD/midnight-$name.json" 'j.max_ms')
	result midnight "$name uploads/s, p99 / max ms" "$per_s, $p99 / $max" "-" "-" "$cmd"
}

[ "$WARMUP" -ge 1 ] && [ "$WARMUP" -le 59 ] || die "WARMUP must be 1..59 s"
mkdir -p "$TMPD"
rm -rf "$TMPD"/midnight-*/
# The data directories are removed at the end, not between runs: ext4 then
# scans the inodes just freed for each file made (recently_deleted), which
# slowed the next run's 1,000 file creations several times over.
trap 'rm -rf "$TMPD"/midnight-*/' EXIT
for r in $(seq 1 "$REPS"); do
	# Ends at 23:40 + WARMUP + DURATION, before the eve (23:50): nothing
	# made ahead, no midnight.
	run "steady-$r" "23:40:00"
	# The measured part starts at 00:00:00.
	run "midnight-$r" "23:59:$(printf '%02d' $((60 - WARMUP)))"
done
