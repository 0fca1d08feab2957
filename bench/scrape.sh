#!/usr/bin/env bash
# Scraping (issue 5): the sensor scraping TARGETS (1,000) Go pods, each
# serving real net/http/pprof profiles, on an INTERVAL (10) s schedule.
# The pods are one Go program (bench/go/pprofserve) listening on TARGETS
# loopback addresses (127.1.0.1, 127.1.0.2, ...: the pod IPs) that records
# the arrival of every request; Kiln finds them the production way, through
# the Kubernetes API stand-in (tests/k8s-standin) listing one Running pod per
# address with profiles.kiln.dev/TYPE.scrape + .port annotations. After a
# warm-up of WARMUP (one interval + 5 s) it measures for DURATION (90) s:
#   - sensor CPU per scrape: utime+stime of kiln serve (/proc/PID/stat) over
#     the window ÷ scrapes finished in it (/metrics kiln_scrape_results_total);
#     "excluding decode" subtracts the decode cost of the same payloads
#     (build/bench/decode: gunzip + pprof_decode, one thread; its CPU time ÷
#     iterations), weighted by the type mix of the window's ok scrapes;
#   - lateness, measured at the targets: per (pod, type) the k-th request
#     should arrive at phase + k·INTERVAL; phase = the earliest
#     arrival − k·INTERVAL seen for that pair (warm-up included), lateness =
#     arrival − k·INTERVAL − phase; p50/p99/max over the window's requests,
#     plus rounds with no request at all (gaps of 2+ intervals);
#   - peak RSS: VmHWM of kiln serve at the end;
#   - results other than ok (must be none).
#
#   bench/scrape.sh
# Environment: TARGETS (1000), INTERVAL (10, seconds), TYPES ("memory
#   goroutine" at 10 s; cpu needs INTERVAL >= 20, OPS: Scrape settings), DURATION (90),
#   CPU_HOLD (1: the cpu endpoint answers after `seconds` as Go does; 0:
#   at once), REFRESH (1s: how often the targets take the heap/goroutine
#   profiles they serve; 0 = one per request, see bench/go/pprofserve),
#   PORT (16060), PERF (1: perf record -g the server for 20 s after the
#   window, flat profile in $TMPD/perf-scrape-*.txt), NAME (label of the
#   result rows, default "INTERVALs TYPES").
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_bins decode
command -v go >/dev/null || die "go missing (apt-get install golang-go)"

TARGETS=${TARGETS:-1000}
INTERVAL=${INTERVAL:-10}
TYPES=${TYPES:-"memory goroutine"}
DURATION=${DURATION:-90}
WARMUP=${WARMUP:-$((INTERVAL + 5))}
CPU_HOLD=${CPU_HOLD:-1}
PORT=${PORT:-16060}
NAME=${NAME:-"${INTERVAL}s ${TYPES// /+}"}
NODE=bench-node
ntypes=$(wc -w <<<"$TYPES")
expect=$((TARGETS * ntypes))

PS_PID= STANDIN_PID=
cleanup() {
	cleanup_server
	for p in $PS_PID $STANDIN_PID; do
		kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true
	done
}
trap cleanup EXIT

# The targets.
hold=true
[ "$CPU_HOLD" = 1 ] || hold=false
start_pprofserve "$TMPD/scrape-pprofserve.out" "$TMPD/scrape-pprofserve.log" \
	-n "$TARGETS" -port "$PORT" -cpu-hold="$hold" -refresh "${REFRESH:-1s}"
CTL=$PS_CTL

# The Kubernetes API stand-in with one annotated pod per address.
TOKEN=bench-token
echo "$TOKEN" >"$TMPD/scrape-token"
node "$REPO/tests/k8s-standin/server.mjs" --token "$TOKEN" >"$TMPD/scrape-standin.out" 2>&1 &
STANDIN_PID=$!
API=
for _ in $(seq 1 100); do
	API=$(sed -n 's/^listening \([0-9]*\).*/\1/p' "$TMPD/scrape-standin.out")
	[ -n "$API" ] && break
	sleep 0.1
