#!/usr/bin/env bash
# One browser test of an HTML page: writes the page of `mbopt view SPEC ARGS...` into PAGE, then
# opens it in headless Chromium (tests/view/browser.js): no script error, a drawn 3-D canvas that
# the time slider moves, one plot panel per output.
#   page_test.sh MBOPT PAGE.html SPEC [VIEW ARGS...]
set -euo pipefail
mbopt=$1 page=$2 spec=$3
shift 3
mkdir -p "$(dirname "$page")"
"$mbopt" view "$spec" --out "$page" "$@" >/dev/null
echo "$(basename "$page"): $(stat -c %s "$page") bytes"
node "$(dirname "$0")/browser.js" "$page"
