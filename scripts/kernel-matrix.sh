#!/usr/bin/env bash
# Builds and runs kernels_test for every compiler x build type x sanitizer (issue 14: the
# reference kernels must give the same numbers whatever the flags). One build directory per
# combination under build-matrix/; only the kernels_test target is built.
#   MATRIX_COMPILERS   default "gcc clang"
#   MATRIX_TYPES       default "Debug Release RelWithDebInfo MinSizeRel"
#   MATRIX_SANITIZERS  default "none address undefined thread"
# Prints one line per combination and exits non-zero when any failed to build or pass.
set -uo pipefail
cd "$(dirname "$0")/.."
COMPILERS=${MATRIX_COMPILERS:-gcc clang}
TYPES=${MATRIX_TYPES:-Debug Release RelWithDebInfo MinSizeRel}
SANITIZERS=${MATRIX_SANITIZERS:-none address undefined thread}
JOBS=${JOBS:-$(nproc)}
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1

failed=0
for cc in $COMPILERS; do
    case "$cc" in
        gcc) c=gcc cxx=g++ ;;
        clang) c=clang cxx=clang++ ;;
        *) echo "kernel-matrix: unknown compiler '$cc' (allowed: gcc, clang)" >&2; exit 2 ;;
    esac
    for type in $TYPES; do
        for san in $SANITIZERS; do
            dir="build-matrix/$cc-$type-$san"
            flags=()
            if [ "$san" != none ]; then
                flags=(-DDUET_SANITIZE="$san" -DCMAKE_CXX_FLAGS=-fno-sanitize-recover=undefined)
            fi
            log="$dir.log"
            mkdir -p build-matrix
            if cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" -DCMAKE_C_COMPILER="$c" \
                   -DCMAKE_CXX_COMPILER="$cxx" -DDUET_BUILD_BENCH=OFF "${flags[@]}" >"$log" 2>&1 &&
               cmake --build "$dir" -j "$JOBS" --target kernels_test >>"$log" 2>&1; then
                if "$dir/tests/kernels/kernels_test" --gtest_brief=1 >>"$log" 2>&1; then
                    echo "kernel-matrix: $cc $type $san: pass"
                else
                    echo "kernel-matrix: $cc $type $san: FAIL (see $log)"
                    failed=1
                fi
            else
                echo "kernel-matrix: $cc $type $san: BUILD FAILED (see $log)"
                failed=1
            fi
        done
    done
done
exit $failed
