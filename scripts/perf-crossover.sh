#!/usr/bin/env bash
# Where the sparse factorisation starts to beat the dense one: the per-step cost of `mbopt
# simulate` with --linear-solver dense and sparse side by side on the N-four-bar chain (and one
# spatial model), measured by scripts/perf-scaling.sh.   scripts/perf-crossover.sh --help
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/perf-crossover.sh [options] [N ...]
Measures the per-step cost of `build/mbopt simulate` with `--linear-solver dense` and with
`--linear-solver sparse` on the N-four-bar chain (nq = 2N+2 coordinates) for each N, and on one
spatial model, and writes a markdown table: N, nq, the two costs in us per step, their ratio
dense / sparse, and the crossover, the smallest nq from which sparse is faster at every larger
measured size. MB_DENSE_MAX_COORDINATES (core/structure.h), the largest nq that
`"linear_solver": "auto"` factorises dense, should sit near it.

The measurement is scripts/perf-scaling.sh --linear-solver dense,sparse (see its --help): per
size, rounds of T1 and T2 runs with each solver in turn, the solvers' order reversed every other
round; the per-step cost is the difference of the minimum `seconds` at T2 and at T1 over the
difference of the steps, so that fixed costs cancel. As cross-checks the table also gives the
ratio of the paired medians (per solver, the median over rounds of the T2 - T1 difference of one
round) and the share of rounds in which the sparse T2 - T1 difference was the smaller.

Options:
  --t1 T           chain: shorter final time in s (default 0.25)
  --t2 T           chain: longer final time in s (default 0.5; the chain's first singular
                   position is at t = 0.71 s)
  --step H         chain: integration step in s (default 1e-3)
  --spatial SPEC   the spatial model (default problems/vehicle/step_descent.json, nq = 135)
  --spatial-t1 T   its shorter final time in s (default 0.1)
  --spatial-t2 T   its longer final time in s (default 0.2)
  --no-spatial     measure the chain only
  --repeat R       at least R rounds per size (default 10)
  --min-time S     more rounds until the T2 runs of each solver add up to S seconds (default 2)
  --max-repeat M   but at most M rounds per size (default 200)
  --work DIR       models, raw summaries, the copy of build/mbopt and perf-scaling.sh's own
                   tables and JSON (crossover_chain.*, crossover_spatial.*; default build/perf)
  -o, --output F   markdown table (default results/performance/crossover.md; a relative path is
                   taken from the current directory)
  -h, --help       this help

N ...            the chain sizes (default 1 2 4 6 8 10 12 14 16 20 24 28 32 40, nq = 4 .. 82)

Does not build anything: build/mbopt must exist. Runs one simulation at a time (OpenBLAS on one
thread unless OPENBLAS_NUM_THREADS is set); about 5 minutes with the defaults on 2 cores.
Exit status: 0 done, 1 a missing binary or a failed simulation, 2 a wrong command line.
EOF
}

die() { echo "perf-crossover.sh: $*" >&2; exit 2; }
t1=0.25
t2=0.5
step=1e-3
spatial=problems/vehicle/step_descent.json
spatial_t1=0.1
spatial_t2=0.2
repeat=10
min_time=2
max_repeat=200
work=
out=results/performance/crossover.md
sizes=()
while [ $# -gt 0 ]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --t1 | --t2 | --step | --spatial | --spatial-t1 | --spatial-t2 | --repeat | --min-time | \
      --max-repeat | --work | -o | --output)
      [ $# -ge 2 ] || die "$1 needs a value (see --help)"
      case $1 in
        --t1) t1=$2 ;;
        --t2) t2=$2 ;;
        --step) step=$2 ;;
        --spatial) spatial=$2 ;;
        --spatial-t1) spatial_t1=$2 ;;
        --spatial-t2) spatial_t2=$2 ;;
        --repeat) repeat=$2 ;;
        --min-time) min_time=$2 ;;
        --max-repeat) max_repeat=$2 ;;
        --work) work=$2 ;;
        *) out=$2 ;;
      esac
      shift 2 ;;
    --no-spatial) spatial=; shift ;;
    --) shift; sizes+=("$@"); break ;;
    -*) die "unknown option '$1' (see --help)" ;;
    *) sizes+=("$1"); shift ;;
  esac
