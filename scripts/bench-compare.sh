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

die() {
  echo "bench-compare: $*" >&2
  exit 1
}
bad_usage() {
  echo "bench-compare: $*" >&2
  echo "Run 'scripts/bench-compare.sh --help' for the options." >&2
  exit 2
}
# absolute path of FILE relative to the caller's directory (the script moves to the repo root)
abs_path() { case $1 in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$PWD/$1" ;; esac; }

repeat=5 base=${MBOPT_BENCH_BASE:-HEAD} new='' min_time=0.5 inputs=same out='' json=''
jobs=$(nproc 2>/dev/null || echo 2)
cmds=()
need() { [ $# -ge 2 ] || bad_usage "$1 needs a value"; }
while [ $# -gt 0 ]; do
  case $1 in
  -h | --help) usage; exit 0 ;;
  --repeat) need "$@"; repeat=$2; shift 2 ;;
  --base) need "$@"; base=$2; shift 2 ;;
  --new) need "$@"; new=$2; shift 2 ;;
  --min-time) need "$@"; min_time=$2; shift 2 ;;
  --inputs) need "$@"; inputs=$2; shift 2 ;;
  --jobs) need "$@"; jobs=$2; shift 2 ;;
  --out) need "$@"; out=$(abs_path "$2"); shift 2 ;;
  --json) need "$@"; json=$(abs_path "$2"); shift 2 ;;
  --) shift; cmds+=("$@"); break ;;
  -*) bad_usage "unknown option '$1'" ;;
  *) cmds+=("$1"); shift ;;
  esac
done
[[ $repeat =~ ^[1-9][0-9]*$ ]] || bad_usage "--repeat wants a positive integer, not '$repeat'"
[[ $jobs =~ ^[1-9][0-9]*$ ]] || bad_usage "--jobs wants a positive integer, not '$jobs'"
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

cd "$(dirname "$0")/.."
root=$PWD
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || die "$root is not a git work tree"
command -v python3 >/dev/null || die "python3 is needed to run and time the commands"
for tool in cmake tar; do command -v "$tool" >/dev/null || die "$tool is needed"; done

cache=$root/build-bench
mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

resolve() {
  git rev-parse --verify --quiet "$1^{commit}" || die "'$1' is not a commit of this repository"
}

# cmake_build SRC BUILD LABEL: a Release build of the mbopt target, its output in BUILD.log
cmake_build() {
  local src=$1 bld=$2 label=$3 log=$2.log
  echo "bench-compare: building $label in ${bld#"$root"/} (log: ${log#"$root"/})" >&2
  if ! { cmake -S "$src" -B "$bld" -DCMAKE_BUILD_TYPE=Release &&
    cmake --build "$bld" --target mbopt -j"$jobs"; } >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "bench-compare: the build of $label failed (the whole log: ${log#"$root"/})" >&2
    return 1
  fi
  [ -x "$bld/mbopt" ] || { echo "bench-compare: the build of $label made no $bld/mbopt" >&2; return 1; }
}

# build_commit HASH: exports the commit (once) and builds it (once); prints the binary
build_commit() {
  local hash=$1 dir=$cache/$1
  if [ -f "$dir/.built" ] && [ -x "$dir/build/mbopt" ]; then
    echo "bench-compare: reusing the build of ${hash:0:12} in build-bench/$hash" >&2
  else
    mkdir -p "$dir"
    if [ ! -d "$dir/src" ]; then
      # extracted beside, then renamed in whole: a tree that is there is complete
      local part
      part=$(mktemp -d "$tmp/src.XXXXXX")
      git archive --format=tar "$hash" | tar -x -C "$part" || die "git archive of $hash failed"
      chmod 755 "$part"
      mv -T "$part" "$dir/src" || die "could not move the export of $hash to $dir/src"
    fi
    cmake_build "$dir/src" "$dir/build" "commit ${hash:0:12}" || exit 1
    touch "$dir/.built"
  fi
  printf '%s\n' "$dir/build/mbopt"
}

