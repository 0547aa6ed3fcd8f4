#!/usr/bin/env bash
# Times mbopt commands with an older commit and with the working tree, side by side in one run,
# and prints the ratios: every performance claim of the project as a measurement anyone can rerun.
#   scripts/bench-compare.sh [options] [--] [CMD ...]      (scripts/bench-compare.sh --help)
# Both sides are Release builds made by this script: the base commit is exported with git archive
# and built once in build-bench/<commit hash>/ (reused by later runs); the working tree, as it is
# with its uncommitted changes, is built incrementally in build-bench/worktree/ (build/ is left
# alone). Base and new runs alternate, with OPENBLAS_NUM_THREADS=1 on both sides.
set -euo pipefail
shopt -s inherit_errexit

usage() {
  cat <<'EOF'
Usage: scripts/bench-compare.sh [options] [--] [CMD ...]
Builds an older commit (the base) and the working tree (the new side) in Release, runs the same
mbopt commands with both, alternating base and new, and prints per command the minimum and median
wall-clock seconds of each side and the speed-ups base/new of the minimums and of the medians.

Each CMD is ONE argument: an mbopt command line without the program name, split like a shell
would split it, e.g.  'simulate problems/fivebar.json'  'gradient problems/fivebar.json --method
adjoint'. Without CMD the default list runs (about 8 minutes on 2 cores when both sides are as
fast as the code of late 2026, nearly all of it in the three vehicle commands):
  simulate problems/vehicle/step_descent.json
  gradient problems/vehicle/step_descent.json --method adjoint
  gradient problems/vehicle/step_descent.json --method forward
  simulate problems/fivebar.json
  gradient problems/fivebar.json --method forward
  gradient problems/fivebar.json --method adjoint
  simulate problems/slider_crank.json

Options:
  --repeat N      samples per side and command (default 5); base and new alternate
  --base COMMIT   the base side: any git revision (default: $MBOPT_BENCH_BASE, else HEAD, so that
                  the default compares uncommitted work with the commit it started from)
  --new COMMIT    build this commit for the new side instead of the working tree
  --min-time S    a sample lasts at least S seconds: commands faster than that run several times
                  in a row per sample (the same count on both sides, from one warm-up run of
                  each) and the time per run is reported (default 0.5)
  --inputs MODE   same: both sides run in the repository root, so they read the same spec files
                  (those of the working tree; default) -- own: each side runs in its own source
                  tree (the exported commit, or the repository root for the working tree), for
                  specs whose format changed between the two
  --base-args ARGS, --new-args ARGS
                  more arguments appended to every command of that side, split like a shell
                  would split them: with --base and --new naming the same commit, a comparison
                  of two settings of one build, e.g. --base-args '--threads 1' --new-args
                  '--threads 2'
  --load N        keep N busy processes (shell loops) running beside the timed runs, as on a
                  machine shared with other work (default 0)
  --cpu N         run every timed command on processor N alone (its affinity; --load's
                  processes stay free): on a virtual machine whose processors differ in speed
                  (one 2-core machine here ran the same joint-coordinate gradient 35% slower on
                  processor 0 than on 1) unpinned samples land on either, and the medians mix
                  the two. Multi-threaded commands (the adjoint's --threads 2) then share one
                  processor (default: unpinned)
  --jobs N        parallel build jobs (default: nproc)
  --out FILE      also write a markdown report: the table, the exact command lines, both commits,
                  the date and the machine
  --json FILE     also write every sample and the summary as JSON
  -h, --help      show this help

Environment: OPENBLAS_NUM_THREADS=1 is set for both sides (whatever the caller has). The builds
are cached in build-bench/ (ignored by git through the build-*/ line of .gitignore): a commit's
build is reused as long as build-bench/<hash>/.built exists; delete build-bench/<hash> to rebuild.
Progress and build messages go to stderr, the table to stdout. Exit status: 0 done, 1 a build or
a command failed (the message names the side and the command), 2 bad command line.
EOF
}

# die, bad_usage, abs_path, need, sides_option, and the builds of both sides (build-bench/)
# shellcheck source=lib/build-sides.sh
source "$(dirname "$0")/lib/build-sides.sh"
prog=bench-compare
new_hint='--new COMMIT measures a commit instead'

