#!/usr/bin/env python3
"""Picks at most MAX files (default 200) of a corpus for committing, when
libFuzzer's -merge=1 wants more than that: the hand-made seeds and crash
reproductions (seed-*, crash-*) always, then a greedy set cover of the
features and edges in the merge's control file (most new ones first, the
smaller file on a tie). tests/merge-fuzz-corpus.sh keeps the smallest
files instead, which loses more coverage when the cut is deep.

  build-fuzz/NAME -merge=1 -merge_control_file=CTL EMPTY_DIR ALL_DIR
  python3 tests/fuzz/cover_pick.py CTL OUT_DIR [MAX]
"""
import os
import shutil
import sys


def main():
    ctl, out = sys.argv[1], sys.argv[2]
    most = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    lines = open(ctl).read().split("\n")
    n = int(lines[0])
    files = lines[2:2 + n]
    feats = {i: set() for i in range(n)}
    for line in lines[2 + n:]:
        p = line.split()
        if p and p[0] in ("FT", "COV"):
            feats[int(p[1])] |= {(p[0], int(x)) for x in p[2:]}
    size = {i: os.path.getsize(f) for i, f in enumerate(files)}
    keep, names, seen = [], set(), set()
    for i, f in enumerate(files):
        b = os.path.basename(f)
        if b.startswith(("seed-", "crash-")) and b not in names:
            names.add(b)
            keep.append(i)
            seen |= feats[i]
    rest = set(range(n)) - set(keep)
    while len(keep) < most and rest:
        best = max(rest, key=lambda i: (len(feats[i] - seen), -size[i]))
        if not feats[best] - seen:
            break
        keep.append(best)
        seen |= feats[best]
        rest.discard(best)
    everything = set().union(*feats.values())
    os.makedirs(out, exist_ok=True)
    for i in keep:
        shutil.copy(files[i], out)
    edges = sum(1 for k, _ in seen if k == "COV")
    print("cover_pick: %d files, %d of %d edges, %d of %d features+edges" %
          (len(keep), edges, sum(1 for k, _ in everything if k == "COV"), len(seen), len(everything)))


if __name__ == "__main__":
    main()
