#!/usr/bin/env bash
# The report.html of an optimisation, opened in headless Chromium (tests/view/browser.js
# --report): runs `mbopt COMMAND SPEC ARGS... --out DIR --quiet`, then checks DIR/report.html.
# With SPOIL "feasible" the page is spoilt first (every evaluation marked feasible, so that the
# best curves take infeasible points) and the check must fail.
#   report_test.sh MBOPT DIR SPOIL|- BROWSER_OPTIONS|- COMMAND SPEC [ARGS...]
# (BROWSER_OPTIONS comma-separated, e.g. --expect-infeasible,--still)
set -euo pipefail
mbopt=$1 dir=$2 spoil=$3 options=$4
shift 4
rm -rf "$dir"
"$mbopt" "$@" --out "$dir" --quiet
page=$dir/report.html
[ -s "$page" ] || { echo "FAIL no $page"; exit 1; }
echo "report.html: $(stat -c %s "$page") bytes"
[ "$options" = - ] && options=
if [ "$spoil" = feasible ]; then
  python3 - "$page" <<'PY'
import sys
path = sys.argv[1]
script = ("const parse = JSON.parse; JSON.parse = (text) => { const d = parse(text);"
          " for (const r of (d.report || {}).runs || []) r.history.feasible = r.history.feasible.map(() => 1);"
          " return d; };")
text = open(path, encoding="utf-8").read()
open(path, "w", encoding="utf-8").write(text.replace("<body>\n", "<body>\n<script>" + script + "</script>\n", 1))
PY
  set +e
  out=$(node "$(dirname "$0")/browser.js" --report ${options//,/ } "$page")
  code=$?
  set -e
  echo "$out"
  [ $code -eq 1 ] || { echo "browser.js exited $code on a spoilt report; expected 1"; exit 1; }
  exit 0
fi
node "$(dirname "$0")/browser.js" --report ${options//,/ } "$page"
