#!/usr/bin/env python3
"""Fails when a tracked file holds an absolute path of a machine or narrates past work by session.

  check_repo_text.py [ROOT]      check the files git tracks under ROOT (default: this checkout)
  check_repo_text.py --self-test check that planted violations are found and clean text is not

Flags, with file:line and the offending text:
  - an absolute path of a developer's or CI machine: one that starts a token with the folder
    work, root or home/<name> under the file system root (the same names after another folder,
    as in a shell variable or build directory, are relative and pass);
  - narration by numbered stints of work (the word "session" followed by a number): the repository says
    what the code does and what was measured (command, machine, commit); history is git's.
Exit status 0 when clean, 1 with the list otherwise, 2 on bad usage.
"""
import os
import re
import subprocess
import sys
import tempfile

RULES = [
    ("absolute machine path", re.compile(r"(?<![\w.$}/-])/(?:work|root)/|(?<![\w.$}/-])/home/[A-Za-z0-9_.-]+/")),
    ("session narration", re.compile(r"\bsessions? [0-9]+", re.I)),
]
SKIP_DIRS = {".git", "build", "node_modules"}
THIS = os.path.abspath(__file__)


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, check=True).stdout
        return [os.path.join(root, p) for p in out.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.startswith("build")]
            files += [os.path.join(d, n) for n in names]
        return files


def check(root):
    problems = []
    for path in tracked_files(root):
        if os.path.abspath(path) == THIS or not os.path.isfile(path):
            continue
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        if b"\0" in data[:8192]:
            continue  # binary
        for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            for what, rx in RULES:
                m = rx.search(line)
                if m:
                    problems.append(f"{os.path.relpath(path, root)}:{n}: {what}: {line.strip()[:160]}")
    return problems


def self_test():
    bad = {
        "a.md": "see /wo" + "rk/shared/notes.md\n",
        "b.cpp": "// measured in sess" + "ion 14\n",
        "c.toml": "# from /ho" + "me/alice/notes.txt\n",
        "d.sh": 'cd /ro' + 'ot/x\n',
        "e.md": "Sess" + "ions 11-15 said so\n",
    }
    rel = "work" + "/"  # the folder name after another folder: relative
    good = {"f.sh": f'mkdir -p "$corpus/{rel}"\n', "g.md": f"one session of traffic; build/{rel}x\n"}
    with tempfile.TemporaryDirectory() as d:
        for name, text in {**bad, **good}.items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        found = check(d)
    names = sorted(p.split(":")[0] for p in found)
    if names != sorted(bad):
        print("check_repo_text: self-test failed: flagged", names, "expected", sorted(bad), file=sys.stderr)
        return 1
    print("check_repo_text: self-test passed (" + ", ".join(found) + ")")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith("-")):
        print("usage: check_repo_text.py [ROOT] | --self-test", file=sys.stderr)
        return 2
    root = os.path.abspath(argv[1] if len(argv) == 2 else os.path.join(os.path.dirname(THIS), ".."))
    problems = check(root)
    if problems:
        print("\n".join(problems))
        print(f"check_repo_text: {len(problems)} line(s) with a machine path or session narration", file=sys.stderr)
        return 1
    print("check_repo_text: clean")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
