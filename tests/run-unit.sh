#!/usr/bin/env bash
# Runs every unit-test program; prints one summary line CI can read:
#   unit: N programs, P passed, F failed
set -u
cd "$(dirname "$0")/.."
export KILN_TESTDATA="${KILN_TESTDATA:-$(pwd)/tests/data}"
pass=0 fail=0 failed=()
for t in "$@"; do
  out=$("$t" 2>&1); rc=$?
  p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
  f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
  pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0}))
  if [ $rc -ne 0 ]; then
    failed+=("$t"); printf '%s\n' "$out" | grep -v '^\[       OK \]\|^\[ RUN      \]'
    [ -z "$f" ] && fail=$((fail + 1))
  fi
done
echo "unit: $# programs, $pass tests passed, $fail failed"
[ ${#failed[@]} -eq 0 ] || { echo "unit: failing programs: ${failed[*]}"; exit 1; }
