#!/usr/bin/env bash
# Memory: the server's RSS (VmRSS, VmHWM from /proc/PID/status) after
# ingesting 100,000 profiles: the 8,640 generated profiles cycled, spread over
# 10 services (each one profile every 10 s, ~28 h), then after a 24 h flame
# graph query of one service.
#
#   bench/memory.sh
# Environment: TOTAL (100000), SERVICES (10), CONC (4), GEN_COUNT (8640).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_bins gen_profiles upload

TOTAL=${TOTAL:-100000}
SERVICES=${SERVICES:-10}
CONC=${CONC:-4}
GEN_COUNT=${GEN_COUNT:-8640}
GEN=$PROFILES_DIR/profiles-$GEN_COUNT
if [ ! -s "$GEN.json" ] || [ "$(ls "$GEN" 2>/dev/null | wc -l)" != "$GEN_COUNT" ]; then
	rm -rf "$GEN"
	"$BENCH_BIN/gen_profiles" --in "$TESTDATA/go-cpu-fib.pb.gz" --out "$GEN" --count "$GEN_COUNT" --t0 1700000000 --step 10 --seed 1 >"$GEN.json"
fi

wait_quiet
data=$TMPD/memory-data
rm -rf "$data"
start_server "$data" "$TMPD/memory.log"
rss0=$(status_kib "$SERVER_PID" VmRSS)
# The sampler: VmRSS once a second, to see the curve.
(while kill -0 "$SERVER_PID" 2>/dev/null; do
	printf '%s %s\n' "$(date +%s)" "$(status_kib "$SERVER_PID" VmRSS 2>/dev/null)"
	sleep 1
done) >"$TMPD/memory-rss.txt" 2>/dev/null &
sampler=$!

t0=$(($(date +%s) / 3600 * 3600 - TOTAL))
repeat=$(((TOTAL + GEN_COUNT - 1) / GEN_COUNT))
cmd="build/bench/upload --conc $CONC --services $SERVICES --repeat $repeat --limit $TOTAL --t0 NOW-$TOTAL --step 1 p*.pb.gz"
log "memory: $cmd"
"$BENCH_BIN/upload" --port "$UPLOAD_PORT" --service mem --services "$SERVICES" --conc "$CONC" --repeat "$repeat" \
	--limit "$TOTAL" --t0 "$t0" --step 1 "$GEN"/p*.pb.gz >"$TMPD/memory-upload.json"
cat "$TMPD/memory-upload.json" >&2
ok=$(json_get "$TMPD/memory-upload.json" 'j.ok')
rss=$(status_kib "$SERVER_PID" VmRSS)
hwm=$(status_kib "$SERVER_PID" VmHWM)
# A 24 h flame graph of one service (8,640 profiles), then read again.
q_s=$(curl -sf -o "$TMPD/memory-flame.json" -w '%{time_total}' \
	"http://127.0.0.1:$UI_PORT/api/flamegraph?service=mem-0&type=cpu:nanoseconds&from=$((t0 + TOTAL - 86400))&until=$((t0 + TOTAL))")
rss_q=$(status_kib "$SERVER_PID" VmRSS)
hwm_q=$(status_kib "$SERVER_PID" VmHWM)
kill "$sampler" 2>/dev/null || true
stop_server || log "WARNING: kiln serve exited non-zero on SIGTERM"
log "memory: RSS at start $rss0 KiB; after $ok uploads VmRSS $rss KiB VmHWM $hwm KiB; after a 24 h query (${q_s}s) VmRSS $rss_q KiB VmHWM $hwm_q KiB"
log "memory: data dir $(du -sh "$data" | cut -f1); RSS curve in $TMPD/memory-rss.txt"

mib() { calc "$1 / 1024"; }
st() { awk -v k="$1" 'BEGIN { if (k < 300 * 1024) print "met"; else printf "MISSED by %.0f MiB", k / 1024 - 300 }'; }
result memory "uploads answered 200" "$ok / $TOTAL" "all" "$([ "$ok" = "$TOTAL" ] && echo yes || echo NO)" "$cmd"
result memory "sustained upload rate" "$(json_get "$TMPD/memory-upload.json" 'j.per_s')/s" "-" "-" "$cmd"
result memory "VmRSS after $TOTAL uploads (MiB)" "$(mib "$rss")" "< 300" "$(st "$rss")" "$cmd; grep VmRSS /proc/PID/status"
result memory "VmHWM after $TOTAL uploads (MiB)" "$(mib "$hwm")" "< 300" "$(st "$hwm")" "grep VmHWM /proc/PID/status"
result memory "VmRSS / VmHWM after 24h query" "$(mib "$rss_q") / $(mib "$hwm_q")" "< 300" "$(st "$hwm_q")" "curl /api/flamegraph service=mem-0 24h"
