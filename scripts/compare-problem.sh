#!/usr/bin/env bash
# One problem of a results folder: `mbopt compare` over the given algorithms from the spec's start
# (table.txt, comparison.json, one folder per algorithm, convergence.svg), the time histories
# before (the spec's parameters) and after (the best run) as CSV, and time_histories.svg with one
# panel per output column named.
#   scripts/compare-problem.sh SPEC DIR ALGORITHMS "COLUMN ..." [OUTPUT_INTERVAL]
set -euo pipefail
cd "$(dirname "$0")/.."
spec=$1 dir=$2 algorithms=$3 columns=$4 interval=${5:-0.01}
name=$(basename "$spec" .json)
mkdir -p "$dir"
# an algorithm that fails is a row of the table (exit code 1); the others' results stand
status=0
build/mbopt compare "$spec" --algorithms "$algorithms" --out "$dir" --quiet | tee "$dir/table.txt" ||
  status=$?
[ "$status" -le 1 ] || exit "$status"
build/mbopt simulate "$spec" --csv "$dir/before.csv" --output-interval "$interval" --quiet \
  >"$dir/before.txt"
build/mbopt simulate "$spec" --parameters "$dir/comparison.json" --csv "$dir/after.csv" \
  --output-interval "$interval" --quiet >"$dir/after.txt"
# the per-evaluation plot data stay out of the repository (history.csv has the same numbers), and
# so does the 2 MB report.html (results/view/ shows one; `mbopt compare` writes it again)
rm -f "$dir"/*/best.dat "$dir/report.html"

[ -n "$columns" ] || exit 0
# shellcheck disable=SC2086
scripts/plot-histories.sh --spec "$spec" "$dir/time_histories.svg" "$name: before and after" \
  "$dir/before.csv" before "$dir/after.csv" after $columns
