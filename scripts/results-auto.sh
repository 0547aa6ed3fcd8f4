#!/usr/bin/env bash
# Regenerates results/adjoint/auto_choice.md: for every bundled spec with parameters and
# functionals, the forward and adjoint gradient times measured side by side by `mbopt bench`
# (fastest of 3, BLAS and the adjoint on one thread, the vehicles cut to their first second),
# the method `--method auto` picks (the adjoint when p > m) and whether it is the faster one.
set -euo pipefail
cd "$(dirname "$0")/.."
out=results/adjoint/auto_choice.md
mbopt=build/mbopt
field() { python3 -c "import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$@"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
  echo "# The method auto picks, against the faster one measured"
  echo
  echo "Produced by \`scripts/results-auto.sh\`."
  echo "\`mbopt bench --repeat 3 --no-fd --threads 1\` times both gradients side by side (fastest of"
  echo "3, in simulations of the same spec); \`mbopt gradient\` says what \`auto\` picks."
  echo
  echo "| spec | p | m | forward (x sim) | adjoint (x sim) | faster | auto picks |"
  echo "|---|---|---|---|---|---|---|"
} >"$out"
for spec in problems/*.json problems/*/*.json tests/models/ok/*.json; do
  extra=()
  case $spec in problems/vehicle/*) extra=(--t-end 1) ;; esac
  OPENBLAS_NUM_THREADS=1 $mbopt gradient "$spec" "${extra[@]}" --method auto --json >"$tmp/g.json" 2>/dev/null || continue
  OPENBLAS_NUM_THREADS=1 $mbopt bench "$spec" "${extra[@]}" --repeat 3 --no-fd --threads 1 --json >"$tmp/b.json" 2>/dev/null || continue
  p=$(field "$tmp/b.json" parameters); m=$(field "$tmp/b.json" functionals)
  f=$(field "$tmp/b.json" forward_over_simulation); a=$(field "$tmp/b.json" adjoint_over_simulation)
  method=$(field "$tmp/g.json" method)
  faster=$(awk -v f="$f" -v a="$a" 'BEGIN { print (a < f ? "adjoint" : "forward") }')
  printf '| %s | %d | %d | %.2f | %.2f | %s | %s%s |\n' "$spec" "$p" "$m" "$f" "$a" "$faster" "$method" \
    "$([ "$faster" = "$method" ] || echo ' (slower)')" >>"$out"
done
# the machine (scripts/lib/build_sides.py, as the other benchmark scripts describe it)
{
  echo
  python3 -c 'import sys; sys.path.insert(0, "scripts/lib"); import build_sides as b; print(b.md_machine(b.machine()))'
} >>"$out"
cat "$out"
