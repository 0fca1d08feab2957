# Shared helpers for the benchmark scripts (sourced, not run).
# Everything generated goes under $KILN_BENCH_TMP (default /tmp/kiln-bench),
# never into the repository.

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$BENCH_DIR/.." && pwd)
KILN=${KILN_BIN:-$REPO/build/kiln}
BENCH_BIN=${KILN_BENCH_BIN:-$REPO/build/bench}
# The pprof fixtures (KILN_TESTDATA: a folder with pprof/ and otlp/, as for the tests).
TESTDATA=${KILN_TESTDATA:-$REPO/tests/data}/pprof
# The store engine every server the scripts start uses: local (embedded,
# the default) or clickhouse (KILN_BENCH_ENGINE=clickhouse). With clickhouse,
# KILN_BENCH_CH_URL names a running ClickHouse; without it the script starts
# its own (start_clickhouse) under $TMPD/clickhouse on loopback ports
# KILN_BENCH_CH_HTTP_PORT (28123) and KILN_BENCH_CH_TCP_PORT (29000), and
# stops it at exit. The ClickHouse runs write under $TMPD/ch (their own
# results.tsv) so both engines' outputs sit side by side; generated profiles
# stay in $PROFILES_DIR (the local engine's $TMPD) so both read the same files.
ENGINE=${KILN_BENCH_ENGINE:-local}
case $ENGINE in local | clickhouse) ;; *) echo "KILN_BENCH_ENGINE must be local or clickhouse" >&2; exit 2 ;; esac
PROFILES_DIR=${KILN_BENCH_PROFILES:-${KILN_BENCH_TMP:-/tmp/kiln-bench}}
if [ "$ENGINE" = clickhouse ]; then
	TMPD=${KILN_BENCH_TMP:-/tmp/kiln-bench}/ch
else
	TMPD=${KILN_BENCH_TMP:-/tmp/kiln-bench}
fi
RESULTS=${KILN_BENCH_RESULTS:-$TMPD/results.tsv}
mkdir -p "$TMPD" "$PROFILES_DIR"

SERVER_PID=
UPLOAD_PORT=
UI_PORT=

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

need_bins() {
	[ -x "$KILN" ] || die "$KILN missing: run make build/kiln"
	for b in "$@"; do
		[ -x "$BENCH_BIN/$b" ] || die "$BENCH_BIN/$b missing: run make bench"
	done
}

# The benchmarks measure throughput: the per-key rate limit (default 20,000
# samples/s, docs/OPERATIONS.md) is raised to its maximum, or it would be
# what they measure.
BENCH_CONFIG=$TMPD/bench-config.yaml
printf 'limits:\n  samplesPerSecond: 1000000000\n' >"$BENCH_CONFIG"

# ---- ClickHouse (KILN_BENCH_ENGINE=clickhouse) ----
CH_PID=     # the ClickHouse server this script started (empty: none, or an external one)
CH_DIR=     # its directory (config, data, logs)
CH_URL=     # what kiln and ch_query talk to
CH_DB=      # the database of the last start_kiln (one per data dir)

