#!/usr/bin/env bash
# Installs what is missing, builds mbopt and runs every test; then builds again with
# AddressSanitizer and UndefinedBehaviorSanitizer and runs every test under them; then runs the
# libFuzzer harnesses for a minute (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc 2>/dev/null || echo 2)

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"

# at -O1, AddressSanitizer's recommended level: every access still checked, the tests twice as
# fast as at -O0 (asserts kept: a Debug build)
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1" -DMBOPT_SANITIZE=ON
cmake --build build-sanitize -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-sanitize --output-on-failure -j"$jobs"

scripts/fuzz.sh --seconds 60 --jobs "$jobs"
