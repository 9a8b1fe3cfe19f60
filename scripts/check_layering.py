#!/usr/bin/env python3
"""Fails when a lower folder of src/ includes a higher one (docs/design.md, "Layers").

Every `#include "x/..."` in src/<folder>/ must name a folder that <folder> may depend on:
    core <- format <- model;  kernels, layout, hw, config -> core only;
    graph -> model;  sim -> hw, layout, graph, config;  parallel -> core;
    runtime -> model, kernels, sim, graph, parallel;
    workload -> runtime, sim;  tune -> workload (the bench comparison of every point);
    server, cli on top.
Usage: check_layering.py SRC_DIR   (prints one line per violation, exit 1 if any)
"""
import os
import re
import sys

ALLOWED = {
    "core": {"core"},
    "format": {"core", "format"},
    "model": {"core", "format", "model"},
    "kernels": {"core", "kernels"},
    "layout": {"core", "layout"},
    "hw": {"core", "hw"},
    "config": {"core", "config"},
    # the continuous-batching policy shared by the real batcher and the simulator: pure, no engine
    "sched": {"core", "sched"},
    "graph": {"core", "format", "model", "graph"},
    "sim": {"core", "hw", "layout", "graph", "config", "sim"},
    # the simulator executor of the shared scheduler: steps timed on the modelled machine
    "serving": {"core", "hw", "layout", "graph", "config", "sim", "sched", "serving"},
    # the communicator of real tensor parallelism (rank, size, all-reduce, broadcast over MPI)
    "parallel": {"core", "parallel"},
    "runtime": {"core", "format", "model", "kernels", "sim", "graph", "config", "hw", "layout", "parallel",
                "sched", "runtime"},
    # scripted workloads replayed on the real engine (runtime) and on the model (sim)
    "workload": {"core", "format", "model", "kernels", "sim", "graph", "config", "hw", "layout", "parallel",
                 "sched", "serving", "runtime", "workload"},
    # tune runs the bench comparison (workload/bench_runner) at every point of its search
    "tune": {"core", "format", "model", "hw", "layout", "graph", "config", "sim", "sched", "serving", "runtime",
             "workload", "tune"},
}
TOP = {"server", "cli"}  # may include anything below them; server must not include cli
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')


def violations(src):
    folders = {d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d))}
    out = []
    for folder in sorted(folders):
        allowed = ALLOWED.get(folder)
        if allowed is None and folder not in TOP:
            out.append(f"src/{folder}/: folder has no layer (add it to scripts/check_layering.py ALLOWED)")
            continue
        if folder == "server":
            allowed = folders - {"cli"}
        elif folder == "cli":
            allowed = folders
        for root, _, files in os.walk(os.path.join(src, folder)):
            for name in sorted(files):
                if not name.endswith((".h", ".cpp", ".hpp", ".cc")):
                    continue
                path = os.path.join(root, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m and m.group(1) in folders and m.group(1) not in allowed:
                            rel = os.path.relpath(path, os.path.dirname(src))
                            out.append(f"{rel}:{n}: {folder}/ must not include {m.group(1)}/ "
                                       f"(allowed: {', '.join(sorted(allowed))})")
    return out


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    bad = violations(sys.argv[1])
    for line in bad:
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
