#!/usr/bin/env bash
# Replays each fuzz target's corpus (tests/fuzz/corpus/<name>/) through its
# replay binary built by the Makefile into DIR, so a fixed crash stays fixed.
# Prints one line CI can read:  fuzz-replay: N targets, M inputs, ok
set -u
cd "$(dirname "$0")/.."
dir=${1:?usage: run-fuzz-replay.sh BUILD_DIR}
# Leaks inside third-party libraries we cannot fix (see the file) are not failures.
export LSAN_OPTIONS="suppressions=$PWD/tests/fuzz/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
targets=0 inputs=0 failed=()
for bin in "$dir"/*; do
  [ -x "$bin" ] && [ -f "$bin" ] || continue
  name=$(basename "$bin")
  corpus=tests/fuzz/corpus/$name
  if [ ! -d "$corpus" ]; then
    echo "fuzz-replay: $name has no corpus at $corpus"; failed+=("$name"); continue
  fi
  out=$("$bin" "$corpus" 2>&1); rc=$?
  if [ $rc -ne 0 ]; then
    printf '%s\n' "$out"; failed+=("$name"); continue
  fi
  n=$(printf '%s\n' "$out" | sed -n 's/^replay: \([0-9]*\) inputs$/\1/p' | tail -1)
  targets=$((targets + 1)); inputs=$((inputs + ${n:-0}))
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz-replay: failing targets: ${failed[*]}"; exit 1
fi
echo "fuzz-replay: $targets targets, $inputs inputs, ok"
