#!/usr/bin/env python3
"""Regenerates results/iftomm/convergence.md: the step sweep of the IFToMM benchmarks A01 (simple
pendulum) and A02 (N-four-bar, N = 2 and 40) with the default settings, against their motion in
one angle (theta'' = -k cos theta, integrated here with RK4 at h = 1e-5; the same reference as
tests/reference/iftomm_reference.c, written again so that the two check each other).

Usage: python3 scripts/results-iftomm.py [--mbopt build/mbopt]
Standard library only; runs in about a minute.
"""
import argparse
import csv
import io
import json
import math
import os
import subprocess
import sys

G = 9.81
STEPS = [1e-3, 5e-4, 2.5e-4, 1.25e-4, 6.25e-5]
DT_OUT = 0.01


def chain_k(n):
    """theta'' = -k cos theta of the N-four-bar moving as a parallelogram (1 m, 1 kg links)."""
    return G * ((n + 1) / 2 + n) / ((n + 1) / 3 + n)


CASES = [  # name, model, tracked point, k, theta0, rate0
    ("A01 simple pendulum", "tests/models/iftomm/a01_pendulum.json", "P", G, math.pi, 0.0),
    ("A02 N-four-bar, N = 2", "tests/models/iftomm/a02_fourbar_2.json", "B0", chain_k(2), math.pi / 2, -1.0),
    ("A02 N-four-bar, N = 40", "tests/models/iftomm/a02_fourbar_40.json", "B0", chain_k(40), math.pi / 2, -1.0),
]


def reference(k, theta0, rate0, t_end, h=1e-5):
    """theta every DT_OUT over [0, t_end] (classical RK4)."""
    per = round(DT_OUT / h)
    th, w = theta0, rate0
    out = [th]
    f = lambda x: -k * math.cos(x)
    for _ in range(round(t_end / DT_OUT)):
        for _ in range(per):
            k1t, k1w = w, f(th)
            k2t, k2w = w + 0.5 * h * k1w, f(th + 0.5 * h * k1t)
            k3t, k3w = w + 0.5 * h * k2w, f(th + 0.5 * h * k2t)
            k4t, k4w = w + h * k3w, f(th + h * k3t)
            th += h / 6 * (k1t + 2 * k2t + 2 * k3t + k4t)
            w += h / 6 * (k1w + 2 * k2w + 2 * k3w + k4w)
        out.append(th)
    return out


def run(mbopt, model, point, step, theta):
    """Largest |x - cos theta|, |y - sin theta| of the point over the run, and the summary."""
    csv_path = f"/tmp/mbopt-iftomm-{os.getpid()}.csv"
    cmd = [mbopt, "simulate", model, "--step", repr(step), "--output-interval", repr(DT_OUT),
           "--csv", csv_path, "--json", "--quiet"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return None, proc.stderr.strip()
    summary = json.loads(proc.stdout)
    err = 0.0
    with open(csv_path) as fh:
        for row in csv.DictReader(fh):
            k = round(float(row["t"]) / DT_OUT)
            if abs(k * DT_OUT - float(row["t"])) > 1e-9 or k >= len(theta):
                continue
            err = max(err, abs(float(row[point + ".x"]) - math.cos(theta[k])),
                      abs(float(row[point + ".y"]) - math.sin(theta[k])))
    os.remove(csv_path)
    return err, summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mbopt", default="build/mbopt")
    args = ap.parse_args()
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    out = io.StringIO()
    out.write("# IFToMM benchmarks A01 and A02: error against the step\n\n")
    out.write("Written by `python3 scripts/results-iftomm.py`. Default settings (the models set only\n"
              "t_end and step); error = largest deviation of the tracked point's x or y from the\n"
              "one-angle reference over the whole run, sampled every 10 ms, in m; order = log2 of\n"
              "the ratio to the previous row.\n")
    for name, model, point, k, th0, w0 in CASES:
        with open(model) as fh:
            t_end = json.load(fh)["simulation"]["t_end"]
        theta = reference(k, th0, w0, t_end)
        out.write(f"\n## {name} ({t_end:g} s, point {point})\n\n")
        out.write("| h (s) | error (m) | order | Newton iterations per step | accepted at singular positions | max \\|d2Phi/dt2\\| |\n")
        out.write("|---|---|---|---|---|---|\n")
        prev = None
        for h in STEPS:
            err, s = run(args.mbopt, model, point, h, theta)
            if err is None:
                out.write(f"| {h:g} | failed: {s} | | | | |\n")
                prev = None
                continue
            order = f"{math.log2(prev / err):.2f}" if prev else ""
            out.write(f"| {h:g} | {err:.3e} | {order} | {s['newton_iterations'] / s['steps']:.2f} | "
                      f"{s['singular_steps']} | {s['max_phidd']:.2e} |\n")
            prev = err
            print(f"{name} h = {h:g}: {err:.3e}", file=sys.stderr)
    os.makedirs("results/iftomm", exist_ok=True)
    with open("results/iftomm/convergence.md", "w") as fh:
        fh.write(out.getvalue())
    print("wrote results/iftomm/convergence.md", file=sys.stderr)


if __name__ == "__main__":
    main()
