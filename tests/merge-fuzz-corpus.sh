#!/usr/bin/env bash
# Merges what `make fuzz` found (build-fuzz/corpus/<name>/) back into the
# committed corpus tests/fuzz/corpus/<name>/: libFuzzer's -merge=1 keeps only
# inputs that add coverage to what is committed; the smallest are taken while
# the corpus stays within MAX_FILES (200) files and MAX_KB (2048) KiB.
# Usage: tests/merge-fuzz-corpus.sh NAME...  (binaries from run-fuzz.sh)
set -eu
cd "$(dirname "$0")/.."
max_files=${MAX_FILES:-200} max_kb=${MAX_KB:-2048}
for name in "$@"; do
  dst=tests/fuzz/corpus/$name tmp=build-fuzz/merge/$name
  rm -rf "$tmp" && mkdir -p "$tmp/out"
  cp "$dst"/* "$tmp/out/"
  build-fuzz/"$name" -merge=1 -rss_limit_mb=2048 -timeout=10 "$tmp/out" "build-fuzz/corpus/$name" >"$tmp/log" 2>&1
  added=0
  for f in $(cd "$tmp/out" && ls -S -r); do
    [ -e "$dst/$f" ] && continue
    [ "$(ls "$dst" | wc -l)" -lt "$max_files" ] || break
    [ $(( $(du -sk "$dst" | cut -f1) + $(du -k "$tmp/out/$f" | cut -f1) )) -le "$max_kb" ] || break
    cp "$tmp/out/$f" "$dst/" && added=$((added + 1))
  done
  echo "merge: $name +$added inputs, now $(ls "$dst" | wc -l) files, $(du -sk "$dst" | cut -f1) KiB"
done
