#!/usr/bin/env bash
# `make fuzz`: builds the GGUF reader's libFuzzer target with clang + ASan + UBSan in
# build-fuzz/, writes a seed corpus of small generated GGUF files, and fuzzes for
# FUZZ_SECONDS (default 60). Exits non-zero when the fuzzer finds a crash, a sanitizer
# report, a leak or a timeout; the input that caused it is left in build-fuzz/crash-* etc.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${FUZZ_BUILD:-build-fuzz}
SECONDS_TO_RUN=${FUZZ_SECONDS:-60}

if ! command -v clang++ >/dev/null; then
    echo "fuzz: clang++ not found (scripts/install-deps.sh installs clang and libclang-rt-14-dev)" >&2
    exit 1
fi

# Only the two fuzz targets are built (src/format/CMakeLists.txt adds tests/fuzz when the
# test suite is off).
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DDUET_FUZZ=ON -DDUET_BUILD_TESTS=OFF -DDUET_BUILD_BENCH=OFF \
    -DDUET_SANITIZE=address,undefined \
    -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined" \
    -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined" >/dev/null
cmake --build "$BUILD" -j2 --target gguf_fuzz gguf_fuzz_seeds

CORPUS="$BUILD/fuzz-corpus"
rm -rf "$CORPUS"
mkdir -p "$CORPUS/seeds" "$CORPUS/work"
"$BUILD/gguf_fuzz_seeds" "$CORPUS/seeds"
echo "fuzz: seed corpus: $(ls "$CORPUS/seeds" | wc -l) files, $(du -sk "$CORPUS/seeds" | cut -f1) KB"

export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:allocator_may_return_null=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
"$BUILD/gguf_fuzz" -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
    -dict=tests/fuzz/gguf.dict -artifact_prefix="$BUILD/" -print_final_stats=1 -print_funcs=0 \
    "$CORPUS/work" "$CORPUS/seeds"
echo "fuzz: no crash in ${SECONDS_TO_RUN} s"
