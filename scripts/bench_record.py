#!/usr/bin/env python3
"""Append one benchmark run's figures to a results file (bench/results/*.jsonl), for `make bench`.

  bench_record.py --results FILE --program NAME --command CMD --log LOG [--gbench-json JSON]

Reads what the program printed (LOG) and, for Google Benchmark programs, its --benchmark_out
JSON, and appends one JSON object per figure: date (UTC), commit (HEAD, "+dirty" when tracked
files other than bench/results/ and docs/performance.md differ from it), machine (CPU model,
family/model, logical CPUs, vector ISA, from /proc/cpuinfo), command, series ("make bench:
NAME"), figure, column ("<date> <commit>", so runs line up as columns in scripts/perf_tables.py),
value, unit, text. Figures taken:
  - the closing "figure value | limit | share target" tables of bench_kernels and bench_engine
    (one record per row: the value, its limit and its share of it);
  - every Google Benchmark entry: real time per iteration, and its rate counters.
Prints how many records it appended. Exit 2 with `bench_record: error: ...` on unreadable input.
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUM = r"-?\d+(?:\.\d+)?"
# "<figure> <value> [unit] | <limit name> <limit> | <share>% <target> <met>" (limits_table.h, engine_bench.cpp)
LIMIT_ROW = re.compile(
    rf"^(?P<fig>\S.*?)\s+(?P<val>{NUM})\s+(?:(?P<unit>[^\s|]+)\s+)?\|\s*(?P<lim_name>.*?)\s+(?P<lim>{NUM})\s*\|"
    rf"\s*(?P<share>{NUM}%|-)\s+(?P<target>>= \d+%|-)\s+(?P<met>.*?)\s*$")
UNIT_IN_NAME = re.compile(r"(tok/s|GB/s|GOP/s|GFLOP/s)$")


def fail(msg):
    print(f"bench_record: error: {msg}", file=sys.stderr)
    sys.exit(2)


def git(*args):
    try:
        return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def commit_id():
    head = git("rev-parse", "--short", "HEAD") or "unknown"
    changed = [l for l in git("status", "--porcelain", "--untracked-files=no").splitlines()
               if not re.search(r"\s(bench/results/|docs/performance\.md)", l)]
    return head + ("+dirty" if changed else "")


def machine():
    info = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                k, _, v = line.partition(":")
                info.setdefault(k.strip(), v.strip())
    except OSError:
        return "unknown"
    flags = set(info.get("flags", "").split())
    isa = ("AVX-512" + ("+VNNI" if "avx512_vnni" in flags else "")) if "avx512f" in flags else (
        "AVX2" if "avx2" in flags else "no AVX2")
    return (f"{info.get('model name', 'unknown CPU')} (family {info.get('cpu family', '?')} model "
            f"{info.get('model', '?')}), {os.cpu_count()} logical CPUs, {isa}")


def limit_records(log_text):
    out = []
    for line in log_text.splitlines():
        m = LIMIT_ROW.match(line)
        if not m or m.group("fig") == "figure":
            continue
        unit = m.group("unit") or (UNIT_IN_NAME.search(m.group("fig")) or [None])[0] or ""
        share = m.group("share")
        text = f"{m.group('val')} {unit}".strip()
        if share != "-":
            text += f" ({share} of {m.group('lim')})"
        rec = {"figure": f"{m.group('fig')} vs {m.group('lim_name')}", "value": float(m.group("val")), "unit": unit,
               "limit": float(m.group("lim")), "text": text}
        if share != "-":
            rec["share_pct"] = float(share.rstrip("%"))
        if m.group("target") != "-":
            rec["target"] = m.group("target")
        out.append(rec)
    return out


def gbench_records(path):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        fail(f"{path}: not a Google Benchmark JSON file ({e})")
    out = []
    for b in data.get("benchmarks", []):
        if b.get("run_type") == "aggregate" or "real_time" not in b:
            continue
        unit = b.get("time_unit", "ns")
        rec = {"figure": b["name"], "value": b["real_time"], "unit": unit, "cpu_time": b.get("cpu_time"),
               "text": f"{b['real_time']:.4g} {unit} (CPU {b.get('cpu_time', 0):.4g})"}
        rates = {k: v for k, v in b.items() if k in ("bytes_per_second", "items_per_second")}
        extra = {k: v for k, v in b.items()
                 if isinstance(v, (int, float)) and k not in (
                     "real_time", "cpu_time", "iterations", "repetitions", "repetition_index", "threads",
                     "family_index", "per_family_instance_index") and k not in rates}
        if rates or extra:
            rec["counters"] = {**rates, **extra}
        out.append(rec)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", required=True)
    ap.add_argument("--program", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--gbench-json")
    a = ap.parse_args()
    try:
        with open(a.log, encoding="utf-8", errors="replace") as f:
            log_text = f.read()
    except OSError as e:
        fail(f"{a.log}: {e.strerror}")
    recs = limit_records(log_text)
    if a.gbench_json:
        recs += gbench_records(a.gbench_json)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    commit = commit_id()
    base = {"date": date, "commit": commit, "machine": machine(), "command": a.command,
            "series": f"make bench: {a.program}", "column": f"{date} {commit}"}
    with open(a.results, "a", encoding="utf-8") as f:
        for r in recs:
            f.write(json.dumps({**base, **r}, ensure_ascii=False) + "\n")
    print(f"bench_record: {len(recs)} figures of {a.program} appended to {os.path.relpath(a.results, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
