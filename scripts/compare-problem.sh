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
build/mbopt compare "$spec" --algorithms "$algorithms" --out "$dir" --quiet | tee "$dir/table.txt"
build/mbopt simulate "$spec" --csv "$dir/before.csv" --output-interval "$interval" --quiet \
  >"$dir/before.txt"
build/mbopt simulate "$spec" --parameters "$dir/comparison.json" --csv "$dir/after.csv" \
  --output-interval "$interval" --quiet >"$dir/after.txt"
# the per-evaluation plot data stay out of the repository; history.csv has the same numbers
rm -f "$dir"/*/best.dat

[ -n "$columns" ] || exit 0
header=$(head -1 "$dir/before.csv")
npanel=$(wc -w <<<"$columns")
script="set terminal svg size 800,$((220 * npanel)) dynamic noenhanced font 'sans,11';"
script+="set output '$dir/time_histories.svg'; set datafile separator ','; set key top right;"
script+="set multiplot layout $npanel,1 title '$name: before and after';"
for c in $columns; do
  idx=$(tr ',' '\n' <<<"$header" | grep -nx "$c" | cut -d: -f1)
  [ -n "$idx" ] || { echo "compare-problem: no column $c in $dir/before.csv" >&2; exit 1; }
  script+="set ylabel '$c'; set xlabel 't (s)';"
  script+="plot '$dir/before.csv' using 1:$idx with lines title 'before',"
  script+=" '$dir/after.csv' using 1:$idx with lines title 'after';"
done
script+="unset multiplot"
gnuplot -e "$script"