# start_clickhouse DIR HTTP_PORT TCP_PORT: Debian's clickhouse-server (18.16)
# with a minimal config written into DIR (data, tmp and logs under DIR too,
# loopback only, logging at warning); waits until it answers SELECT 1. Sets
# CH_PID, CH_DIR, CH_URL. CH_LOG_QUERIES=1 turns on log_queries in the
# default profile (a copy of /etc/clickhouse-server/users.xml in DIR), so
# system.query_log holds every query kiln sends (for explaining times).
start_clickhouse() {
	local dir=$1 http=$2 tcp=$3 users=/etc/clickhouse-server/users.xml
	command -v clickhouse-server >/dev/null || die "clickhouse-server missing (scripts/deps.sh installs it)"
	if curl -s -o /dev/null "http://127.0.0.1:$http/" || curl -s -o /dev/null "http://127.0.0.1:$tcp/"; then
		die "port $http or $tcp is in use: pick others (KILN_BENCH_CH_HTTP_PORT, KILN_BENCH_CH_TCP_PORT)"
	fi
	mkdir -p "$dir"/data "$dir"/tmp "$dir"/user_files "$dir"/format_schemas
	if [ "${CH_LOG_QUERIES:-0}" = 1 ]; then
		users=$dir/users.xml
		sed 's|<use_uncompressed_cache>0</use_uncompressed_cache>|&<log_queries>1</log_queries>|' \
			/etc/clickhouse-server/users.xml >"$users"
		grep -q '<log_queries>1' "$users" || die "could not enable log_queries in $users"
	fi
	cat >"$dir/config.xml" <<XML
<yandex>
  <logger><level>warning</level><log>$dir/server.log</log><errorlog>$dir/server.err.log</errorlog></logger>
  <http_port>$http</http_port><tcp_port>$tcp</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>$dir/data/</path><tmp_path>$dir/tmp/</tmp_path>
  <user_files_path>$dir/user_files/</user_files_path><format_schema_path>$dir/format_schemas/</format_schema_path>
  <users_config>$users</users_config>
  <default_profile>default</default_profile><default_database>default</default_database>
  <mark_cache_size>5368709</mark_cache_size>
  <query_log><database>system</database><table>query_log</table><flush_interval_milliseconds>1000</flush_interval_milliseconds></query_log>
  <part_log><database>system</database><table>part_log</table><flush_interval_milliseconds>1000</flush_interval_milliseconds></part_log>
</yandex>
XML
	clickhouse-server --config-file="$dir/config.xml" >"$dir/stdout.log" 2>&1 &
	CH_PID=$! CH_DIR=$dir CH_URL=http://127.0.0.1:$http
	for _ in $(seq 1 300); do
		[ "$(curl -s "$CH_URL/?query=SELECT+1" 2>/dev/null)" = 1 ] && { log "clickhouse: pid $CH_PID on :$http (tcp :$tcp), $dir"; return 0; }
		kill -0 "$CH_PID" 2>/dev/null || { tail -20 "$dir/server.err.log" "$dir/stdout.log" >&2; CH_PID=; die "clickhouse-server exited"; }
		sleep 0.1
	done
	die "clickhouse-server did not answer within 30 s ($dir/server.err.log)"
}

# stop_clickhouse: SIGTERM to the server start_clickhouse started, and wait.
stop_clickhouse() {
	[ -n "$CH_PID" ] || return 0
	kill -TERM "$CH_PID" 2>/dev/null || true
	wait "$CH_PID" 2>/dev/null || true
	CH_PID=
}

# ch_query SQL [URL_PARAMS]: runs SQL on ClickHouse (POST), prints the answer.
ch_query() {
	curl -sS --fail-with-body "$CH_URL/?${2:-}" --data-binary "$1" || die "clickhouse: $1"
}

# ensure_clickhouse: the ClickHouse the benchmarks use (KILN_BENCH_CH_URL,
# else one started once per script).
ensure_clickhouse() {
	[ -z "$CH_URL" ] || return 0
	if [ -n "${KILN_BENCH_CH_URL:-}" ]; then
		CH_URL=${KILN_BENCH_CH_URL%/}
		[ "$(curl -s "$CH_URL/?query=SELECT+1")" = 1 ] || die "no ClickHouse answers at $CH_URL"
	else
		rm -rf "$TMPD/clickhouse"
		start_clickhouse "$TMPD/clickhouse" "${KILN_BENCH_CH_HTTP_PORT:-28123}" "${KILN_BENCH_CH_TCP_PORT:-29000}"
	fi
}

# ch_database DATA_DIR: the database that stands for DATA_DIR (kb_ + its
# name). A data dir without the marker file kiln-bench-ch-db is new (the
# scripts rm -rf it for a fresh store): its database is dropped, so every
# benchmark starts on an empty store as with the embedded engine; with the
# marker (a server restarted on the same data) it is kept.
ch_database() {
	local data=$1 db
	db=kb_$(basename "$data" | tr -c 'A-Za-z0-9_\n' '_')
	if [ ! -f "$data/kiln-bench-ch-db" ]; then
		ch_query "DROP DATABASE IF EXISTS $db" >/dev/null
		mkdir -p "$data"
		echo "$db" >"$data/kiln-bench-ch-db"
	fi
	echo "$db"
}

