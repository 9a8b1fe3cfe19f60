#!/usr/bin/env bash
# `make sanitize` / `make sanitize-thread` (docs/testing.md "Sanitizers, fuzzers, soak").
#
#   scripts/sanitize.sh address   the whole test suite built with GCC, -O1 -g1 (line tables
#                                 for the reports' stacks), -fsanitize=address,undefined
#                                 -fno-sanitize-recover=undefined in build-asan/, then ctest.
#                                 Any ASan, LSan or UBSan report fails the test that triggered it
#                                 (the report is in its log).
#   scripts/sanitize.sh address-ci  the same build, only the lower layers' unit tests (CI)
#   scripts/sanitize.sh thread    the server and runtime tests (and the `duet` binary they start)
#                                 built with -fsanitize=thread in build-tsan/, then those tests;
#                                 races inside Debian's uninstrumented cpp-httplib are suppressed
#                                 (tests/sanitize/tsan.supp says why).
#
# GCC on purpose: issue 14 was a GCC + UBSan miscompile that clang does not have; this build is
# the one that caught it. Environment:
#   SANITIZE_BUILD   build directory (default build-asan / build-tsan)
#   SANITIZE_LABELS  ctest -L regex (default: every label); SANITIZE_EXCLUDE  ctest -LE regex
#                    (default "slow|soak": the soak tests check RSS, which ASan's quarantine inflates;
#                    they run unsanitised in `make soak-ci`)
#   JOBS             parallel build and test jobs (default: nproc)
#   SANITIZE_BUILD_TIMEOUT  address mode only: seconds the whole suite's build may take. Past it
#                    (a cold ccache on a new machine) the build stops and the address-ci subset
#                    is built and run instead, and the script says so. CI sets it from its
#                    remaining budget (.ci/run); unset: no limit.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-address}
JOBS=${JOBS:-$(nproc)}
EXCLUDE=${SANITIZE_EXCLUDE-slow|soak}

case "$MODE" in
    address)
        BUILD=${SANITIZE_BUILD:-build-asan}
        SAN=address,undefined
        TARGETS=(all)
        TEST_REGEX=""
        ;;
    address-ci)
        # CI's share of the budget: the lower layers' unit tests (kernels with issue 14's GCC +
        # UBSan case, tensors and quantisers, GGUF, the model graph and its memory plan). `make
        # sanitize` runs the whole suite, the engine, the CLI and server processes included.
        BUILD=${SANITIZE_BUILD:-build-asan}
        SAN=address,undefined
        TARGETS=(kernels_test core_test format_test graph_test)
        TEST_REGEX="^($(IFS='|'; echo "${TARGETS[*]}"))$"
        ;;
    thread)
        BUILD=${SANITIZE_BUILD:-build-tsan}
        SAN=thread
        # The code with threads of its own: the pool, the batcher's engine thread, the HTTP
        # front's event thread and workers, the task worker. The test executables start the
        # sanitised `duet`. Of the hostile-client cases, those that drive the front's threads
        # (slow, idle and flooding clients, refusals, a client leaving a running request); not
        # the single-threaded ones (nesting, special tokens, the store lock) nor the schema that
        # compiles for seconds (75 s under TSan): a negative gtest filter, which names only those.
        TARGETS=(duet core_test server_unit_test server_http_test server_hostile_test runtime_kv_cache_test
                 runtime_batcher_test)
        TEST_REGEX="^(core_test|server_unit_test|server_http_test|server_hostile_test|runtime_kv_cache_test|runtime_batcher_test)$"
        export GTEST_FILTER=${GTEST_FILTER:-"-HostileClient.DeepNesting*:HostileClient.ForgedControlTokens*:HostileClient.ASecondServer*:HostileClient.SchemaCompilation*"}
        ;;
    *)
        echo "sanitize: unknown mode '$MODE' (allowed: address, address-ci, thread)" >&2
        exit 2
        ;;
esac

