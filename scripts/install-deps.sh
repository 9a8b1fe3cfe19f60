#!/usr/bin/env bash
# Installs exactly the Debian packages duet's build, tests and benchmarks need.
# Idempotent: packages already present are left alone; apt-get update runs only when something is missing.
set -euo pipefail

PACKAGES=(
    build-essential cmake ninja-build ccache pkg-config
    libgtest-dev libgmock-dev libbenchmark-dev
    nlohmann-json3-dev libtomlplusplus-dev libcpp-httplib-dev libcli11-dev
    libfmt-dev libspdlog-dev
    libopenblas-dev libsqlite3-dev libpcre2-dev
    clang libclang-rt-14-dev
    python3 python3-numpy python3-jsonschema
    libopenmpi-dev openmpi-bin
)

missing=()
for p in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

# The openai SDK test needs node + npm. A machine that already has them (e.g. a NodeSource
# nodejs, which bundles npm and conflicts with Debian's npm package) keeps its own.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    missing+=(nodejs npm)
fi

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#PACKAGES[@]} packages present"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