done
[ -n "$API" ] || die "k8s stand-in did not start"
node -e '
	const [api, n, port, node, types] = process.argv.slice(1);
	const addr = (i) => `127.1.${Math.floor(i / 250)}.${(i % 250) + 1}`;
	(async () => {
		for (let i = 0; i < +n; i++) {
			const annotations = {};
			for (const t of types.split(/\s+/).filter(Boolean)) {
				annotations[`profiles.kiln.dev/${t}.scrape`] = "true";
				annotations[`profiles.kiln.dev/${t}.port`] = port;
			}
			const w = `app-${i % 50}`;
			const r = await fetch(`http://127.0.0.1:${api}/control/pods`, { method: "POST", body: JSON.stringify({
				namespace: "bench", name: `${w}-7d4b9c-p${i}`, node, ip: addr(i), phase: "Running", annotations,
				labels: { app: w, "pod-template-hash": "7d4b9c" }, owner: { kind: "ReplicaSet", name: `${w}-7d4b9c` },
				containers: [{ name: "app", ports: [{ name: "http-metrics", containerPort: +port }] }] }) });
			if (r.status !== 200) throw new Error(`pod ${i}: ${r.status} ${await r.text()}`);
		}
	})().catch((e) => { console.error(e.message); process.exit(1); });' "$API" "$TARGETS" "$PORT" "$NODE" "$TYPES"

BENCH_CONFIG=$TMPD/scrape-config.yaml
cat >"$BENCH_CONFIG" <<YAML
limits: {samplesPerSecond: 1000000000}
receivers: {profiles: {scrape: {enabled: true, interval: ${INTERVAL}s}}}
kubernetes: {apiServer: "http://127.0.0.1:$API", tokenFile: "$TMPD/scrape-token", node: $NODE}
YAML

# metrics: the server's /metrics text; results_by FILE: "result count" per result, summed over types.
metrics() { curl -sf "http://127.0.0.1:$UI_PORT/metrics"; }
results_by() {
	awk '/^kiln_scrape_results_total\{/ { match($0, /result="[a-z0-9_]*"/); r = substr($0, RSTART + 8, RLENGTH - 9); s[r] += $2 }
		END { for (r in s) print r, s[r] }' "$1" | sort
}

wait_quiet
data=$TMPD/scrape-data
rm -rf "$data"
start_server "$data" "$TMPD/scrape.log"
for _ in $(seq 1 100); do
	n=$(metrics | awk '$1 == "kiln_scrape_targets" {print $2}')
	[ "$n" = "$expect" ] && break
	sleep 0.2
done
[ "$n" = "$expect" ] || die "kiln has $n scrape targets, expected $expect"
log "scrape $NAME: $TARGETS pods × ${ntypes} types = $expect targets; warm-up ${WARMUP}s, then ${DURATION}s measured"
sleep "$WARMUP"

metrics >"$TMPD/scrape-metrics0.txt"
tk0=$(cpu_ticks "$SERVER_PID")
gtk0=$(cpu_ticks "$PS_PID")
w0=$(date +%s%N)
read -r b0 t0 < <(proc_stat)
sleep "$DURATION"
read -r b1 t1 < <(proc_stat)
w1=$(date +%s%N)
tk1=$(cpu_ticks "$SERVER_PID")
gtk1=$(cpu_ticks "$PS_PID")
metrics >"$TMPD/scrape-metrics1.txt"
hwm=$(status_kib "$SERVER_PID" VmHWM)
rss=$(status_kib "$SERVER_PID" VmRSS)
curl -sf "http://127.0.0.1:$CTL/arrivals" -o "$TMPD/scrape-arrivals.txt" || die "arrivals"

if [ "${PERF:-0}" = 1 ]; then
	perf record -e cpu-clock -g -o "$TMPD/perf-scrape.data" -p "$SERVER_PID" -- sleep 20 2>/dev/null >&2 || true
	perf report -i "$TMPD/perf-scrape.data" --no-children --stdio --percent-limit 0.5 -g none \
		>"$TMPD/perf-scrape-flat.txt" 2>/dev/null || true
	perf report -i "$TMPD/perf-scrape.data" --children --stdio --percent-limit 2 -g none \
		>"$TMPD/perf-scrape-children.txt" 2>/dev/null || true
	log "perf: $TMPD/perf-scrape-flat.txt, $TMPD/perf-scrape-children.txt"
