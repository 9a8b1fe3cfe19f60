#!/usr/bin/env python3
"""Recomputes every figure of a `duet bench --workload serving` report with numpy from the
report's own per-request results: p50/p90/p99/mean of TTFT, TPOT, end-to-end and queueing,
throughputs and goodput. Exit 77 (skipped) without numpy."""
import json
import os
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("numpy missing (scripts/install-deps.sh installs python3-numpy)")
    sys.exit(77)

duet, work = sys.argv[1], sys.argv[2]
report = os.path.join(work, "serving_numpy_check.json")
slo_ttft, slo_tpot = 300.0, 30.0
cmd = [duet, "--log-level", "off", "bench", "--workload", "serving", "--model", "llama2-7b", "--requests", "300",
       "--rate", "12", "--burstiness", "2", "--seed", "9", "--seq-len", "512", "--gen-len", "64", "--max-seqs", "32",
       "--slo-ttft-ms", str(slo_ttft), "--slo-tpot-ms", str(slo_tpot), "--no-verdict-exit", "--report", report]
subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
with open(report) as f:
    rep = json.load(f)

failures = 0


def close(name, got, want):
    global failures
    if not np.isclose(got, want, rtol=1e-9, atol=1e-9):
        print(f"{name}: report {got!r}, numpy {want!r}")
        failures += 1


for side in ("baseline", "target"):
    s = rep["serving"][side]
    reqs = [r for r in s["per_request"] if r["e2e_ms"] is not None]
    assert len(reqs) == s["completed"] == 300, (side, len(reqs), s["completed"])
    for key in ("ttft_ms", "tpot_ms", "e2e_ms", "queue_ms"):
        v = np.array([r[key] for r in reqs if r[key] is not None])
        for q in (50, 90, 99):
            close(f"{side}.{key}.p{q}", s[key][f"p{q}"], np.percentile(v, q))
        close(f"{side}.{key}.mean", s[key]["mean"], v.mean())
    start = min(r["arrival_s"] for r in reqs)
    end = max(r["arrival_s"] + r["e2e_ms"] / 1e3 for r in reqs)
    dur = end - start
    close(f"{side}.duration_s", s["duration_s"], dur)
    out = sum(r["output_tokens"] for r in reqs)
    total = out + sum(r["prompt_tokens"] for r in reqs)
    close(f"{side}.output_tokens_per_s", s["output_tokens_per_s"], out / dur)
    close(f"{side}.total_tokens_per_s", s["total_tokens_per_s"], total / dur)
    close(f"{side}.requests_per_s", s["requests_per_s"], len(reqs) / dur)
    good = sum(1 for r in reqs if r["ttft_ms"] <= slo_ttft and (r["tpot_ms"] is None or r["tpot_ms"] <= slo_tpot))
    close(f"{side}.goodput_rps", s["goodput_rps"], good / dur)
    print(f"{side}: {len(reqs)} requests, TTFT p99 {s['ttft_ms']['p99']:.2f} ms, goodput {s['goodput_rps']:.3f} req/s")

sys.exit(1 if failures else 0)
