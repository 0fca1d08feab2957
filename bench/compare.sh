#!/usr/bin/env bash
# The same benchmarks on both store engines, one after the other on the same
# data, and one table with both engines' figures side by side (issue 8).
#
#   bench/compare.sh [ingest] [query] [otlp] [storage] ...   (default: ingest query otlp storage)
# Environment: ROUNDS (2): every benchmark runs ROUNDS times per engine,
#   alternating embedded and ClickHouse (so a busy spell on the shared
#   machine hits both); the table has one column per run. Each script's own
#   knobs (CONNS, DURATION, COUNT, REPS, GO_REPS, DAY, ...) pass through.
#   KILN_BENCH_CH_URL: use a running ClickHouse instead of starting one per
#   benchmark (then no ClickHouse CPU figures).
# Results: $TMPD/compare-ENGINE-rN.tsv (the result rows of each run, with the
# command in the 6th column) and $TMPD/compare.txt (the table).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
[ "$ENGINE" = local ] || die "run compare.sh without KILN_BENCH_ENGINE: it runs both"

ROUNDS=${ROUNDS:-2}
benches=("$@")
[ ${#benches[@]} -gt 0 ] || benches=(ingest query otlp storage)
[ "${NO_BUILD:-0}" = 1 ] || make -s build/kiln bench

files=()
for e in local clickhouse; do
	for r in $(seq 1 "$ROUNDS"); do
		: >"$TMPD/compare-$e-r$r.tsv"
		files+=("$TMPD/compare-$e-r$r.tsv")
	done
done
for r in $(seq 1 "$ROUNDS"); do
	for b in "${benches[@]}"; do
		[ -x "bench/$b.sh" ] || die "no bench/$b.sh"
		for e in local clickhouse; do
			log "=== round $r: $b on $e"
			KILN_BENCH_ENGINE=$e KILN_BENCH_RESULTS=$TMPD/compare-$e-r$r.tsv bash "bench/$b.sh" ||
				log "WARNING: $b on $e failed (round $r)"
		done
	done
done

# One row per figure (the bench column without "/ch"), one column per run.
{
	echo "Kiln, embedded vs ClickHouse — $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), ClickHouse $(dpkg-query -W -f '${Version}' clickhouse-server 2>/dev/null || echo '?')"
	awk -F'\t' -v rounds="$ROUNDS" '
		FNR == 1 { f++ }
		{
			b = $1; sub(/\/ch$/, "", b); k = b "\t" $2
			if (!(k in seen)) { seen[k] = 1; order[++n] = k }
			v[k, f] = $3
		}
		END {
			printf "bench\tfigure"
			for (i = 1; i <= rounds; i++) printf "\tembedded r%d", i
			for (i = 1; i <= rounds; i++) printf "\tclickhouse r%d", i
			printf "\n"
			for (i = 1; i <= n; i++) {
				printf "%s", order[i]
				for (j = 1; j <= f; j++) printf "\t%s", ((order[i], j) in v) ? v[order[i], j] : "-"
				printf "\n"
			}
		}' "${files[@]}" | column -t -s $'\t'
} | tee "$TMPD/compare.txt"
echo
echo "Per-run rows with their commands: $TMPD/compare-{local,clickhouse}-rN.tsv; logs: $TMPD, $TMPD/ch"
