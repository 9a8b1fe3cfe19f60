#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer targets of tests/fuzz with clang + ASan + UBSan in build-fuzz/
# and runs each for FUZZ_SECONDS (default 25) from its seed corpus:
#   gguf_fuzz                the GGUF reader (seeds: small generated GGUF files)
#   completion_request_fuzz  POST /v1/chat/completions and /v1/completions bodies
#   config_fuzz              settings.json / config.toml with DUET_* environment overrides
#   tokenizer_fuzz           SPM and BPE tokenizers of generated models: round trip, decode
#   task_payload_fuzz        POST /v1/tasks bodies through the task service and its store
#   json_schema_fuzz         JSON Schema -> grammar compilation and a budgeted walk of the grammar
#   grammar_fuzz             the grammar text parser and a budgeted walk of the matcher
#   request_json_fuzz        request heads (HTTP front) and deep/large chat bodies through the JSON
#                            budget, the parser and the tool renderer (depth/size-heavy dictionary)
# FUZZ_TARGETS="a b" picks targets. Exits non-zero at the first target that finds a crash, a
# sanitizer report, a leak, an unexpected exception (the targets abort) or a timeout; the input
# is left in build-fuzz/<target>-crash-* etc. Reproduce with: build-fuzz/<target> <that file>.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${FUZZ_BUILD:-build-fuzz}
SECONDS_TO_RUN=${FUZZ_SECONDS:-25}
TARGETS=${FUZZ_TARGETS:-gguf_fuzz completion_request_fuzz config_fuzz tokenizer_fuzz task_payload_fuzz request_json_fuzz json_schema_fuzz grammar_fuzz}
JOBS=${JOBS:-$(nproc)}

if ! command -v clang++ >/dev/null; then
    echo "fuzz: clang++ not found (scripts/install-deps.sh installs clang and libclang-rt-14-dev)" >&2
    exit 1
fi

# Only the fuzz targets are built (src/format/CMakeLists.txt adds tests/fuzz when the test
# suite is off).
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DDUET_FUZZ=ON -DDUET_BUILD_TESTS=OFF -DDUET_BUILD_BENCH=OFF \
    -DDUET_SANITIZE=address,undefined \
    -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined" \
    -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined" >/dev/null
build_targets=($TARGETS)
[[ " $TARGETS " == *" gguf_fuzz "* ]] && build_targets+=(gguf_fuzz_seeds)
cmake --build "$BUILD" -j "$JOBS" --target "${build_targets[@]}"

export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:allocator_may_return_null=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# Scratch files of the config, tokenizer and task targets: in memory when /dev/shm exists.
SCRATCH=$(mktemp -d "$( [ -d /dev/shm ] && echo /dev/shm || echo /tmp )/duet-fuzz.XXXXXX")
trap 'rm -rf "$SCRATCH"' EXIT
export TMPDIR=$SCRATCH

for target in $TARGETS; do
    name=${target%_fuzz}
    corpus="$BUILD/fuzz-corpus/$name"
    rm -rf "$corpus"
    mkdir -p "$corpus/seeds" "$corpus/work"
    dict=()
    case "$name" in
        gguf) "$BUILD/gguf_fuzz_seeds" "$corpus/seeds"; dict=(-dict=tests/fuzz/gguf.dict) ;;
        completion_request|task_payload) cp tests/fuzz/corpus/"$name"/* "$corpus/seeds/"; dict=(-dict=tests/fuzz/json.dict) ;;
        json_schema|grammar) cp tests/fuzz/corpus/"$name"/* "$corpus/seeds/"; dict=(-dict=tests/fuzz/"$name".dict) ;;
        request_json) cp tests/fuzz/corpus/"$name"/* "$corpus/seeds/"; dict=(-dict=tests/fuzz/request_depth.dict) ;;
        *) cp tests/fuzz/corpus/"$name"/* "$corpus/seeds/" ;;
    esac
    echo "fuzz: $target: $(ls "$corpus/seeds" | wc -l) seeds, ${SECONDS_TO_RUN} s"
    log="$BUILD/$target.log"
    status=0
    "$BUILD/$target" -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
        "${dict[@]}" -artifact_prefix="$BUILD/$target-" -print_final_stats=1 -print_funcs=0 \
        "$corpus/work" "$corpus/seeds" >"$log" 2>&1 || status=$?
    # the progress lines are noise in CI; keep the summary and any report
    grep -vE "^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse|INITED)|^INFO:|# Uses: [0-9]+$|recommended dictionary|Recommended dictionary" "$log" | tail -n 60 || true
    if [ "$status" -ne 0 ]; then
        echo "fuzz: $target FAILED (exit $status); input in $BUILD/$target-*" >&2
        exit "$status"
    fi
done
echo "fuzz: no crash in ${SECONDS_TO_RUN} s for each of: $TARGETS"
