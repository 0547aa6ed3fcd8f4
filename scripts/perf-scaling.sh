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
  --linear-solver S
                  pass `--linear-solver S` to every simulate run: auto, dense, sparse or klu
                  (default: no option, so the spec's simulation.linear_solver, else auto). A
                  comma list such as dense,sparse times the solvers side by side on the same
                  models: every round runs T1 and T2 with each solver in turn, their order
                  reversed every other round, each --min-time counts per solver, and the table
                  and the fits have one row and one line per size and solver
  --model SPEC    time the model file SPEC (e.g. problems/vehicle/step_descent.json) instead of
                  the N-four-bar chain; no N then, and the step is the spec's unless --step is
                  given. T1 and T2 must lie in SPEC's time span
  --json FILE     also write the measurements as one JSON object: the settings and machine,
                  and per size and solver nq, the steps, the minimum seconds at T1 and T2, the
                  per-step and fixed seconds and the seconds of every run, round by round
  --work DIR      where the models, the raw JSON summaries and the copy of build/mbopt go
                  (default build/perf)
  --mbopt FILE    time the program FILE as it is, not a fresh copy of build/mbopt (for several
                  calls that must time the same binary: copy it once, pass the copy to each)
  -h, --help      this help

N ...           the sizes (default: $PERF_N if set, else 2 5 10 20 40 80). Arguments win over
                $PERF_N; --repeat over $PERF_REPEAT. None with --model.

Does not build anything: build/mbopt must exist (scripts/test.sh, scripts/quickstart.sh or
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build make it). OpenBLAS runs on
one thread (OPENBLAS_NUM_THREADS=1) unless the variable is already set. Models and raw JSON
summaries stay in build/perf/ (--work); the runs use a copy of build/mbopt made there at the start,
so that a rebuild during the measurement cannot mix two binaries.
Exit status: 0 done, 1 a missing binary or a failed simulation, 2 a wrong command line.
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
step_given=0
solver_list=
spec=
json_out=
work=
binary_given=
sizes=()
while [ $# -gt 0 ]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --t1) t1=${2:?--t1 needs a value}; shift 2 ;;
    --t2) t2=${2:?--t2 needs a value}; shift 2 ;;
    --step) step=${2:?--step needs a value}; step_given=1; shift 2 ;;
    --repeat) repeat=${2:?--repeat needs a value}; shift 2 ;;
    --max-repeat) max_repeat=${2:?--max-repeat needs a value}; shift 2 ;;
    --min-time) min_time=${2:?--min-time needs a value}; shift 2 ;;
    -o | --output) out=${2:?$1 needs a value}; out_given=1; shift 2 ;;
    --linear-solver) solver_list=${2:?--linear-solver needs a value}; shift 2 ;;
    --model) spec=${2:?--model needs a value}; shift 2 ;;
    --json) json_out=${2:?--json needs a value}; shift 2 ;;
    --work) work=${2:?--work needs a value}; shift 2 ;;
    --mbopt) binary_given=${2:?--mbopt needs a value}; shift 2 ;;
    --) shift; sizes+=("$@"); break ;;
    -*) echo "perf-scaling.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) sizes+=("$1"); shift ;;
  esac
