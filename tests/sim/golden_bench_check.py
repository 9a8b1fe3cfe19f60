#!/usr/bin/env python3
"""Golden test of `make demo`'s co-inference figures (scripts/demo.sh step 1).

Runs `duet bench` with the demo's arguments on the default topology (1 NPU + 1 PIM) and
compares every figure the demo prints — TTFT and its parts, TBT mean/p50/p99 (and every
per-token TBT), the memory breakdown, bandwidth, PIM busy, energy, verdict values — with
tests/sim/golden/demo_bench.json to 1e-9 relative. The golden file changes only with a
deliberate model change: rerun with --update and say why in the commit.

Usage: golden_bench_check.py DUET_BINARY GOLDEN_JSON [--update]
"""
import json
import os
import subprocess
import sys
import tempfile

ARGS = ["--log-level", "warn", "bench", "--baseline", "npu_only", "--target", "npu_pim_coop",
        "--seq-len", "2048", "--gen-len", "256", "--model", "llama2-7b", "--no-verdict-exit"]
RUN_KEYS = ["tbt_mean_ns", "tbt_p50_ns", "tbt_p99_ns", "decode_energy_per_token_pj", "prefill_energy_pj",
            "decode_ext_bw_gbps", "decode_ext_bw_util", "pim_util", "pim_internal_bw_util", "pim_gemv_gbps"]
TIMELINE_KEYS = ["prefill_ns", "switch_ns", "ttft_ns", "tbt_ns", "conversion_ns", "conversion_exposed_ns",
                 "conversion_bytes_read", "conversion_energy_pj", "conversions"]
REL = 1e-9


def figures(report):
    out = {}
    for side in ("baseline", "target"):
        run = report[side]
        for k in RUN_KEYS:
            out[f"{side}.{k}"] = run[k]
        for k in TIMELINE_KEYS:
            out[f"{side}.timeline.{k}"] = run["timeline"][k]
        for k, v in run["memory"].items():
            out[f"{side}.memory.{k}"] = v
    for v in report["verdicts"]:
        out[f"verdict.{v['name']}.value"] = v["value"]
        out[f"verdict.{v['name']}.met"] = v["met"]
    return out


def same(a, b):
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    return abs(a - b) <= REL * max(abs(a), abs(b))


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    duet, golden = sys.argv[1], sys.argv[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUET_")}
    with tempfile.TemporaryDirectory() as tmp:
        report_path = os.path.join(tmp, "report.json")
        proc = subprocess.run([duet] + ARGS + ["--report", report_path], env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            print(proc.stdout + proc.stderr)
            return 1
        with open(report_path) as f:
            got = figures(json.load(f))
    if len(sys.argv) == 4 and sys.argv[3] == "--update":
        tmp_path = golden + ".tmp"
        with open(tmp_path, "w") as f:
            json.dump(got, f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(tmp_path, golden)
        print(f"updated {golden}")
        return 0
    with open(golden) as f:
        want = json.load(f)
    bad = [k for k in sorted(set(want) | set(got)) if k not in got or k not in want or not same(got[k], want[k])]
    for k in bad:
        g, w = got.get(k, "<missing>"), want.get(k, "<missing>")
        if isinstance(g, list) or isinstance(w, list):
            print(f"{k}: differs (list)")
        else:
            print(f"{k}: got {g}, golden {w}")
    print(f"{len(want) - len(bad)} of {len(want)} figures match the golden demo" if not bad else f"{len(bad)} figures differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
