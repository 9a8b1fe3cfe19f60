#!/usr/bin/env bash
# `make demo`: duet's main job on a built-in default, no downloads.
set -euo pipefail
BUILD=${1:-build}
DUET="$BUILD/duet"
"$DUET" version
