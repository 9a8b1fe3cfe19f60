#!/usr/bin/env python3
"""Tables of docs/performance.md drawn from the measurement records in bench/results/*.jsonl.

Each record is one JSON object per line: date, commit, machine, command, series, figure, column,
value (number, when the measurement is one number), unit, text (the figure as measured), and
optionally numbers (every number of a compound cell) and source.

In a markdown file, a block

    <!-- perf-table series="SERIES" [figures="REGEX"] [columns="REGEX"] [last="N"] -->
    ...
    <!-- /perf-table -->

is replaced by a table of the records of that series (rows: figures in file order, columns: the
`column` values in file order, the last N of them if given) and one line naming the machine, the
dates, the commits and the command of the records shown.

  perf_tables.py render --series S [--figures R] [--columns R] [--last N]   print one table
  perf_tables.py update docs/performance.md                                rewrite the blocks in place
  perf_tables.py check docs/performance.md                                 exit 1 if a block is stale
  perf_tables.py series                                                    list the series and counts
Results default to every bench/results/*.jsonl of the checkout (--results FILE... to choose).
"""
import argparse
import glob
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCK_RE = re.compile(r"<!-- perf-table (?P<attrs>[^>]*?)-->\n(?P<body>.*?)<!-- /perf-table -->", re.S)
ATTR_RE = re.compile(r'(\w+)="([^"]*)"')
REQUIRED = ("date", "commit", "machine", "command", "series", "figure", "text")


def load(paths):
    records = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                except json.JSONDecodeError as e:
                    sys.exit(f"perf_tables: error: {os.path.relpath(path, ROOT)}:{n}: not JSON ({e.msg})")
                missing = [k for k in REQUIRED if k not in r]
                if missing:
                    sys.exit(f"perf_tables: error: {os.path.relpath(path, ROOT)}:{n}: missing {', '.join(missing)}")
                records.append(r)
    return records


def cell_text(r):
    if r.get("text"):
        return r["text"].replace("|", "\\|")
    v = r.get("value")
    return "" if v is None else f"{v:g} {r.get('unit', '')}".strip()


def render(records, series, figures=None, columns=None, last=None):
    rs = [r for r in records if r["series"] == series]
    if figures:
        rs = [r for r in rs if re.search(figures, r["figure"])]
    cols = []
    for r in rs:
        c = r.get("column", "")
        if c not in cols and (not columns or re.search(columns, c)):
            cols.append(c)
    if last:
        cols = cols[-int(last):]
    rs = [r for r in rs if r.get("column", "") in cols]
    if not rs:
        sys.exit(f'perf_tables: error: no records for series "{series}" (see `perf_tables.py series`)')
    rows, cells = [], {}
    for r in rs:
        if r["figure"] not in rows:
            rows.append(r["figure"])
        cells[(r["figure"], r.get("column", ""))] = cell_text(r)
    out = ["| figure | " + " | ".join((c or "value").replace("|", "\\|") for c in cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for f in rows:
        out.append(f"| {f.replace('|', '/')} | " + " | ".join(cells.get((f, c), "") for c in cols) + " |")

    def uniq(key):
        seen = []
        for r in rs:
            v = r.get(key)
            if v and v not in seen:
                seen.append(v)
        return seen

    commits = uniq("commit")
    out.append("")
    out.append(f"Machine: {'; '.join(uniq('machine'))}. Date: {', '.join(uniq('date'))}. "
               f"Commit: {', '.join(commits) if commits else 'not recorded'}. "
               f"Command: {' / '.join('`' + c + '`' for c in uniq('command'))}.")
    return "\n".join(out) + "\n"


def rewrite(text, records):
    def one(m):
        attrs = dict(ATTR_RE.findall(m.group("attrs")))
        if "series" not in attrs:
            sys.exit("perf_tables: error: a perf-table block has no series=\"...\"")
        table = render(records, attrs["series"], attrs.get("figures"), attrs.get("columns"), attrs.get("last"))
        return f"<!-- perf-table {m.group('attrs')}-->\n{table}<!-- /perf-table -->"

    return BLOCK_RE.sub(one, text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", nargs="+", default=sorted(glob.glob(os.path.join(ROOT, "bench/results/*.jsonl"))))
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("render")
    r.add_argument("--series", required=True)
    r.add_argument("--figures")
    r.add_argument("--columns")
    r.add_argument("--last")
    for name in ("update", "check"):
        sub.add_parser(name).add_argument("doc")
    sub.add_parser("series")
    a = ap.parse_args()
    records = load(a.results)
    if a.cmd == "render":
        sys.stdout.write(render(records, a.series, a.figures, a.columns, a.last))
    elif a.cmd == "series":
        counts = {}
        for rec in records:
            counts[rec["series"]] = counts.get(rec["series"], 0) + 1
        for s, n in counts.items():
            print(f"{n:5d}  {s}")
    else:
        with open(a.doc, encoding="utf-8") as f:
            text = f.read()
        new = rewrite(text, records)
        if a.cmd == "check":
            if new != text:
                print(f"perf_tables: {a.doc} is stale: run scripts/perf_tables.py update {a.doc}", file=sys.stderr)
                return 1
            return 0
        if new != text:
            tmp = a.doc + ".tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(new)
            os.replace(tmp, a.doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
