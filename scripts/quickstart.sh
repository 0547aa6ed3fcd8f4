#!/usr/bin/env bash
# Installs what is missing, builds mbopt and runs the main job on a bundled example: the
# suspension of a light buggy (16 bodies, 14 DOF, on four tyres) tuned for comfort over a 1 cm
# step by L-BFGS with adjoint gradients of the ALI3-P simulation (a few minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
build/mbopt optimize problems/vehicle/step_descent.json --out out/optimize-step_descent
