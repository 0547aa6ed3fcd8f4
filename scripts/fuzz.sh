#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz with clang (AddressSanitizer and
# UndefinedBehaviorSanitizer) in build-fuzz/ and runs them: a minute in CI, an hour or more by
# hand.  scripts/fuzz.sh --help
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'USAGE'
Usage: scripts/fuzz.sh [--seconds N] [--jobs N] [HARNESS ...]
Builds and runs libFuzzer harnesses, each for N seconds (default 60); without HARNESS, all of
them side by side:
  loader    any bytes as a model/spec file: load, compile, assemble, three time steps, forward
            and adjoint gradients of a loaded model, in its formulation and (up to 32 bodies)
            in the other
  options   any argument list for each command's option parser
Each harness starts from a corpus made of the repository's models and specs (problems/,
tests/models/, every bad model of the tests) or of the command lines of tests/fuzz/options.txt,
and from tests/fuzz/regressions/HARNESS/ (inputs that once failed, kept fixed); what it learns
accumulates in build-fuzz/corpus/HARNESS/. A failure stops its harness and leaves the input in
build-fuzz/artifacts/ (libFuzzer prints how to rerun it); an input taking longer than 20 s is a
failure too.
Options:
  --seconds N   how long each harness runs (an hour: --seconds 3600)
  --jobs N      parallel build jobs (default: nproc)
  -h, --help    show this help
Exit status: 0 no failure, 1 a harness failed or the build did, 2 bad command line.
USAGE
}

seconds=60 jobs=$(nproc 2>/dev/null || echo 2) harnesses=()
while [ $# -gt 0 ]; do
  case $1 in
  -h | --help) usage; exit 0 ;;
  --seconds | --jobs)
    [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || { echo "fuzz: $1 needs a whole number" >&2; exit 2; }
    if [ "$1" = --seconds ]; then seconds=$2; else jobs=$2; fi
    shift 2 ;;
  loader | options) harnesses+=("$1"); shift ;;
  *) echo "fuzz: unknown argument '$1' (run scripts/fuzz.sh --help)" >&2; exit 2 ;;
  esac
done
[ ${#harnesses[@]} -gt 0 ] || harnesses=(loader options)

command -v clang >/dev/null || { echo "fuzz: clang not found (scripts/install-deps.sh installs it)" >&2; exit 1; }
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMBOPT_FUZZ=ON >/dev/null
cmake --build build-fuzz -j"$jobs" --target "${harnesses[@]/#/fuzz_}" >/dev/null

seeds=build-fuzz/seeds
rm -rf "$seeds"
mkdir -p "$seeds/loader" "$seeds/options" build-fuzz/artifacts

# loader: every model and spec of the repository; its keys and words as a dictionary
n=0
while IFS= read -r -d '' f; do
  cp "$f" "$seeds/loader/$((n++)).json"
done < <(find problems tests/models -name '*.json' -print0)
{
  find problems tests/models -name '*.json' -exec grep -ohE '"[a-z_0-9]+"' {} + | sort -u
  printf '"{"\n"}"\n"["\n"]"\n":"\n","\n"1e308"\n"-0"\n"null"\n"true"\n"\\\\u0000"\n'
  # the settings no bundled model sets: the harness runs both formulations, these pick the rest
  printf '"%s"\n' formulation reference_point global_origin natural
} >build-fuzz/loader.dict

# options: one command line per line of tests/fuzz/options.txt, as the harness reads it (the
# command's index as the first byte, then the arguments, each ended by a zero byte); the option
# names as a dictionary
commands=(simulate gradient check bench optimize compare)
n=0
while read -r -a words; do
  [ ${#words[@]} -gt 0 ] && [ "${words[0]:0:1}" != "#" ] || continue
  for k in "${!commands[@]}"; do
    [ "${commands[k]}" = "${words[0]}" ] || continue
    { printf "\\$(printf '%03o' "$k")"; printf '%s\0' "${words[@]:1}"; } >"$seeds/options/$((n++))"
  done
done <tests/fuzz/options.txt
grep -ohE -- '"--[a-z-]+' drivers/*.c drivers/*.h | sort -u | sed 's/$/"/' >build-fuzz/options.dict

failed=0 pids=()
for h in "${harnesses[@]}"; do
  mkdir -p "build-fuzz/corpus/$h" "tests/fuzz/regressions/$h"
  echo "fuzz: $h for $seconds s (log: build-fuzz/$h.log)"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "build-fuzz/fuzz_$h" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 \
    -dict="build-fuzz/$h.dict" -artifact_prefix="build-fuzz/artifacts/$h-" -close_fd_mask=3 \
    "build-fuzz/corpus/$h" "$seeds/$h" "tests/fuzz/regressions/$h" >"build-fuzz/$h.log" 2>&1 &
  pids+=($!)
done
for k in "${!harnesses[@]}"; do
  h=${harnesses[k]}
  if wait "${pids[k]}"; then
    echo "fuzz: $h: no failure; $(grep -E '^(#[0-9]+|Done)' "build-fuzz/$h.log" | tail -1)"
  else
    failed=1
    echo "fuzz: $h FAILED; the input is in build-fuzz/artifacts/ (log build-fuzz/$h.log):" >&2
    grep -E 'ERROR|SUMMARY|Test unit written' "build-fuzz/$h.log" | head -5 >&2
  fi
done
exit $failed
