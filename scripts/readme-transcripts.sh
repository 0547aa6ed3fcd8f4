#!/usr/bin/env bash
# Runs the commands whose output README.md shows and writes that output into it, between the
# lines "<!-- transcript: COMMAND -->" and "<!-- end of transcript -->", with the time the
# command took and the machine it ran on. scripts/readme-transcripts.sh --help
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'USAGE'
Usage: scripts/readme-transcripts.sh [--check]
Runs every command README.md shows a transcript of (the lines "<!-- transcript: COMMAND -->"),
from the repository root with the build in build/, and replaces each transcript with what the
command prints now, preceded by the machine and the seconds it took. Output folders go to a
temporary folder, not out/.
  --check     change nothing; exit 1 when a transcript's printed lines (seconds aside) differ
  -h, --help  show this help
USAGE
}

check=0
case ${1:-} in
-h | --help) usage; exit 0 ;;
--check) check=1 ;;
"") ;;
*) echo "readme-transcripts: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac
[ -x build/mbopt ] || { echo "readme-transcripts: build/mbopt missing (cmake --build build)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
# the CPU flags say whether a hypervisor runs it
virtual=$(grep -qw hypervisor /proc/cpuinfo && echo " virtual machine" || true)
machine="a $(nproc)-core ${cpu:-unknown processor}$virtual ($(uname -s))"

# the README with each transcript replaced
out=$work/README.md
: >"$out"
in_transcript=0
while IFS= read -r line; do
  if [[ $line =~ ^'<!-- transcript: '(.*)' -->'$ ]]; then
    command=${BASH_REMATCH[1]}
    printf '%s\n' "$line" >>"$out"
    # the command as a user types it; its --out (if any) under the temporary folder
    read -r -a words <<<"$command"
    [ "${words[0]}" = mbopt ] || { echo "readme-transcripts: '$command' is not an mbopt command" >&2; exit 1; }
    echo "readme-transcripts: running $command" >&2
    # optimize and compare: the output folder they choose by default, under the temporary folder
    folder=out/${words[1]}-$(basename "${words[2]:-x}" .json)
    extra=()
    case ${words[1]} in optimize | compare) extra=(--out "$work/$folder") ;; esac
    start=$(date +%s%N)
    build/mbopt "${words[@]:1}" "${extra[@]}" >"$work/stdout" 2>/dev/null || true
    seconds=$(awk -v ns=$(($(date +%s%N) - start)) 'BEGIN { printf "%.2g", ns / 1e9 }')
    sed -i "s|$work/$folder|$folder|g" "$work/stdout"
    printf 'On %s it took %s s and printed:\n\n```text\n' "$machine" "$seconds" >>"$out"
    cat "$work/stdout" >>"$out"
    printf '```\n' >>"$out"
    in_transcript=1
    continue
  fi
  if [ $in_transcript -eq 1 ]; then
    [ "$line" = '<!-- end of transcript -->' ] || continue
    in_transcript=0
  fi
  printf '%s\n' "$line" >>"$out"
done <README.md
[ $in_transcript -eq 0 ] || { echo "readme-transcripts: a transcript has no end line" >&2; exit 1; }

if [ $check -eq 1 ]; then
  # the seconds and the machine line change from run to run; the rest must not
  # (the seconds column of a result table, before its feasible column; gradient's seconds line)
  strip() { grep -v -e '^On .* it took ' -e '^seconds ' "$1" | sed -E 's/ +[0-9]+\.[0-9]{3}( yes| no)?$/\1/'; }
  if ! diff <(strip README.md) <(strip "$out") >&2; then
    echo "readme-transcripts: README.md differs from what the commands print (run scripts/readme-transcripts.sh)" >&2
    exit 1
  fi
  exit 0
fi
cp "$out" README.md
echo "readme-transcripts: README.md updated" >&2
