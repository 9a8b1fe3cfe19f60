#!/usr/bin/env bash
# Builds CENT's AiM simulator (arkhadem/aim_simulator, a Ramulator 2 fork, at the commit CENT's
# submodule pins) and runs CENT's own trace generator and row formulas (cent/cent_rows.py over
# cent_simulation/*.py) for Llama2-7B, 13B and 70B decode on 8, 20 and 32 CXL devices with tensor
# parallelism = devices (CENT's Figure 13a configuration), writing configs/hw/references/cent.toml.
# Not part of duet's build or CI; see README.md here.
#
#   tools/references/cent.sh <CENT checkout> <aim_simulator checkout> \
#       [yaml-cpp 0.7.0 checkout] [spdlog v1.11.0 checkout] [argparse v2.9 checkout]
#
# The aim_simulator checkout must contain the commit CENT's submodule pins (its history). Without
# the three dependency checkouts, the simulator's CMake fetches them from GitHub itself. Needs
# cmake, g++ and /usr/bin/python3 with torch, pandas and scipy (Debian: python3-torch,
# python3-pandas, python3-scipy; CENT's trace generator builds its zero tensors with torch).
# Env: BUILD_DIR (default /tmp/duet-ref-cent), JOBS (default 1), SEQLENS (default: 128, then the
# decode range 640..4096 in steps of 128 that CENT's published decode figures average over),
# AIM_BIN (a ramulator2 binary already built from the pinned aim_simulator commit: skips the build,
# which takes ~35 min at -j2 on a loaded 2-core machine). A row takes 5-40 s (trace generation and
# simulation) on a loaded 2-core machine: ~30 min for the default list.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo_root=$(cd "$here/../.." && pwd)
src=$(cd "${1:?usage: $0 <CENT checkout> <aim_simulator checkout> [yaml-cpp] [spdlog] [argparse]}" && pwd)
aim=$(cd "${2:?usage: $0 <CENT checkout> <aim_simulator checkout> ...}" && pwd)
build=${BUILD_DIR:-/tmp/duet-ref-cent}
jobs=${JOBS:-1}
seqlens=${SEQLENS:-"128 $(seq -s ' ' 640 128 4096)"}
runs=(Llama2-7B:8 Llama2-13B:20 Llama2-70B:32)
commit=$(git -C "$src" rev-parse HEAD)
aim_commit=$(git -C "$src" ls-tree HEAD aim_simulator | awk '{print $3}')

rm -rf "$build" && mkdir -p "$build/work"
git -C "$src" archive HEAD cent_simulation trace | tar -x -C "$build"
git clone -q "$aim" "$build/aim_simulator"
git -C "$build/aim_simulator" checkout -q "$aim_commit"
fetch_args=()
[ -n "${3:-}" ] && fetch_args+=("-DFETCHCONTENT_SOURCE_DIR_YAML-CPP=$(cd "$3" && pwd)")
[ -n "${4:-}" ] && fetch_args+=("-DFETCHCONTENT_SOURCE_DIR_SPDLOG=$(cd "$4" && pwd)")
[ -n "${5:-}" ] && fetch_args+=("-DFETCHCONTENT_SOURCE_DIR_ARGPARSE=$(cd "$5" && pwd)")
if [ -n "${AIM_BIN:-}" ]; then
    ram=$(cd "$(dirname "$AIM_BIN")" && pwd)/$(basename "$AIM_BIN")
else
    cmake -S "$build/aim_simulator" -B "$build/aim_simulator/build" -DCMAKE_BUILD_TYPE=Release "${fetch_args[@]}" \
        >"$build/cmake.log"
    nice -n 10 cmake --build "$build/aim_simulator/build" -j "$jobs" >"$build/build.log"
    ram="$build/aim_simulator/build/ramulator2"
fi
cp "$here/cent/cent_rows.py" "$build/cent_simulation/"

out="$repo_root/configs/hw/references/cent.toml"
mkdir -p "$(dirname "$out")"
tmp="$out.tmp"
{
    echo "# Written by tools/references/cent.sh; do not edit by hand (re-run the script)."
    echo "# One table per (model, devices, sequence length L): decode of the token at position L, tensor"
    echo "# parallelism = devices, pipeline parallelism 1, 32 AiM channels per device (CENT run_sim.py defaults)."
    echo "# pim_ms: one device's decoder block on the AiM simulator (memory_system_cycles at 2 GHz); cxl_ms,"
    echo "# acc_ms: CENT's closed forms per block; token_ms = (pim + cxl + acc) x blocks + embedding + inout."
    echo "[source]"
    echo "repo = \"Morteza1814/CENT\""
    echo "commit = \"$commit\""
    echo "command = \"tools/references/cent.sh <checkout> <aim_simulator checkout>: function_sim.py --model-parallel --FC-devices N --seqlen L --only-trace --GEMV reuse-GB --reuse-size 32; ramulator2 -f aim_simulator/test/example.yaml -t <trace>; row formulas of run_sim.py\""
    echo "machine = \"$(uname -m), $(nproc) cores, g++ $(g++ -dumpfullversion), torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)')\""
    echo "date = \"$(date -u +%Y-%m-%d)\""
    echo "aim_simulator_commit = \"$aim_commit\""
    for r in "${runs[@]}"; do
        IFS=: read -r model devices <<<"$r"
        # shellcheck disable=SC2086  # the list is split on purpose
        (cd "$build/cent_simulation" &&
            nice -n 10 /usr/bin/python3 cent_rows.py "$ram" "$build/aim_simulator/test/example.yaml" "$build/work" \
                "$model" "$devices" $seqlens)
    done
} >"$tmp"
mv "$tmp" "$out"
echo "wrote $out"
