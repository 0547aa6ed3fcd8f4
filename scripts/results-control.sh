#!/usr/bin/env bash
# Regenerates results/control/: every problem of problems/control/ optimised by three algorithms
# from the same start (table, comparison.json, histories, convergence plot), and the time
# histories of its outputs before (the spec's parameters) and after (the best run) as CSV and a
# plot of the columns named in PLOT_COLUMNS.
#   scripts/results-control.sh [NAME ...]   (default: every problem)
set -euo pipefail
cd "$(dirname "$0")/.."
out=results/control
# algorithms compared, per problem (constrained problems need algorithms that take constraints)
declare -A algorithms=(
  [pendulum_pid]=lbfgs,slsqp,mma
  [slider_crank_codesign]=lbfgs,slsqp,mma
  [governor_design]=slsqp,mma,ccsaq
)

# output columns plotted before/after, per problem
declare -A plot_columns=(
  [pendulum_pid]="ex ey z2 ux uy"
  [slider_crank_codesign]="omega tau s"
  [governor_design]="omega h tau"
)

# plot.svg: one panel per column, before and after against t
plot() {
  local dir=$1 name=$2
  local columns=${plot_columns[$name]:-}
  [ -n "$columns" ] || return 0
  local header n=0 script
  header=$(head -1 "$dir/before.csv")
  script="set terminal svg size 800,$((220 * $(wc -w <<<"$columns"))) dynamic noenhanced font 'sans,11';"
  script+="set output '$dir/time_histories.svg'; set datafile separator ','; set key top right;"
  script+="set multiplot layout $(wc -w <<<"$columns"),1 title '$name: before and after';"
  for c in $columns; do
    local idx
    idx=$(tr ',' '\n' <<<"$header" | grep -nx "$c" | cut -d: -f1)
    [ -n "$idx" ] || { echo "results-control: no column $c in $dir/before.csv" >&2; exit 1; }
    n=$((n + 1))
    script+="set ylabel '$c'; set xlabel 't (s)';"
    script+="plot '$dir/before.csv' using 1:$idx with lines title 'before',"
    script+=" '$dir/after.csv' using 1:$idx with lines title 'after';"
  done
  script+="unset multiplot"
  gnuplot -e "$script"
}

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for spec in problems/control/*.json; do names+=("$(basename "$spec" .json)"); done
fi
for name in "${names[@]}"; do
  spec=problems/control/$name.json
  dir=$out/$name
  mkdir -p "$dir"
  build/mbopt compare "$spec" --algorithms "${algorithms[$name]:-lbfgs,slsqp,mma}" --out "$dir" --quiet | tee "$dir/table.txt"
  build/mbopt simulate "$spec" --csv "$dir/before.csv" --output-interval 0.01 --quiet \
    >"$dir/before.txt"
  build/mbopt simulate "$spec" --parameters "$dir/comparison.json" --csv "$dir/after.csv" \
    --output-interval 0.01 --quiet >"$dir/after.txt"
  plot "$dir" "$name"
  # the per-evaluation plot data stay out of the repository; history.csv has the same numbers
  rm -f "$dir"/*/best.dat
done
