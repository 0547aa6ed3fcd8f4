#!/usr/bin/env bash
# Regenerates results/vehicle/ (problems/vehicle/README.md describes the specs):
#  - check_*.txt: `mbopt check` of the three vehicle specs (every parameter, 1e-4);
#  - step_descent/: the suspension tuning for comfort compared over four algorithms from the
#    spec's firm baseline, with before/after time histories (scripts/compare-problem.sh) (part
#    step), and the double lane change driven with the baseline and with the tuned suspension
#    (dlc_*.csv; part lane, after step);
#  - cg_height/: the chassis centre-of-mass height minimising the roll rate in the lane change;
#  - dlc_bench.*: the 12 s double lane change, one simulation against the 5-parameter forward and
#    adjoint gradients and central differences, measured side by side in one run (bench.svg).
#   scripts/results-vehicle.sh [check|step|lane|cg|bench ...]   (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
out=results/vehicle
mkdir -p "$out"
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(check step lane cg bench)

for part in "${parts[@]}"; do
  case $part in
  check)
    for spec in step_descent double_lane_change cg_height; do
      build/mbopt check "problems/vehicle/$spec.json" --tolerance 1e-4 | tee "$out/check_$spec.txt"
    done
    ;;
  step)
    dir=$out/step_descent
    scripts/compare-problem.sh problems/vehicle/step_descent.json "$dir" lbfgs,slsqp,mma,ccsaq \
      "front_acc.z chassis_pos.z chassis_omega.y chassis_omega.x"
    ;;
  lane)
    dir=$out/step_descent
    # the lane change with the baseline (the step descent's starting design) and the tuned design
    baseline=$(python3 -c 'import json, sys
o = json.load(open("problems/vehicle/step_descent.json"))["optimization"]["parameters"]
print(" ".join("--set %s=%r" % (k, v["initial"]) for k, v in o.items()))')
    # shellcheck disable=SC2086
    build/mbopt simulate problems/vehicle/double_lane_change.json $baseline --quiet \
      --csv "$dir/dlc_before.csv" --output-interval 0.02 >"$dir/dlc_before.txt"
    build/mbopt simulate problems/vehicle/double_lane_change.json --quiet \
      --parameters "$dir/comparison.json" --csv "$dir/dlc_after.csv" --output-interval 0.02 \
      >"$dir/dlc_after.txt"
    scripts/plot-histories.sh --spec problems/vehicle/double_lane_change.json \
      "$dir/dlc_time_histories.svg" \
      "double lane change: step-descent baseline and tuned suspension" \
      "$dir/dlc_before.csv" baseline "$dir/dlc_after.csv" "tuned for comfort" \
      roll_rate chassis_angles.roll chassis_pos.y
    ;;
  cg)
    dir=$out/cg_height
    build/mbopt optimize problems/vehicle/cg_height.json --out "$dir" --quiet | tee "$dir.txt"
    rm -f "$dir/best.dat" "$dir/report.html" # plot data (history.csv has the same numbers), page
    ;;
  bench)
    build/mbopt bench problems/vehicle/double_lane_change.json --repeat 3 --json >"$out/dlc_bench.json"
    # the table and the figure, both from the one measured run
    python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
b = json.load(open(out + "/dlc_bench.json"))
rows = [("simulation", "simulation"), ("forward gradient", "forward"),
        ("adjoint gradient", "adjoint"), ("central differences", "central_difference")]
with open(out + "/dlc_bench.txt", "w") as f:
    f.write("%s: %d coordinates, %d steps, %d parameters, %d functional(s); fastest of %d runs\n"
            % (b["model"], b["coordinates"], b["steps"], b["parameters"], b["functionals"], b["repeat"]))
    f.write("%-22s %10s %14s\n" % ("", "seconds", "/ simulation"))
    for label, key in rows:
        ratio = 1.0 if key == "simulation" else b[key + "_over_simulation"]
        f.write("%-22s %10.3f %14.2f\n" % (label, b[key + "_seconds"], ratio))
with open(out + "/dlc_bench.dat", "w") as f:
    for label, key in rows:
        ratio = 1.0 if key == "simulation" else b[key + "_over_simulation"]
        f.write('"%s" %.6g %.6g\n' % (label, b[key + "_seconds"], ratio))
print(open(out + "/dlc_bench.txt").read(), end="")
PY
    gnuplot -e "set terminal svg size 700,420 dynamic noenhanced font 'sans,11';
      set output '$out/dlc_bench.svg'; set style fill solid 0.6; set boxwidth 0.6;
      set title 'double lane change, 12 s at h = 4 ms: 5-parameter gradients (fastest of 3)';
      set ylabel 'wall-clock seconds'; set yrange [0:*]; set offsets 0, 0, graph 0.12, 0;
      set grid ytics; unset key;
      plot '$out/dlc_bench.dat' using 0:2:xtic(1) with boxes,
           '' using 0:2:(sprintf('%.1f s = %.2f simulations', \$2, \$3)) with labels offset 0,0.8"
    rm -f "$out/dlc_bench.dat"
    ;;
  *) echo "results-vehicle: unknown part '$part' (check, step, lane, cg, bench)" >&2; exit 2 ;;
  esac
done
