#!/usr/bin/env bash
# `make bench`: end-to-end engine throughput on generated >= 1 GB models (f16 and q8_0, cached
# in $BUILD/bench-models/), then every other bench_* binary. bench_engine and bench_kernels each
# end with a table of every figure as a share of its measured limit (compute peak of the kernel's
# instruction mix, or read bandwidth / bytes per token) with its target and met / NOT MET.
# Every run's figures are appended to bench/results/make-bench.jsonl (scripts/bench_record.py:
# date, commit, machine, command, figure, value, unit) and the tables of docs/performance.md are
# redrawn from bench/results/ (scripts/perf_tables.py). DUET_BENCH_RECORD=0 records nothing.
set -euo pipefail
BUILD=${1:-build}
DUET="$BUILD/duet"
THREADS=${DUET_BENCH_THREADS:-2}
MODELS="$BUILD/bench-models"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RESULTS=${DUET_BENCH_RESULTS:-$ROOT/bench/results/make-bench.jsonl}
RECORD=${DUET_BENCH_RECORD:-1}
LOGS="$BUILD/bench-logs"
mkdir -p "$MODELS" "$LOGS"

# run NAME CMD...: runs a benchmark, keeps its output in $LOGS/NAME.log and records its figures.
run() {
    local name=$1; shift
    local log="$LOGS/$name.log" json=() shown
    shown=$(printf '%q ' "$@"); shown=${shown% }
    shown=${shown//"$BUILD/"/build/}
    if ldd "$1" 2>/dev/null | grep -q libbenchmark; then  # a Google Benchmark program
        json=(--gbench-json "$LOGS/$name.json")
        "$@" --benchmark_out="$LOGS/$name.json" --benchmark_out_format=json | tee "$log"
    else
        "$@" | tee "$log"
    fi
    if [ "$RECORD" != 0 ]; then
        /usr/bin/python3 "$ROOT/scripts/bench_record.py" --results "$RESULTS" --program "$name" \
            --command "$shown" --log "$log" "${json[@]}"
    fi
}

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
run bench_engine "$BUILD/bench_engine" --threads "$THREADS" --prompt 512 --gen 128 "${args[@]}"
# Every other benchmark binary of the build (kernels, hardware models, ...).
find "$BUILD" -type f -name 'bench_*' -perm -u+x ! -name bench_engine ! -path '*/CMakeFiles/*' | sort |
    while read -r b; do
        echo "== $(basename "$b")"
        run "$(basename "$b")" "$b"
    done
# The serving simulator at scale (docs/serving.md "Speed"; the issue's targets: 10 000 requests of
# llama2-7b on 1 NPU + 1 PIM under 10 s, of llama2-70b at TP 8 under 30 s, one core), both placements.
serving_speed() {
    local name=$1; shift
    local start end
    start=$(date +%s%N)
    "$DUET" --log-level warn bench --workload serving --requests 10000 --seed 1 --no-verdict-exit "$@" | tail -n 1
    end=$(date +%s%N)
    echo "$name: $(( (end - start) / 1000000 )) ms wall (one process, one thread)"
}
echo "== serving: 10 000 requests, llama2-7b, Poisson 8 req/s, prompt 512, output 128"
serving_speed "serving 10k 7b" --model llama2-7b --rate 8 --seq-len 512 --gen-len 128
echo "== serving: 10 000 requests, llama2-70b, TP 8 on 8 NPUs + 8 PIM, Poisson 2 req/s"
serving_speed "serving 10k 70b tp8" --model llama2-70b --tp 8 --npus 8 --pims 8 --rate 2
if [ "$RECORD" != 0 ]; then
    /usr/bin/python3 "$ROOT/scripts/perf_tables.py" update "$ROOT/docs/performance.md"
fi
