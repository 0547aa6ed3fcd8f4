#!/usr/bin/env bash
# Regenerates results/control/: every problem of problems/control/ optimised by three algorithms
# from the same start, with before/after time histories (scripts/compare-problem.sh).
#   scripts/results-control.sh [NAME ...]   (default: every problem)
set -euo pipefail
cd "$(dirname "$0")/.."
# algorithms compared, per problem (constrained problems need algorithms that take constraints)
declare -A algorithms=(
  [pendulum_pid]=lbfgs,slsqp,mma
  [slider_crank_codesign]=lbfgs,slsqp,mma
  [governor_design]=slsqp,mma,ccsaq
  [pendulum_pid_friction]=lbfgs,slsqp,mma
  [slider_crank_codesign_friction]=lbfgs,slsqp,mma
  [governor_design_friction]=slsqp,mma,ccsaq
)
# output columns plotted before/after, per problem
declare -A plot_columns=(
  [pendulum_pid]="ex ey z2 ux uy"
  [slider_crank_codesign]="omega tau s"
  [governor_design]="omega h tau"
  [pendulum_pid_friction]="ex ey ux uy Ffx"
  [slider_crank_codesign_friction]="omega tau Ff"
  [governor_design_friction]="omega h Ff1"
)
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for spec in problems/control/*.json; do names+=("$(basename "$spec" .json)"); done
fi
for name in "${names[@]}"; do
  scripts/compare-problem.sh "problems/control/$name.json" "results/control/$name" \
    "${algorithms[$name]:-lbfgs,slsqp,mma}" "${plot_columns[$name]:-}"
done
