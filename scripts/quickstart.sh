#!/usr/bin/env bash
# Installs what is missing, builds mbopt and runs the main job on a bundled example:
# the five-bar benchmark simulated for 5 s with ALI3-P.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
mkdir -p out
build/mbopt simulate problems/fivebar.json --csv out/fivebar.csv
