#!/usr/bin/env bash
# `make demo`: duet's main job on a built-in default, no downloads.
#  1. the co-inference comparison: `duet bench` on the llama2-7b preset at 2K context
#     (trace-only: shapes, no weights), printing the side-by-side table and the verdicts;
#  2. real generation with a generated small model (the engine's functional path).
# A real model can be passed as DUET_DEMO_MODEL=/path/model.gguf for step 2.
set -euo pipefail
BUILD=${1:-build}
DUET="$BUILD/duet"
"$DUET" version
echo "== duet bench --baseline npu_only --target npu_pim_coop --seq-len 2048 --gen-len 256 --model llama2-7b"
# --no-verdict-exit: the demo shows a NOT MET verdict on purpose (bench would exit 3 for it).
"$DUET" --log-level warn bench --baseline npu_only --target npu_pim_coop --seq-len 2048 --gen-len 256 \
    --model llama2-7b --report "$BUILD/demo/coop_2k.json" --svg "$BUILD/demo/coop_2k.svg" --no-verdict-exit

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
