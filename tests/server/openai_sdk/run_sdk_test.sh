#!/usr/bin/env bash
# ctest driver of the openai SDK test: installs the pinned `openai` package (npm ci from the
# committed package-lock.json) into WORK_DIR, generates a tiny Qwen2-style model (chatml
# template, byte-level BPE), starts the real `duet serve` on 127.0.0.1 with a free port,
# runs SCRIPT (default sdk_test.mjs) against it and stops the server.
# Usage: run_sdk_test.sh DUET_BINARY WORK_DIR [SCRIPT]
set -euo pipefail
DUET=$(realpath "$1")
WORK=$(realpath -m "$2")
HERE=$(cd "$(dirname "$0")" && pwd)
SCRIPT=${3:-sdk_test.mjs}
mkdir -p "$WORK"
cp "$HERE/package.json" "$HERE/package-lock.json" "$HERE"/*.mjs "$WORK/"
cd "$WORK"
if ! cmp -s package-lock.json node_modules/.package-lock.json.copy 2>/dev/null; then
    npm ci --no-audit --no-fund --loglevel=error
    cp package-lock.json node_modules/.package-lock.json.copy
fi
MODEL="$WORK/tiny-qwen2.gguf"
[ -f "$MODEL" ] || "$DUET" gen-model --arch tiny-qwen2 --dtype f32 --seed 7 -o "$MODEL" > /dev/null

LOG="$WORK/serve.log"
: > "$LOG"
"$DUET" --log-level warn serve -m "$MODEL" --model-id tiny --port 0 --no-auth --parallel 4 --threads 1 \
    --tasks-db "$WORK/tasks.db" > "$LOG" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true; wait $PID 2>/dev/null || true' EXIT
PORT=""
for _ in $(seq 1 300); do
    PORT=$(sed -n 's|.*http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$LOG" | head -1)
    [ -n "$PORT" ] && break
    kill -0 $PID 2>/dev/null || { cat "$LOG"; echo "duet serve exited"; exit 1; }
    sleep 0.1
done
[ -n "$PORT" ] || { cat "$LOG"; echo "duet serve did not print its address"; exit 1; }
node "$SCRIPT" "http://127.0.0.1:$PORT" "$DUET" "$MODEL" "$WORK"
