#!/usr/bin/env bash
# Builds every tests/fuzz/<name>.c with libFuzzer (clang, ASan + UBSan) into
# build-fuzz/ and runs it for SECONDS on a copy of tests/fuzz/corpus/<name>/.
# New inputs stay in build-fuzz/corpus/<name>/ (merge them back by hand with
# -merge=1 after minimizing); crashes land in build-fuzz/crashes/<name>/.
set -eu
cd "$(dirname "$0")/.."
secs=${1:-60}
CC=${FUZZ_CC:-clang}
FLAGS="-g -O1 -std=c11 -D_GNU_SOURCE -Isrc -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"
PKGS="libevent libevent_pthreads libevent_openssl libnghttp2 libcurl sqlite3 libdeflate libzstd jansson libfyaml libxxhash openssl"
out=build-fuzz
mkdir -p "$out/obj"
# Every library module as an archive (only what a target uses is linked),
# with sanitizers and fuzzer instrumentation.
objs=()
for f in $(ls src/*/*.c | grep -v '^src/cli/main.c$'); do
  o="$out/obj/$(echo "$f" | tr / _).o"
  $CC ${FLAGS/fuzzer,/fuzzer-no-link,} $(pkg-config --cflags $PKGS 2>/dev/null) -c "$f" -o "$o"
  objs+=("$o")
done
rm -f "$out/libfuzzlib.a"
ar rcs "$out/libfuzzlib.a" "${objs[@]}"
status=0
for src in tests/fuzz/*.c; do
  name=$(basename "$src" .c)
  [ "$name" = replay_main ] && continue
  $CC $FLAGS -o "$out/$name" "$src" "$out/libfuzzlib.a" $(pkg-config --libs $PKGS 2>/dev/null) -lm -pthread
  mkdir -p "$out/corpus/$name" "$out/crashes/$name"
  [ -d "tests/fuzz/corpus/$name" ] && cp -n tests/fuzz/corpus/"$name"/* "$out/corpus/$name/" 2>/dev/null || true
  echo "fuzz: $name for ${secs}s"
  if ! "$out/$name" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
      -artifact_prefix="$out/crashes/$name/" -print_final_stats=1 "$out/corpus/$name"; then
    echo "fuzz: $name found a crash: see $out/crashes/$name/"; status=1
  fi
done
exit $status
