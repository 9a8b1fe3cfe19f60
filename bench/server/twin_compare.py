#!/usr/bin/env python3
"""Compares the real `duet serve` with its host twin (bench/server/host_twin.sh).

  twin_compare.py --label NAME --log REQUEST_LOG.jsonl --report SERVING_REPORT.json [--tolerance 0.2]

REQUEST_LOG: what `duet serve --request-log` wrote for the run (one line per request: arrival_s,
prompt_tokens, output_tokens, ttft_ms, e2e_ms); REPORT: `duet bench --workload serving
--host-profile ... --workload-file REQUEST_LOG --report REPORT` of the same requests. Measured, from
the log, the way the simulator summarises (serving/serving_metrics.cpp): output tokens/s = output
tokens / (last finish - first arrival); TTFT p50; TPOT p50 over requests with 2+ tokens, TPOT =
(e2e - ttft) / (output_tokens - 1). Prints one JSON line {"label", "measured", "predicted",
"error", "within"} and exits 0 (the verdict is in the line; host_twin.sh collects them).
"""
import argparse
import json
import math
import sys


def p50(values):
    v = sorted(values)
    k = (len(v) - 1) * 0.5
    lo, hi = math.floor(k), math.ceil(k)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--label", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("--tolerance", type=float, default=0.2)
    a = ap.parse_args()
    try:
        rows = [json.loads(l) for l in open(a.log) if l.strip()]
        rep = json.load(open(a.report))["serving"]["baseline"]
    except (OSError, ValueError, KeyError) as e:
        print(f"twin_compare: error: {e}", file=sys.stderr)
        sys.exit(2)
    first = min(r["arrival_s"] for r in rows)
    last = max(r["arrival_s"] + r["e2e_ms"] / 1e3 for r in rows)
    measured = {
        "output_tokens_per_s": sum(r["output_tokens"] for r in rows) / (last - first),
        "ttft_ms_p50": p50([r["ttft_ms"] for r in rows]),
        "tpot_ms_p50": p50([(r["e2e_ms"] - r["ttft_ms"]) / (r["output_tokens"] - 1)
                            for r in rows if r["output_tokens"] > 1]),
    }
    predicted = {
        "output_tokens_per_s": rep["output_tokens_per_s"],
        "ttft_ms_p50": rep["ttft_ms"]["p50"],
        "tpot_ms_p50": rep["tpot_ms"]["p50"],
    }
    error = {k: predicted[k] / measured[k] - 1 for k in measured}
    within = all(abs(e) <= a.tolerance for e in error.values())
    print(json.dumps({"label": a.label, "requests": len(rows), "measured": measured, "predicted": predicted,
                      "error": error, "within": within}))


if __name__ == "__main__":
    main()
