#!/usr/bin/env bash
# The browser test must fail on a broken page: a page of `mbopt view SPEC` spoilt by a script
# placed at the start of its body (SPOIL: "error" throws; "frozen" makes every frame the first,
# so that the time slider moves nothing). Exits 0 when tests/view/browser.js fails as it should.
#   broken_page.sh MBOPT PAGE.html SPOIL SPEC [VIEW ARGS...]
set -euo pipefail
mbopt=$1 page=$2 spoil=$3 spec=$4
shift 4
mkdir -p "$(dirname "$page")"
"$mbopt" view "$spec" --out "$page" "$@" >/dev/null
case $spoil in
  error) script='window.addEventListener("load", () => { throw new Error("a deliberate error"); });' ;;
  frozen) script='const parse = JSON.parse; JSON.parse = (text) => { const d = parse(text);
    for (const x of d.designs || []) x.frames = x.frames.map(() => x.frames[0]); return d; };' ;;
  *) echo "broken_page.sh: unknown spoil '$spoil'" >&2; exit 2 ;;
esac
python3 - "$page" "$script" <<'PY'
import sys
path, script = sys.argv[1], sys.argv[2]
text = open(path, encoding="utf-8").read()
open(path, "w", encoding="utf-8").write(text.replace("<body>\n", "<body>\n<script>" + script + "</script>\n", 1))
PY
set +e
out=$(node "$(dirname "$0")/browser.js" "$page")
code=$?
set -e
echo "$out"
if [ $code -ne 1 ]; then
  echo "browser.js exited $code on a page spoilt by '$spoil'; expected 1 (a failed check)"
  exit 1
fi
