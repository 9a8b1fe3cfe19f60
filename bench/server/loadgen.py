#!/usr/bin/env python3
"""An open-loop HTTP load generator for `duet serve` (the host twin bench, bench/server/host_twin.sh).

  loadgen.py --url http://127.0.0.1:8080 --rate R --requests N [--prompt-words W] [--max-tokens T] [--seed S]

Sends N POST /v1/completions at Poisson arrival times of rate R requests/s (R = inf: all at once),
each from its own thread so a slow answer never delays the next arrival, with a prompt of W random
words, temperature 0, max_tokens T and ignore_eos (so every answer has T tokens), and streams the
answer (Server-Sent Events) to time the first token and the end at the client. Prints one JSON
object: the client's view ({"requests", "failed", "duration_s", "output_tokens_per_s", "ttft_ms":
{"p50", "p90"}, "e2e_ms": {...}}). The server's own timings of the same requests go to its
--request-log. Exit 2 on bad arguments, 1 when a request fails.
"""
import argparse
import http.client
import json
import math
import random
import sys
import threading
import time
import urllib.parse


def percentile(values, q):
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def one_request(url, body, out, key):
    u = urllib.parse.urlparse(url)
    t0 = time.monotonic()
    first = None
    tokens = 0
    try:
        conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=600)
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = "Bearer " + key
        conn.request("POST", (u.path.rstrip("/") or "") + "/v1/completions", json.dumps(body), headers)
        resp = conn.getresponse()
        if resp.status != 200:
            out.append({"error": f"HTTP {resp.status}: {resp.read()[:200]!r}"})
            return
        for raw in resp:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            chunk = json.loads(data)
            if chunk.get("choices") and chunk["choices"][0].get("text"):
                if first is None:
                    first = time.monotonic()
                tokens += 1
        end = time.monotonic()
        out.append({"ttft_ms": 1e3 * ((first or end) - t0), "e2e_ms": 1e3 * (end - t0), "t_end": end})
    except Exception as e:  # the summary counts it; the exit status says so
        out.append({"error": str(e)})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--rate", required=True, help="requests per second, or inf")
    ap.add_argument("--requests", type=int, required=True)
    ap.add_argument("--prompt-words", type=int, default=64)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--key", default="")
    a = ap.parse_args()
    try:
        rate = math.inf if a.rate == "inf" else float(a.rate)
        if not rate > 0:
            raise ValueError
    except ValueError:
        print(f"loadgen: error: --rate = {a.rate!r} is not allowed (allowed: requests per second > 0, or inf)",
              file=sys.stderr)
        sys.exit(2)
    if a.requests < 1:
        print("loadgen: error: --requests must be at least 1", file=sys.stderr)
        sys.exit(2)
    rng = random.Random(a.seed)
    t, arrivals = 0.0, []
    for _ in range(a.requests):
        arrivals.append(t)
        if math.isfinite(rate):
            t += rng.expovariate(rate)
    results, threads = [], []
    t_start = time.monotonic()
    for i, at in enumerate(arrivals):
        words = " ".join(f"w{rng.randrange(100000)}" for _ in range(a.prompt_words))
        body = {"prompt": words, "max_tokens": a.max_tokens, "temperature": 0, "ignore_eos": True, "stream": True}
        delay = t_start + at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        th = threading.Thread(target=one_request, args=(a.url, body, results, a.key))
        th.start()
        threads.append(th)
    for th in threads:
        th.join()
    ok = [r for r in results if "error" not in r]
    failed = [r["error"] for r in results if "error" in r]
    duration = (max(r["t_end"] for r in ok) - t_start) if ok else 0.0
    summary = {
        "requests": len(results), "failed": len(failed), "duration_s": duration,
        "output_tokens_per_s": len(ok) * a.max_tokens / duration if duration > 0 else 0.0,
        "ttft_ms": {"p50": percentile([r["ttft_ms"] for r in ok], 0.5), "p90": percentile([r["ttft_ms"] for r in ok], 0.9)},
        "e2e_ms": {"p50": percentile([r["e2e_ms"] for r in ok], 0.5), "p90": percentile([r["e2e_ms"] for r in ok], 0.9)},
    }
    if failed:
        summary["first_error"] = failed[0]
    print(json.dumps(summary))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
