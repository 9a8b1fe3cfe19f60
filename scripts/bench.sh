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
# The serving simulator at scale: 10 000 requests of llama2-7b through the shared scheduler on the
# modelled 1 NPU + 1 PIM, both placements (docs/serving.md; the issue's target: under 10 s on one core).
echo "== serving: 10 000 requests, llama2-7b, Poisson 8 req/s, prompt 512, output 128"
start=$(date +%s%N)
"$DUET" --log-level warn bench --workload serving --model llama2-7b --requests 10000 --rate 8 --seed 1 \
    --seq-len 512 --gen-len 128 --no-verdict-exit | tail -n 1
end=$(date +%s%N)
echo "serving 10k: $(( (end - start) / 1000000 )) ms wall (one process, one thread)"
if [ "$RECORD" != 0 ]; then
    /usr/bin/python3 "$ROOT/scripts/perf_tables.py" update "$ROOT/docs/performance.md"
fi
