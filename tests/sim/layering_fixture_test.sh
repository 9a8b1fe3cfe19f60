#!/bin/sh
# scripts/check_layering.py on the fixture prints exactly layering_fixture/expected.txt and exits 1.
# Usage: layering_fixture_test.sh CHECK_LAYERING_PY FIXTURE_DIR
out=$(/usr/bin/python3 "$1" "$2/src")
rc=$?
printf '%s\n' "$out" | diff -u "$2/expected.txt" - || exit 1
[ "$rc" = 1 ] || { echo "exit status $rc, expected 1"; exit 1; }
