#!/usr/bin/env bash
# Counts the instructions mbopt commands execute with an older commit and with the working tree,
# and prints the ratios: a measure of work that, unlike wall-clock time, does not move with the
# load of a shared machine, for changes too small for scripts/bench-compare.sh to resolve.
#   scripts/bench-instructions.sh [options] [--] CMD ...     (scripts/bench-instructions.sh --help)
# Both sides are Release builds of scripts/lib/build-sides.sh for any x86-64 (build-bench/, flavour
# portable: valgrind runs no AVX-512, which -march=native may choose).
set -euo pipefail
shopt -s inherit_errexit

usage() {
  cat <<'EOF'
Usage: scripts/bench-instructions.sh [options] [--] CMD ...
Builds an older commit (the base) and the working tree (the new side) in Release, runs each mbopt
command once with each under valgrind's cachegrind (no cache simulation) and prints the
instructions each side executed, in millions, and the ratio base / new.

Each CMD is ONE argument: an mbopt command line without the program name, split like a shell
would split it, e.g. 'gradient problems/vehicle/step_descent.json --method forward --t-end 0.6'.
Under cachegrind a command runs about 50 times slower than alone: shorten long runs (--t-end).
An instruction is not a unit of time (a cache miss or a mispredicted branch costs many): the
counts rank changes of the arithmetic and the loops, wall-clock times (bench-compare.sh) decide.

Options:
  --base COMMIT   the base side: any git revision (default: $MBOPT_BENCH_BASE, else HEAD)
  --new COMMIT    build this commit for the new side instead of the working tree
  --jobs N        parallel build jobs (default: nproc)
  -h, --help      show this help

Both sides are built for any x86-64 (-DMBOPT_NATIVE=OFF, in build-bench/<commit>/build-portable/
and build-bench/worktree-portable/): valgrind cannot run every instruction that -march=native
may choose. The results are the same bit for bit as a native build's; the counts are those of
the portable build. Both sides run in the repository root with OPENBLAS_NUM_THREADS=1. Exit
status: 0 done, 1 a build or a command failed (the message names the side and the command), 2
bad command line.
EOF
}

# shellcheck source=lib/build-sides.sh
source "$(dirname "$0")/lib/build-sides.sh"
prog=bench-instructions
flavour=portable
flavour_args=(-DMBOPT_NATIVE=OFF)
new_hint='--new COMMIT measures a commit instead'

base=${MBOPT_BENCH_BASE:-HEAD} new=''
jobs=$(nproc 2>/dev/null || echo 2)
cmds=()
while [ $# -gt 0 ]; do
  case $1 in
  -h | --help) usage; exit 0 ;;
  --base | --new) need "$@"; sides_option "$1" "$2"; shift 2 ;;
  --jobs) need "$@"; jobs=$2; shift 2 ;;
  --) shift; cmds+=("$@"); break ;;
  -*) bad_usage "unknown option '$1'" ;;
  *) cmds+=("$1"); shift ;;
  esac
done
[[ $jobs =~ ^[1-9][0-9]*$ ]] || bad_usage "--jobs wants a positive integer, not '$jobs'"
[ ${#cmds[@]} -gt 0 ] || bad_usage "no command to measure"
command -v valgrind >/dev/null || die "valgrind is needed (Debian package valgrind)"

sides_setup
build_sides "$base" "$new"
export OPENBLAS_NUM_THREADS=1

# instructions SIDE BIN CMD: the instructions one run of mbopt CMD executes
instructions() {
  local side=$1 bin=$2 cmd=$3 log=$tmp/$1.log
  local -a argv
  read -r -a argv <<<"$cmd"
  if ! valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
    "$bin" "${argv[@]}" >/dev/null 2>"$log"; then
    tail -n 5 "$log" >&2
    die "the $side side failed on 'mbopt $cmd'"
  fi
  sed -n 's/^==[0-9]*== I *refs: *//p' "$log" | tr -d ,
}

echo "base: ${base_hash:0:12} ($(git log -1 --format=%s "$base_hash" | cut -c1-60))"
if [ "$new_kind" = worktree ]; then
  echo "new:  the working tree (on ${new_hash:0:12})"
else
  echo "new:  ${new_hash:0:12} ($(git log -1 --format=%s "$new_hash" | cut -c1-60))"
fi
echo "instructions executed, millions (cachegrind); ratio = base / new"
echo
printf '%-70s %12s %12s %8s\n' command base new ratio
for cmd in "${cmds[@]}"; do
  b=$(instructions base "$base_bin" "$cmd")
  n=$(instructions new "$new_bin" "$cmd")
  awk -v c="$cmd" -v b="$b" -v n="$n" 'BEGIN { printf "%-70s %12.1f %12.1f %7.3fx\n", c, b / 1e6, n / 1e6, b / n }'
done
