#!/usr/bin/env bash
# Installs what is missing, builds mbopt and runs the main job on a bundled example: the
# natural lengths of the five-bar's springs that hold it at rest, found by L-BFGS with exact
# gradients of the ALI3-P simulation (seed 001).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
build/mbopt optimize problems/fivebar_springs.json --out out/optimize-fivebar_springs