# kiln_config CONFIG DATA_DIR: sets KILN_CONFIG to the config kiln serve
# gets: CONFIG itself for the local engine; for clickhouse a copy with the
# store block added ($TMPD/NAME-store.yaml), and CH_DB. Not in a $(...):
# it may start ClickHouse, which must be this shell's child.
KILN_CONFIG=
kiln_config() {
	local config=$1 data=$2
	KILN_CONFIG=$config
	[ "$ENGINE" = clickhouse ] || return 0
	! grep -q '^store:' "$config" || die "$config has its own store block"
	ensure_clickhouse
	CH_DB=$(ch_database "$data")
	KILN_CONFIG=$TMPD/$(basename "$data")-store.yaml
	{
		cat "$config"
		printf '\nstore: {engine: clickhouse, url: "%s", database: %s}\n' "$CH_URL" "$CH_DB"
	} >"$KILN_CONFIG"
}

# ch_log_report SINCE [FILE]: what ClickHouse spent on the statements that
# finished since SINCE (unix seconds), from system.query_log (needs
# CH_LOG_QUERIES=1), grouped by kind (first word, table, GROUP BY): count,
# mean / p50 / p99 / total ms, mean rows read / written / answered, mean
# memory; then from system.part_log the parts written (NewPart) and merged
# (MergeParts) per table of CH_DB. Printed to stderr and to FILE.
ch_log_report() {
	local since=$1 out=${2:-/dev/null}
	[ "${CH_LOG_QUERIES:-0}" = 1 ] || return 0
	ch_query "SYSTEM FLUSH LOGS" >/dev/null
	ch_query "SELECT concat(extract(query, '^(\\\\w+)'), ' ', extract(query, '(?:FROM|INTO) (\\\\w+)'),
			if(extract(query, 'GROUP BY ([\\\\w, ]+)') = '', '', concat(' BY ', extract(query, 'GROUP BY ([\\\\w, ]+)')))) AS stmt,
		count() AS n, round(avg(query_duration_ms), 1) AS mean_ms, quantileExact(0.5)(query_duration_ms) AS p50_ms,
		quantileExact(0.99)(query_duration_ms) AS p99_ms, sum(query_duration_ms) AS total_ms,
		round(avg(read_rows)) AS read_rows, round(avg(written_rows)) AS written_rows, round(avg(result_rows)) AS result_rows,
		formatReadableSize(avg(memory_usage)) AS memory
		FROM system.query_log WHERE type = 2 AND event_time >= toDateTime($since)
		AND query NOT LIKE '%system.%' AND query NOT LIKE 'DROP%'
		GROUP BY stmt ORDER BY total_ms DESC FORMAT PrettyCompactMonoBlock" | tee "$out" >&2
	# Parts written (one per INSERT and partition) and merged in the background.
	ch_query "SELECT table, event_type, count() AS n, sum(duration_ms) AS total_ms, round(avg(rows)) AS mean_rows,
		round(avg(size_in_bytes)) AS mean_bytes FROM system.part_log
		WHERE event_time >= toDateTime($since) AND database = '$CH_DB' AND event_type IN ('NEW_PART', 'MERGE_PARTS')
		GROUP BY table, event_type ORDER BY table, event_type FORMAT PrettyCompactMonoBlock" | tee -a "$out" >&2
}

# ch_optimize: OPTIMIZE TABLE … FINAL on every table of CH_DB (merges each
# partition into one part: what the store settles to).
ch_optimize() {
	local t
	for t in $(ch_query "SELECT name FROM system.tables WHERE database = '$CH_DB'"); do
		ch_query "OPTIMIZE TABLE $CH_DB.$t FINAL" >/dev/null
	done
}

# ch_bytes: bytes on disk of the active parts of CH_DB.
ch_bytes() { ch_query "SELECT sum(bytes_on_disk) FROM system.parts WHERE database = '$CH_DB' AND active"; }

# wait_sealed CHUNKS: waits (at most 2 min) until the running embedded
# kiln's kiln_store_chunks_sealed_total reaches CHUNKS (a profile is a chunk
# per sample type: types_of), and logs how many it saw.
# A build older than blocks (KILN_BIN, before 4f498f1) has no such metric
# (or no /metrics): there is nothing to wait for.
wait_sealed() {
	local sealed=0 i
	for i in $(seq 1 1200); do
		sealed=$(sealed_chunks)
		[ -n "$sealed" ] || { log "no kiln_store_chunks_sealed_total: a build without blocks, not waiting"; return 0; }
		[ "$sealed" -ge "$1" ] && break
		sleep 0.1
	done
	log "sealed into blocks: ${sealed:-0} chunks (waited for $1)"
}