done
die() { echo "perf-scaling.sh: $*" >&2; exit 2; }
if [ -n "$spec" ]; then
  [ ${#sizes[@]} -eq 0 ] || die "no N with --model (got ${sizes[*]})"
  [ -f "$spec" ] || die "--model: no file '$spec'"
elif [ ${#sizes[@]} -eq 0 ]; then
  read -r -a sizes <<< "${PERF_N:-2 5 10 20 40 80}"
fi
# the solvers, '-' standing for no --linear-solver option
solvers=(-)
if [ -n "$solver_list" ]; then
  IFS=, read -r -a solvers <<< "$solver_list"
  [ ${#solvers[@]} -gt 0 ] || die "--linear-solver needs a solver"
  for s in "${solvers[@]}"; do
    [[ $s =~ ^(auto|dense|sparse|klu)$ ]] ||
      die "--linear-solver takes auto, dense, sparse or klu (or a comma list), got '$s'"
  done
  [ "$(printf '%s\n' "${solvers[@]}" | sort | uniq -d)" = "" ] ||
    die "--linear-solver names a solver twice: '$solver_list'"
fi
for n in "${sizes[@]}"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || die "N must be a positive integer, got '$n'"
done
for v in "$repeat" "$max_repeat"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || die "--repeat and --max-repeat take a positive integer, got '$v'"
done
[[ $min_time =~ ^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$ ]] ||
  die "--min-time takes a number of seconds, got '$min_time'"
# (a --model without --step runs with its own step, which simulate checks)
h=$step
[ -z "$spec" ] || [ $step_given = 1 ] || h=$t1
python3 -c 'import sys; t1, t2, h = map(float, sys.argv[1:]); sys.exit(not 0 < h <= t1 < t2)' \
  "$t1" "$t2" "$h" 2>/dev/null || die "need 0 < step <= t1 < t2 (got step $step, t1 $t1, t2 $t2)"

# the paths as the caller meant them, then work from the repository root
abs() { case $1 in /*) printf '%s' "$1" ;; *) printf '%s' "$PWD/$1" ;; esac; }
if [ $out_given = 1 ]; then out=$(abs "$out"); fi
[ -z "$spec" ] || spec=$(abs "$spec")
[ -z "$json_out" ] || json_out=$(abs "$json_out")
[ -z "$work" ] || work=$(abs "$work")
if [ -n "$binary_given" ]; then
  { [ -f "$binary_given" ] && [ -x "$binary_given" ]; } || die "--mbopt: no program '$binary_given'"
  binary_given=$(abs "$binary_given")
fi
cd "$(dirname "$0")/.."
root=$PWD
# a path as shown in the report: relative to the repository root when inside it
shown() { case $1 in "$root"/*) printf '%s' "${1#"$root"/}" ;; *) printf '%s' "$1" ;; esac; }
mbopt=$root/build/mbopt
if [ ! -x "$mbopt" ]; then
  echo "perf-scaling.sh: $mbopt is missing; build it first with scripts/test.sh (or" >&2
  echo "  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build)" >&2
  exit 1
fi
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
load_before=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
work=${work:-$root/build/perf}
mkdir -p "$work" "$(dirname "$out")"
[ -z "$json_out" ] || mkdir -p "$(dirname "$json_out")"
# time a private copy, so that a rebuild of build/mbopt during the runs cannot mix two binaries
if [ -n "$binary_given" ]; then
  mbopt=$binary_given
else
  cp -p "$mbopt" "$work/mbopt"
  mbopt=$work/mbopt
fi
shown_spec=$(shown "$spec")
data=$work/fourbar_scaling.tsv
[ -z "$spec" ] || data=$work/$(basename "$spec" .json)_scaling.tsv
: > "$data"

# one run of simulate with linear solver S ('-': no option); sets sec, steps, nit, nq, nc, h and
# status from its JSON summary (one line)
field() { [[ $2 =~ \"$1\":\"?([^,}\"]*) ]] && printf '%s' "${BASH_REMATCH[1]}"; }
run() {
  local model=$1 s=$2 t=$3 json=$4 line='' extra=()
  [ "$s" = - ] || extra+=(--linear-solver "$s")
  [ -z "$spec" ] || [ $step_given = 0 ] || extra+=(--step "$step")
  "$mbopt" simulate "$model" --json --quiet "${extra[@]}" --t-end "$t" > "$json" 2> "$json.err" ||
    true
  IFS= read -r line < "$json" || true
  sec=$(field seconds "$line") || sec=
  h=$(field step "$line") || h=
  steps=$(field steps "$line") || steps=0
  nit=$(field newton_iterations "$line") || nit=0
  nq=$(field coordinates "$line") || nq=0
  nc=$(field constraints "$line") || nc=0
  status=$(field status "$line") || status="no summary"
}

lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
# measure LABEL STEM MODEL: times MODEL (LABEL: its N, or its file name) at T1 and T2 with every
# solver, round after round; appends one row per solver to $data; raw summaries $work/STEM_*
measure() {
  local label=$1 stem=$2 model=$3 r=0 least=0 s t json what sfx order=()
  local -A best1=() best2=() total=() all1=() all2=() s1=() s2=() n1=() n2=()
  for s in "${solvers[@]}"; do best1[$s]=; best2[$s]=; total[$s]=0; all1[$s]=; all2[$s]=; done
  # at least $repeat rounds, and more (up to $max_repeat) until the T2 runs of every solver sum to
  # $min_time s; every other round takes the solvers in reverse order
  while [ $r -lt "$repeat" ] || { [ $r -lt "$max_repeat" ] && lt "$least" "$min_time"; }; do
    r=$((r + 1))
    order=("${solvers[@]}")
    if [ $((r % 2)) = 0 ]; then mapfile -t order < <(printf '%s\n' "${solvers[@]}" | tac); fi
    for s in "${order[@]}"; do
      sfx=; [ "$s" = - ] || sfx=_$s
      for t in "$t1" "$t2"; do
        json=$work/${stem}${sfx}_t$t.json
        run "$model" "$s" "$t" "$json"
        if [ "$status" != completed ]; then
          what="N = $label"; [ -z "$spec" ] || what=$shown_spec
          [ "$s" = - ] || what+=", linear solver $s"
          echo "perf-scaling.sh: $what, t_end = $t: the simulation did not complete ($status):" >&2
          cat "$json.err" >&2
          exit 1
        fi
        if [ "$t" = "$t1" ]; then
          s1[$s]=$steps; n1[$s]=$nit; all1[$s]+="${all1[$s]:+,}$sec"
          if [ -z "${best1[$s]}" ] || lt "$sec" "${best1[$s]}"; then best1[$s]=$sec; fi
        else
          s2[$s]=$steps; n2[$s]=$nit; all2[$s]+="${all2[$s]:+,}$sec"
          total[$s]=$(awk -v a="${total[$s]}" -v b="$sec" 'BEGIN { print a + b }')
          if [ -z "${best2[$s]}" ] || lt "$sec" "${best2[$s]}"; then best2[$s]=$sec; fi
        fi
        rm -f "$json.err"
      done
    done
    least=$(printf '%s\n' "${total[@]}" | sort -g | head -1)
  done
  for s in "${solvers[@]}"; do
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$nq" "$nc" \
      "${s1[$s]}" "${best1[$s]}" "${n1[$s]}" "${s2[$s]}" "${best2[$s]}" "${n2[$s]}" "$r" \
      "${all1[$s]}" "${all2[$s]}" "$s" "$h" >> "$data"
    what=$(printf 'N = %-4s' "$label"); [ -z "$spec" ] || what=$shown_spec
    [ "$s" = - ] || what+=$(printf ' %-6s' "$s")
    printf '  %s nq = %-5s %3d rounds: min %.5f s (%s steps), %.5f s (%s steps)\n' \
      "$what" "$nq" "$r" "${best1[$s]}" "${s1[$s]}" "${best2[$s]}" "${s2[$s]}" >&2
  done
}

if [ -n "$spec" ]; then
  echo "timing $shown_spec: t_end = $t1 s and $t2 s alternating, $repeat to $max_repeat rounds" \
    "(until $min_time s at $t2 s)" >&2
  measure "$(basename "$spec" .json)" "$(basename "$spec" .json)" "$spec"
else
  echo "timing N = ${sizes[*]}: t_end = $t1 s and $t2 s alternating, h = $step s," \
    "$repeat to $max_repeat rounds (until $min_time s at $t2 s)" >&2
  for n in "${sizes[@]}"; do
    model=$work/fourbar_$n.json
    python3 scripts/gen_fourbar_chain.py "$n" --t-end "$t2" --step "$step" -o "$model"
    measure "$n" "fourbar_$n" "$model"
  done
fi

cpu=$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || true)
load_after=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
binary=$(sha256sum "$mbopt" | cut -c1-12)
built=$(date -r "$mbopt" '+%Y-%m-%d %H:%M' 2>/dev/null || echo unknown) # cp -p kept the time
shown_out=$(shown "$out")
command="scripts/perf-scaling.sh"
[ -z "$spec" ] || command+=" --model $shown_spec"
command+=" --t1 $t1 --t2 $t2"
[ -n "$spec" ] && [ $step_given = 0 ] || command+=" --step $step"
command+=" --repeat $repeat --min-time $min_time --max-repeat $max_repeat"
[ -z "$solver_list" ] || command+=" --linear-solver $solver_list"
[ "$work" = "$root/build/perf" ] || command+=" --work $(shown "$work")"
[ -z "$binary_given" ] || command+=" --mbopt $(shown "$binary_given")"
[ -z "$json_out" ] || command+=" --json $(shown "$json_out")"
command+=" -o $shown_out"
[ -n "$spec" ] || command+=" ${sizes[*]}"

python3 - "$data" "$out" "$command" "$(nproc)" "${cpu:-unknown}" "$load_before / $load_after" \
  "$commit" "$binary" "$built" "$t1" "$t2" "$step" "$repeat" "$min_time" "$max_repeat" \
  "$OPENBLAS_NUM_THREADS" "$solver_list" "$shown_spec" "$json_out" \
  "$([ -z "$binary_given" ] || shown "$binary_given")" <<'EOF'
import json, math, sys, textwrap
(data, out, command, ncpu, cpu, load, commit, binary, built, t1, t2, step, repeat, min_time,
 max_repeat, blas_threads, solver_list, spec, json_out, program) = sys.argv[1:]
program = program or "whatever build/mbopt held when the script started"
solvers = solver_list.split(",") if solver_list else []  # empty: no --linear-solver
rows = []
for line in open(data):
    (n, nq, nc, s1, sec1, n1, s2, sec2, n2, rounds, all1, all2, solver,
     h) = line.rstrip("\n").split("\t")
    ds = int(s2) - int(s1)
    per = (float(sec2) - float(sec1)) / ds
    runs1 = [float(a) for a in all1.split(",")]
    runs2 = [float(b) for b in all2.split(",")]
    # cross-check robust to slow drift of the machine's speed: the median over rounds of the
    # difference between the two runs of one round (they ran back to back)
    paired = sorted((b - a) / ds for a, b in zip(runs1, runs2))
    k = len(paired)
    median = paired[k // 2] if k % 2 else (paired[k // 2 - 1] + paired[k // 2]) / 2
    rows.append(dict(n=n if spec else int(n), nq=int(nq), nc=int(nc), s1=int(s1), s2=int(s2),
                     sec1=float(sec1), sec2=float(sec2), per=per,
                     fixed=float(sec1) - int(s1) * per, newton=(int(n2) - int(n1)) / ds,
                     rounds=int(rounds), paired=median, solver=solver, step=float(h),
                     runs1=runs1, runs2=runs2))
rows.sort(key=lambda r: (r["nq"], solvers.index(r["solver"]) if solvers else 0))

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

def para(text):
    return textwrap.fill(text, width=100, break_on_hyphens=False, break_long_words=False)

# the simulate command and what differs with --model and --linear-solver
if spec:
    h = f"{rows[0]['step']:g}" if rows else step
    title = f"# Per-step cost of `mbopt simulate` on {spec}"
    model = (f"Model: `{spec}`, its own settings but for the final time. It runs "
             f"`build/mbopt simulate {spec} --json --quiet")
    runs, spans = "", ""
else:
    h = step
    title = "# Per-step cost of `mbopt simulate` on the N-four-bar chain"
    model = ("Model: `scripts/gen_fourbar_chain.py N` (the N-four-bar benchmark A02: 2N+1 bars of "
             "1 m and 1 kg, the first crank turning at 1 rad/s from the vertical, under gravity). "
             "Each size runs `build/mbopt simulate MODEL --json --quiet")
    runs = ""
    spans = (" Both spans end before the first singular position (cranks horizontal, "
             "t = 0.71 s).")
if solvers:
    model += " --linear-solver S"
    runs = (f" with S = {', '.join(solvers)} in turn (their order reversed every other round, "
            "each its own T1 and T2 run),")
each = " of each solver" if solvers else ""

lines = [
    title,
    "",
    para(f"Produced by `{command}` (repository HEAD {commit}; the binary is {program}: "
         f"sha256 {binary}..., built {built}). Machine: {cpu}, "
         f"nproc = {ncpu}; load average (1, 5, 15 min) before / after the runs {load}; "
         f"OPENBLAS_NUM_THREADS={blas_threads}."),
    "",
    para(f"{model} --t-end T`{runs} at T1 = {t1} s "
         f"and T2 = {t2} s (h = {h} s), alternating, at least {repeat} times each and more "
         f"until the T2 runs{each} add up to {min_time} s (at most {max_repeat} rounds). The "
         "minimum "
         "of the JSON field `seconds` (wall time of mb_simulate inside the program: assembly and "
         "integration, not process start or loading the model) counts. Per-step cost = "
         "(seconds(T2) - seconds(T1)) / (steps(T2) - steps(T1)), so that the fixed cost "
         "cancels; the fixed cost column is seconds(T1) - steps(T1) x per-step cost (assembly "
         "and set-up, small and positive), which serves as a noise check: a negative or large "
         f"value means that the two minima were taken under different load.{spans}"),
    "",
    para("The column 'paired median us' is a cross-check that does not take minima: the median "
         "over the rounds of (seconds(T2) - seconds(T1)) / (steps(T2) - steps(T1)) of the two runs "
         "of one round, which ran back to back; it is robust to a slow drift of the machine's "
         "speed (other work on the machine), which the two separate minima are not."),
    "",
    f"| {'model' if spec else 'N'} | nq | {'linear solver | ' if solvers else ''}constraints "
    "| per-step us | fixed ms | paired median us | Newton iterations per step | rounds |",
    "|---:|---:|" + ("---|" if solvers else "") + "---:|---:|---:|---:|---:|---:|",
]
for r in rows:
    lines.append(f"| {r['n']} | {r['nq']} | {r['solver'] + ' | ' if solvers else ''}{r['nc']} | "
                 f"{r['per'] * 1e6:.2f} | {r['fixed'] * 1e3:.2f} | {r['paired'] * 1e6:.2f} | "
                 f"{r['newton']:.2f} | {r['rounds']} |")
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


# the fits, of each solver's rows; none for a single model
for i, solver in enumerate(solvers or [None]):
    if spec:
        break
    group = [r for r in rows if r["solver"] == solver] if solver else rows
    upper = group[len(group) // 2:]
    fits = [("all sizes", group, fit(group)), ("upper half", upper, fit(upper))]
    cross = [("all sizes", group, fit(group, "paired")),
             ("upper half", upper, fit(upper, "paired"))]
    which = f", linear solver {solver}" if solver else ""
    if i > 0:
        lines.append("")
    fit_lines(f"Least-squares fit of log(per-step cost) against log(nq), cost = a nq^b{which}:",
              fits)
    lines.append("")
    fit_lines(f"The same fit of the paired medians (cross-check){which}:", cross)
bad = [f"{r['n']}{' ' + r['solver'] if solvers else ''}" for r in rows if r["per"] <= 0]
if bad:
    lines.append(f"- {'' if spec else 'N = '}{', '.join(bad)}: per-step cost not positive "
                 "(timing noise larger than the difference); left out of the fits")
text = "\n".join(lines) + "\n"
with open(out, "w") as f:
    f.write(text)
print(text, end="")
print(f"wrote {out}", file=sys.stderr)
if json_out:
    keys = [("n", "n"), ("nq", "nq"), ("nc", "constraints"), ("step", "step"), ("s1", "steps_t1"),
            ("s2", "steps_t2"), ("sec1", "seconds_t1"), ("sec2", "seconds_t2"),
            ("per", "per_step_seconds"), ("fixed", "fixed_seconds"),
            ("paired", "paired_median_seconds"), ("newton", "newton_per_step"),
            ("rounds", "rounds"), ("runs1", "runs_t1"), ("runs2", "runs_t2")]
    summary = dict(command=command, commit=commit, program=program, binary_sha256=binary,
                   built=built, cpu=cpu, nproc=int(ncpu), load=load,
                   openblas_threads=blas_threads, model=spec or "scripts/gen_fourbar_chain.py N",
                   t1=float(t1), t2=float(t2), linear_solvers=solvers,
                   rows=[dict([(k, r[key]) for key, k in keys],
                              linear_solver=r["solver"] if solvers else None) for r in rows])
    with open(json_out, "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    print(f"wrote {json_out}", file=sys.stderr)
EOF