fi
curl -sf "http://127.0.0.1:$UI_PORT/api/targets" -o "$TMPD/scrape-targets.json" || true
stop_server || log "WARNING: kiln serve exited non-zero on SIGTERM"

# Results in the window (per result, all types).
results_by "$TMPD/scrape-metrics0.txt" >"$TMPD/scrape-r0.txt"
results_by "$TMPD/scrape-metrics1.txt" >"$TMPD/scrape-r1.txt"
join -a2 -e 0 -o 2.1,1.2,2.2 "$TMPD/scrape-r0.txt" "$TMPD/scrape-r1.txt" | awk '{print $1, $3 - $2}' >"$TMPD/scrape-rdelta.txt"
ok=$(awk '$1 == "ok" {print $2}' "$TMPD/scrape-rdelta.txt")
all=$(awk '{s += $2} END {print s + 0}' "$TMPD/scrape-rdelta.txt")
skipped=$(awk '$1 == "skipped_concurrency" {print $2}' "$TMPD/scrape-rdelta.txt")
notok=$(awk '$1 != "ok" && $2 > 0 {printf "%s%s=%d", sep, $1, $2; sep = " "}' "$TMPD/scrape-rdelta.txt")
log "scrape $NAME: results in the window: $(tr '\n' ' ' <"$TMPD/scrape-rdelta.txt")"
# ok_of FILE TYPE: the ok count of one type (for the decode weighting).
ok_of() {
	awk -v t="$2" '/^kiln_scrape_results_total\{/ && index($0, "type=\"" t "\"") && index($0, "result=\"ok\"") {print $2}' "$1"
}

# Decode cost of the same payloads (the first pod's), one thread.
dec_sum=0
dec_line=
for t in cpu memory goroutine; do
	case $t in cpu) p="profile?seconds=1" ;; memory) p=heap ;; goroutine) p=goroutine ;; esac
	curl -sf "http://127.1.0.1:$PORT/debug/pprof/$p" -o "$TMPD/scrape-payload-$t.pb" || die "payload $t"
	# CPU time (user + sys) ÷ iterations, not decode's own wall-clock µs: on
	# a busy machine the latter counts the time other processes ran.
	/usr/bin/time -f '%U %S' -o "$TMPD/scrape-decode-$t.time" \
		"$BENCH_BIN/decode" "$TMPD/scrape-payload-$t.pb" 2 >"$TMPD/scrape-decode-$t.json"
	us=$(awk -v it="$(json_get "$TMPD/scrape-decode-$t.json" 'j.iterations')" '{printf "%.1f", 1e6 * ($1 + $2) / it}' \
		"$TMPD/scrape-decode-$t.time")
	n=$(($(ok_of "$TMPD/scrape-metrics1.txt" $t) - $(ok_of "$TMPD/scrape-metrics0.txt" $t)))
	dec_sum=$(calc "$dec_sum + $n * $us")
	dec_line="$dec_line $t $(json_get "$TMPD/scrape-decode-$t.json" 'j.gz_bytes')B ${us}us;"
done
log "scrape: decode per payload (gz bytes, CPU µs):$dec_line"