# wait_summed: waits (at most 5 min) until the running kiln's compactor has
# stopped writing summed hours (kiln_store_hours_summed_total unchanged over
# 12 s, more than two passes), and logs how many rows it wrote.
wait_summed() {
	local last=-1 now same=0 i
	for i in $(seq 1 300); do
		now=$({ curl -sf "http://127.0.0.1:$UI_PORT/metrics" || true; } | awk '/^kiln_store_hours_summed_total / { print $2 }')
		[ -n "$now" ] || { log "no kiln_store_hours_summed_total: a build without it, not waiting"; return 0; }
		if [ "$now" = "$last" ]; then same=$((same + 1)); else same=0; fi
		last=$now
		[ $same -ge 12 ] && break
		sleep 1
	done
	log "summed hours: $last rows written"
}

# sealed_chunks: kiln_store_chunks_sealed_total now (empty without blocks,
# or without /metrics: builds before it).
sealed_chunks() { { curl -sf "http://127.0.0.1:$UI_PORT/metrics" || true; } | awk '/^kiln_store_chunks_sealed_total / { print $2 }'; }

# types_of FILE: the sample types of a pprof file (build/bench/pprof_total).
types_of() {
	"$BENCH_BIN/pprof_total" "$1" | wc -l
}

# store_bytes DATA_DIR: the store's bytes on disk: du -sb of the data dir,
# or for clickhouse the active parts of its database (not merged first).
store_bytes() {
	if [ "$ENGINE" = local ]; then du -sb "$1" | cut -f1; else ch_bytes; fi
}

# start_kiln CONFIG DATA_DIR LOG_FILE LISTENER...: kiln serve with the named
# listeners (upload, ui, otlp_http, otlp_grpc) on ephemeral ports and the
# others off; waits until each logged its address. Sets SERVER_PID,
# UPLOAD_PORT, UI_PORT, OTLP_HTTP_PORT, OTLP_GRPC_PORT (empty when off).
# SERVER_ENV (e.g. "MALLOC_TRIM_THRESHOLD_=16777216") is kiln's environment.
# With KILN_BENCH_ENGINE=clickhouse the store is ClickHouse (kiln_config).
start_kiln() {
	local config=$1 data=$2 logf=$3 l
	shift 3
	local -A addr=([upload]=off [ui]=off [otlp_http]=off [otlp_grpc]=off)
	for l in "$@"; do addr[$l]=127.0.0.1:0; done
	mkdir -p "$data"
	kiln_config "$config" "$data"
	env ${SERVER_ENV:-} "$KILN" serve --config "$KILN_CONFIG" --data "$data" --ui "${addr[ui]}" --upload "${addr[upload]}" \
		--otlp-http "${addr[otlp_http]}" --otlp-grpc "${addr[otlp_grpc]}" 2>"$logf" >/dev/null &
	SERVER_PID=$!
	UPLOAD_PORT= UI_PORT= OTLP_HTTP_PORT= OTLP_GRPC_PORT=
	local port_of missing
	port_of() { sed -n "s/.*msg=listening.*listener=$1 .*addr=[0-9.]*:\([0-9]*\).*/\1/p" "$logf" | head -1; }
	for _ in $(seq 1 200); do
		UPLOAD_PORT=$(port_of upload) UI_PORT=$(port_of ui)
		OTLP_HTTP_PORT=$(port_of otlp_http) OTLP_GRPC_PORT=$(port_of otlp_grpc)
		missing=0
		for l in "$@"; do
			case $l in
			upload) [ -n "$UPLOAD_PORT" ] || missing=1 ;;
			ui) [ -n "$UI_PORT" ] || missing=1 ;;
			otlp_http) [ -n "$OTLP_HTTP_PORT" ] || missing=1 ;;
			otlp_grpc) [ -n "$OTLP_GRPC_PORT" ] || missing=1 ;;
			esac
		done
		[ $missing = 0 ] && return 0
		kill -0 "$SERVER_PID" 2>/dev/null || { cat "$logf" >&2; die "kiln serve exited"; }
		sleep 0.05
	done
	cat "$logf" >&2
	die "kiln serve did not log its listeners ($*) within 10 s"
}

