#!/usr/bin/env bash
# Per-step cost of `mbopt simulate` against the number of coordinates nq, on the N-four-bar chain
# (IFToMM / A Coruna benchmark A02, written by scripts/gen_fourbar_chain.py), and the fitted
# exponent b of cost = a nq^b.   scripts/perf-scaling.sh --help
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/perf-scaling.sh [options] [N ...]
Measures the per-step cost of `build/mbopt simulate` on the N-four-bar chain (N windows,
nq = 2N+2 coordinates, 2N+1 constraints) for each N, and fits cost = a nq^b by least squares
on the logarithms, over all sizes and over the upper half of the sizes.

For each N the model is generated into build/perf/fourbar_N.json, then
`build/mbopt simulate MODEL --json --quiet --t-end T` runs at T = T1 and at T = T2, alternating,
R times at least and more while the T2 runs add up to less than --min-time (at most M rounds),
and the minimum of each is kept. The time is the "seconds" field of the JSON
summary: the wall time of mb_simulate inside the program (initial assembly and integration; not
process start, reading or compiling the model). The per-step cost is
  (seconds(T2) - seconds(T1)) / (steps(T2) - steps(T1)),
so that the one-time assembly and every other fixed cost cancel. T1 and T2 must stay before the
chain's first singular position (the cranks horizontal, t = 0.71 s), where the integrator stops.

Options:
  --t1 T          shorter final time in s (default 0.25)
  --t2 T          longer final time in s (default 0.5)
  --step H        integration step in s (default 1e-3)
  --repeat R      at least R runs per final time and N, alternating T1 and T2; the minimum of
                  each counts (default 5, or $PERF_REPEAT)
  --min-time S    keep alternating (beyond R) until the T2 runs of one N add up to S seconds of
                  measured time, so that the small, fast sizes get many samples (default 2)
  --max-repeat M  but at most M rounds per N (default 100)
  -o, --output F  markdown table (default results/performance/fourbar_scaling.md; a relative
                  path is taken from the current directory)
  -h, --help      this help

N ...           the sizes (default: $PERF_N if set, else 2 5 10 20 40 80). Arguments win over
                $PERF_N; --repeat over $PERF_REPEAT.

Does not build anything: build/mbopt must exist (scripts/test.sh, scripts/quickstart.sh or
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build make it). OpenBLAS runs on
one thread (OPENBLAS_NUM_THREADS=1) unless the variable is already set. Models and raw JSON
summaries stay in build/perf/; the runs use a copy of build/mbopt made there at the start, so that
a rebuild during the measurement cannot mix two binaries.
EOF
}

t1=0.25
t2=0.5
step=1e-3
repeat=${PERF_REPEAT:-5}
max_repeat=100
min_time=2
out=results/performance/fourbar_scaling.md
out_given=0
sizes=()
while [ $# -gt 0 ]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --t1) t1=${2:?--t1 needs a value}; shift 2 ;;
    --t2) t2=${2:?--t2 needs a value}; shift 2 ;;
    --step) step=${2:?--step needs a value}; shift 2 ;;
    --repeat) repeat=${2:?--repeat needs a value}; shift 2 ;;
    --max-repeat) max_repeat=${2:?--max-repeat needs a value}; shift 2 ;;
    --min-time) min_time=${2:?--min-time needs a value}; shift 2 ;;
    -o | --output) out=${2:?$1 needs a value}; out_given=1; shift 2 ;;
    --) shift; sizes+=("$@"); break ;;
    -*) echo "perf-scaling.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) sizes+=("$1"); shift ;;
  esac
