#!/usr/bin/env python3
"""`duet serve` (continuous batching) gives the same greedy text as `duet run` on one model.

  serve_check.py --duet build/duet --arch tiny-mixtral --seed 13 --workdir DIR

1. duet gen-model --arch ARCH --seed SEED -o DIR/m.gguf (f32)
2. duet run -p P -n N --temp 0 for each of three prompts: the single-sequence greedy text
3. duet serve on a free loopback port with --parallel 3; the three prompts posted at once to
   /v1/completions (temperature 0, max_tokens N), so the batcher may run them together as a
   ragged batch; each response's text must equal step 2's (invalid UTF-8 of random weights
   compared as U+FFFD on both sides).
The numbers of `duet run` itself are checked against the numpy reference by compare.py.
Exit 0 pass, 1 fail.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request

PROMPTS = ["Once upon a time", "The expert said", "A small model"]
N_PREDICT = 12


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duet", required=True)
    ap.add_argument("--arch", required=True)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    model = os.path.join(a.workdir, "m.gguf")
    subprocess.run([a.duet, "gen-model", "--arch", a.arch, "--seed", str(a.seed), "-o", model], check=True,
                   stdout=subprocess.DEVNULL)
    want = []
    for p in PROMPTS:
        r = subprocess.run([a.duet, "run", "-m", model, "-p", p, "-n", str(N_PREDICT), "--temp", "0", "--no-timings",
                            "--threads", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if r.returncode != 0:
            print(f"FAIL: duet run exited {r.returncode}: {r.stderr.decode(errors='replace')}")
            return 1
        # random weights emit any bytes; the server's JSON holds invalid UTF-8 as U+FFFD
        # (run ends its output with a newline of its own)
        out = r.stdout[:-1] if r.stdout.endswith(b"\n") else r.stdout
        want.append(out.decode("utf-8", errors="replace"))
    port = free_port()
    log = open(os.path.join(a.workdir, "serve.log"), "w")
    srv = subprocess.Popen([a.duet, "serve", "-m", model, "--port", str(port), "--parallel", "3", "--threads", "2", "--no-auth",
                            "--tasks-db", os.path.join(a.workdir, "tasks.db")],
                           stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                with urllib.request.urlopen(base + "/health", timeout=1):
                    break
            except OSError:
                if srv.poll() is not None:
                    print(f"FAIL: duet serve exited {srv.returncode} (see {log.name})")
                    return 1
                time.sleep(0.1)
        got = [None] * len(PROMPTS)

        def ask(i):
            got[i] = post(base + "/v1/completions", {"prompt": PROMPTS[i], "max_tokens": N_PREDICT, "temperature": 0})

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(PROMPTS))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        srv.terminate()
        srv.wait(timeout=30)
    failures = 0
    for p, w, g in zip(PROMPTS, want, got):
        text = g["choices"][0]["text"] if g else None
        ok = text == w
        failures += not ok
        print(f"  {'ok  ' if ok else 'FAIL'} {p!r}: run {w!r}, serve {text!r}")
    print("PASS" if not failures else "FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