# start_pprofserve OUT LOG ARG...: builds bench/go/pprofserve into
# $TMPD/pprofserve, starts it with ARG... (stdout to OUT, stderr to LOG)
# and waits for its "ready" line. Sets PS_PID and PS_CTL (its control port).
PS_PID=
PS_CTL=
start_pprofserve() {
	local out=$1 logf=$2 bin=$TMPD/pprofserve
	shift 2
	(cd "$BENCH_DIR/go/pprofserve" && GOFLAGS=-mod=mod GOPROXY=off go build -o "$bin" .) || die "go build pprofserve failed"
	"$bin" "$@" >"$out" 2>"$logf" &
	PS_PID=$! PS_CTL=
	for _ in $(seq 1 300); do
		PS_CTL=$(sed -n 's/^ready .*control=\([0-9]*\).*/\1/p' "$out")
		[ -n "$PS_CTL" ] && return 0
		kill -0 "$PS_PID" 2>/dev/null || { cat "$logf" >&2; die "pprofserve exited"; }
		sleep 0.1
	done
	die "pprofserve did not start"
}

# start_server DATA_DIR LOG_FILE: the upload and UI listeners with the bench config.
start_server() { start_kiln "$BENCH_CONFIG" "$1" "$2" upload ui; }

# stop_server: SIGTERM (the store checkpoints its WAL) and wait for exit.
stop_server() {
	[ -n "$SERVER_PID" ] || return 0
	kill -TERM "$SERVER_PID" 2>/dev/null || true
	local rc=0
	wait "$SERVER_PID" || rc=$?
	SERVER_PID=
	return $rc
}

# Kill the server (and the ClickHouse) we started if the script dies half-way.
cleanup_server() {
	if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
		kill -TERM "$SERVER_PID" 2>/dev/null
		wait "$SERVER_PID" 2>/dev/null || true
	fi
	stop_clickhouse
}
trap cleanup_server EXIT