# CPU seconds (user + sys) of the finished child processes so far: unlike the wall time it does
# not depend on how loaded the machine is, so it is the number to budget CI with (2 cores: an
# idle machine's wall time is about CPU / 2 for the build).
cpu_s() {  # cpu_s VAR: sets VAR (not $(cpu_s): a subshell would see only its own children)
    local f u s
    f=$(mktemp)
    times >"$f"  # a builtin with a redirection runs in this shell
    { read -r _; read -r u s; } <"$f"
    rm -f "$f"
    printf -v "$1" '%d' "$(awk -v u="$u" -v s="$s" 'function sec(t, m) { split(t, m, /[ms]/); return m[1] * 60 + m[2] }
                                                  BEGIN { printf "%d", sec(u) + sec(s) + 0.5 }')"
}

start=$(date +%s)
# -O1 -g1: the optimisation ASan recommends and line tables only (file:line in every report's
# stack); about half the compile time of RelWithDebInfo's -O2 -g.
flags="-O1 -g1 -fno-sanitize-recover=undefined"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=None -DDUET_BUILD_BENCH=OFF \
    -DDUET_SANITIZE="$SAN" -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" >/dev/null
if [ "$MODE" = address ] && [ -n "${SANITIZE_BUILD_TIMEOUT:-}" ]; then
    build_status=0
    timeout -s INT "$SANITIZE_BUILD_TIMEOUT" cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]}" || build_status=$?
    if [ "$build_status" -eq 124 ]; then
        TARGETS=(kernels_test core_test format_test graph_test)
        TEST_REGEX="^($(IFS='|'; echo "${TARGETS[*]}"))$"
        echo "sanitize: WARNING: the whole suite's ASan build did not finish in ${SANITIZE_BUILD_TIMEOUT} s" \
             "(cold ccache); running only the address-ci subset: ${TARGETS[*]}"
        cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]}"
    elif [ "$build_status" -ne 0 ]; then
        exit "$build_status"
    fi
else
    cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]}"
fi
built=$(date +%s)
cpu_s built_cpu

# Reports abort the process (non-zero exit = failed test) and name the source line.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/sanitize/tsan.supp}
# Open MPI's own allocations, held until exit by design (tests/sanitize/lsan.supp says why).
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/sanitize/lsan.supp:print_suppressions=0}

# Test jobs: twice the cores by default. The sanitised suite waits more than it computes (the
# whole ASan suite measured 2062 s wall for 870 s CPU at -j 2: processes starting the 170 MB
# instrumented binary, servers and mpirun waiting for each other).
TEST_JOBS=${SANITIZE_TEST_JOBS:-$((JOBS * 2))}
ctest_args=(--output-on-failure -j "$TEST_JOBS" --timeout 1800)
[ -n "${SANITIZE_LABELS:-}" ] && ctest_args+=(-L "$SANITIZE_LABELS")
[ -n "$EXCLUDE" ] && ctest_args+=(-LE "$EXCLUDE")
[ -n "$TEST_REGEX" ] && ctest_args+=(-R "$TEST_REGEX")

# TSan needs its fixed shadow layout: kernels with vm.mmap_rnd_bits above 28 (Ubuntu 23.10+
# defaults to 32) place mappings inside it and TSan aborts with "unexpected memory mapping".
# setarch -R turns address randomisation off for the tests and every process they start.
runner=()
if [ "$MODE" = thread ] && [ "$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 0)" -gt 28 ]; then
    runner=(setarch "$(uname -m)" -R)
    echo "sanitize: vm.mmap_rnd_bits > 28: running the TSan tests under setarch -R"
fi

status=0
if [ "$MODE" = address ] && [ -z "$TEST_REGEX" ]; then
    # The tests that start Open MPI run apart with full unwinding on malloc: its leaked
    # allocations come from components that are dlclose()d before LeakSanitizer runs, and only
    # the slow unwinder reaches the library frames the suppressions name.
    mpi_tests='mpi|communicator'
    (cd "$BUILD" && ctest "${ctest_args[@]}" -E "$mpi_tests") || status=$?
    (cd "$BUILD" && ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0" ctest "${ctest_args[@]}" -R "$mpi_tests") ||
        status=$?
else
    (cd "$BUILD" && "${runner[@]}" ctest "${ctest_args[@]}") || status=$?
fi
end=$(date +%s)
cpu_s end_cpu
echo "sanitize ($MODE): build $((built - start)) s wall / ${built_cpu} s CPU," \
    "tests $((end - built)) s wall / $((end_cpu - built_cpu)) s CPU (load average now: $(cut -d' ' -f1-3 /proc/loadavg))"
exit $status
