#!/usr/bin/env bash
# Builds SAITPublic/PIMSimulator (Samsung HBM2-PIM, cycle-accurate, DRAMSim2-based) from a
# checkout and runs duet's GEMV sizes on the repository's own PIMBenchFixture: the PIM kernel
# (PIMKernel::executeGemv: park-in, SB->HAB, CRF program, per output tile and vector
# HAB->HAB_PIM, GRF_A input writes, MAC commands, GRF_B results to the bank, HAB_PIM->HAB,
# HAB->SB, park-out) against the same device streaming the weights and input and writing the
# output with PIM off. Writes configs/hw/references/pimsimulator.toml. Not part of duet's build
# or CI; see README.md here.
#
#   tools/references/pimsimulator.sh <PIMSimulator checkout>
#
# Needs scons and libgtest-dev (Debian). Env: BUILD_DIR (default /tmp/duet-ref-pimsimulator),
# JOBS (default 1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo_root=$(cd "$here/../.." && pwd)
src=$(cd "${1:?usage: $0 <PIMSimulator checkout>}" && pwd)
build=${BUILD_DIR:-/tmp/duet-ref-pimsimulator}
jobs=${JOBS:-1}
commit=$(git -C "$src" rev-parse HEAD)
# (out rows, in columns, batch) of every run. PIMSimulator's own benchmark is 4096 x 4096, batch 1.
sizes=(512:512:1 1024:1024:1 2048:2048:1 4096:4096:1 8192:8192:1 1024:1024:4 4096:4096:2 4096:4096:4)

rm -rf "$build" && mkdir -p "$build"
# Only what the simulator needs, from the checkout's files (data/ holds large .npy inputs the
# benchmark does not read, and need not be checked out). The commit recorded is the checkout's
# HEAD, so its files must be unmodified.
paths=(Sconstruct src lib ini tools system_hbm.ini system_hbm_1ch.ini system_hbm_64ch.ini)
if [ -n "$(git -C "$src" status --porcelain -- "${paths[@]}")" ]; then
    echo "error: $src has local changes under ${paths[*]}; use a clean checkout" >&2
    exit 2
fi
tar -C "$src" -c "${paths[@]}" | tar -x -C "$build"
mkdir -p "$build/data" "$build/dump"
# Build fix for GCC >= 12: lib/npy.h uses std::ostream_iterator without including <iterator>.
sed -i 's/#include <unordered_map>/#include <unordered_map>\n#include <iterator>/' "$build/lib/npy.h"
{
    echo '// Added by duet tools/references/pimsimulator.sh: duet GEMV sizes on PIMBenchFixture.'
    echo '#include "tests/PIMBenchTestCases.h"'
    echo '#include "gtest/gtest.h"'
    echo 'using namespace DRAMSim;'
    for s in "${sizes[@]}"; do
        IFS=: read -r m k b <<<"$s"
        echo "TEST_F(PIMBenchFixture, duet_gemv_${m}x${k}_b${b}) { setPIMBenchTestCase(KernelType::GEMV, $m, $k, $b); executeKernel(); executePIMKernel(); }"
    done
} >"$build/src/tests/DuetGemvSweep.cpp"
(cd "$build" && nice -n 10 scons -j"$jobs" NO_LIBRARY=1 NO_EMUL=1 >build.log)
(cd "$build" && nice -n 10 ./sim --gtest_filter='PIMBenchFixture.duet_*' >run.log)

out="$repo_root/configs/hw/references/pimsimulator.toml"
mkdir -p "$(dirname "$out")"
tmp="$out.tmp"
{
    echo "# Written by tools/references/pimsimulator.sh; do not edit by hand (re-run the script)."
    echo "# stream_cycles: PIM off, the weights and input read and the output written (PIMBenchFixture"
    echo "# executeKernel); pim_cycles: PIMKernel::executeGemv + runPIM (executePIMKernel). 1 cycle = 1 ns."
    echo "[source]"
    echo "repo = \"SAITPublic/PIMSimulator\""
    echo "commit = \"$commit\""
    echo "command = \"tools/references/pimsimulator.sh <checkout>: scons NO_LIBRARY=1 NO_EMUL=1; ./sim --gtest_filter=PIMBenchFixture.duet_*\""
    echo "machine = \"$(uname -m), $(nproc) cores, g++ $(g++ -dumpfullversion)\""
    echo "date = \"$(date -u +%Y-%m-%d)\""
    # gtest prints, per test: [ RUN ] name, "> Cycle : <stream>", "> Cycle : <pim>", "> Speed-up : x".
    awk '/\[ RUN      \] PIMBenchFixture.duet_gemv_/ { split($4, a, "."); name = a[2]; n = 0 }
         /^> Cycle : / { c[n++] = $4 }
         /^> Speed-up : / && name != "" {
             split(name, p, "_"); split(p[3], mk, "x"); b = substr(p[4], 2)
             printf "\n[%s]\nm = %s\nk = %s\nbatch = %s\nstream_cycles = %s\npim_cycles = %s\nspeedup = %.6f\n",
                    substr(name, 6), mk[1], mk[2], b, c[0], c[1], c[0] / c[1]
             name = "" }' "$build/run.log"
} >"$tmp"
mv "$tmp" "$out"
echo "wrote $out"
