#!/usr/bin/env bash
# `make bench`: microbenchmarks and end-to-end throughput; numbers go to docs/performance.md.
set -euo pipefail
BUILD=${1:-build}
for b in "$BUILD"/bench_*; do
    [ -x "$b" ] || continue
    echo "== $(basename "$b")"
    "$b"
done