base_hash=$(resolve "$base")
base_bin=$(build_commit "$base_hash")
base_cwd=$root
[ "$inputs" = same ] || base_cwd=$cache/$base_hash/src
if [ -n "$new" ]; then
  new_hash=$(resolve "$new")
  new_bin=$(build_commit "$new_hash")
  new_cwd=$root
  [ "$inputs" = same ] || new_cwd=$cache/$new_hash/src
  new_kind=commit
else
  new_hash=$(git rev-parse --verify HEAD)
  cmake_build "$root" "$cache/worktree" "the working tree" ||
    die "the working tree does not build as it is; --new COMMIT measures a commit instead"
  new_bin=$cache/worktree/mbopt
  new_cwd=$root
  new_kind=worktree
fi

export OPENBLAS_NUM_THREADS=1
export BENCH_ROOT=$root BENCH_REPEAT=$repeat BENCH_MIN_TIME=$min_time BENCH_INPUTS=$inputs
export BENCH_BASE_ARG=$base BENCH_BASE_HASH=$base_hash BENCH_BASE_BIN=$base_bin BENCH_BASE_CWD=$base_cwd
export BENCH_NEW_ARG=${new:-} BENCH_NEW_HASH=$new_hash BENCH_NEW_BIN=$new_bin BENCH_NEW_CWD=$new_cwd
export BENCH_NEW_KIND=$new_kind BENCH_OUT=$out BENCH_JSON=$json BENCH_JOBS=$jobs
python3 - "${cmds[@]}" <<'PY'
"""Runs the commands with both builds, alternating, and writes the table and the reports."""
import datetime, json, math, os, platform, shlex, statistics, subprocess, sys, time

E = os.environ
root = E["BENCH_ROOT"]
repeat, min_time = int(E["BENCH_REPEAT"]), float(E["BENCH_MIN_TIME"])
cmds = sys.argv[1:]


def git(*args):
    return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def rel(path):
    r = os.path.relpath(path, root)
    return path if r.startswith("..") else r


def describe(h):
    d = git("log", "-1", "--format=%h %ad %s", "--date=short", h)
    return d if len(d) <= 90 else d[:87] + "..."


sides = {}
for name in ("base", "new"):
    h = E["BENCH_%s_HASH" % name.upper()]
    sides[name] = {"hash": h, "bin": E["BENCH_%s_BIN" % name.upper()],
                   "cwd": E["BENCH_%s_CWD" % name.upper()], "subject": describe(h)}
sides["base"]["label"] = "commit %s" % sides["base"]["hash"][:12]
sides["base"]["arg"] = E["BENCH_BASE_ARG"]
dirty = []
if E["BENCH_NEW_KIND"] == "worktree":
    # tracked files changed, and untracked sources (the build globs core/*.c and the like)
    for line in git("status", "--porcelain", "--untracked-files=all").splitlines():
        path = line[3:]
        if not line.startswith("??") or path.endswith((".c", ".h", ".cmake", "CMakeLists.txt")):
            dirty.append(line)
    sides["new"]["label"] = "working tree at %s%s" % (
        sides["new"]["hash"][:12], " with uncommitted changes" if dirty else "")
    sides["new"]["arg"] = "working tree"
else:
    sides["new"]["label"] = "commit %s" % sides["new"]["hash"][:12]
    sides["new"]["arg"] = E["BENCH_NEW_ARG"]

env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
env = {k: v for k, v in env.items() if not k.startswith("BENCH_")}


