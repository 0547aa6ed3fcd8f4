#!/usr/bin/env bash
# Checks that the bundled specs give the same functionals psi and the same gradients with an older
# commit and with the working tree, to a relative tolerance: the proof, rerunnable by anyone, that
# a change of the engine or of the sensitivities left the results alone.
#   scripts/check-agreement.sh [options] [--] [SPEC ...]     (scripts/check-agreement.sh --help)
# Both sides are the Release builds of scripts/lib/build-sides.sh (build-bench/, shared with
# scripts/bench-compare.sh); both run `mbopt gradient SPEC --method M --json` in the repository
# root on the same spec files, with OPENBLAS_NUM_THREADS=1, at most two processes at a time.
# With --floor, also the rounding floor of each spec and method beside its differences: the base's
# forward against its adjoint gradient, and the new side's default against its dense factorisation.
set -euo pipefail
shopt -s inherit_errexit

usage() {
  cat <<'EOF'
Usage: scripts/check-agreement.sh [options] [--] [SPEC ...]
Builds an older commit (the base) and the working tree (the new side) in Release, runs
`mbopt gradient SPEC --method M --json` with both for every SPEC and method M, and checks that
the functionals psi and their gradients agree to a relative tolerance. Prints one line per spec
and method: the size nfunctionals x nparams, the largest differences, the seconds of each side
and the verdict; then every value that differs beyond the tolerance, by functional and parameter.

Differences, for each functional i and parameter k (old: the base, new: the new side):
  psi rel       |new_i - old_i| / max(|old_i|, tiny)              (tiny: the smallest normal double)
  grad row-rel  |new_ik - old_ik| / max(max_k |old_ik|, tiny)     (relative to the row's largest)
  entry rel     |new_ik - old_ik| / |old_ik|                      (inf where old_ik = 0 != new_ik)
A spec and method agree when every psi rel and every grad row-rel is at most --rtol; entry rel is
shown (its largest, and which entry) but decides nothing: an entry that is small in its row
carries the cancellation error of the whole row.

Without SPEC: every problems/**/*.json (find, sorted). A spec that `gradient` refuses on both
sides because it has no functionals or no parameters is not a failure: its psi are compared
through `mbopt simulate SPEC --json` when it has functionals, else it is skipped with a note.

Options:
  --base COMMIT   the base side: any git revision (default: $MBOPT_BENCH_BASE, else HEAD, so that
                  the default checks uncommitted work against the commit it started from)
  --new COMMIT    build this commit for the new side instead of the working tree
  --rtol X        the relative tolerance (default 1e-9)
  --methods LIST  the methods, separated by spaces or commas: forward, adjoint, auto
                  (default "forward adjoint")
  --floor         also measure, per spec and method, the rounding floor of the comparison: what
                  pure rounding changes already move (see Floors below); adds two pairs of
                  columns and a second verdict, "within floor", that does not change the exit status
  --out FILE      also write a markdown report: the table, the differences, the exact command
                  lines, both commits, the date and the machine
  --json FILE     also write every value of both sides and every difference as JSON
  --new-args ARGS more arguments of the new side's gradient and simulate runs, split like a shell
                  would split them, e.g. '--tangent-refresh iteration' (Newton's method, as the
                  base integrates) to tell the integrator's iteration from the rest
  -h, --help      show this help

Floors (--floor), measured in the same run, psi rel and grad row-rel as above:
  base fwd/adj  the base's forward gradient against its own adjoint gradient (forward the
                reference): both are exact derivatives of the same simulation, summed in other
                orders. The same for every method of a spec; a method that --methods lacks is
                run on the base for it.
  new solvers   the new side's run of the method against the same run with --linear-solver
                dense (the default run the reference). Only when the new side's `mbopt gradient
                --help` has --linear-solver (the column is "-" with a note otherwise); 0 when the
                default factorises densely too.
  within floor  yes when every grad row-rel of base against new is at most 10 times the larger
                of the two floors' grad row-rel, and every psi rel at most 10 times the larger
                psi floor (a floor of 0 admits no difference), else "no (psi, grad)" naming what
                is beyond; "-" where neither floor could be measured or the row failed.
Within the floor, a difference is of the size that rounding changes alone make (up to the factor
10); beyond it but within --rtol, it is small anyway; beyond both, look at what differs.

Environment: OPENBLAS_NUM_THREADS=1 is set for both sides (whatever the caller has). The builds
are cached in build-bench/ as for scripts/bench-compare.sh: a commit's build is reused as long as
build-bench/<hash>/.built exists. The specs are those of the working tree for both sides. The
seconds are the wall-clock time of each whole process, two processes running at a time.
Progress and build messages go to stderr, the table to stdout. Exit status, judged against
--rtol alone (with or without --floor; the verdict "within floor" never changes it): 0 everything
agrees to --rtol, 1 something differs beyond --rtol or a build or a run failed (the lines name
the spec, method, functional and parameter), 2 bad command line.
EOF
}

# die, bad_usage, abs_path, need, sides_option, and the builds of both sides (build-bench/)
# shellcheck source=lib/build-sides.sh
source "$(dirname "$0")/lib/build-sides.sh"
prog=check-agreement
new_hint='--new COMMIT checks a commit instead'

base=${MBOPT_BENCH_BASE:-HEAD} new='' rtol=1e-9 methods='forward adjoint' out='' json='' floor=0 new_args=''
specs=()
while [ $# -gt 0 ]; do
  case $1 in
  -h | --help) usage; exit 0 ;;
  --base | --new | --out | --json) need "$@"; sides_option "$1" "$2"; shift 2 ;;
  --rtol) need "$@"; rtol=$2; shift 2 ;;
  --methods) need "$@"; methods=$2; shift 2 ;;
  --floor) floor=1; shift ;;
  --new-args) need "$@"; new_args=$2; shift 2 ;;
  --) shift; specs+=("$@"); break ;;
  -*) bad_usage "unknown option '$1'" ;;
  *) specs+=("$1"); shift ;;
  esac
done
[[ $rtol =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$ ]] ||
  bad_usage "--rtol wants a non-negative number, not '$rtol'"
read -ra method_list <<<"${methods//,/ }"
[ ${#method_list[@]} -gt 0 ] || bad_usage "--methods wants at least one method"
for m in "${method_list[@]}"; do
  case $m in
  forward | adjoint | auto) ;;
  *) bad_usage "--methods: '$m' is not forward, adjoint or auto" ;;
  esac
done
for i in "${!specs[@]}"; do
  [ -f "${specs[i]}" ] || bad_usage "no spec file '${specs[i]}'"
  specs[i]=$(abs_path "${specs[i]}")
done

sides_setup
command -v python3 >/dev/null || die "python3 is needed to compare the results"
default_specs=0
if [ ${#specs[@]} -eq 0 ]; then
  default_specs=1
  mapfile -t specs < <(find problems -name '*.json' -type f | LC_ALL=C sort)
  [ ${#specs[@]} -gt 0 ] || die "no problems/**/*.json in $root"
fi

build_sides "$base" "$new"

export OPENBLAS_NUM_THREADS=1
export AGREE_ROOT=$root AGREE_RTOL=$rtol AGREE_METHODS="${method_list[*]}"
export AGREE_DEFAULT_SPECS=$default_specs AGREE_OUT=$out AGREE_JSON=$json AGREE_FLOOR=$floor
export AGREE_BASE_ARG=$base AGREE_BASE_HASH=$base_hash AGREE_BASE_BIN=$base_bin AGREE_BASE_CWD=$root
export AGREE_NEW_ARG=${new:-} AGREE_NEW_HASH=$new_hash AGREE_NEW_BIN=$new_bin AGREE_NEW_CWD=$root
export AGREE_NEW_KIND=$new_kind AGREE_NEW_ARGS=$new_args
python3 - "${specs[@]}" <<'PY'
"""Runs gradient on both sides for every spec and method, compares, writes the table and reports;
with --floor, also the runs that measure the rounding floor of each spec and method."""
import concurrent.futures, datetime, json, math, os, shlex, subprocess, sys, textwrap, time

E = os.environ
root = E["AGREE_ROOT"]
sys.path.insert(0, os.path.join(root, "scripts", "lib"))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import build_sides  # noqa: E402  (scripts/lib/build_sides.py)

rtol = float(E["AGREE_RTOL"])
methods = E["AGREE_METHODS"].split()
specs = [build_sides.rel(root, s) for s in sys.argv[1:]]  # the runs are in root
TINY = sys.float_info.min  # the smallest normal double: psi = 0 on the base is compared absolutely
REFUSED = 'gradient needs "functionals" and "parameters"'  # drivers/cmd_gradient.c
PARALLEL = 2  # processes at a time: the two sides of a spec and method run together
floor = E["AGREE_FLOOR"] == "1"
FLOOR_FACTOR = 10  # within floor: every difference at most this times the larger floor
FLOOR_METHODS = ("forward", "adjoint")  # base fwd/adj compares the base's runs of these

sides, dirty = build_sides.load_sides(root, E, "AGREE")
env = {k: v for k, v in os.environ.items() if not k.startswith("AGREE_")}
env["OPENBLAS_NUM_THREADS"] = "1"


NEW_ARGS = shlex.split(E.get("AGREE_NEW_ARGS", ""))


def run(side, argv):
    """One run of mbopt ARGV by SIDE in the repository root: exit status, seconds and outputs;
    the new side's gradient and simulate runs take --new-args after the spec."""
    if side == "new" and argv[0] in ("gradient", "simulate") and len(argv) > 2:
        argv = argv[:2] + NEW_ARGS + argv[2:]
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sides[side]["bin"], *argv], cwd=root, env=env,
                           stdin=subprocess.DEVNULL, capture_output=True, text=True)
        status, out, err = p.returncode, p.stdout, p.stderr
    except OSError as e:
        status, out, err = -1, "", str(e)
    return {"argv": argv, "status": status, "seconds": time.perf_counter() - t0,
            "stdout": out, "stderr": err.strip()}


def refused(r):
    return r["status"] == 3 and REFUSED in r["stderr"]


def failure(side, r, other):
    """Why the run R of SIDE gives nothing to compare, or None when it printed its JSON; OTHER is
    the run of the other side."""
    if r["status"] != 0:
        last = r["stderr"].splitlines()[-1] if r["stderr"] else "nothing on stderr"
        why = "%s side: `mbopt %s` exited with status %d: %s" % (
            side, " ".join(r["argv"]), r["status"], last)
        if side == "base" and r["status"] == 3 and other["status"] == 0:
            why += " (if the spec format changed since the base, the base cannot read it)"
        return why
    try:
        r["doc"] = json.loads(r["stdout"])
    except ValueError as e:
        return "%s side: `mbopt %s` printed no JSON (%s)" % (side, " ".join(r["argv"]), e)
    return None


def reldiff(old, new, scale):
    """|new - old| / scale; 0 when equal, inf when not finite or the scale is 0."""
    if old == new:
        return 0.0
    if not (math.isfinite(old) and math.isfinite(new)) or scale <= 0:
        return math.inf
    return abs(new - old) / scale


def compare(names, params, old, new):
    """Differences of the functionals NAMES (psi values, gradient rows over PARAMS) of OLD and NEW:
    one dict per functional, and the largest psi rel, row-rel and entry rel (with its entry)."""
    funcs, worst = [], {"psi": 0.0, "row": 0.0, "entry": 0.0, "entry_at": None}
    for i, name in enumerate(names):
        po, pn = old["psi"][i], new["psi"][i]
        f = {"name": name, "psi_base": po, "psi_new": pn,
             "psi_rel": reldiff(po, pn, max(abs(po), TINY))}
        worst["psi"] = max(worst["psi"], f["psi_rel"])
        if params:
            go, gn = old["grad"][i], new["grad"][i]
            scale = max(max(abs(g) for g in go), TINY)
            f.update(gradient_base=go, gradient_new=gn,
                     row_rel=[reldiff(a, b, scale) for a, b in zip(go, gn)],
                     entry_rel=[reldiff(a, b, abs(a)) for a, b in zip(go, gn)])
            worst["row"] = max(worst["row"], max(f["row_rel"]))
            for k, e in enumerate(f["entry_rel"]):
                if e > worst["entry"]:
                    worst["entry"], worst["entry_at"] = e, "%s/%s" % (name, params[k])
        funcs.append(f)
    return funcs, worst


def gradient_values(doc):
    fs = doc["functionals"]
    return [f["name"] for f in fs], {"psi": [f["value"] for f in fs],
                                     "grad": [f["gradient"] for f in fs]}


def beyond(row):
    """The values of ROW that differ beyond rtol, one line each, naming functional and parameter."""
    lines = []
    for f in row.get("functionals", []):
        if f["psi_rel"] > rtol:
            lines.append("value of %s: base %.17g, new %.17g, psi rel %s" % (
                f["name"], f["psi_base"], f["psi_new"], fmt_rel(f["psi_rel"])))
        for k, r in enumerate(f.get("row_rel", [])):
            if r > rtol:
                lines.append("d %s / d %s: base %.17g, new %.17g, row-rel %s, entry rel %s" % (
                    f["name"], row["parameters"][k], f["gradient_base"][k],
                    f["gradient_new"][k], fmt_rel(r), fmt_rel(f["entry_rel"][k])))
    return lines


def within_text(f):
    """The verdict within floor of the floors F: yes, no with what is beyond, or - ."""
    if not f or f["within"] is None:
        return "-"
    return "yes" if f["within"] else "no (%s)" % ", ".join(f["beyond"])


def fmt_rel(x):
    return "-" if x is None else "0" if x == 0 else "inf" if math.isinf(x) else "%.1e" % x


def judge(row, spec, method, runs):
    """Fills ROW from the runs {side: run} of gradient (or simulate for a psi-only row)."""
    row.update(spec=spec, method=method, notes=[],
               base_seconds=runs["base"]["seconds"], new_seconds=runs["new"]["seconds"],
               commands={s: runs[s]["argv"] for s in runs})
    whys = [w for w in (failure("base", runs["base"], runs["new"]),
                        failure("new", runs["new"], runs["base"])) if w]
    if whys:
        row.update(verdict="FAILS", notes=whys)
        return row
    docs = {s: runs[s]["doc"] for s in runs}
    try:
        if method == "simulate":
            params = []
            psi = {s: docs[s].get("functionals", {}) for s in docs}  # absent without functionals
            vals = {s: {"psi": list(psi[s].values())} for s in docs}
            names = {s: list(psi[s]) for s in docs}
            pnames = {s: [] for s in docs}
        else:
            names, vals = {}, {}
            for s in docs:
                names[s], vals[s] = gradient_values(docs[s])
            pnames = {s: docs[s]["parameters"] for s in docs}
            params = pnames["new"]
            chosen = {s: docs[s].get("method") for s in docs}
            if chosen["base"] != chosen["new"]:
                row["notes"].append("the sides chose different methods: base %s, new %s" % (
                    chosen["base"], chosen["new"]))
    except (KeyError, TypeError, AttributeError) as e:
        row.update(verdict="FAILS", notes=["the JSON of a side lacks %s" % e])
        return row
    if names["base"] != names["new"] or pnames["base"] != pnames["new"]:
        row.update(verdict="FAILS", notes=[
            "the sides do not have the same functionals and parameters: base %s x %s, new %s x %s"
            % (names["base"], pnames["base"], names["new"], pnames["new"])])
        return row
    row["parameters"] = params
    row["nfunctionals"] = len(names["new"])
    row["nparams"] = len(params) if method != "simulate" else None  # simulate does not say
    row["functionals"], worst = compare(names["new"], params, vals["base"], vals["new"])
    row.update(max_psi_rel=worst["psi"], max_row_rel=worst["row"] if params else None,
               max_entry_rel=worst["entry"] if params else None, worst_entry=worst["entry_at"])
    row["verdict"] = "DIFFERS" if beyond(row) else "ok"
    return row


def floor_diff(side, ref, other):
    """One floor: the largest psi rel and grad row-rel of the gradient run OTHER of SIDE against
    its run REF (the reference), with the commands; a note instead of the values when a run gave
    nothing to compare or the two do not have the same functionals and parameters."""
    out = {"max_psi_rel": None, "max_row_rel": None, "commands": [ref["argv"], other["argv"]],
           "seconds": [ref["seconds"], other["seconds"]]}
    why = failure(side, ref, other) or failure(side, other, ref)
    if not why:
        try:
            (na, va), (nb, vb) = gradient_values(ref["doc"]), gradient_values(other["doc"])
            pa, pb = ref["doc"]["parameters"], other["doc"]["parameters"]
        except (KeyError, TypeError, AttributeError) as e:
            why = "the JSON of a %s run lacks %s" % (side, e)
        else:
            if na != nb or pa != pb:
                why = "the %s runs `mbopt %s` and `mbopt %s` differ in functionals or " \
                      "parameters" % (side, " ".join(ref["argv"]), " ".join(other["argv"]))
    if why:
        out["note"] = why
        return out
    _, worst = compare(na, pa, va, vb)
    out.update(max_psi_rel=worst["psi"], max_row_rel=worst["row"] if pa else None,
               methods=[ref["doc"].get("method"), other["doc"].get("method")])
    return out


def judge_floor(row, fwd_adj, solvers):
    """Fills ROW["floor"] from the base's runs {method: run} FWD_ADJ (forward and adjoint) and
    the new side's runs {"default", "dense"} SOLVERS (None without --linear-solver): both floors,
    the larger of them for psi and for the gradient, and the verdict within floor (None when it
    cannot be told). Floor failures are notes of the row; they leave its verdict alone."""
    f = {"base_fwd_adj": floor_diff("base", fwd_adj["forward"], fwd_adj["adjoint"]),
         "new_solvers": floor_diff("new", solvers["default"], solvers["dense"])
         if solvers else None, "factor": FLOOR_FACTOR}
    for key, what in (("base_fwd_adj", "base fwd/adj"), ("new_solvers", "new solvers")):
        if f[key] and "note" in f[key]:
            row["notes"].append("floor %s: %s" % (what, f[key]["note"]))
    ns = f["new_solvers"]
    if ns and "methods" in ns and ns["methods"][0] != ns["methods"][1]:
        row["notes"].append("floor new solvers: the default run chose %s, the dense run %s" %
                            tuple(ns["methods"]))
    measured = [x for x in (f["base_fwd_adj"], ns) if x and x["max_psi_rel"] is not None]
    f["psi"] = max((x["max_psi_rel"] for x in measured), default=None)
    f["row"] = max((x["max_row_rel"] for x in measured if x["max_row_rel"] is not None),
                   default=None)
    f["within"] = f["beyond"] = None  # beyond: what is not within, psi and/or grad
    if row["verdict"] != "FAILS" and f["psi"] is not None and f["row"] is not None:
        f["beyond"] = [what for what, diff, fl in (("psi", row["max_psi_rel"], f["psi"]),
                                                   ("grad", row["max_row_rel"], f["row"]))
                       if not diff <= FLOOR_FACTOR * fl]
        f["within"] = not f["beyond"]
    row["floor"] = f


def gradient_argv(spec, method, *more):
    return ["gradient", spec, "--method", method, *more, "--json"]


# does the new side take --linear-solver (the base, older, may not): the new solvers floor
dense_note = None
if floor:
    helped = run("new", ["gradient", "--help"])
    if "--linear-solver" not in helped["stdout"] + helped["stderr"]:
        dense_note = ("the new side's `mbopt gradient --help` has no --linear-solver: no new "
                      "solvers floor")
        sys.stderr.write("check-agreement: %s\n" % dense_note)

# every gradient run, the two sides of a spec and method next to each other in the queue
jobs = [(spec, m) for spec in specs for m in methods]
rows, refusals, t_start = [], [], time.time()
with concurrent.futures.ThreadPoolExecutor(max_workers=PARALLEL) as pool:
    futures = {(spec, m, s): pool.submit(run, s, gradient_argv(spec, m))
               for spec, m in jobs for s in ("base", "new")}
    floor_runs = {}  # (spec, method, what): the floor runs, queued behind every run above
    for n, (spec, m) in enumerate(jobs):
        runs = {s: futures[spec, m, s].result() for s in ("base", "new")}
        tag = "[%d/%d] %s %s: base %.2f s, new %.2f s" % (
            n + 1, len(jobs), spec, m, runs["base"]["seconds"], runs["new"]["seconds"])
        if refused(runs["base"]) and refused(runs["new"]):
            # no functionals or no parameters: psi through simulate, once for all methods
            if m == methods[0]:
                refusals.append(spec)
            sys.stderr.write("%s: refused by gradient on both sides (%s)\n" % (tag, REFUSED))
            continue
        row = judge({}, spec, m, runs)
        rows.append(row)
        if floor and dense_note is None:
            floor_runs[spec, m, "dense"] = pool.submit(
                run, "new", gradient_argv(spec, m, "--linear-solver", "dense"))
        for fm in FLOOR_METHODS if floor and m == methods[0] else ():
            if fm not in methods:  # else its run above serves
                floor_runs[spec, fm, "base"] = pool.submit(run, "base", gradient_argv(spec, fm))
        sys.stderr.write("%s: %s (psi rel %s, grad row-rel %s)\n" % (
            tag, row["verdict"], fmt_rel(row.get("max_psi_rel")), fmt_rel(row.get("max_row_rel"))))
    sims = {(spec, s): pool.submit(run, s, ["simulate", spec, "--json", "--quiet"])
            for spec in refusals for s in ("base", "new")}
    for spec in refusals:
        runs = {s: sims[spec, s].result() for s in ("base", "new")}
        row = judge({}, spec, "simulate", runs)
        if row["verdict"] != "FAILS" and row["nfunctionals"] == 0:
            row.update(verdict="skipped", max_psi_rel=None)
            row["notes"].append("gradient refuses it (no functionals), simulate runs on both "
                                "sides: nothing to compare")
        elif row["verdict"] != "FAILS":
            row["notes"].append("gradient refuses it (no parameters): psi from simulate only")
        rows.append(row)
        sys.stderr.write("%s simulate (gradient refused it): base %.2f s, new %.2f s: %s\n" % (
            spec, row["base_seconds"], row["new_seconds"], row["verdict"]))
    floored = [r for r in rows if floor and r["method"] != "simulate"]
    for n, row in enumerate(floored):
        spec, m = row["spec"], row["method"]
        base_runs = {fm: (futures if fm in methods else floor_runs)[spec, fm, "base"].result()
                     for fm in FLOOR_METHODS}
        solvers = None if dense_note else {"default": futures[spec, m, "new"].result(),
                                           "dense": floor_runs[spec, m, "dense"].result()}
        judge_floor(row, base_runs, solvers)
        fl = row["floor"]
        sys.stderr.write("[floor %d/%d] %s %s: base fwd/adj %s, new solvers %s (%s): "
                         "within floor %s\n" % (
                             n + 1, len(floored), spec, m,
                             fmt_rel(fl["base_fwd_adj"]["max_row_rel"]),
                             fmt_rel(fl["new_solvers"]["max_row_rel"]) if solvers else "-",
                             "dense %.2f s" % solvers["dense"]["seconds"] if solvers else "skipped",
                             within_text(fl)))
elapsed = time.time() - t_start
order = {spec: i for i, spec in enumerate(specs)}
rows.sort(key=lambda r: order[r["spec"]])  # the psi-only rows in their place
agree = all(r["verdict"] in ("ok", "skipped") for r in rows)

# the table: its columns (two header lines, the markdown header, left-aligned or not); with
# --floor, each floor's two columns beside the differences, under a group header
cols = [("spec", "", "spec", 1), ("method", "", "method", 1), ("size", "nf x np", "nf x np", 0),
        ("psi", "rel", "psi rel", 0), ("grad", "row-rel", "grad row-rel", 0)]
groups = {}  # first column -> the label over it and the next
if floor:
    for what in ("base fwd/adj", "new solvers"):
        groups[len(cols)] = what
        cols += [("psi", "rel", what + " psi rel", 0),
                 ("grad", "row-rel", what + " grad row-rel", 0)]
cols += [("entry", "rel", "entry rel", 0),
         ("worst entry", "(functional/param)", "worst entry", 1),
         ("base", "s", "base s", 0), ("new", "s", "new s", 0),
         ("verdict", "rtol" if floor else "", "verdict (rtol)" if floor else "verdict", 1)]
if floor:
    cols.append(("within", "floor", "within floor (%dx)" % FLOOR_FACTOR, 1))
cells = []
for r in rows:
    size = "%d x %s" % (r["nfunctionals"], "-" if r["nparams"] is None else r["nparams"]) \
        if "nfunctionals" in r else "-"
    c = [r["spec"], r["method"], size, fmt_rel(r.get("max_psi_rel")), fmt_rel(r.get("max_row_rel"))]
    if floor:
        fl = r.get("floor") or {}
        for key in ("base_fwd_adj", "new_solvers"):
            c += [fmt_rel((fl.get(key) or {}).get(x)) for x in ("max_psi_rel", "max_row_rel")]
    c += [fmt_rel(r.get("max_entry_rel")), r.get("worst_entry") or "-",
          "%.2f" % r["base_seconds"], "%.2f" % r["new_seconds"], r["verdict"]]
    if floor:
        c.append(within_text(fl))
    cells.append(c)
widths = [max(len(x) for x in [h1, h2] + [c[k] for c in cells])
          for k, (h1, h2, _, _) in enumerate(cols)]
for k, label in groups.items():  # a group label and two dashes each side fit over its columns
    short = len(label) + 6 - (widths[k] + 2 + widths[k + 1])
    if short > 0:
        widths[k] += short // 2
        widths[k + 1] += short - short // 2


def line(cs):
    return "  ".join(c.ljust(w) if cols[k][3] else c.rjust(w)
                     for k, (c, w) in enumerate(zip(cs, widths))).rstrip()


def group_line():
    """The labels of the column groups, each centred between dashes over its two columns."""
    out = ""
    for k, label in sorted(groups.items()):
        out = out.ljust(sum(widths[:k]) + 2 * k)
        out += (" %s " % label).center(widths[k] + 2 + widths[k + 1], "-")
    return out


bad = [r for r in rows if r["verdict"] not in ("ok", "skipped")]
details = []  # spec, method: what differs or fails
for r in rows:
    what = r["notes"] + (beyond(r) if r["verdict"] == "DIFFERS" else [])
    if what:
        details.append("%s %s (%s):" % (r["spec"], r["method"], r["verdict"]))
        details += ["  " + w for w in what[:20]]
        if len(what) > 20:
            details.append("  ... and %d more" % (len(what) - 20))
intro = [
    "base: %s  (%s)" % (sides["base"]["label"], sides["base"]["subject"]),
    "new:  %s  (%s)" % (sides["new"]["label"], sides["new"]["subject"]),
    "mbopt gradient SPEC --method M --json on both sides, OPENBLAS_NUM_THREADS=1; rtol %g on psi "
    "rel and grad row-rel (entry rel is shown, not judged); wall-clock seconds per run" % rtol,
]
table = ([group_line()] if groups else []) + [line([c[0] for c in cols]),
                                              line([c[1] for c in cols]),
                                              line(["-" * w for w in widths])]
table += [line(c) for c in cells]
summary = ("all %d agree to rtol %g" % (len(rows), rtol) if agree else
           "%d of %d differ or fail (rtol %g)" % (len(bad), len(rows), rtol))
explain = []  # the floors, one paragraph
if floor:
    judged = [r["floor"]["within"] for r in rows if r.get("floor") and
              r["floor"]["within"] is not None]
    summary += "; %d of %d within the floor (%d x the larger floor)%s" % (
        sum(judged), len(judged), FLOOR_FACTOR,
        "" if len(judged) == len(rows) else ", %d not judged" % (len(rows) - len(judged)))
    explain = [
        "Floors: what rounding changes alone move, measured in this run for the same spec and "
        "method, psi rel and grad row-rel as above. base fwd/adj: the base's forward gradient "
        "against its own adjoint gradient (forward the reference), the same for every method "
        "of a spec: both differentiate the same discrete simulation exactly, summing in other "
        "orders. new solvers: the new side's run against the same run with --linear-solver "
        "dense (the default run the reference); 0 where the default factorises densely too%s. "
        "within floor: yes when the largest grad row-rel of base against new is at most %d "
        "times the larger of the two floors' grad row-rel and the largest psi rel at most %d "
        "times the larger psi floor (a floor of 0 admits no difference), else no with what is "
        "beyond (psi, grad or both); '-' where no floor "
        "was measured or the row failed. This verdict informs only: the verdict against rtol "
        "and the exit status ignore it." % (
            " (here not measured: %s)" % dense_note if dense_note else "",
            FLOOR_FACTOR, FLOOR_FACTOR)]
wrapped = [textwrap.fill(p, 100) for p in explain]
print("\n".join(intro + [""] + table + [""] + wrapped + ([""] if wrapped else []) + details +
                ([""] if details else []) + [summary]))
sys.stdout.flush()

machine = build_sides.machine()
date = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
invocation = "scripts/check-agreement.sh --base %s%s --rtol %s --methods %s%s%s%s" % (
    shlex.quote(sides["base"]["hash"][:12]),
    " --new " + shlex.quote(sides["new"]["hash"][:12]) if E["AGREE_NEW_KIND"] == "commit" else "",
    E["AGREE_RTOL"], shlex.quote(" ".join(methods)), " --floor" if floor else "",
    " --new-args " + shlex.quote(" ".join(NEW_ARGS)) if NEW_ARGS else "",
    "" if E["AGREE_DEFAULT_SPECS"] == "1" else
    " -- " + " ".join(shlex.quote(s) for s in specs))

def floor_commands():
    """(side, argv) of every run the floors compared, once each, in the order of the rows."""
    seen = []
    for r in rows:
        for key, side in (("base_fwd_adj", "base"), ("new_solvers", "new")):
            for argv in ((r.get("floor") or {}).get(key) or {}).get("commands", []):
                if (side, argv) not in seen:
                    seen.append((side, argv))
    return seen


if E["AGREE_OUT"]:
    md = ["# mbopt: results of %s against %s" % (sides["new"]["label"], sides["base"]["label"]),
          "", "Checked %s by `scripts/check-agreement.sh` in %.0f s (the builds apart): %s. "
          "Rerun with" % (date, elapsed, summary), "",
          "    " + invocation, ""] + build_sides.md_sides(root, sides, dirty)
    md += ["", "Both sides are Release builds (`cmake -DCMAKE_BUILD_TYPE=Release`) run with "
           "OPENBLAS_NUM_THREADS=1 in the repository root on the same spec files, two processes "
           "at a time; seconds are the wall-clock time of each whole process. For functional i "
           "and parameter k: psi rel = |new_i - old_i| / max(|old_i|, tiny), grad row-rel = "
           "|new_ik - old_ik| / max(max_k |old_ik|, tiny), entry rel = |new_ik - old_ik| / "
           "|old_ik| (tiny = %g). A spec and method agree when every psi rel and every grad "
           "row-rel is at most rtol = %g; the columns show the largest of each over the spec and "
           "method, and the entry with the largest entry rel." % (TINY, rtol), ""]
    md += explain + ([""] if explain else [])
    md += ["| %s |" % " | ".join(c[2] for c in cols),
           "|%s|" % "|".join("---" if c[3] else "--:" for c in cols)]
    md += ["| `%s` | %s |" % (c[0], " | ".join(c[1:])) for c in cells]
    if details:
        md += ["", "What differs, fails or was skipped:", ""] + ["    " + d for d in details]
    md += ["", "The command lines, from the repository root:", ""]
    for r in rows:
        for side in ("base", "new"):
            md.append("    OPENBLAS_NUM_THREADS=1 %s %s  # %s" % (
                shlex.quote(build_sides.rel(root, sides[side]["bin"])),
                " ".join(shlex.quote(a) for a in r["commands"][side]), side))
    made = [(s, r["commands"][s]) for r in rows for s in ("base", "new")]
    extra = [c for c in floor_commands() if c not in made]
    if extra:
        md += ["", "The runs of the floors (--floor) that the comparison did not make itself:", ""]
    for side, argv in extra:
        md.append("    OPENBLAS_NUM_THREADS=1 %s %s  # %s" % (
            shlex.quote(build_sides.rel(root, sides[side]["bin"])),
            " ".join(shlex.quote(a) for a in argv), side))
    md += ["", build_sides.md_machine(machine), ""]
    with open(E["AGREE_OUT"], "w") as f:
        f.write("\n".join(md))
    sys.stderr.write("check-agreement: wrote %s\n" % E["AGREE_OUT"])


def finite(x):
    """X with every float that is not finite as None (strict JSON)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [finite(v) for v in x]
    return x


if E["AGREE_JSON"]:
    doc = {"date": date, "elapsed_seconds": elapsed, "invocation": invocation, "rtol": rtol,
           "tiny": TINY, "methods": methods, "agree": agree, "env": {"OPENBLAS_NUM_THREADS": "1"},
           "machine": machine, "uncommitted_changes": dirty,
           "note": "null in a difference: infinite (the base value is 0 and the new one not, or "
                   "a value is not finite)"}
    if floor:
        doc["floor"] = {"factor": FLOOR_FACTOR, "new_solvers_measured": dense_note is None,
                        "note": dense_note, "explanation": explain[0],
                        "rows_within": sum(judged), "rows_judged": len(judged),
                        "row_note": "rows[].floor: base_fwd_adj and new_solvers (largest psi rel "
                                    "and grad row-rel, commands, seconds; note when not "
                                    "measured), psi and row (the larger floor), within (null: "
                                    "not judged) and beyond (psi, grad: what is not within)"}
    for side in ("base", "new"):
        s = sides[side]
        doc[side] = {"label": s["label"], "commit": s["hash"], "subject": s["subject"],
                     "requested": s["arg"], "binary": s["bin"]}
    doc["rows"] = rows
    with open(E["AGREE_JSON"], "w") as f:
        json.dump(finite(doc), f, indent=1, allow_nan=False)
        f.write("\n")
    sys.stderr.write("check-agreement: wrote %s\n" % E["AGREE_JSON"])
sys.exit(0 if agree else 1)
PY
