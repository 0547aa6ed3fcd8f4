#!/usr/bin/env bash
# Every command that simulates takes the same run options and applies them alike: with --set,
# --parameters, --t-end and --step, simulate, gradient and optimize (its start) see the same psi,
# which differs from the spec's own, bench runs the shortened span and check passes. Arguments: the mbopt executable, a
# scratch folder.
set -u
mbopt=$1
out=$2
rm -rf "$out" && mkdir -p "$out"
fail() { echo "FAIL $*"; exit 1; }
spec=problems/fivebar_springs.json
# a summary whose x sets Ls2, as --parameters reads it
printf '{"parameters": ["Ls2"], "x": [1.9]}\n' >"$out/summary.json"
options=(--set Ls1=2.3 --parameters "$out/summary.json" --t-end 0.5 --step=2e-3)
psi() { python3 -c 'import json, sys; print(repr(json.load(sys.stdin)'"$1"'))'; }

base=$("$mbopt" simulate "$spec" --t-end 0.5 --step 2e-3 --json | psi "['functionals']['psi1']") || fail "simulate"
sim=$("$mbopt" simulate "$spec" "${options[@]}" --json | psi "['functionals']['psi1']") || fail "simulate with options"
grad=$("$mbopt" gradient "$spec" "${options[@]}" --json | psi "['functionals'][0]['value']") || fail "gradient"
steps=$("$mbopt" bench "$spec" "${options[@]}" --repeat 1 --no-fd --json | psi "['steps']") || fail "bench"
"$mbopt" check "$spec" "${options[@]}" >"$out/check.txt" || fail "check: $(tail -1 "$out/check.txt")"
"$mbopt" optimize "$spec" "${options[@]}" --maxeval 1 --out "$out/o" --quiet >/dev/null || fail "optimize"
start=$(psi "['start']['objective']" <"$out/o/summary.json")
x=$(psi "['start']['x']" <"$out/o/summary.json")

[ "$sim" != "$base" ] || fail "the options did not change psi ($sim)"
[ "$steps" = 250 ] || fail "bench ran $steps steps, expected 250 (0.5 s at 2e-3)"
for v in "$grad" "$start"; do
  [ "$v" = "$sim" ] || fail "psi $v differs from simulate's $sim"
done
[ "$x" = "[2.3, 1.9]" ] || fail "optimize started from $x, expected [2.3, 1.9]"
echo "PASS simulate, gradient and optimize agree on psi = $sim with the run options (spec's own $base); check passes"
