#!/usr/bin/env bash
# Regenerates results/optimization/: the five-bar springs problem (seed 001) and the constrained
# reach problem solved by every algorithm from the same start, with tables, comparison.json,
# per-algorithm histories and the convergence plots.
set -euo pipefail
cd "$(dirname "$0")/.."
out=results/optimization
mkdir -p "$out/fivebar_springs" "$out/reach_above_floor"
build/mbopt compare problems/fivebar_springs.json \
  --algorithms lbfgs,slsqp,mma,ccsaq,tnewton,bobyqa,cobyla,neldermead,sbplx \
  --out "$out/fivebar_springs" --quiet | tee "$out/fivebar_springs/table.txt"
build/mbopt compare tests/models/opt/reach_above_floor.json \
  --algorithms slsqp,mma,ccsaq,cobyla --out "$out/reach_above_floor" --quiet |
  tee "$out/reach_above_floor/table.txt"
# the per-evaluation plot data stay out of the repository (history.csv has the same numbers), and
# so do the 2 MB report.html pages (`mbopt compare` writes them again)
rm -f "$out"/*/*/best.dat "$out"/*/report.html
