#!/usr/bin/env bash
# Regenerates results/adjoint/: simulation, forward-gradient and adjoint-gradient times of the
# B-spline-driven five-bar at p = 10, 100, 1000 parameters (measured side by side by
# `mbopt bench`, fastest of 3 runs), and the method `auto` picks at p = 5 (the five-bar
# benchmark) and at p = 10, 100, 1000, with its predictions.
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
  echo "| problem | p | simulation s | forward s (x sim) | adjoint s (x sim) | auto picks | auto predicted adjoint / forward s |"
  echo "|---|---|---|---|---|---|---|"
} > "$table"

run() {
  local name=$1 spec=$2
  $mbopt bench "$spec" --repeat 3 --no-fd --json > "$out/bench_$name.json"
  $mbopt gradient "$spec" --json > "$out/gradient_auto_$name.json"
  local b="$out/bench_$name.json" g="$out/gradient_auto_$name.json"
  local sim fwd adj p method reason pa pf
  sim=$(field "$b" simulation_seconds); fwd=$(field "$b" forward_seconds)
  adj=$(field "$b" adjoint_seconds); p=$(field "$b" parameters)
  method=$(field "$g" method)
  pa=$(field "$g" predicted_adjoint_seconds); pf=$(field "$g" predicted_forward_seconds)
  awk -v n="$name" -v p="$p" -v s="$sim" -v f="$fwd" -v a="$adj" -v m="$method" -v pa="$pa" -v pf="$pf" \
    'BEGIN { printf "| %s | %d | %.4f | %.4f (%.2f) | %.4f (%.2f) | %s | %.3g / %.3g |\n", n, p, s, f, f / s, a, a / s, m, pa, pf }' >> "$table"
}

run fivebar problems/fivebar.json
for p in 10 100 1000; do
  sed "s/\"count\": 100/\"count\": $p/" problems/fivebar_spline.json > "build/specs/fivebar_spline_$p.json"
  run "spline_$p" "build/specs/fivebar_spline_$p.json"
done
cat "$table"