def run(side, argv, count, cmd):
    """Seconds of COUNT runs in a row of one side; exits with a clear message on failure."""
    s = sides[side]
    t0 = time.perf_counter()
    for _ in range(count):
        p = subprocess.run([s["bin"], *argv], cwd=s["cwd"], env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if p.returncode != 0:
            err = p.stderr.decode(errors="replace").rstrip()
            sys.stderr.write("\nbench-compare: the %s side (%s) failed on `mbopt %s` "
                             "(exit status %d, in %s)%s\n" % (
                                 side, s["label"], cmd, p.returncode, s["cwd"],
                                 ":\n" + err if err else " and wrote nothing on stderr"))
            if side == "base" and E["BENCH_INPUTS"] == "same":
                sys.stderr.write("bench-compare: if the spec format changed since the base, "
                                 "--inputs own runs each side on its own specs\n")
            sys.exit(1)
    return time.perf_counter() - t0


def fmt_s(x):
    return "%.4f" % x if x < 10 else "%.3f" % x if x < 100 else "%.1f" % x


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
]
table = [line(head), line(head2), line(["-" * w for w in widths])] + [line(r) for r in rows]
print("\n".join(intro + [""] + table))
sys.stdout.flush()


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for ln in f:
                key = ln.split(":")[0].strip()
                if key in ("model name", "Model", "cpu model", "Hardware"):
                    return ln.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def first_line(argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        return "unknown"


nproc = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
machine = {"nproc": nproc, "cpu": cpu_model(), "kernel": platform.release(),
           "system": platform.system(), "arch": platform.machine(),
           "compiler": first_line(["cc", "--version"]),
           "loadavg_at_end": list(os.getloadavg())}
date = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
invocation = "scripts/bench-compare.sh --repeat %d --base %s%s --min-time %s --inputs %s -- %s" % (
    repeat, shlex.quote(sides["base"]["hash"][:12]),
    " --new " + shlex.quote(sides["new"]["hash"][:12]) if E["BENCH_NEW_KIND"] == "commit" else "",
    E["BENCH_MIN_TIME"], E["BENCH_INPUTS"], " ".join(shlex.quote(c) for c in cmds))

if E["BENCH_OUT"]:
    md = ["# mbopt: %s against %s" % (sides["new"]["label"], sides["base"]["label"]), "",
          "Measured %s by `scripts/bench-compare.sh` in %.0f s (the builds apart); rerun "
          "with" % (date, elapsed), "",
          "    " + invocation, "",
          "| side | build | commit |", "|---|---|---|"]
    for side in ("base", "new"):
        s = sides[side]
        md.append("| %s | %s | `%s` %s |" % (side, s["label"], s["hash"], git(
            "log", "-1", "--format=%ad %s", "--date=short", s["hash"]).replace("|", "\\|")))
    if dirty:
        md += ["", "Uncommitted changes of the working tree (`git status --porcelain`; "
               "`git diff --shortstat HEAD`: %s):" % (git("diff", "--shortstat", "HEAD") or "none"),
               ""] + ["    " + d for d in dirty[:40]]
        if len(dirty) > 40:
            md.append("    ... and %d more" % (len(dirty) - 40))
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
            line_ = "OPENBLAS_NUM_THREADS=1 %s %s" % (
                shlex.quote(s["bin"] if s["cwd"] != root else rel(s["bin"])),
                " ".join(shlex.quote(a) for a in r["argv"]))
            if s["cwd"] != root:
                line_ = "(cd %s && %s)" % (shlex.quote(rel(s["cwd"])), line_)
            md.append("    %s  # %s" % (line_, side))
    md += ["", "Machine: %d CPUs (nproc), %s, %s %s %s; compiler: %s; load average at the end "
           "%.2f %.2f %.2f." % (machine["nproc"], machine["cpu"], machine["system"],
                                machine["kernel"], machine["arch"], machine["compiler"],
                                *machine["loadavg_at_end"]), ""]
    with open(E["BENCH_OUT"], "w") as f:
        f.write("\n".join(md))
    sys.stderr.write("bench-compare: wrote %s\n" % E["BENCH_OUT"])

if E["BENCH_JSON"]:
    doc = {"date": date, "elapsed_seconds": elapsed, "invocation": invocation,
           "repeat": repeat, "min_time": min_time, "inputs": E["BENCH_INPUTS"],
           "env": {"OPENBLAS_NUM_THREADS": "1"}, "machine": machine,
           "uncommitted_changes": dirty}
    for side in ("base", "new"):
        s = sides[side]
        doc[side] = {"label": s["label"], "commit": s["hash"], "subject": s["subject"],
                     "requested": s["arg"], "binary": s["bin"], "cwd": s["cwd"]}
    doc["commands"] = results
    with open(E["BENCH_JSON"], "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    sys.stderr.write("bench-compare: wrote %s\n" % E["BENCH_JSON"])
PY
