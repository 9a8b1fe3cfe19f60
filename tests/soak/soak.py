#!/usr/bin/env python3
"""Soak and fault test of `duet serve` (docs/testing.md "Soak"). Python 3 stdlib only.

Starts the real binary on 127.0.0.1 (free port) over a generated tiny model, and for --seconds
runs --clients threads of mixed traffic: chat and completion requests, streamed and not, random
disconnects mid-stream, oversized / malformed / chunked / form-encoded bodies, 429 bursts, bad
keys, task submissions and cancels. Halfway through, the server is killed with SIGKILL and
restarted on the same task database. Passes when:
  - the server never crashes (only the planned SIGKILL ends it; SIGTERM at the end exits 0);
  - no response is a 5xx other than an OpenAI-shaped 503, and every error is OpenAI-shaped JSON;
  - RSS after warm-up stays within --rss-growth-mb of its level at the end of warm-up;
  - open file descriptors and KV blocks return to their idle level (/proc, /metrics);
  - every task ends done, failed, cancelled or interrupted (those unfinished at the kill must be
    interrupted after the restart);
  - the API key never appears in the server's log.
Known server findings not yet fixed can be run as expected failures (expected_failure: XFAIL
lines): they are reported, not counted, and an XPASS says the TODO can be removed.
Exit code 0 = pass, 1 = a check failed, 2 = bad usage / setup failure.
"""
import argparse
import http.client
import json
import os
import random
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time

KEY_ENV = "DUET_API_KEY"
KEEP_FINISHED = 1000  # finished tasks the server keeps (server/task_store.h kMaxFinished)


def fail_setup(msg):
    print(f"soak: error: {msg}", file=sys.stderr)
    sys.exit(2)


class Server:
    """One `duet serve` process; its stdout and stderr are appended to log_path."""

    def __init__(self, args, key, model, db, log_path):
        self.args, self.key, self.model, self.db, self.log_path = args, key, model, db, log_path
        self.proc, self.port = None, None

    def start(self, port=0):
        env = dict(os.environ, **{KEY_ENV: self.key})
        cmd = [self.args.duet, "serve", "-m", self.model, "--host", "127.0.0.1", "--port", str(port),
               "--parallel", "4", "--queue", str(self.args.queue), "--ctx", "256", "--threads", "1",
               "--tasks-db", self.db, "--max-body-bytes", str(self.args.max_body), "--model-id", "soak"]
        log = open(self.log_path, "ab")
        offset = log.tell()
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=log, env=env)
        log.close()
        deadline = time.time() + 60
        while time.time() < deadline:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                m = re.search(rb"http://127\.0\.0\.1:(\d+)", f.read())
            if m:
                self.port = int(m.group(1))
                return
            if self.proc.poll() is not None:
                fail_setup(f"duet serve exited with {self.proc.returncode} at start (log: {self.log_path})")
            time.sleep(0.05)
        fail_setup("duet serve did not print its address within 60 s")

    def rss_kb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def n_fds(self):
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))


