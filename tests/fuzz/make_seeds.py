#!/usr/bin/env python3
"""Writes the hand-made seed corpora of tests/fuzz/corpus/<target>/ for the
targets named on the command line (default: all that this script knows).
Seeds are small and deterministic; rerunning rewrites the same files. Inputs
that libFuzzer found (crash-*, merged ones) are not touched."""
import gzip
import os
import subprocess
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def zstd(data):
    return subprocess.run(["zstd", "-q", "-c", "-3"], input=data, stdout=subprocess.PIPE, check=True).stdout


def raw_deflate(data):
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def gz(data):
    return gzip.compress(data, mtime=0)


# ---- decompress: first byte = encoding index (high bit: small ceiling) ----
# 0 gzip, 1 x-gzip, 2 zstd, 3 deflate, 4 identity, 5 "", 6 GZip, 7 br
def seeds_decompress():
    text = b"kiln fuzz seed: " + b"main.fib;runtime.main " * 20
    bomb = b"\0" * (2 << 20)  # passes the target's 1 MiB ceiling
    write("decompress", "seed-gzip", bytes([0]) + gz(text))
    write("decompress", "seed-gzip-two-members", bytes([1]) + gz(text[:40]) + gz(text[40:]))
    write("decompress", "seed-gzip-truncated", bytes([0]) + gz(text)[:-6])
    write("decompress", "seed-gzip-bomb", bytes([0]) + gz(bomb))
    write("decompress", "seed-zstd", bytes([2]) + zstd(text))
    write("decompress", "seed-zstd-two-frames", bytes([2]) + zstd(text[:40]) + zstd(text[40:]))
    write("decompress", "seed-zstd-bomb", bytes([2]) + zstd(bomb))
    write("decompress", "seed-zlib", bytes([3]) + zlib.compress(text))
    write("decompress", "seed-raw-deflate", bytes([3]) + raw_deflate(text))
    write("decompress", "seed-zlib-small-ceiling", bytes([0x83]) + zlib.compress(text * 4))
    write("decompress", "seed-identity", bytes([4]) + text)
    write("decompress", "seed-unsupported", bytes([7]) + text)


SEEDS = {name[len("seeds_"):]: fn for name, fn in list(globals().items()) if name.startswith("seeds_")}

if __name__ == "__main__":
    for t in sys.argv[1:] or sorted(SEEDS):
        SEEDS[t]()
