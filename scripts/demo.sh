#!/usr/bin/env bash
# `make demo`: until the co-inference bench exists, generate a small model and generate text
# with it (no downloads). A real model can be passed as DUET_DEMO_MODEL=/path/model.gguf.
set -euo pipefail
BUILD=${1:-build}
DUET="$BUILD/duet"
"$DUET" version
MODEL=${DUET_DEMO_MODEL:-}
if [ -z "$MODEL" ]; then
    MODEL="$BUILD/demo/tiny-llama-f16.gguf"
    if [ ! -f "$MODEL" ]; then
        mkdir -p "$BUILD/demo"
        echo "== duet gen-model --arch tiny-llama --dtype f16 --seed 42 -o $MODEL"
        "$DUET" gen-model --arch tiny-llama --dtype f16 --seed 42 -o "$MODEL"
    fi
fi
echo "== duet run -m $MODEL -p \"Once upon a time\" -n 48 --temp 0.7 --seed 1 --threads 2"
"$DUET" run -m "$MODEL" -p "Once upon a time" -n 48 --temp 0.7 --seed 1 --threads 2
SHARED=${DUET_SHARED_DIR:-$(dirname "$0")/../../shared}
if [ -z "${DUET_DEMO_MODEL:-}" ] && [ -f "$SHARED/models/stories260K.gguf" ]; then
    echo "== duet run -m $SHARED/models/stories260K.gguf -p \"Once upon a time\" -n 64 --temp 0 --threads 2"
    "$DUET" run -m "$SHARED/models/stories260K.gguf" -p "Once upon a time" -n 64 --temp 0 --threads 2 --echo
fi
