#!/usr/bin/env bash
# Builds every tests/fuzz/<name>.c (or only FUZZ_TARGETS="a b") with libFuzzer
# (clang, ASan + UBSan) into build-fuzz/ and runs each for SECONDS on a copy
# of tests/fuzz/corpus/<name>/, one after the other. SECONDS=0 only builds.
# New inputs stay in build-fuzz/corpus/<name>/ (merge them back by hand with
# -merge=1 after minimizing); crashes land in build-fuzz/crashes/<name>/; the
# run's log (final stats: execs, cov, ft) in build-fuzz/logs/<name>.log.
set -eu
cd "$(dirname "$0")/.."
secs=${1:-60}
CC=${FUZZ_CC:-clang}
FLAGS="-g -O1 -std=c11 -D_GNU_SOURCE -Isrc -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"
PKGS="libevent libevent_pthreads libevent_openssl libnghttp2 libcurl sqlite3 libdeflate libzstd jansson libfyaml libxxhash openssl"
out=build-fuzz
# Leaks inside third-party libraries we cannot fix (see the file) are not failures.
export LSAN_OPTIONS="suppressions=$PWD/tests/fuzz/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
mkdir -p "$out/obj" "$out/logs"
# Every library module as an archive (only what a target uses is linked),
# with sanitizers and fuzzer instrumentation; rebuilt only when changed.
objs=()
for f in $(ls src/*/*.c | grep -v '^src/cli/main.c$'); do
  o="$out/obj/$(echo "$f" | tr / _).o"
  if [ ! -f "$o" ] || [ -n "$(find src -name '*.[ch]' -newer "$o" | head -1)" ]; then
    $CC ${FLAGS/fuzzer,/fuzzer-no-link,} $(pkg-config --cflags $PKGS 2>/dev/null) -c "$f" -o "$o"
  fi
  objs+=("$o")
done
rm -f "$out/libfuzzlib.a"
ar rcs "$out/libfuzzlib.a" "${objs[@]}"
targets=${FUZZ_TARGETS:-$(ls tests/fuzz/*.c | xargs -n1 basename | sed 's/\.c$//' | grep -v '^replay_main$')}
status=0
for name in $targets; do
  $CC $FLAGS -o "$out/$name" "tests/fuzz/$name.c" "$out/libfuzzlib.a" $(pkg-config --libs $PKGS 2>/dev/null) -lm -pthread
  [ "$secs" -gt 0 ] || continue
  mkdir -p "$out/corpus/$name" "$out/crashes/$name"
  [ -d "tests/fuzz/corpus/$name" ] && cp -n tests/fuzz/corpus/"$name"/* "$out/corpus/$name/" 2>/dev/null || true
  echo "fuzz: $name for ${secs}s"
  rc=0
  "$out/$name" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
    -artifact_prefix="$out/crashes/$name/" -print_final_stats=1 "$out/corpus/$name" \
    >"$out/logs/$name.log" 2>&1 || rc=$?
  grep -aE '^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::average_exec_per_sec|SUMMARY)' "$out/logs/$name.log" || true
  if [ $rc -ne 0 ]; then
    echo "fuzz: $name found a crash: see $out/crashes/$name/ and $out/logs/$name.log"; status=1
  fi
done
exit $status
