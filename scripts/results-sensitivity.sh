#!/usr/bin/env bash
# Regenerates results/sensitivity/: the five-bar gradient (h = 1e-3 and 1e-2), its check against
# finite differences, the slider-crank check, and the five-bar benchmark of the gradient cost.
set -euo pipefail
cd "$(dirname "$0")/.."
out=results/sensitivity
mkdir -p "$out"
mbopt=build/mbopt
$mbopt gradient problems/fivebar.json --step 1e-3 > "$out/fivebar_gradient.txt"
$mbopt gradient problems/fivebar.json --step 1e-3 --json > "$out/fivebar_gradient.json"
$mbopt gradient problems/fivebar.json --step 1e-2 > "$out/fivebar_gradient_h1e-2.txt"
$mbopt check problems/fivebar.json > "$out/fivebar_check.txt"
# 1e-4 as in CTest: the central differences of slider_track / I_rod, fifty times smaller than the
# rest of its row, carry the rounding of the simulations
$mbopt check problems/slider_crank.json --tolerance 1e-4 > "$out/slider_crank_check.txt"
$mbopt bench problems/fivebar.json > "$out/fivebar_bench.txt"
$mbopt bench problems/fivebar.json --json > "$out/fivebar_bench.json"
echo "wrote $out"
