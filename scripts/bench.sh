#!/usr/bin/env bash
# `make bench`: end-to-end engine throughput on generated >= 1 GB models (f16 and q8_0, cached
# in $BUILD/bench-models/), then every other bench_* binary. Numbers: docs/performance.md.
# bench_engine and bench_kernels each end with a table of every figure as a share of its measured
# limit (compute peak of the kernel's instruction mix, or read bandwidth / bytes per token) with
# the issue-13 target and met / NOT MET.
set -euo pipefail
BUILD=${1:-build}
DUET="$BUILD/duet"
THREADS=${DUET_BENCH_THREADS:-2}
MODELS="$BUILD/bench-models"
mkdir -p "$MODELS"
for dtype in ${DUET_BENCH_DTYPES:-f16 q8_0}; do
    f="$MODELS/bench-1b-$dtype.gguf"
    if [ ! -f "$f" ]; then
        echo "== generating $f (once; cached)"
        "$DUET" gen-model --arch bench-1b --dtype "$dtype" --seed 1 -o "$f.tmp.gguf"
        mv "$f.tmp.gguf" "$f"
    fi
done
echo "== engine: prefill 512 tokens, decode 128 tokens, $THREADS threads"
args=()
for dtype in ${DUET_BENCH_DTYPES:-f16 q8_0}; do args+=("$MODELS/bench-1b-$dtype.gguf"); done
"$BUILD/bench_engine" --threads "$THREADS" --prompt 512 --gen 128 "${args[@]}"
# Every other benchmark binary of the build (kernels, hardware models, ...).
find "$BUILD" -type f -name 'bench_*' -perm -u+x ! -name bench_engine ! -path '*/CMakeFiles/*' | sort |
    while read -r b; do
        echo "== $(basename "$b")"
        "$b"
    done
# The serving simulator at scale: 10 000 requests of llama2-7b through the shared scheduler on the
# modelled 1 NPU + 1 PIM, both placements (docs/serving.md; the issue's target: under 10 s on one core).
echo "== serving: 10 000 requests, llama2-7b, Poisson 8 req/s, prompt 512, output 128"
start=$(date +%s.%N)
"$DUET" --log-level warn bench --workload serving --model llama2-7b --requests 10000 --rate 8 --seed 1 \
    --seq-len 512 --gen-len 128 --no-verdict-exit | tail -n 1
end=$(date +%s.%N)
echo "serving 10k: $(echo "$end - $start" | bc) s wall (one process, one thread)"
