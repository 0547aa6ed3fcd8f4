#!/usr/bin/env bash
# scripts/plot-histories.sh --spec labels each panel with its column's unit and draws the targets:
# on the flyball governor's committed histories, omega in rad/s with the objective's 15 rad/s,
# h in m with the servo's setpoint 0.1 m, tau in N m with no target. Argument: a scratch file.
set -u
svg=$1
d=results/control/governor_design
rm -f "$svg"
scripts/plot-histories.sh --spec problems/control/governor_design.json "$svg" "governor" \
  "$d/before.csv" before "$d/after.csv" after omega h tau || { echo "FAIL plot-histories"; exit 1; }
for text in "omega (rad/s)" "target 15" "h (m)" "target 0.1" "tau (N m)"; do
  grep -qF -- "$text" "$svg" || { echo "FAIL $svg lacks '$text'"; exit 1; }
done
if [ "$(grep -c "target " "$svg")" -ne 2 ]; then echo "FAIL targets other than two"; exit 1; fi
echo "PASS $svg: units and the two targets"
