#!/usr/bin/env bash
# One browser test of an HTML page: writes the page of `mbopt view SPEC ARGS...` into PAGE, then
# opens it in headless Chromium (tests/view/browser.js): no script error, a drawn 3-D canvas that
# the time slider moves, one plot panel per output. BROWSER_OPTIONS (comma-separated, or -) go to
# browser.js.
#   page_test.sh MBOPT PAGE.html BROWSER_OPTIONS SPEC [VIEW ARGS...]
set -euo pipefail
mbopt=$1 page=$2 options=$3 spec=$4
shift 4
[ "$options" = - ] && options=
mkdir -p "$(dirname "$page")"
"$mbopt" view "$spec" --out "$page" "$@" >/dev/null
echo "$(basename "$page"): $(stat -c %s "$page") bytes"
node "$(dirname "$0")/browser.js" ${options//,/ } "$page"
