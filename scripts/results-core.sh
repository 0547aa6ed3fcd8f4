#!/usr/bin/env bash
# Regenerates results/core/: the simulation summaries of the bundled models and a step-size study
# of the five-bar (energy balance and constraint violation against h).
set -euo pipefail
cd "$(dirname "$0")/.."
out=results/core
mkdir -p "$out"
build/mbopt simulate problems/fivebar.json --json --quiet > "$out/fivebar_simulate.json"
build/mbopt simulate problems/slider_crank.json --json --quiet > "$out/slider_crank_simulate.json"
{
  echo "step,steps,newton_iterations,max_phi,max_phid,max_phidd,max_energy_error,energy_initial"
  for h in 1e-2 5e-3 2e-3 1e-3 5e-4; do
    build/mbopt simulate problems/fivebar.json --step "$h" --json --quiet |
      python3 -c 'import json,sys; r=json.load(sys.stdin); print(",".join(str(r[k]) for k in ["step","steps","newton_iterations","max_phi","max_phid","max_phidd","max_energy_error","energy_initial"]))'
  done
} > "$out/fivebar_step_study.csv"
echo "wrote $out/fivebar_simulate.json, $out/slider_crank_simulate.json, $out/fivebar_step_study.csv"