class Soak:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.key = "sk-soak-" + secrets.token_hex(16)
        self.lock = threading.Lock()
        self.failures, self.xfail, self.xpass = [], {}, {}
        self.counts = {}
        self.tasks = {}  # task id -> its position among the tasks this run created
        self.stop = threading.Event()
        self.restarting = threading.Event()

    # ---- bookkeeping
    def add_task(self, tid):
        with self.lock:
            self.tasks[tid] = len(self.tasks)

    def may_be_purged(self, tid):
        """The server keeps the newest KEEP_FINISHED finished tasks (server/task_store.h kMaxFinished):
        a task may be gone only when at least that many tasks were created after it."""
        with self.lock:
            return len(self.tasks) - 1 - self.tasks[tid] >= KEEP_FINISHED

    def count(self, what):
        with self.lock:
            self.counts[what] = self.counts.get(what, 0) + 1

    def failure(self, msg):
        with self.lock:
            if len(self.failures) < 50:
                self.failures.append(msg)

    def expected_failure(self, todo, ok, detail=""):
        """A case known to fail until `todo` is fixed: counted apart, never fails the run."""
        with self.lock:
            d = self.xpass if ok else self.xfail
            d.setdefault(todo, [0, detail])[0] += 1

    # ---- HTTP helpers
    def conn(self, timeout=60):
        return http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=timeout)

    def headers(self, key=True, ctype="application/json"):
        h = {"Content-Type": ctype} if ctype else {}
        if key:
            h["Authorization"] = f"Bearer {self.key}"
        return h

    def check_error_shape(self, where, status, body):
        try:
            e = json.loads(body)["error"]
            assert isinstance(e["message"], str) and e["message"] and "type" in e
        except Exception:
            self.failure(f"{where}: HTTP {status} without an OpenAI-shaped error body: {body[:200]!r}")

    def request(self, method, path, body=None, key=True, ctype="application/json", expect=(200,)):
        c = self.conn()
        try:
            data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
            c.request(method, path, body=data, headers=self.headers(key, ctype))
            r = c.getresponse()
            text = r.read()
        finally:
            c.close()
        self.count(f"{method} {re.sub(r'/task-[0-9a-f]+', '/{id}', path)} {r.status}")
        if r.status >= 400:
            self.check_error_shape(f"{method} {path}", r.status, text)
        if r.status >= 500 and r.status != 503:
            self.failure(f"{method} {path}: HTTP {r.status}: {text[:200]!r}")
        elif r.status not in expect and not (r.status in (429, 503) and 429 in expect):
            self.failure(f"{method} {path}: HTTP {r.status}, expected {expect}: {text[:200]!r}")
        return r.status, text

    def raw(self, payload, read=True, timeout=30):
        """Sends raw bytes on a fresh socket; returns the status line's code (0 when none)."""
        s = socket.create_connection(("127.0.0.1", self.server.port), timeout=timeout)
        try:
            s.sendall(payload)
            if not read:
                return 0
            data = b""
            while b"\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            m = re.match(rb"HTTP/1\.[01] (\d{3})", data)
            return int(m.group(1)) if m else 0
        except (ConnectionResetError, BrokenPipeError):
            return -1  # the server closed the connection on a body it refused
        finally:
            s.close()

    # ---- traffic
    def chat_body(self, stream, max_tokens=None):
        words = ["hello", "world", "tell", "me", "a", "story", "about", "cats", "and", "dogs"]
        text = " ".join(self.rng.choice(words) for _ in range(self.rng.randint(1, 40)))
        return {"messages": [{"role": "user", "content": text}], "stream": stream, "ignore_eos": True,
                "max_tokens": max_tokens or self.rng.randint(1, 24), "temperature": 0.8,
                "seed": self.rng.randint(0, 1 << 30)}

    def op_chat(self):
        self.request("POST", "/v1/chat/completions", self.chat_body(False), expect=(200, 429))

    def op_completion(self):
        self.request("POST", "/v1/completions",
                     {"prompt": "Once upon a time", "max_tokens": self.rng.randint(1, 16), "ignore_eos": True},
                     expect=(200, 429))

    def op_stream(self, disconnect):
        c = self.conn()
        try:
            c.request("POST", "/v1/chat/completions", body=json.dumps(self.chat_body(True, 32)).encode(),
                      headers=self.headers())
            r = c.getresponse()
            if r.status != 200:
                text = r.read()
                if r.status != 429:
                    self.failure(f"stream: HTTP {r.status}: {text[:200]!r}")
                self.count(f"stream {r.status}")
                return
            n = 0
            while True:
                line = r.fp.readline()
                if not line:
                    if not self.restarting.is_set():  # (the planned SIGKILL cuts one stream)
                        self.failure("stream ended without data: [DONE]")
                    break
                if line.startswith(b"data: "):
                    n += 1
                    if line.strip() == b"data: [DONE]":
                        break
                    if disconnect and n >= self.rng.randint(1, 4):
                        self.count("stream disconnected")
                        return  # close mid-stream: the server must free the sequence
            self.count("stream done")
        finally:
            c.close()

    def op_bad_bodies(self):
        kind = self.rng.randrange(7)
        big = self.args.max_body
        if kind == 0:    # malformed JSON
            self.request("POST", "/v1/chat/completions", b'{"messages": [', expect=(400,))
        elif kind == 1:  # valid JSON, wrong types
            self.request("POST", "/v1/chat/completions", {"messages": "hi", "temperature": "hot"}, expect=(400,))
        elif kind == 2:  # declared too large: refused from the headers, before the body is read
            code = self.raw(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + self.key.encode() +
                            b"\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (big + 1))
            self.count(f"declared big {code}")
            if code != 413:
                self.failure(f"Content-Length above the limit: HTTP {code}, expected 413")
        elif kind == 3:  # missing / wrong key
            self.request("POST", "/v1/completions", {"prompt": "x"}, key=False, expect=(401,))
        elif kind == 4:  # a small chunked body is a normal request
            body = json.dumps({"prompt": "chunked", "max_tokens": 2}).encode()
            chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 7]), body[i:i + 7]) for i in range(0, len(body), 7))
            code = self.raw(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + self.key.encode() +
                            b"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close"
                            b"\r\n\r\n" + chunks + b"0\r\n\r\n")
            self.count(f"chunked small {code}")
            if code not in (200, 429):
                self.failure(f"small chunked body: HTTP {code}")
        elif kind == 5:  # oversized chunked body: must be refused (413)
            piece = b"y" * 4096
            n = (4 * big) // len(piece)
            code = self.raw(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + self.key.encode() +
                            b"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close"
                            b"\r\n\r\n" + (b"1000\r\n" + piece + b"\r\n") * n +
                            b"0\r\n\r\n")
            self.count(f"chunked big {code}")
            # issue 12 "Server body limit bypassed": the limit holds while a chunked body is read
            # (-1: the server closed the connection after answering 413 before we read it)
            if code not in (413, -1):
                self.failure(f"oversized chunked body: HTTP {code}, expected 413")
        else:            # form content type (curl -d) between 8 KiB and the limit: a normal JSON body
            body = json.dumps({"prompt": "p" * 9000, "max_tokens": 1}).encode()
            if len(body) < big:
                c = self.conn()
                try:
                    c.request("POST", "/v1/completions", body=body,
                              headers=self.headers(ctype="application/x-www-form-urlencoded"))
                    r = c.getresponse()
                    text = r.read()
                finally:
                    c.close()
                # issue 12 "Wrong limit for form-encoded bodies": JSON whatever the type, one limit. The
                # 9000-character prompt may exceed the soak model's context: that 400 also proves the
                # body was read and parsed as JSON rather than refused by size.
                too_long = r.status == 400 and b"context_length_exceeded" in text
                if r.status not in (200, 429) and not too_long:
                    self.failure(f"form-encoded {len(body)}-byte body: HTTP {r.status}, expected 200, 429 or a "
                                 f"context-length 400: {text[:200]!r}")

    def op_half_request(self):
        # headers only, or nothing, then hang up
        self.raw(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"mess"
                 if self.rng.random() < 0.5 else b"", read=False)
        self.count("half request")

    def op_burst(self):
        n = self.args.queue + 4 + 6
        out = []

        def one():
            try:
                s, _ = self.request("POST", "/v1/completions",
                                    {"prompt": "burst", "max_tokens": 8, "ignore_eos": True}, expect=(200, 429))
                out.append(s)
            except OSError as e:
                self.failure(f"burst: {e}")

        th = [threading.Thread(target=one) for _ in range(n)]
        for t in th:
            t.start()
        for t in th:
            t.join()
        self.count(f"burst 429s {sum(1 for s in out if s == 429) > 0}")

    def op_task(self):
        if self.rng.random() < 0.3 and self.tasks:
            with self.lock:
                tid = self.rng.choice(sorted(self.tasks))
            status, _ = self.request("DELETE", f"/v1/tasks/{tid}", expect=(200, 404))
            if status == 404 and not self.may_be_purged(tid):
                self.failure(f"DELETE /v1/tasks/{tid}: 404 although fewer than {KEEP_FINISHED} tasks are newer")
            return
        body = {"task": "bench", "gen_len": self.rng.randint(1, 16)}
        if self.rng.random() < 0.2:
            body["alignment"] = 7  # invalid: 400 naming the parameter
            self.request("POST", "/v1/tasks", body, expect=(400,))
            return
        status, text = self.request("POST", "/v1/tasks", body, expect=(200,))
        if status == 200:
            self.add_task(json.loads(text)["id"])

    def client(self, seed):
        rng = random.Random(seed)
        ops = [(self.op_chat, 20), (self.op_completion, 10), (lambda: self.op_stream(False), 15),
               (lambda: self.op_stream(True), 10), (self.op_bad_bodies, 15), (self.op_half_request, 5),
               (self.op_task, 5), (lambda: self.request("GET", "/metrics"), 3),
               (lambda: self.request("GET", "/v1/models"), 2), (self.op_burst, 1)]
        total = sum(w for _, w in ops)
        while not self.stop.is_set():
            if self.restarting.is_set():
                time.sleep(0.1)
                continue
            x = rng.uniform(0, total)
            for op, w in ops:
                x -= w
                if x <= 0:
                    break
            try:
                op()
            except Exception as e:  # noqa: BLE001 - every client error is a finding unless the server is down
                if not isinstance(e, (OSError, http.client.HTTPException)):
                    self.failure(f"{getattr(op, '__name__', 'op')}: {type(e).__name__}: {e}")
                    continue
                if not self.restarting.is_set() and self.server.proc.poll() is None:
                    self.failure(f"{getattr(op, '__name__', 'op')}: {type(e).__name__}: {e}")
                elif self.server.proc.poll() is not None and not self.restarting.is_set():
                    self.failure(f"server died: exit {self.server.proc.returncode}")
                    self.stop.set()

    # ---- checks
    def metrics(self):
        _, text = self.request("GET", "/metrics")
        m = {}
        for line in text.decode().splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                m[name] = float(value)
        return m

    def wait_idle(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            m = self.metrics()
            if m.get("duet_requests_running", 0) == 0 and m.get("duet_queue_depth", 0) == 0:
                return m
            time.sleep(0.2)
        self.failure("server not idle 60 s after the clients stopped")
        return self.metrics()

    def check_idle_resources(self, label, base_fds):
        time.sleep(1.0)  # let closed connections reach the server's worker threads
        m = self.wait_idle()
        used, cached = m.get("duet_kv_blocks_used", -1), m.get("duet_prefix_cache_blocks", 0)
        if used != cached:
            self.failure(f"{label}: {used:.0f} KV blocks in use at idle, {cached:.0f} held by the prefix cache")
        deadline = time.time() + 15  # a half-sent request holds its socket until the read timeout
        while self.server.n_fds() > base_fds + 2 and time.time() < deadline:
            time.sleep(0.5)
        fds = self.server.n_fds()
        if fds > base_fds + 2:
            self.failure(f"{label}: {fds} open file descriptors at idle (baseline {base_fds})")
        print(f"soak: {label}: kv_blocks_used {used:.0f} (prefix cache {cached:.0f}), fds {fds} (baseline {base_fds})")

    def run_phase(self, label, seconds):
        """Traffic for `seconds`; returns RSS samples (t, kB) of the current server."""
        samples, t0 = [], time.time()
        self.stop.clear()
        threads = [threading.Thread(target=self.client, args=(self.rng.random(),), daemon=True)
                   for _ in range(self.args.clients)]
        for t in threads:
            t.start()
        while time.time() - t0 < seconds and not self.stop.is_set():
            samples.append((time.time() - t0, self.server.rss_kb()))
            time.sleep(0.5)
        self.stop.set()
        for t in threads:
            t.join(timeout=120)
        if self.server.proc.poll() is not None:
            self.failure(f"{label}: server exited with {self.server.proc.returncode}")
        return samples

    def check_rss(self, label, samples):
        n = len(samples)
        if n < 8:
            return
        warm = [kb for t, kb in samples if t >= samples[-1][0] * 0.3][:4]  # just after warm-up
        tail = [kb for _, kb in samples[-4:]]
        base, end = sorted(warm)[len(warm) // 2], sorted(tail)[len(tail) // 2]
        growth_mb = (end - base) / 1024
        print(f"soak: {label}: RSS {base / 1024:.0f} MB after warm-up, {end / 1024:.0f} MB at the end "
              f"(+{growth_mb:.1f} MB, bound {self.args.rss_growth_mb} MB), peak {max(kb for _, kb in samples) / 1024:.0f} MB")
        if growth_mb > self.args.rss_growth_mb:
            self.failure(f"{label}: RSS grew {growth_mb:.1f} MB after warm-up (bound {self.args.rss_growth_mb} MB)")

    def probe_chunked_memory(self):
        """A 16 MB chunked body against a 64 KB limit must be refused while it is read, not after."""
        before = self.server.rss_kb()
        piece = b"z" * 65536
        head = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + self.key.encode() +
                b"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        code = self.raw(head + (b"10000\r\n" + piece + b"\r\n") * 256 + b"0\r\n\r\n", timeout=60)
        grew_mb = (self.server.rss_kb() - before) / 1024
        # issue 12 "Server body limit bypassed": refused while it is read, so RSS does not grow by it
        if code not in (413, -1) or grew_mb >= 8:
            self.failure(f"16 MB chunked body: HTTP {code}, RSS +{grew_mb:.1f} MB; expected 413 and < 8 MB")

    def all_tasks(self):
        """Every task, through GET /v1/tasks pages of 100 (?after=the last id of a page)."""
        tasks, after = [], ""
        while True:
            _, text = self.request("GET", "/v1/tasks?limit=100" + (f"&after={after}" if after else ""))
            page = json.loads(text)
            tasks += page["data"]
            if not page.get("has_more") or not page["data"]:
                return tasks
            after = page["last_id"]

    def check_tasks(self, final):
        by_id = {t["id"]: t for t in self.all_tasks()}
        allowed = {"done", "failed", "cancelled", "interrupted"} if final else \
            {"done", "failed", "cancelled", "interrupted", "queued", "running"}
        for tid in sorted(self.tasks):
            t = by_id.get(tid)
            if t is None:
                if not self.may_be_purged(tid):
                    self.failure(f"task {tid} was accepted but is not in GET /v1/tasks")
            elif t["status"] not in allowed:
                self.failure(f"task {tid} ended '{t['status']}' (allowed: {', '.join(sorted(allowed))})")
        return by_id

    def run(self):
        a = self.args
        os.makedirs(a.workdir, exist_ok=True)
        model = os.path.join(a.workdir, "soak-tiny-llama.gguf")
        if not os.path.exists(model):
            r = subprocess.run([a.duet, "gen-model", "--arch", "tiny-llama", "--dtype", "f32", "--seed", "5",
                                "-o", model], capture_output=True, text=True)
            if r.returncode != 0:
                fail_setup(f"gen-model failed: {r.stdout}{r.stderr}")
        db = os.path.join(a.workdir, "soak-tasks.db")
        log = os.path.join(a.workdir, "soak-server.log")
        for p in (db, db + "-wal", db + "-shm", log):
            if os.path.exists(p):
                os.remove(p)
        self.server = Server(a, self.key, model, db, log)
        self.server.start()
        self.request("POST", "/v1/completions", {"prompt": "warm", "max_tokens": 2})
        base_fds = self.server.n_fds()
        half = a.seconds / 2
        print(f"soak: {a.clients} clients, {a.seconds:.0f} s, server pid {self.server.proc.pid} port {self.server.port}")

        samples = self.run_phase("phase 1", half)
        self.check_rss("phase 1", samples)
        self.check_idle_resources("phase 1", base_fds)
        self.check_tasks(final=False)
        self.probe_chunked_memory()

        # kill -9 in the middle of work: start tasks and requests, then SIGKILL
        # long tasks (a 7B preset, 4000 tokens: its whole context), so some are still queued or running at the kill
        for _ in range(3):
            status, text = self.request("POST", "/v1/tasks", {"task": "bench", "model": "llama2-7b", "seq_len": 64, "gen_len": 4000})
            if status == 200:
                self.add_task(json.loads(text)["id"])
        self.restarting.set()
        def busy_stream():
            try:
                self.op_stream(False)
            except (OSError, http.client.HTTPException):
                pass  # cut by the SIGKILL, as planned

        busy = threading.Thread(target=busy_stream, daemon=True)
        busy.start()
        time.sleep(0.2)
        self.server.proc.send_signal(signal.SIGKILL)
        self.server.proc.wait()
        busy.join(timeout=10)
        pending = self.check_tasks_before_restart()
        self.server.start()
        self.restarting.clear()
        after = self.check_tasks(final=True)
        for tid in pending:
            if after.get(tid, {}).get("status") != "interrupted":
                self.failure(f"task {tid} was unfinished at the kill but is "
                             f"'{after.get(tid, {}).get('status')}' after the restart (expected interrupted)")
        print(f"soak: kill -9 + restart: {len(pending)} unfinished task(s) marked interrupted")
        base_fds = self.server.n_fds()

        samples = self.run_phase("phase 2", a.seconds - half)
        self.check_rss("phase 2", samples)
        self.check_idle_resources("phase 2", base_fds)
        deadline = time.time() + 120
        while time.time() < deadline:  # tasks submitted in phase 2 finish on their own
            by_id = self.check_tasks(final=False)
            if all(by_id.get(t, {}).get("status") not in ("queued", "running") for t in self.tasks):
                break
            time.sleep(0.5)
        self.check_tasks(final=True)

        self.server.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.server.proc.wait(timeout=30)
            if rc != 0:
                self.failure(f"duet serve exited with {rc} on SIGTERM (expected 0)")
        except subprocess.TimeoutExpired:
            self.server.proc.kill()
            self.failure("duet serve did not stop within 30 s of SIGTERM")
        with open(log, "rb") as f:
            if self.key.encode() in f.read():
                self.failure(f"the API key appears in the server log {log}")
        return self.report()

    def check_tasks_before_restart(self):
        """Unfinished tasks at the kill, read from the database file the way the restart will."""
        import sqlite3
        con = sqlite3.connect(self.server.db)
        try:
            rows = con.execute("SELECT id FROM duet_tasks WHERE status IN ('queued', 'running')").fetchall()
        except sqlite3.Error as e:
            self.failure(f"cannot read the task database after the kill: {e}")
            rows = []
        finally:
            con.close()
        return {r[0] for r in rows}

    def report(self):
        print("soak: responses: " + ", ".join(f"{k}: {v}" for k, v in sorted(self.counts.items())))
        for todo, (n, detail) in sorted(self.xfail.items()):
            print(f"soak: XFAIL ({n}x) {todo} [{detail}]")
        for todo, (n, detail) in sorted(self.xpass.items()):
            print(f"soak: XPASS ({n}x) {todo}: fixed? remove the expected failure [{detail}]")
        for f in self.failures:
            print(f"soak: FAIL: {f}")
        print("soak: " + ("FAILED" if self.failures else "passed"))
        return 1 if self.failures else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duet", required=True, help="path of the duet binary")
    p.add_argument("--workdir", required=True, help="folder for the model, the task database and the server log")
    p.add_argument("--seconds", type=float, default=60, help="traffic time, split in two by the kill -9 (default 60)")
    p.add_argument("--clients", type=int, default=8, help="client threads (default 8)")
    p.add_argument("--queue", type=int, default=8, help="server --queue (small, so bursts reach 429; default 8)")
    p.add_argument("--max-body", type=int, default=65536, help="server --max-body-bytes (default 65536)")
    p.add_argument("--rss-growth-mb", type=float, default=48,
                   help="allowed RSS growth after warm-up per server run (default 48)")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    if a.seconds < 10 or a.clients < 1:
        fail_setup("--seconds must be at least 10 and --clients at least 1")
    if not os.access(a.duet, os.X_OK):
        fail_setup(f"--duet {a.duet} is not an executable")
    sys.exit(Soak(a).run())


if __name__ == "__main__":
    main()