done
if [ ${#sizes[@]} -eq 0 ]; then
  read -r -a sizes <<< "${PERF_N:-2 5 10 20 40 80}"
fi
die() { echo "perf-scaling.sh: $*" >&2; exit 2; }
for n in "${sizes[@]}"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || die "N must be a positive integer, got '$n'"
done
for v in "$repeat" "$max_repeat"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || die "--repeat and --max-repeat take a positive integer, got '$v'"
done
[[ $min_time =~ ^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$ ]] ||
  die "--min-time takes a number of seconds, got '$min_time'"
python3 -c 'import sys; t1, t2, h = map(float, sys.argv[1:]); sys.exit(not 0 < h <= t1 < t2)' \
  "$t1" "$t2" "$step" 2>/dev/null || die "need 0 < step <= t1 < t2 (got step $step, t1 $t1, t2 $t2)"

# the output path as the caller meant it, then work from the repository root
if [ $out_given = 1 ]; then case $out in /*) ;; *) out="$PWD/$out" ;; esac; fi
cd "$(dirname "$0")/.."
root=$PWD
mbopt=$root/build/mbopt
if [ ! -x "$mbopt" ]; then
  echo "perf-scaling.sh: $mbopt is missing; build it first with scripts/test.sh (or" >&2
  echo "  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build)" >&2
  exit 1
fi
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
load_before=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
work=$root/build/perf
mkdir -p "$work" "$(dirname "$out")"
# time a private copy, so that a rebuild of build/mbopt during the runs cannot mix two binaries
cp -p "$mbopt" "$work/mbopt"
mbopt=$work/mbopt
data=$work/fourbar_scaling.tsv
: > "$data"

# one run of simulate; sets sec, steps, nit, nq, nc, status from its JSON summary (one line)
field() { [[ $2 =~ \"$1\":\"?([^,}\"]*) ]] && printf '%s' "${BASH_REMATCH[1]}"; }
run() {
  local model=$1 t=$2 json=$3 line=
  "$mbopt" simulate "$model" --json --quiet --t-end "$t" > "$json" 2> "$json.err" || true
  IFS= read -r line < "$json" || true
  sec=$(field seconds "$line") || sec=
  steps=$(field steps "$line") || steps=0
  nit=$(field newton_iterations "$line") || nit=0
  nq=$(field coordinates "$line") || nq=0
  nc=$(field constraints "$line") || nc=0
  status=$(field status "$line") || status="no summary"
}

lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
echo "timing N = ${sizes[*]}: t_end = $t1 s and $t2 s alternating, h = $step s," \
  "$repeat to $max_repeat rounds (until $min_time s at $t2 s)" >&2
for n in "${sizes[@]}"; do
  model=$work/fourbar_$n.json
  python3 scripts/gen_fourbar_chain.py "$n" --t-end "$t2" --step "$step" -o "$model"
  best1=; best2=; total=0; r=0; all1=; all2=
  # at least $repeat rounds, and more (up to $max_repeat) until the T2 runs sum to $min_time s
  while [ $r -lt "$repeat" ] || { [ $r -lt "$max_repeat" ] && lt "$total" "$min_time"; }; do
    r=$((r + 1))
    for t in "$t1" "$t2"; do
      json=$work/fourbar_${n}_t$t.json
      run "$model" "$t" "$json"
      if [ "$status" != completed ]; then
        echo "perf-scaling.sh: N = $n, t_end = $t: the simulation did not complete ($status):" >&2
        cat "$json.err" >&2
        exit 1
      fi
      if [ "$t" = "$t1" ]; then
        s1=$steps; n1=$nit; all1+="${all1:+,}$sec"
        if [ -z "$best1" ] || lt "$sec" "$best1"; then best1=$sec; fi
      else
        s2=$steps; n2=$nit; all2+="${all2:+,}$sec"
        total=$(awk -v a="$total" -v b="$sec" 'BEGIN { print a + b }')
        if [ -z "$best2" ] || lt "$sec" "$best2"; then best2=$sec; fi
      fi
    done
  done
  rm -f "$work/fourbar_${n}_t$t1.json.err" "$work/fourbar_${n}_t$t2.json.err"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$nq" "$nc" "$s1" "$best1" "$n1" \
    "$s2" "$best2" "$n2" "$r" "$all1" "$all2" >> "$data"
  printf '  N = %-4s nq = %-5s %3d rounds: min %.5f s (%s steps), %.5f s (%s steps)\n' \
    "$n" "$nq" "$r" "$best1" "$s1" "$best2" "$s2" >&2
done

cpu=$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || true)
load_after=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
binary=$(sha256sum "$mbopt" | cut -c1-12)
built=$(date -r "$mbopt" '+%Y-%m-%d %H:%M' 2>/dev/null || echo unknown) # cp -p kept the time
shown_out=$out
case $out in "$root"/*) shown_out=${out#"$root"/} ;; esac
command="scripts/perf-scaling.sh --t1 $t1 --t2 $t2 --step $step --repeat $repeat"
command+=" --min-time $min_time --max-repeat $max_repeat -o $shown_out ${sizes[*]}"

python3 - "$data" "$out" "$command" "$(nproc)" "${cpu:-unknown}" "$load_before / $load_after" \
  "$commit" "$binary" "$built" "$t1" "$t2" "$step" "$repeat" "$min_time" "$max_repeat" \
  "$OPENBLAS_NUM_THREADS" <<'EOF'
import math, sys, textwrap
(data, out, command, ncpu, cpu, load, commit, binary, built, t1, t2, step, repeat, min_time,
 max_repeat, blas_threads) = sys.argv[1:]
rows = []
for line in open(data):
    n, nq, nc, s1, sec1, n1, s2, sec2, n2, rounds, all1, all2 = line.rstrip("\n").split("\t")
    ds = int(s2) - int(s1)
    per = (float(sec2) - float(sec1)) / ds
    # cross-check robust to slow drift of the machine's speed: the median over rounds of the
    # difference between the two runs of one round (they ran back to back)
    paired = sorted((float(b) - float(a)) / ds for a, b in zip(all1.split(","), all2.split(",")))
    k = len(paired)
    median = paired[k // 2] if k % 2 else (paired[k // 2 - 1] + paired[k // 2]) / 2
    rows.append(dict(n=int(n), nq=int(nq), nc=int(nc), s1=int(s1), s2=int(s2), sec1=float(sec1),
                     sec2=float(sec2), per=per, fixed=float(sec1) - int(s1) * per,
                     newton=(int(n2) - int(n1)) / ds, rounds=int(rounds), paired=median))
rows.sort(key=lambda r: r["nq"])

def fit(points, key="per"):
    """least squares of log(cost) = log(a) + b log(nq); None when fewer than 2 usable points"""
    pts = [(math.log(r["nq"]), math.log(r[key])) for r in points if r[key] > 0]
    if len(pts) < 2 or len({x for x, _ in pts}) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    b = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    a = math.exp(my - b * mx)
    return b, a, len(pts)

upper = rows[len(rows) // 2:]
fits = [("all sizes", rows, fit(rows)), ("upper half", upper, fit(upper))]
cross = [("all sizes", rows, fit(rows, "paired")), ("upper half", upper, fit(upper, "paired"))]

def para(text):
    return textwrap.fill(text, width=100, break_on_hyphens=False, break_long_words=False)

lines = [
    "# Per-step cost of `mbopt simulate` on the N-four-bar chain",
    "",
    para(f"Produced by `{command}` (repository HEAD {commit}; the binary is whatever build/mbopt "
         f"held when the script started: sha256 {binary}..., built {built}). Machine: {cpu}, "
         f"nproc = {ncpu}; load average (1, 5, 15 min) before / after the runs {load}; "
         f"OPENBLAS_NUM_THREADS={blas_threads}."),
    "",
    para("Model: `scripts/gen_fourbar_chain.py N` (the N-four-bar benchmark A02: 2N+1 bars of "
         "1 m and 1 kg, the first crank turning at 1 rad/s from the vertical, under gravity). "
         f"Each size runs `build/mbopt simulate MODEL --json --quiet --t-end T` at T1 = {t1} s "
         f"and T2 = {t2} s (h = {step} s), alternating, at least {repeat} times each and more "
         f"until the T2 runs add up to {min_time} s (at most {max_repeat} rounds). The minimum "
         "of the JSON field `seconds` (wall time of mb_simulate inside the program: assembly and "
         "integration, not process start or loading the model) counts. Per-step cost = "
         "(seconds(T2) - seconds(T1)) / (steps(T2) - steps(T1)), so that the fixed cost "
         "cancels; the fixed cost column is seconds(T1) - steps(T1) x per-step cost (assembly "
         "and set-up, small and positive), which serves as a noise check: a negative or large "
         "value means that the two minima were taken under different load. Both spans end "
         "before the first singular position (cranks horizontal, t = 0.71 s)."),
    "",
    para("The column 'paired median us' is a cross-check that does not take minima: the median "
         "over the rounds of (seconds(T2) - seconds(T1)) / (steps(T2) - steps(T1)) of the two runs "
         "of one round, which ran back to back; it is robust to a slow drift of the machine's "
         "speed (other work on the machine), which the two separate minima are not."),
    "",
    "| N | nq | constraints | per-step us | fixed ms | paired median us "
    "| Newton iterations per step | rounds |",
    "|---:|---:|---:|---:|---:|---:|---:|---:|",
]
for r in rows:
    lines.append(f"| {r['n']} | {r['nq']} | {r['nc']} | {r['per'] * 1e6:.2f} | "
                 f"{r['fixed'] * 1e3:.2f} | {r['paired'] * 1e6:.2f} | {r['newton']:.2f} | "
                 f"{r['rounds']} |")
lines.append("")
def fit_lines(title, results):
    lines.extend([title, ""])
    for label, pts, f in results:
        span = f"nq = {pts[0]['nq']} .. {pts[-1]['nq']}" if pts else "no sizes"
        if f is None:
            lines.append(f"- {label} ({span}): not enough positive points to fit")
        else:
            b, a, k = f
            lines.append(f"- {label} ({span}, {k} points): b = {b:.2f}, a = {a * 1e6:.3g} us")


fit_lines("Least-squares fit of log(per-step cost) against log(nq), cost = a nq^b:", fits)
lines.append("")
fit_lines("The same fit of the paired medians (cross-check):", cross)
bad = [r["n"] for r in rows if r["per"] <= 0]
if bad:
    lines.append(f"- N = {', '.join(map(str, bad))}: per-step cost not positive (timing noise "
                 "larger than the difference); left out of the fits")
text = "\n".join(lines) + "\n"
with open(out, "w") as f:
    f.write(text)
print(text, end="")
print(f"wrote {out}", file=sys.stderr)
EOF
