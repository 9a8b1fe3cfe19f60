#!/usr/bin/env bash
# Builds CMU-SAFARI/ramulator2 (Ramulator 2.1) from a checkout and runs duet's DRAM workloads on
# it (stream and uniform random 64 B reads on its HBM2, HBM3 and LPDDR5 models), writing
# configs/hw/references/ramulator2.toml. Not part of duet's build or CI; see README.md here.
#
#   tools/references/ramulator2.sh <ramulator2 checkout> [yaml-cpp 0.9.0 checkout] [fmt 10.2.1 checkout]
#
# Without the two dependency checkouts, Ramulator's CMake fetches them from GitHub itself.
# Env: BUILD_DIR (default /tmp/duet-ref-ramulator2), JOBS (default 1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo_root=$(cd "$here/../.." && pwd)
src=$(cd "${1:?usage: $0 <ramulator2 checkout> [yaml-cpp checkout] [fmt checkout]}" && pwd)
yaml_src=${2:-}
fmt_src=${3:-}
build=${BUILD_DIR:-/tmp/duet-ref-ramulator2}
jobs=${JOBS:-1}
commit=$(git -C "$src" rev-parse HEAD)

rm -rf "$build" && mkdir -p "$build"
git -C "$src" archive --prefix=src/ HEAD | tar -x -C "$build"
fetch_args=()
[ -n "$yaml_src" ] && fetch_args+=("-DFETCHCONTENT_SOURCE_DIR_YAML-CPP=$(cd "$yaml_src" && pwd)")
[ -n "$fmt_src" ] && fetch_args+=("-DFETCHCONTENT_SOURCE_DIR_FMT=$(cd "$fmt_src" && pwd)")
cmake -S "$build/src" -B "$build/build" -DCMAKE_BUILD_TYPE=Release -DRAMULATOR_PYTHON_BINDINGS=OFF "${fetch_args[@]}" >"$build/cmake.log"
nice -n 10 cmake --build "$build/build" --target ramulator -j "$jobs" >"$build/build.log"
nice -n 10 g++ -std=c++20 -O2 -I"$build/src/src" "$here/ramulator2/traffic_driver.cpp" -L"$build/src" -lramulator \
    -Wl,-rpath,"$build/src" -o "$build/traffic_driver"

out="$repo_root/configs/hw/references/ramulator2.toml"
mkdir -p "$(dirname "$out")"
tmp="$out.tmp"
{
    echo "# Written by tools/references/ramulator2.sh; do not edit by hand (re-run the script)."
    echo "[source]"
    echo "repo = \"CMU-SAFARI/ramulator2\""
    echo "commit = \"$commit\""
    echo "command = \"tools/references/ramulator2.sh <checkout>: traffic_driver <exported config> stream|random <requests> 64 <64 MiB>\""
    echo "machine = \"$(uname -m), $(nproc) cores, g++ $(g++ -dumpfullversion)\""
    echo "date = \"$(date -u +%Y-%m-%d)\""
    echo
    (cd "$build/src" && PYTHONPATH="$build/src/python:$build/src" python3 "$here/ramulator2/run_traffic.py" \
        "$build/traffic_driver" "$build/src")
} >"$tmp"
mv "$tmp" "$out"
echo "wrote $out"
