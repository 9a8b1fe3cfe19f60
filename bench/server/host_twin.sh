#!/usr/bin/env bash
# The host twin bench (issue: serving under load, item 3): does `duet bench --workload serving`,
# given this machine's host profile, predict the real `duet serve` on the same machine?
#
#   bash bench/server/host_twin.sh [BUILD_DIR] [WORK_DIR]
#
# 1. writes a benchmark model (bench-1b shape, 4 layers, q8_0) and profiles the engine on it
#    (`duet calibrate --host-profile FILE`);
# 2. for three loads — light, near saturation, overload (TWIN_RATES, req/s) — starts `duet serve`
#    with a request log, drives it with bench/server/loadgen.py (real HTTP, Poisson arrivals,
#    streaming) and stops it;
# 3. replays each request log through `duet bench --workload serving --host-profile` with the
#    server's batch size, KV blocks, context and step budget, and compares output tokens/s and
#    p50 TTFT/TPOT (bench/server/twin_compare.py; within 20 % is the target).
# Needs a quiet machine: the profile and the server runs are minutes apart, and another process
# taking cores in one but not the other shows up as model error. Prints one JSON line per load
# and a table; exit 0 whatever the figures (they are the answer), 2 on a failed step.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-$ROOT/build}"
WORK="${2:-$(mktemp -d)}"
DUET="$BUILD/duet"
RATES="${TWIN_RATES:-0.3 1.5 4}"
LABELS=(light near-saturation overload)
REQUESTS="${TWIN_REQUESTS:-30}"
PARALLEL=8 CTX=512 PORT="${TWIN_PORT:-18431}"
KV_BLOCKS=$((PARALLEL * CTX / 16))
MODEL="$WORK/twin-model.gguf"
mkdir -p "$WORK"
[ -f "$MODEL" ] || "$DUET" gen-model --arch bench-1b --layers 4 --dtype q8_0 -o "$MODEL" >/dev/null
"$DUET" calibrate --host-profile "$WORK/host.toml" -m "$MODEL" --max-batch "$PARALLEL"
i=0
for rate in $RATES; do
    label="${LABELS[$i]:-load$i}"
    log="$WORK/requests-$label.jsonl"
    rm -f "$log"
    "$DUET" --log-level warn serve -m "$MODEL" --no-auth --port "$PORT" --parallel "$PARALLEL" --ctx "$CTX" \
        --kv-blocks "$KV_BLOCKS" --request-log "$log" --tasks-db "$WORK/tasks.db" &
    pid=$!
    for _ in $(seq 100); do
        curl -fs "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
        sleep 0.2
    done
    python3 "$ROOT/bench/server/loadgen.py" --url "http://127.0.0.1:$PORT" --rate "$rate" --requests "$REQUESTS" \
        --prompt-words 32 --max-tokens 32 --seed "$((i + 1))" > "$WORK/client-$label.json"
    kill "$pid"; wait "$pid" || true
    "$DUET" --log-level warn bench --workload serving --host-profile "$WORK/host.toml" -m "$MODEL" \
        --workload-file "$log" --max-seqs "$PARALLEL" --kv-blocks "$KV_BLOCKS" --ctx "$CTX" --step-tokens 512 \
        --no-verdict-exit --report "$WORK/twin-$label.json" > "$WORK/twin-$label.txt"
    python3 "$ROOT/bench/server/twin_compare.py" --label "$label (${rate} req/s)" --log "$log" \
        --report "$WORK/twin-$label.json" | tee -a "$WORK/compare.jsonl"
    i=$((i + 1))
done
python3 - "$WORK/compare.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"{'load':28} {'figure':22} {'measured':>10} {'predicted':>10} {'error':>8}")
for r in rows:
    for k in r["measured"]:
        print(f"{r['label']:28} {k:22} {r['measured'][k]:10.2f} {r['predicted'][k]:10.2f} {100 * r['error'][k]:+7.1f}%")
print("within 20 % at every load:", all(r["within"] for r in rows))
PY
