#!/usr/bin/env bash
# An optimisation stopped by SIGINT ends with exit code 130, a history with every evaluation made
# and a summary marked as interrupted. Arguments: the mbopt executable, a scratch folder.
set -u
mbopt=$1
out=$2
rm -rf "$out"
timeout --preserve-status -s INT 2 "$mbopt" optimize problems/fivebar_spline.json --out "$out" --quiet
code=$?
fail() { echo "FAIL $*"; exit 1; }
[ "$code" -eq 130 ] || fail "exit code $code, expected 130"
grep -q '"status":[[:space:]]*"interrupted"' "$out/summary.json" || fail "summary not marked interrupted"
rows=$(($(wc -l < "$out/history.csv") - 1))
[ "$rows" -ge 1 ] || fail "history has no evaluation"
head -1 "$out/history.csv" | grep -q '^evaluation,seconds,objective,u\[0\]' || fail "history header"
echo "PASS interrupted after $rows evaluations with valid history and summary"