# cpu_ticks PID: utime+stime of the process in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# thread_ticks PID: "NAME TICKS" per thread name of the process (utime+stime
# summed over its threads of that name, e.g. every kiln-worker).
thread_ticks() {
	local f
	for f in /proc/"$1"/task/*/stat; do cat "$f" 2>/dev/null || true; done |
		sed 's/^[0-9]* (\(.*\)) /\1\t/' |
		awk -F'\t' '{ split($2, a, " "); gsub(/ /, "_", $1); t[$1] += a[12] + a[13] } END { for (n in t) print n, t[n] }' | sort
}
# thread_cost BEFORE AFTER UNITS: per thread name, CPU µs per unit between two
# thread_ticks snapshots (files), e.g. per upload.
thread_cost() {
	join -a2 -e0 -o 0,1.2,2.2 "$1" "$2" |
		awk -v hz="$(clk_tck)" -v n="$3" '{ d = $3 - $2; if (d > 0) printf "%s %.1f\n", $1, 1e6 * d / hz / n }'
}
# ch_ticks: cpu_ticks of the ClickHouse server this script started (0 without one).
ch_ticks() { if [ -n "$CH_PID" ]; then cpu_ticks "$CH_PID"; else echo 0; fi; }
clk_tck() { getconf CLK_TCK; }
now_s() { date +%s.%N; }

# status_kib PID FIELD: VmRSS / VmHWM in KiB.
status_kib() { awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"; }

# json_get FILE_OR_- EXPR: evaluates a JS expression on the parsed JSON (variable j).
json_get() {
	node -e '
		const fs = require("fs");
		const j = JSON.parse(fs.readFileSync(process.argv[1] === "-" ? 0 : process.argv[1], "utf8"));
		const v = eval(process.argv[2]);
		process.stdout.write(String(v));' "$1" "$2"
}

# calc EXPR: floating-point arithmetic (awk).
calc() { awk "BEGIN { printf \"%.6g\", $* }"; }

# result BENCH FIGURE VALUE TARGET STATUS COMMAND: one row of the summary.
# With the clickhouse engine the bench column reads e.g. "ingest/ch".
result() {
	local b=$1
	[ "$ENGINE" = local ] || b=$1/ch
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$b" "$2" "$3" "$4" "$5" "$6" >>"$RESULTS"
	printf 'RESULT  %-8s %-34s %-16s target %-14s %s\n' "$b" "$2" "$3" "$4" "$5"
}

# commit_stats: "COUNT SUM_SECONDS" of the store writer's group commits so
# far (kiln_store_commit_seconds on the UI listener's /metrics).
commit_stats() {
	curl -sf "http://127.0.0.1:$UI_PORT/metrics" |
		awk '$1 == "kiln_store_commit_seconds_count" {c = $2} $1 == "kiln_store_commit_seconds_sum" {s = $2} END {print c + 0, s + 0}'
}

# hist_buckets NAME: "LE COUNT" per line, the cumulative buckets so far of
# histogram NAME on /metrics (kiln_store_ack_seconds: a batch's time from
# the write queue to its durable ack; kiln_store_commit_seconds: a group
# commit's); hist_quantiles FILE0 FILE1 prints the p50 and p99 in ms of
# what was counted between two such readings, interpolated in its bucket.
hist_buckets() {
	curl -sf "http://127.0.0.1:$UI_PORT/metrics" |
		sed -n "s/^$1_bucket{le=\"\([^\"]*\)\"} \([0-9]*\)\$/\1 \2/p"
}
hist_quantiles() {
	paste "$1" "$2" | awk '{le[NR] = $1; c[NR] = $4 - $2} END {
		n = c[NR]; if (n == 0) { print "- -"; exit }
		split("0.5 0.99", q, " ")
		for (k = 1; k <= 2; k++) {
			for (i = 1; i <= NR && c[i] < q[k] * n; i++);
			lo = i > 1 ? le[i - 1] : 0; hi = le[i] == "+Inf" ? lo : le[i]; below = i > 1 ? c[i - 1] : 0
			v = c[i] > below ? lo + (hi - lo) * (q[k] * n - below) / (c[i] - below) : hi
			printf "%.3f%s", 1000 * v, k == 1 ? " " : "\n"
		} }'
}

# wrk_kv FILE KEY: a value of the KILN_WRK line bench/*.lua's done() prints
# (requests, duration_us, p50_us, p99_us, max_us, non2xx, ...) in wrk's output FILE.
wrk_kv() { sed -n "s/^KILN_WRK.* $2=\([0-9.]*\).*/\1/p" "$1"; }

# commit_max: the longest group commit since the server started, seconds.
commit_max() {
	curl -sf "http://127.0.0.1:$UI_PORT/metrics" | awk '$1 == "kiln_store_commit_seconds_max" {m = $2} END {print m + 0}'
}

# flame_total SERVICE TYPE FROM UNTIL: the flame graph total Kiln reports.
flame_total() {
	curl -sf "http://127.0.0.1:$UI_PORT/api/flamegraph?service=$1&type=$2&from=$3&until=$4" -o "$TMPD/flame_check.json" ||
		die "flamegraph query for $1 failed"
	json_get "$TMPD/flame_check.json" 'j.total'
}

# proc_stat: "busy total" jiffies of all CPUs together (/proc/stat).
proc_stat() { awk '/^cpu /{b = $2 + $3 + $4 + $7 + $8 + $9; print b, b + $5 + $6}' /proc/stat; }

# busy_pct B0 T0 B1 T1: machine CPU busy between two proc_stat readings, in %
# of ALL cores (nproc x 100 = everything).
busy_pct() { calc "$(nproc) * 100 * ($3 - $1) / ($4 - $2)"; }

# wait_quiet: the machine is shared (other builds, tests, benchmarks); wait up
# to QUIET_WAIT (300) s until other processes use under QUIET_PCT (15) % of a
# core, then go on either way (with a warning naming the busiest processes).
wait_quiet() {
	local limit=${QUIET_PCT:-15} max=${QUIET_WAIT:-300} waited=0 b0 t0 b1 t1 busy
	while :; do
		read -r b0 t0 < <(proc_stat)
		sleep 2
		read -r b1 t1 < <(proc_stat)
		busy=$(busy_pct "$b0" "$t0" "$b1" "$t1")
		if awk -v b="$busy" -v l="$limit" 'BEGIN { exit !(b <= l) }'; then
			[ $waited = 0 ] || log "machine quiet after ${waited}s ($busy% busy)"
			return 0
		fi
		if [ $waited -ge "$max" ]; then
			log "WARNING: the machine is still $busy% busy with other processes; measuring anyway:"
			top -b -n1 | sed -n '8,12p' >&2
			return 0
		fi
		[ $waited = 0 ] && { log "waiting for other processes to finish ($busy% of a core busy):"; top -b -n1 | sed -n '8,11p' >&2; }
		waited=$((waited + 2))
	done
}
