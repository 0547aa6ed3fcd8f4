#!/usr/bin/env bash
# compare's convergence plot has its two panels, the best feasible objective and its distance to
# the best any algorithm found (whose value the axis label gives), and a legend with every
# algorithm. Arguments: the mbopt executable, a scratch folder.
set -u
mbopt=$1 out=$2
rm -rf "$out"
"$mbopt" compare problems/fivebar_springs.json --algorithms lbfgs,slsqp --out "$out" --quiet \
  >/dev/null || { echo "FAIL compare"; exit 1; }
svg=$out/convergence.svg
[ -s "$svg" ] || { echo "FAIL no $svg"; exit 1; }
best=$(python3 -c 'import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
print("%.3g" % min(r["objective"] for r in runs))' "$out/comparison.json")
for text in "best feasible objective" "best feasible - best found ($best)" ">lbfgs<" ">slsqp<"; do
  grep -qF -- "$text" "$svg" || { echo "FAIL $svg lacks '$text'"; exit 1; }
done
echo "PASS $svg: both panels (best found $best) and both algorithms"
