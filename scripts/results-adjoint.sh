#!/usr/bin/env bash
# Regenerates results/adjoint/: simulation, forward-gradient and adjoint-gradient times of the
# B-spline-driven five-bar at p = 10, 100, 1000 parameters (measured side by side by
# `mbopt bench`, fastest of 3 runs), and the method `auto` picks at p = 5 (the five-bar
# benchmark) and at p = 10, 100, 1000.
set -euo pipefail
cd "$(dirname "$0")/.."
out=results/adjoint
mkdir -p "$out" build/specs
mbopt=build/mbopt

field() { grep -o "\"$2\":[^,}]*" "$1" | head -1 | cut -d: -f2 | tr -d '"'; }

table="$out/table.md"
{
  echo "# Forward and adjoint gradient cost against the number of parameters"
  echo
  echo "Produced by \`scripts/results-adjoint.sh\`. Model: \`problems/fivebar_spline.json\` (five-bar,"
  echo "5 s at h = 1e-3, a B-spline torque on bar A1 with p coefficients, 2 functionals), and the five-bar"
  echo "benchmark \`problems/fivebar.json\` (5 parameters, 3 functionals). Seconds are the fastest of 3 runs"
  echo "on the machine that ran the script; the ratios to one simulation are what carries over."
  echo
  echo "| problem | p | m | simulation s | forward s (x sim) | adjoint s (x sim) | auto picks |"
  echo "|---|---|---|---|---|---|---|"
} > "$table"

run() {
  local name=$1 spec=$2
  $mbopt bench "$spec" --repeat 3 --no-fd --json > "$out/bench_$name.json"
  $mbopt gradient "$spec" --json > "$out/gradient_auto_$name.json"
  local b="$out/bench_$name.json" g="$out/gradient_auto_$name.json"
  local sim fwd adj p nf method
  sim=$(field "$b" simulation_seconds); fwd=$(field "$b" forward_seconds)
  adj=$(field "$b" adjoint_seconds); p=$(field "$b" parameters); nf=$(field "$b" functionals)
  method=$(field "$g" method)
  awk -v n="$name" -v p="$p" -v nf="$nf" -v s="$sim" -v f="$fwd" -v a="$adj" -v m="$method" \
    'BEGIN { printf "| %s | %d | %d | %.4f | %.4f (%.2f) | %.4f (%.2f) | %s |\n", n, p, nf, s, f, f / s, a, a / s, m }' >> "$table"
}

run fivebar problems/fivebar.json
for p in 10 100 1000; do
  sed "s/\"count\": 100/\"count\": $p/" problems/fivebar_spline.json > "build/specs/fivebar_spline_$p.json"
  run "spline_$p" "build/specs/fivebar_spline_$p.json"
done
cat "$table"
