#!/usr/bin/env python3
"""Fails when src/ breaks its layering: an include of a folder the design does not allow, or a
CMake link line that does not state what the folder's sources include.

1. Includes. Every `#include "x/..."` in src/<folder>/ (.h, .cpp, .inc: the kernels' per-ISA
   bodies included) must name a folder in ALLOWED[folder] (docs/design.md, CONTRIBUTING.md):
       core <- format <- model;  core <- graph <- model (the tensor catalogue);
       kernels, layout, hw, config, parallel -> core only;
       sim -> hw, layout, graph (and config: see ALLOWED);
       runtime -> model, kernels, graph, parallel (and layout: the PIM-layout weight source);
       workload -> runtime, sim, serving (and parallel: the mpirun ranks);  tune -> workload, sim;
       server -> anything but cli;  cli -> anything.
   A folder missing from ALLOWED is an error: a new folder states its layer here.
2. Link lines. The library of src/<folder> (its CMakeLists.txt) links duet_<x> for every
   folder x it includes, and no duet_<x> it includes nothing from, so the link graph is the
   include graph.
Usage: check_layering.py SRC_DIR   (prints one line per violation, exit 1 if any)
"""
import os
import re
import sys

BASE = {"core"}
ALLOWED = {
    "core": set(),
    "format": {"core"},
    "graph": {"core"},
    "model": {"core", "format", "graph"},
    "kernels": {"core"},
    "layout": {"core"},
    "hw": {"core"},
    "config": {"core"},
    "parallel": {"core"},  # the communicator of real tensor parallelism (MPI)
    # the continuous-batching policy shared by the real batcher and the simulator: pure, no engine
    "sched": {"core"},
    # sim/hw_rig.cpp builds the modelled machine from the config structs (settings, config.toml):
    # the one edge of sim beyond hw, layout and graph.
    "sim": {"core", "hw", "layout", "graph", "config"},
    # layout: the PIM-layout weight source runs the real matmuls on the reordered bytes.
    "runtime": {"core", "format", "model", "kernels", "graph", "layout", "parallel", "sched"},
    # the simulator executor of the shared scheduler: steps timed on the modelled machine
    "serving": {"core", "hw", "layout", "graph", "config", "sim", "sched"},
    # what gets run and compared: the real engine (runtime), the modelled machine (sim) and the
    # serving simulator (serving); parallel: the serving bench spreads a rate sweep over the ranks
    "workload": {"core", "format", "model", "graph", "hw", "layout", "config", "sim", "sched", "serving", "runtime",
                 "parallel"},
    # tune runs the bench comparison (workload) at every point of its search
    "tune": {"core", "hw", "layout", "config", "sim", "workload"},
}
TOP = {"server", "cli"}  # may include anything below them; server must not include cli
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')
SOURCES = (".h", ".cpp", ".hpp", ".cc", ".inc")
LINKED = re.compile(r"\bduet_([a-z]+)\b")


def includes(src, folder):
    """{included folder: first 'path:line'} over the folder's sources."""
    out = {}
    for root, _, files in os.walk(os.path.join(src, folder)):
        for name in sorted(files):
            if not name.endswith(SOURCES):
                continue
            path = os.path.join(root, name)
            with open(path, encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if m and m.group(1) != folder:
                        out.setdefault(m.group(1), []).append(f"{os.path.relpath(path, os.path.dirname(src))}:{n}")
    return out


def links(src, folder, folders):
    """The folders whose duet_<x> library src/<folder>/CMakeLists.txt names (None: no file)."""
    path = os.path.join(src, folder, "CMakeLists.txt")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        text = "\n".join(line.split("#", 1)[0] for line in f)
    return {m for m in LINKED.findall(text) if m in folders and m != folder}


def violations(src):
    folders = {d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d))}
    out = []
    for folder in sorted(folders):
        allowed = ALLOWED.get(folder)
        if allowed is None and folder not in TOP:
            out.append(f"src/{folder}/: folder has no layer (add it to scripts/check_layering.py ALLOWED)")
            continue
        if folder == "server":
            allowed = folders - {"cli", "server"}
        elif folder == "cli":
            allowed = folders - {"cli"}
        inc = {k: v for k, v in includes(src, folder).items() if k in folders}
        for dep, where in sorted(inc.items()):
            if dep not in allowed:
                for w in where:
                    out.append(f"{w}: {folder}/ must not include {dep}/ (allowed: {', '.join(sorted(allowed)) or 'none'})")
        linked = links(src, folder, folders)
        if linked is None:
            continue
        cmake = f"src/{folder}/CMakeLists.txt"
        for dep in sorted(set(inc) - linked):
            out.append(f"{cmake}: {folder}/ includes {dep}/ ({inc[dep][0]}) but does not link duet_{dep}")
        for dep in sorted(linked - set(inc)):
            out.append(f"{cmake}: links duet_{dep} but {folder}/ includes nothing from {dep}/")
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
