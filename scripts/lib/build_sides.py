"""The two sides built by scripts/lib/build-sides.sh, for the reports of scripts/bench-compare.sh
and scripts/check-agreement.sh: their labels and commits, the uncommitted changes of the working
tree, and the machine the comparison ran on. Standard library only."""
import os
import platform
import subprocess


def git(root, *args):
    """Stdout of `git -C ROOT ARGS`, without the white space at either end."""
    return git_lines(root, *args).strip()


def git_lines(root, *args):
    """Stdout of `git -C ROOT ARGS` as it is (porcelain lines may start with a space)."""
    return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True,
                          check=True).stdout


def rel(root, path):
    """PATH relative to ROOT when it lies inside it, else PATH as it is."""
    r = os.path.relpath(path, root)
    return path if r.startswith("..") else r


def describe(root, h):
    """One line for commit H: short hash, date and subject, cut at 90 characters."""
    d = git(root, "log", "-1", "--format=%h %ad %s", "--date=short", h)
    return d if len(d) <= 90 else d[:87] + "..."


def load_sides(root, env, prefix):
    """The sides from the variables PREFIX_{BASE,NEW}_{HASH,BIN,CWD,ARG} and PREFIX_NEW_KIND of
    ENV: a dict side -> {hash, bin, cwd, subject, label, arg}, and the uncommitted changes of the
    working tree (lines of `git status --porcelain`; empty when the new side is a commit). The
    status and the `git diff --shortstat HEAD` of the new side are read together, now: other
    people may change the tree while the comparison runs."""
    sides = {}
    for name in ("base", "new"):
        key = "%s_%s_" % (prefix, name.upper())
        h = env[key + "HASH"]
        sides[name] = {"hash": h, "bin": env[key + "BIN"], "cwd": env[key + "CWD"],
                       "subject": describe(root, h)}
    sides["base"]["label"] = "commit %s" % sides["base"]["hash"][:12]
    sides["base"]["arg"] = env[prefix + "_BASE_ARG"]
    dirty = []
    if env[prefix + "_NEW_KIND"] == "worktree":
        # tracked files changed, and untracked sources (the build globs core/*.c and the like)
        status = git_lines(root, "status", "--porcelain", "--untracked-files=all")
        sides["new"]["shortstat"] = git(root, "diff", "--shortstat", "HEAD") or "none"
        for line in status.splitlines():
            path = line[3:]
            if not line.startswith("??") or path.endswith((".c", ".h", ".cmake",
                                                           "CMakeLists.txt")):
                dirty.append(line)
        sides["new"]["label"] = "working tree at %s%s" % (
            sides["new"]["hash"][:12], " with uncommitted changes" if dirty else "")
        sides["new"]["arg"] = "working tree"
    else:
        sides["new"]["label"] = "commit %s" % sides["new"]["hash"][:12]
        sides["new"]["arg"] = env[prefix + "_NEW_ARG"]
    return sides, dirty


def md_sides(root, sides, dirty):
    """Markdown lines: the table of both sides and their commits, then the uncommitted changes."""
    md = ["| side | build | commit |", "|---|---|---|"]
    for side in ("base", "new"):
        s = sides[side]
        md.append("| %s | %s | `%s` %s |" % (side, s["label"], s["hash"], git(
            root, "log", "-1", "--format=%ad %s", "--date=short", s["hash"]).replace("|", "\\|")))
    if dirty:
        md += ["", "Uncommitted changes of the working tree (`git status --porcelain`; "
               "`git diff --shortstat HEAD`: %s):" % sides["new"]["shortstat"], ""]
        md += ["    " + d for d in dirty[:40]]
        if len(dirty) > 40:
            md.append("    ... and %d more" % (len(dirty) - 40))
    return md


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


def machine():
    """The machine: CPUs, model, system, compiler, and the load average now."""
    nproc = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"nproc": nproc, "cpu": cpu_model(), "kernel": platform.release(),
            "system": platform.system(), "arch": platform.machine(),
            "compiler": first_line(["cc", "--version"]),
            "loadavg_at_end": list(os.getloadavg())}


def md_machine(m):
    """The markdown line that describes the machine M of machine()."""
    return ("Machine: %d CPUs (nproc), %s, %s %s %s; compiler: %s; load average at the end "
            "%.2f %.2f %.2f." % (m["nproc"], m["cpu"], m["system"], m["kernel"], m["arch"],
                                 m["compiler"], *m["loadavg_at_end"]))
