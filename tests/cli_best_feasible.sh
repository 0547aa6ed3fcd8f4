#!/usr/bin/env bash
# The convergence plot's "best" of a constrained run counts feasible points only: every line of
# best.dat equals the running minimum of the objective over the history's rows that did not fail
# and meet height >= 0.5 (1e-8 relative to max(1, |bound|), the optimiser's rule), computed here
# from history.csv. Arguments: the mbopt executable, a scratch folder.
set -u
mbopt=$1 out=$2
rm -rf "$out"
"$mbopt" optimize tests/models/opt/reach_above_floor.json --algorithm slsqp --out "$out" --quiet \
  >/dev/null || { echo "FAIL optimize"; exit 1; }
python3 - "$out" <<'PY'
import csv, sys
out = sys.argv[1]
rows = list(csv.DictReader(open(out + "/history.csv")))
best, expected, below = float("inf"), [], 0
for r in rows:
    f, feasible = float(r["objective"]), r["failed"] == "0" and float(r["height"]) >= 0.5 - 1e-8
    if r["failed"] == "0" and not feasible and f < best:
        below += 1  # an infeasible point that a plot of all points would have counted
    if feasible and f < best:
        best = f
    if best < float("inf"):
        expected.append((int(r["evaluation"]), best))
got = [(int(a), float(b)) for a, b in (line.split() for line in open(out + "/best.dat"))]
if got != expected:
    sys.exit("FAIL best.dat differs from the feasible running minimum: %s ... vs %s ..."
             % (got[:4], expected[:4]))
if below == 0:
    sys.exit("FAIL the run has no infeasible point with a lower objective; the test shows nothing")
print("PASS best.dat: feasible running minimum over %d evaluations (%d lower infeasible points left out)"
      % (len(rows), below))
PY
