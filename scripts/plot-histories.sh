#!/usr/bin/env bash
# Time histories of two runs side by side: one panel per output column, both runs' CSV columns
# (as written by `mbopt simulate --csv`) against t, drawn by gnuplot, the legend beside the
# panels. With --spec, the y labels carry the columns' units and dashed lines mark their targets
# (the functionals' references and the controllers' setpoints, scripts/lib/columns.py).
#   scripts/plot-histories.sh [--spec SPEC] OUT.svg TITLE FIRST.csv FIRST_LABEL SECOND.csv SECOND_LABEL COLUMN ...
set -euo pipefail
spec=
if [ "${1:-}" = --spec ]; then spec=$2; shift 2; fi
svg=$1 title=$2 first=$3 first_label=$4 second=$5 second_label=$6
shift 6
header=$(head -1 "$first")
declare -A unit=() target=()
if [ -n "$spec" ]; then
  while IFS=$'\t' read -r column u t; do
    unit[$column]=$u target[$column]=$t
  done < <(python3 "$(dirname "$0")/lib/columns.py" "$spec" "$@")
fi
script="set terminal svg size 900,$((220 * $#)) dynamic noenhanced font 'sans,11';"
script+="set output '$svg'; set datafile separator ','; set key outside right top; set rmargin 18;"
script+="set multiplot layout $#,1 title '$title';"
for c in "$@"; do
  idx=$(tr ',' '\n' <<<"$header" | grep -nx "$c" | cut -d: -f1)
  [ -n "$idx" ] || { echo "plot-histories: no column $c in $first" >&2; exit 1; }
  label=$c
  [ "${unit[$c]:--}" = - ] || label="$c (${unit[$c]})"
  script+="set ylabel '$label'; set xlabel 't (s)';"
  script+="plot '$first' using 1:$idx with lines title '$first_label',"
  script+=" '$second' using 1:$idx with lines title '$second_label'"
  if [ "${target[$c]:--}" != - ]; then
    IFS=, read -ra values <<<"${target[$c]}"
    for v in "${values[@]}"; do
      script+=", $v with lines dashtype 2 linecolor rgb 'gray40' title 'target $v'"
    done
  fi
  script+=";"
done
script+="unset multiplot"
gnuplot -e "$script"
