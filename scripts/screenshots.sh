#!/usr/bin/env bash
# Screenshots of the HTML pages for the README, into results/view/: the buggy's step descent in
# `mbopt view` with its initial and optimised design (the comparison of results/vehicle), and the
# report.html of a comparison of four algorithms on it, each opened in headless Chromium by
# tests/view/browser.js (which checks the page as the tests do). results/view/pages.txt records
# the pages' sizes and the checks' lines. Takes about two minutes.
#   scripts/screenshots.sh [MBOPT]      (default build/mbopt; scripts/install-deps.sh installs
#                                        chromium and the JavaScript libraries)
set -euo pipefail
cd "$(dirname "$0")/.."
mbopt=${1:-build/mbopt}
out=results/view
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$out"
record=$scratch/pages.txt
{
  echo "# written by scripts/screenshots.sh with $("$mbopt" --version)"
  echo
} >"$record"

# the view: initial and optimised design overlaid, a third of the way in (the car on the step)
spec=problems/vehicle/step_descent.json
page=$scratch/step_descent.html
"$mbopt" view "$spec" --parameters results/vehicle/step_descent/comparison.json --out "$page" | tee -a "$record"
echo "mbopt view $spec --parameters results/vehicle/step_descent/comparison.json: $(stat -c %s "$page") bytes" >>"$record"
node tests/view/browser.js --screenshot "$out/step_descent_view.png" --at 0.34 "$page" | tee -a "$record"
echo >>"$record"

# the report of a comparison from the spec's start
"$mbopt" compare "$spec" --algorithms lbfgs,slsqp,mma,ccsaq --out "$scratch/compare" --quiet | tee -a "$record"
page=$scratch/compare/report.html
echo "mbopt compare $spec --algorithms lbfgs,slsqp,mma,ccsaq: report.html $(stat -c %s "$page") bytes" >>"$record"
node tests/view/browser.js --report --screenshot "$out/step_descent_report.png" --full-page --at 0.34 "$page" |
  tee -a "$record"
sed -e "s|$scratch|OUT|g" -e 's/ready in [0-9.]* s; //' "$record" >"$out/pages.txt"
echo "wrote $out/step_descent_view.png, $out/step_descent_report.png and $out/pages.txt"