# Lateness at the targets.
node -e '
	const fs = require("fs");
	const [file, ivS, w0, w1] = process.argv.slice(1);
	const iv = Number(ivS) * 1e9, from = Number(w0), until = Number(w1);
	const g = new Map();
	for (const l of fs.readFileSync(file, "utf8").split("\n")) {
		if (!l) continue;
		const [idx, t, ns] = l.split(" ");
		const k = idx + " " + t;
		if (!g.has(k)) g.set(k, []);
		g.get(k).push(Number(ns));
	}
	const lat = [];
	let missed = 0, pairs = 0, extra = 0;
	for (const a of g.values()) {
		a.sort((x, y) => x - y);
		const ks = a.map((x) => Math.round((x - a[0]) / iv));
		let phase = Infinity;
		a.forEach((x, i) => { phase = Math.min(phase, x - ks[i] * iv); });
		let prevK = null, seen = false;
		a.forEach((x, i) => {
			if (x < from || x > until) return;
			seen = true;
			lat.push((x - ks[i] * iv - phase) / 1e6);
			if (prevK !== null && ks[i] - prevK > 1) missed += ks[i] - prevK - 1;
			if (prevK !== null && ks[i] === prevK) extra++;
			prevK = ks[i];
		});
		if (seen) pairs++;
	}
	lat.sort((x, y) => x - y);
	const q = (p) => lat.length ? lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] : NaN;
	console.log(JSON.stringify({ requests: lat.length, pairs, p50_ms: q(0.5), p99_ms: q(0.99), max_ms: lat.length ? lat[lat.length - 1] : NaN, missed_rounds: missed, extra_requests: extra }));
' "$TMPD/scrape-arrivals.txt" "$INTERVAL" "$w0" "$w1" >"$TMPD/scrape-lateness.json"
log "scrape $NAME: lateness $(cat "$TMPD/scrape-lateness.json")"

secs=$(calc "($w1 - $w0) / 1e9")
cpu_s=$(calc "($tk1 - $tk0) / $(clk_tck)")
done_n=$((all - ${skipped:-0}))
per_ms=$(calc "1000 * $cpu_s / $done_n")
dec_ms=$(calc "$dec_sum / 1000 / $done_n")
excl_ms=$(calc "$per_ms - $dec_ms")
p99=$(json_get "$TMPD/scrape-lateness.json" 'j.p99_ms')
missed=$(json_get "$TMPD/scrape-lateness.json" 'j.missed_rounds')
expected_n=$(calc "$expect * $secs / $INTERVAL")
cmd="TARGETS=$TARGETS INTERVAL=$INTERVAL TYPES=\"$TYPES\" DURATION=$DURATION CPU_HOLD=$CPU_HOLD bench/scrape.sh"
log "scrape $NAME: kiln CPU ${cpu_s}s in ${secs}s ($(calc "100 * $cpu_s / $secs") % of a core), pprofserve CPU $(calc "($gtk1 - $gtk0) / $(clk_tck)")s, machine $(busy_pct "$b0" "$t0" "$b1" "$t1") % busy; VmRSS $rss KiB"
st_le() { awk -v v="$1" -v t="$2" -v u="$3" 'BEGIN { if (v <= t) print "met"; else printf "MISSED (%.3g%s)", v, u }'; }
result scrape "$NAME scrapes finished / expected" "$done_n / $(calc "int($expected_n)")" "-" "-" "$cmd; /metrics kiln_scrape_results_total over ${secs}s"
result scrape "$NAME results other than ok" "${notok:-none}" "none" "$([ -z "$notok" ] && echo met || echo MISSED)" "/metrics kiln_scrape_results_total"
result scrape "$NAME sensor CPU ms / scrape" "$per_ms" "-" "-" "$cmd; utime+stime /proc/PID/stat ÷ scrapes"
result scrape "$NAME CPU ms / scrape excl. decode" "$excl_ms" "<= 1" "$(st_le "$excl_ms" 1 ' ms')" "minus build/bench/decode µs of the payloads ($dec_ms ms/scrape)"
result scrape "$NAME lateness p50 / p99 / max ms" "$(json_get "$TMPD/scrape-lateness.json" '[j.p50_ms, j.p99_ms, j.max_ms].map((x) => x.toFixed(1)).join(" / ")')" "p99 < 1000" "$(st_le "$p99" 999.999 ' ms')" "arrival times at bench/go/pprofserve"
result scrape "$NAME rounds without a request" "$missed" "0" "$([ "$missed" = 0 ] && echo met || echo MISSED)" "gaps of 2+ intervals at the targets"
result scrape "$NAME peak RSS MiB (VmHWM)" "$(calc "$hwm / 1024")" "< 200" "$(st_le "$(calc "$hwm / 1024")" 199.999 ' MiB')" "grep VmHWM /proc/PID/status after the window"
