#!/usr/bin/env bash
# Time histories of two runs side by side: one panel per output column, both runs' CSV columns
# (as written by `mbopt simulate --csv`) against t, drawn by gnuplot.
#   scripts/plot-histories.sh OUT.svg TITLE FIRST.csv FIRST_LABEL SECOND.csv SECOND_LABEL COLUMN ...
set -euo pipefail
svg=$1 title=$2 first=$3 first_label=$4 second=$5 second_label=$6
shift 6
header=$(head -1 "$first")
script="set terminal svg size 800,$((220 * $#)) dynamic noenhanced font 'sans,11';"
script+="set output '$svg'; set datafile separator ','; set key top right;"
script+="set multiplot layout $#,1 title '$title';"
for c in "$@"; do
  idx=$(tr ',' '\n' <<<"$header" | grep -nx "$c" | cut -d: -f1)
  [ -n "$idx" ] || { echo "plot-histories: no column $c in $first" >&2; exit 1; }
  script+="set ylabel '$c'; set xlabel 't (s)';"
  script+="plot '$first' using 1:$idx with lines title '$first_label',"
  script+=" '$second' using 1:$idx with lines title '$second_label';"
done
script+="unset multiplot"
gnuplot -e "$script"