repeat=5 base=${MBOPT_BENCH_BASE:-HEAD} new='' min_time=0.5 inputs=same out='' json=''
base_args='' new_args='' load=0 cpu=''
jobs=$(nproc 2>/dev/null || echo 2)
cmds=()
while [ $# -gt 0 ]; do
  case $1 in
  -h | --help) usage; exit 0 ;;
  --base | --new | --out | --json) need "$@"; sides_option "$1" "$2"; shift 2 ;;
  --repeat) need "$@"; repeat=$2; shift 2 ;;
  --min-time) need "$@"; min_time=$2; shift 2 ;;
  --inputs) need "$@"; inputs=$2; shift 2 ;;
  --jobs) need "$@"; jobs=$2; shift 2 ;;
  --base-args) need "$@"; base_args=$2; shift 2 ;;
  --new-args) need "$@"; new_args=$2; shift 2 ;;
  --load) need "$@"; load=$2; shift 2 ;;
  --cpu) need "$@"; cpu=$2; shift 2 ;;
  --) shift; cmds+=("$@"); break ;;
  -*) bad_usage "unknown option '$1'" ;;
  *) cmds+=("$1"); shift ;;
  esac
done
[[ $repeat =~ ^[1-9][0-9]*$ ]] || bad_usage "--repeat wants a positive integer, not '$repeat'"
[[ $jobs =~ ^[1-9][0-9]*$ ]] || bad_usage "--jobs wants a positive integer, not '$jobs'"
[[ $load =~ ^[0-9]+$ ]] || bad_usage "--load wants a count of processes, not '$load'"
[[ -z $cpu || $cpu =~ ^[0-9]+$ ]] || bad_usage "--cpu wants a processor number, not '$cpu'"
[[ $min_time =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)$ ]] || bad_usage "--min-time wants seconds, not '$min_time'"
case $inputs in same | own) ;; *) bad_usage "--inputs is same or own, not '$inputs'" ;; esac
if [ ${#cmds[@]} -eq 0 ]; then
  cmds=(
    "simulate problems/vehicle/step_descent.json"
    "gradient problems/vehicle/step_descent.json --method adjoint"
    "gradient problems/vehicle/step_descent.json --method forward"
    "simulate problems/fivebar.json"
    "gradient problems/fivebar.json --method forward"
    "gradient problems/fivebar.json --method adjoint"
    "simulate problems/slider_crank.json"
  )
fi

sides_setup
command -v python3 >/dev/null || die "python3 is needed to run and time the commands"
if [ -n "$cpu" ]; then
  allowed=$(python3 -c 'import os; print(" ".join(map(str, sorted(os.sched_getaffinity(0)))))')
  [[ " $allowed " == *" $cpu "* ]] ||
    bad_usage "--cpu $cpu: this process may not run on processor $cpu (allowed: $allowed)"
fi

build_sides "$base" "$new"
base_cwd=$root new_cwd=$root
if [ "$inputs" = own ]; then
  base_cwd=$cache/$base_hash/src
  [ "$new_kind" = worktree ] || new_cwd=$cache/$new_hash/src
fi

export OPENBLAS_NUM_THREADS=1
export BENCH_ROOT=$root BENCH_REPEAT=$repeat BENCH_MIN_TIME=$min_time BENCH_INPUTS=$inputs
export BENCH_BASE_ARG=$base BENCH_BASE_HASH=$base_hash BENCH_BASE_BIN=$base_bin BENCH_BASE_CWD=$base_cwd
export BENCH_NEW_ARG=${new:-} BENCH_NEW_HASH=$new_hash BENCH_NEW_BIN=$new_bin BENCH_NEW_CWD=$new_cwd
export BENCH_NEW_KIND=$new_kind BENCH_OUT=$out BENCH_JSON=$json BENCH_JOBS=$jobs
export BENCH_BASE_ARGS=$base_args BENCH_NEW_ARGS=$new_args BENCH_LOAD=$load BENCH_CPU=$cpu
python3 - "${cmds[@]}" <<'PY'
"""Runs the commands with both builds, alternating, and writes the table and the reports."""
import atexit, datetime, json, math, os, shlex, statistics, subprocess, sys, time

E = os.environ
root = E["BENCH_ROOT"]
sys.path.insert(0, os.path.join(root, "scripts", "lib"))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import build_sides  # noqa: E402  (scripts/lib/build_sides.py)
repeat, min_time = int(E["BENCH_REPEAT"]), float(E["BENCH_MIN_TIME"])
cmds = sys.argv[1:]


sides, dirty = build_sides.load_sides(root, E, "BENCH")
# the arguments each side appends to every command (--base-args, --new-args)
extra = {"base": shlex.split(E["BENCH_BASE_ARGS"]), "new": shlex.split(E["BENCH_NEW_ARGS"])}

env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
env = {k: v for k, v in env.items() if not k.startswith("BENCH_")}
# --cpu: the timed runs on one processor (set in the child, so that --load's processes stay free)
cpu = int(E["BENCH_CPU"]) if E["BENCH_CPU"] else None
pin = (lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None


def run(side, argv, count, cmd):
    """Seconds of COUNT runs in a row of one side; exits with a clear message on failure."""
    s = sides[side]
    t0 = time.perf_counter()
    for _ in range(count):
        p = subprocess.run([s["bin"], *argv, *extra[side]], cwd=s["cwd"], env=env,
                           stdin=subprocess.DEVNULL, preexec_fn=pin,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if p.returncode != 0:
            err = p.stderr.decode(errors="replace").rstrip()
            sys.stderr.write("\nbench-compare: the %s side (%s) failed on `mbopt %s` "
                             "(exit status %d, in %s)%s\n" % (
                                 side, s["label"], " ".join([cmd] + extra[side]), p.returncode,
                                 s["cwd"],
                                 ":\n" + err if err else " and wrote nothing on stderr"))
            if side == "base" and E["BENCH_INPUTS"] == "same":
                sys.stderr.write("bench-compare: if the spec format changed since the base, "
                                 "--inputs own runs each side on its own specs\n")
            sys.exit(1)
    return time.perf_counter() - t0


def fmt_s(x):
    return "%.4f" % x if x < 10 else "%.3f" % x if x < 100 else "%.1f" % x


# --load: busy processes beside the timed runs, ended with the timing
load = int(E["BENCH_LOAD"])
busy = []


@atexit.register
def end_load():
    for b in busy:
        b.kill()
        b.wait()
    busy.clear()


busy += [subprocess.Popen(["sh", "-c", "while :; do :; done"], stdin=subprocess.DEVNULL)
         for _ in range(load)]
results = []
started = time.time()
for i, cmd in enumerate(cmds):
    argv = shlex.split(cmd)
    if not argv:
        sys.exit("bench-compare: an empty command")
    tag = "[%d/%d] %s" % (i + 1, len(cmds), cmd)
    # one warm-up run of each side (not counted): checks both work, loads the caches and sets
    # the number of runs per sample, the same for both sides
    wb = run("base", argv, 1, cmd)
    wn = run("new", argv, 1, cmd)
    fastest = min(wb, wn)
    inner = 1 if fastest >= min_time else min(10000, math.ceil(min_time / max(fastest, 1e-4)))
    sys.stderr.write("%s: warm-up base %s s, new %s s; %d run%s per sample\n" % (
        tag, fmt_s(wb), fmt_s(wn), inner, "s" if inner > 1 else ""))
    samples = {"base": [], "new": []}
    for r in range(repeat):
        for side in ("base", "new"):
            samples[side].append(run(side, argv, inner, cmd) / inner)
        sys.stderr.write("  sample %d/%d: base %s s, new %s s\n" % (
            r + 1, repeat, fmt_s(samples["base"][-1]), fmt_s(samples["new"][-1])))
    row = {"command": cmd, "argv": argv, "runs_per_sample": inner}
    for side in ("base", "new"):
        v = samples[side]
        row[side] = {"samples": v, "min": min(v), "median": statistics.median(v), "max": max(v)}
    row["speedup_min"] = row["base"]["min"] / row["new"]["min"]
    row["speedup_median"] = row["base"]["median"] / row["new"]["median"]
    results.append(row)
elapsed = time.time() - started
end_load()

# the table
head = ["command", "runs/", "base min", "base med", "new min", "new med", "speed-up",
        "speed-up"]
head2 = ["", "sample", "s", "s", "s", "s", "of min", "of med"]
rows = [[r["command"], str(r["runs_per_sample"]), fmt_s(r["base"]["min"]),
         fmt_s(r["base"]["median"]), fmt_s(r["new"]["min"]), fmt_s(r["new"]["median"]),
         "%.2fx" % r["speedup_min"], "%.2fx" % r["speedup_median"]] for r in results]
widths = [max(len(x[c]) for x in [head, head2] + rows) for c in range(len(head))]


def line(cells):
    return "  ".join(c.ljust(w) if k == 0 else c.rjust(w)
                     for k, (c, w) in enumerate(zip(cells, widths))).rstrip()


intro = [
    "base: %s  (%s)" % (sides["base"]["label"], sides["base"]["subject"]),
    "new:  %s  (%s)" % (sides["new"]["label"], sides["new"]["subject"]),
    "Release builds, OPENBLAS_NUM_THREADS=1 on both sides; %d samples per side and command, "
    "base and new alternating; wall-clock seconds per run; speed-up = base / new" % repeat,
] + ["%s arguments appended to every command: %s" % (side, " ".join(extra[side]))
     for side in ("base", "new") if extra[side]] + (
    ["%d busy processes ran beside the timed runs (--load)" % load] if load else []) + (
    ["every timed run on processor %d (--cpu)" % cpu] if cpu is not None else [])
table = [line(head), line(head2), line(["-" * w for w in widths])] + [line(r) for r in rows]
print("\n".join(intro + [""] + table))
sys.stdout.flush()


machine = build_sides.machine()
date = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
invocation = "scripts/bench-compare.sh --repeat %d --base %s%s%s --min-time %s --inputs %s -- %s" % (
    repeat, shlex.quote(sides["base"]["hash"][:12]),
    " --new " + shlex.quote(sides["new"]["hash"][:12]) if E["BENCH_NEW_KIND"] == "commit" else "",
    "".join(" --%s-args %s" % (side, shlex.quote(" ".join(extra[side])))
            for side in ("base", "new") if extra[side]) + (" --load %d" % load if load else "") +
    (" --cpu %d" % cpu if cpu is not None else ""),
    E["BENCH_MIN_TIME"], E["BENCH_INPUTS"], " ".join(shlex.quote(c) for c in cmds))

if E["BENCH_OUT"]:
    md = ["# mbopt: %s against %s" % (sides["new"]["label"], sides["base"]["label"]), "",
          "Measured %s by `scripts/bench-compare.sh` in %.0f s (the builds apart); rerun "
          "with" % (date, elapsed), "",
          "    " + invocation, ""] + build_sides.md_sides(root, sides, dirty)
    for side in ("base", "new"):
        if extra[side]:
            md += ["", "Arguments appended to every command of the %s side: `%s`." % (
                side, " ".join(extra[side]))]
    if load:
        md += ["", "%d busy process%s (`sh -c 'while :; do :; done'`) ran beside the timed runs "
               "(--load), as on a machine shared with other work." % (load, "es" if load > 1 else "")]
    if cpu is not None:
        md += ["", "Every timed run was pinned to processor %d (--cpu)." % cpu]
    md += ["", "Both sides are Release builds (`cmake -DCMAKE_BUILD_TYPE=Release`) run with "
           "OPENBLAS_NUM_THREADS=1 (single-threaded BLAS). Per command: one warm-up run of each "
           "side (not counted), then %d samples per side, base and new alternating; a sample is "
           "the wall-clock time of `runs/sample` runs in a row of the whole process (stdout "
           "discarded) divided by that count. Speed-up = base / new." % repeat, "",
           "| command | runs/sample | base min s | base median s | new min s | new median s "
           "| speed-up of min | speed-up of median |", "|---|--:|--:|--:|--:|--:|--:|--:|"]
    md += ["| `%s` | %s |" % (r[0], " | ".join(r[1:])) for r in rows]
    md += ["", "The command lines, from the repository root:", ""]
    for r in results:
        for side in ("base", "new"):
            s = sides[side]
            line_ = "OPENBLAS_NUM_THREADS=1 %s%s %s" % (
                "taskset -c %d " % cpu if cpu is not None else "",
                shlex.quote(s["bin"] if s["cwd"] != root else build_sides.rel(root, s["bin"])),
                " ".join(shlex.quote(a) for a in r["argv"] + extra[side]))
            if s["cwd"] != root:
                line_ = "(cd %s && %s)" % (shlex.quote(build_sides.rel(root, s["cwd"])), line_)
            md.append("    %s  # %s" % (line_, side))
    md += ["", build_sides.md_machine(machine), ""]
    with open(E["BENCH_OUT"], "w") as f:
        f.write("\n".join(md))
    sys.stderr.write("bench-compare: wrote %s\n" % E["BENCH_OUT"])

if E["BENCH_JSON"]:
    doc = {"date": date, "elapsed_seconds": elapsed, "invocation": invocation,
           "repeat": repeat, "min_time": min_time, "inputs": E["BENCH_INPUTS"], "load": load,
           "cpu": cpu,
           "env": {"OPENBLAS_NUM_THREADS": "1"}, "machine": machine,
           "uncommitted_changes": dirty}
    for side in ("base", "new"):
        s = sides[side]
        doc[side] = {"label": s["label"], "commit": s["hash"], "subject": s["subject"],
                     "requested": s["arg"], "binary": s["bin"], "cwd": s["cwd"],
                     "extra_arguments": extra[side]}
    doc["commands"] = results
    with open(E["BENCH_JSON"], "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    sys.stderr.write("bench-compare: wrote %s\n" % E["BENCH_JSON"])
PY
