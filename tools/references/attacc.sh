#!/usr/bin/env bash
# Builds scale-snu/attacc_simulator's Ramulator-AttAcc (Ramulator 2.0 at the commit its
# set_pim_ramulator.sh pins, plus its pim_ramulator_src files and patches) and runs the bank-level
# PIM attention of the shapes duet's calibration compares (the rows of the repository's own
# ramulator.out), writing configs/hw/references/attacc.toml. Not part of duet's build or CI; see
# README.md here.
#
#   tools/references/attacc.sh <attacc_simulator checkout> <ramulator2 checkout> \
#       [yaml-cpp 0.7.0 checkout] [spdlog v1.11.0 checkout] [argparse v2.9 checkout]
#
# The ramulator2 checkout must contain the pinned commit (its history). Without the three
# dependency checkouts, Ramulator's CMake fetches them from GitHub itself. Needs cmake, g++ and
# /usr/bin/python3 with numpy (the trace generator). Env: BUILD_DIR (default /tmp/duet-ref-attacc),
# JOBS (default 1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo_root=$(cd "$here/../.." && pwd)
src=$(cd "${1:?usage: $0 <attacc checkout> <ramulator2 checkout> [yaml-cpp] [spdlog] [argparse]}" && pwd)
ram=$(cd "${2:?usage: $0 <attacc checkout> <ramulator2 checkout> ...}" && pwd)
build=${BUILD_DIR:-/tmp/duet-ref-attacc}
jobs=${JOBS:-1}
commit=$(git -C "$src" rev-parse HEAD)
# (L, heads per HBM, power constraint) of the ramulator.out rows duet compares (d_head 128, fp16, bank PIM).
runs=(128:2050:True 256:2050:True 256:461:True 2144:188:False)

rm -rf "$build" && mkdir -p "$build"
tar -C "$src" -c pim_ramulator_src set_pim_ramulator.sh | tar -x -C "$build"
git clone -q "$ram" "$build/ramulator2"
# set_pim_ramulator.sh: reset ramulator2 to its pinned commit, copy the AttAcc files, apply the patches.
(cd "$build" && bash set_pim_ramulator.sh >setup.log 2>&1)
ram_commit=$(git -C "$build/ramulator2" rev-parse HEAD)
fetch_args=()
[ -n "${3:-}" ] && fetch_args+=("-DFETCHCONTENT_SOURCE_DIR_YAML-CPP=$(cd "$3" && pwd)")
[ -n "${4:-}" ] && fetch_args+=("-DFETCHCONTENT_SOURCE_DIR_SPDLOG=$(cd "$4" && pwd)")
[ -n "${5:-}" ] && fetch_args+=("-DFETCHCONTENT_SOURCE_DIR_ARGPARSE=$(cd "$5" && pwd)")
cmake -S "$build/ramulator2" -B "$build/ramulator2/build" -DCMAKE_BUILD_TYPE=Release "${fetch_args[@]}" >"$build/cmake.log"
nice -n 10 cmake --build "$build/ramulator2/build" -j "$jobs" >"$build/build.log"
cp "$build/ramulator2/build/ramulator2" "$build/ramulator2/ramulator2"

out="$repo_root/configs/hw/references/attacc.toml"
mkdir -p "$(dirname "$out")"
tmp="$out.tmp"
{
    echo "# Written by tools/references/attacc.sh; do not edit by hand (re-run the script)."
    echo "# cycles: memory_system_cycles of Ramulator-AttAcc (tCK 0.769 ns, HBM3 5.2 Gb/s, one stack of 16 channels)."
    echo "[source]"
    echo "repo = \"scale-snu/attacc_simulator\""
    echo "commit = \"$commit\""
    echo "command = \"tools/references/attacc.sh <checkout> <ramulator2 checkout>: gen_trace_attacc_bank.py --dhead 128 --nhead H --seqlen L --dbyte 2; ramulator2 -f <src/ramulator_wrapper.py make_yaml_file>\""
    echo "machine = \"$(uname -m), $(nproc) cores, g++ $(g++ -dumpfullversion)\""
    echo "date = \"$(date -u +%Y-%m-%d)\""
    echo "ramulator2_commit = \"$ram_commit\""
    for r in "${runs[@]}"; do
        IFS=: read -r l h pc <<<"$r"
        name="attn_L${l}_H${h}_$([ "$pc" = True ] && echo pl || echo npl)"
        trace="$build/$name.trace"
        (cd "$build/ramulator2/trace_gen" &&
            /usr/bin/python3 gen_trace_attacc_bank.py --dhead 128 --nhead "$h" --seqlen "$l" --dbyte 2 --output "$trace" >/dev/null)
        # The configuration src/ramulator_wrapper.py make_yaml_file writes.
        cat >"$build/$name.yaml" <<YAML
Frontend:
  impl: PIMLoadStoreTrace
  path: $trace
  clock_ratio: 1

  Translation:
    impl: NoTranslation
    max_addr: 2147483648

MemorySystem:
  impl: PIMDRAM
  clock_ratio: 1
  DRAM:
    impl: HBM3-PIM
    org:
      preset: HBM3_8Gb_2R
      channel: 16
    timing:
      preset: $([ "$pc" = True ] && echo HBM3_5.2Gbps || echo HBM3_5.2Gbps_NPC)

  Controller:
    impl: HBM3-PIM
    Scheduler:
      impl: PIM
    RefreshManager:
      impl: AllBankHBM3
    plugins:

  AddrMapper:
    impl: HBM3-PIM
YAML
        cycles=$(cd "$build/ramulator2" && nice -n 10 ./ramulator2 -f "$build/$name.yaml" | awk '/memory_system_cycles/ {print $2}' | tail -1)
        printf '\n[%s]\nL = %s\nheads = %s\ndhead = 128\npower_constraint = "%s"\ncycles = %s\n' "$name" "$l" "$h" "$pc" "$cycles"
        rm -f "$trace"
    done
} >"$tmp"
mv "$tmp" "$out"
echo "wrote $out"