done
[ ${#sizes[@]} -gt 0 ] || sizes=(1 2 4 6 8 10 12 14 16 20 24 28 32 40)
[ -z "$spatial" ] || [ -f "$spatial" ] || die "--spatial: no file '$spatial'"
# (the second perf-scaling.sh call would find a wrong spatial span only after the chain's runs)
python3 -c 'import sys; t1, t2 = map(float, sys.argv[1:]); sys.exit(not 0 < t1 < t2)' \
  "$spatial_t1" "$spatial_t2" 2>/dev/null ||
  die "need 0 < spatial-t1 < spatial-t2 (got $spatial_t1, $spatial_t2)"

# the paths as the caller meant them, then work from the repository root
abs() { case $1 in /*) printf '%s' "$1" ;; *) printf '%s' "$PWD/$1" ;; esac; }
out=$(abs "$out")
[ -z "$spatial" ] || spatial=$(abs "$spatial")
[ -z "$work" ] || work=$(abs "$work")
cd "$(dirname "$0")/.."
root=$PWD
shown() { case $1 in "$root"/*) printf '%s' "${1#"$root"/}" ;; *) printf '%s' "$1" ;; esac; }
work=${work:-$root/build/perf}

# one copy of the binary for both calls, so that a rebuild of build/mbopt cannot mix two
if [ ! -x build/mbopt ]; then
  echo "perf-crossover.sh: $root/build/mbopt is missing; build it first with scripts/test.sh" >&2
  exit 1
fi
mkdir -p "$work"
cp -p build/mbopt "$work/crossover-mbopt"
# perf-scaling.sh checks the sizes, times and counts (exit 2)
common=(--repeat "$repeat" --min-time "$min_time" --max-repeat "$max_repeat"
        --linear-solver "dense,sparse" --work "$work" --mbopt "$work/crossover-mbopt")
scripts/perf-scaling.sh --t1 "$t1" --t2 "$t2" --step "$step" "${common[@]}" \
  --json "$work/crossover_chain.json" -o "$work/crossover_chain.md" -- "${sizes[@]}" > /dev/null
spatial_json=
if [ -n "$spatial" ]; then
  spatial_json=$work/crossover_spatial.json
  scripts/perf-scaling.sh --model "$spatial" --t1 "$spatial_t1" --t2 "$spatial_t2" "${common[@]}" \
    --json "$spatial_json" -o "$work/crossover_spatial.md" > /dev/null
fi

command="scripts/perf-crossover.sh --t1 $t1 --t2 $t2 --step $step"
if [ -n "$spatial" ]; then
  command+=" --spatial $(shown "$spatial") --spatial-t1 $spatial_t1 --spatial-t2 $spatial_t2"
else
  command+=" --no-spatial"
fi
command+=" --repeat $repeat --min-time $min_time --max-repeat $max_repeat"
[ "$work" = "$root/build/perf" ] || command+=" --work $(shown "$work")"
command+=" -o $(shown "$out") ${sizes[*]}"
mkdir -p "$(dirname "$out")"

define=$(grep -m1 'define MB_DENSE_MAX_COORDINATES' core/structure.h || true)
python3 - "$work/crossover_chain.json" "$spatial_json" "$out" "$command" \
  "$(date '+%Y-%m-%d %H:%M %Z')" "$define" <<'EOF'
import json, re, sys, textwrap
chain_json, spatial_json, out, command, date, define = sys.argv[1:]
dense_max = re.search(r"(\d+)\s*$", define)
dense_max = dense_max.group(1) if dense_max else "(not found)"


def para(text):
    return textwrap.fill(text, width=100, break_on_hyphens=False, break_long_words=False)


def pairs(path):
    """the dense and sparse rows of a perf-scaling.sh --json FILE, side by side, by size"""
    data = json.load(open(path))
    by = {}
    for r in data["rows"]:
        by.setdefault(r["nq"], {})[r["linear_solver"]] = r
    result = []
    for nq in sorted(by):
        d, s = by[nq]["dense"], by[nq]["sparse"]
        ds = d["steps_t2"] - d["steps_t1"]
        # rounds in which the sparse T2 - T1 difference was the smaller (same round, same order)
        wins = sum((s2 - s1) < (d2 - d1) for d1, d2, s1, s2 in
                   zip(d["runs_t1"], d["runs_t2"], s["runs_t1"], s["runs_t2"]))
        rounds = min(len(d["runs_t2"]), len(s["runs_t2"]))
        result.append(dict(n=d["n"], nq=nq, dense=d["per_step_seconds"],
                           sparse=s["per_step_seconds"],
                           ratio=d["per_step_seconds"] / s["per_step_seconds"],
                           paired=d["paired_median_seconds"] / s["paired_median_seconds"],
                           wins=wins, rounds=rounds, steps=ds))
    return data, result


def verdict(p):
    """the faster solver by the minima; 'within noise' where the cross-checks do not agree"""
    faster = "sparse" if p["ratio"] > 1 else "dense"
    share = p["wins"] / p["rounds"]
    agree = (p["paired"] > 1) == (p["ratio"] > 1) and (share > 0.5) == (p["ratio"] > 1)
    return faster if agree and abs(share - 0.5) >= 0.15 else f"{faster} (within noise)"


def table(rows, first):
    lines = [f"| {first} | nq | dense us/step | sparse us/step | dense / sparse | paired medians "
             "dense / sparse | rounds sparse faster | faster |",
             "|---:|---:|---:|---:|---:|---:|---:|---|"]
    for p in rows:
        lines.append(f"| {p['n']} | {p['nq']} | {p['dense'] * 1e6:.2f} | {p['sparse'] * 1e6:.2f} | "
                     f"{p['ratio']:.2f} | {p['paired']:.2f} | {p['wins']}/{p['rounds']} | "
                     f"{verdict(p)} |")
    return lines


def crossover(rows, sparse_faster):
    """the smallest nq from which sparse_faster(row) holds at this and every larger size, or None"""
    nq = None
    for p in reversed(rows):
        if not sparse_faster(p):
            break
        nq = p["nq"]
    return nq


chain, rows = pairs(chain_json)
cross = crossover(rows, lambda p: p["ratio"] > 1)
cross_paired = crossover(rows, lambda p: p["paired"] > 1)
cross_clear = crossover(rows, lambda p: verdict(p) == "sparse")
dense_last = [p["nq"] for p in rows if p["ratio"] <= 1]
noisy = [p for p in rows if "noise" in verdict(p)]


def say(nq):
    return f"nq = {nq}" if nq is not None else "none (not at the largest size)"


found = (f"{say(cross)} by the minima and by the paired medians" if cross == cross_paired
         else f"{say(cross)} by the minima, {say(cross_paired)} by the paired medians")
if cross is not None and cross == rows[0]["nq"]:
    found += (". That is the smallest size measured: sparse is faster at every size, and a "
              f"crossover, if any, lies below nq = {cross}")
found += (f". Sparse is faster beyond the noise (as 'faster' above) from {say(cross_clear)} on"
          if cross_clear != cross else "")


lines = [
    "# Dense against sparse factorisation: the crossover",
    "",
    para(f"Produced by `{command}` on {date} (repository HEAD {chain['commit']}; the binary is "
         f"whatever build/mbopt held when the script started, copied to "
         f"{chain['program']}: sha256 {chain['binary_sha256']}..., built {chain['built']}). "
         f"Machine: {chain['cpu']}, nproc = {chain['nproc']}; load "
         f"average (1, 5, 15 min) before / after the chain runs {chain['load']}; "
         f"OPENBLAS_NUM_THREADS={chain['openblas_threads']}."),
    "",
    para("Each size runs `build/mbopt simulate MODEL --json --quiet --linear-solver S --t-end T` "
         "with S = dense and S = sparse in turn, through "
         f"`{chain['command']}` (its --help explains the method): per-step cost = "
         "(seconds(T2) - seconds(T1)) / (steps(T2) - steps(T1)) "
         "of the minimum `seconds` (mb_simulate's wall time) over the rounds, so that assembly "
         "and set-up cancel. Cross-checks: the ratio of the two solvers' paired medians (median "
         "over the rounds of one round's T2 - T1 difference), and in how many rounds the sparse "
         "T2 - T1 difference was smaller than the dense one of the same round. 'faster' names "
         "the solver the minima favour, 'within noise' where the paired medians point the other "
         "way or the rounds are split (sparse faster in 35 % to 65 % of them)."),
    "",
    "## The N-four-bar chain (planar, nq = 2N+2, scripts/gen_fourbar_chain.py)",
    "",
    *table(rows, "N"),
    "",
    para(f"Crossover (the smallest nq from which sparse is faster at every larger measured size): "
         f"{found}. "
         + (f"The largest nq at which dense is faster (by the minima): {dense_last[-1]}. "
            if dense_last else "")
         + f"`\"linear_solver\": \"auto\"` factorises dense up to nq = {dense_max} "
         "(MB_DENSE_MAX_COORDINATES in core/structure.h)."
         + (f" Within noise: nq = {', '.join(str(p['nq']) for p in noisy)}." if noisy else "")),
]
if spatial_json:
    spatial, srows = pairs(spatial_json)
    lines += [
        "",
        f"## A spatial model for comparison: {spatial['model']}",
        "",
        para(f"Through `{spatial['command']}`, T1 = {spatial['t1']:g} s and T2 = "
             f"{spatial['t2']:g} s of its own time span (load average before / after "
             f"{spatial['load']}). The cost per step is that of the steps between T1 and T2."),
        "",
        *table(srows, "model"),
    ]
text = "\n".join(lines) + "\n"
with open(out, "w") as f:
    f.write(text)
print(text, end="")
print(f"wrote {out}", file=sys.stderr)
EOF
