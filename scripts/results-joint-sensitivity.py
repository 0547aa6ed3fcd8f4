#!/usr/bin/env python3
"""Regenerates results/joint/sensitivities.md: the buggy's manoeuvres in natural and in joint
coordinates (RTdyn0), in the form of the table of Lopez Varela, Dopico, Luaces ("Augmented
Lagrangian index-3 semi-recursive formulations with projections: direct sensitivity analysis";
the adjoint counterpart): wall-clock seconds of the dynamics, of the forward sensitivity (DDM)
and of the discrete adjoint (DAVM), each the least of three runs, the formulations alternating
(`mbopt bench --repeat 1 --no-fd`); then the gradients of both formulations and their largest
relative gap at the bundled step.

    python3 scripts/results-joint-sensitivity.py [--build build]
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from machine import cpu_name  # noqa: E402

MODELS = ["problems/vehicle/step_descent.json", "problems/vehicle/double_lane_change.json"]
FORMULATIONS = ["natural", "joint"]
KEYS = [("simulation_seconds", "dynamics"), ("forward_seconds", "DDM"),
        ("adjoint_seconds", "DAVM")]
# The same manoeuvres' CPU seconds in A. Lopez Varela's thesis ("Sensitivity analysis and
# optimization of the dynamics of multibody systems using analytical gradient based methods",
# Universidade da Coruna, 2022; the semi-recursive ALI3-P in RTdyn0 against natural coordinates,
# its own buggy of 36 joint and 180 natural coordinates, on its own machine): (joint, natural)
# for the dynamics, the DDM and the DAVM. Their ratios stand next to ours; their seconds compare
# with nothing here.
PUBLISHED = {
    "problems/vehicle/step_descent.json": [(2.781, 6.703), (8.188, 9.484), (8.781, 11.047)],
    "problems/vehicle/double_lane_change.json": [(1.047, 3.750), (2.578, 4.609), (2.686, 4.906)],
}


def run_json(mbopt, args):
    out = subprocess.run([mbopt] + args + ["--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)



def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    mbopt = os.path.join(args.build, "mbopt")
    best = {}
    for model in MODELS:
        for _ in range(args.runs):
            for formulation in FORMULATIONS:
                b = run_json(mbopt, ["bench", model, "--formulation", formulation, "--repeat",
                                     "1", "--no-fd"])
                for key, _name in KEYS:
                    k = (model, formulation, key)
                    best[k] = min(best.get(k, float("inf")), b[key])
                print(model, formulation, "done", file=sys.stderr)
    grads = {}
    for model in MODELS:
        for formulation in FORMULATIONS:
            g = run_json(mbopt, ["gradient", model, "--formulation", formulation, "--method",
                                 "forward"])
            grads[(model, formulation)] = g

    lines = ["# Sensitivities in natural and joint coordinates", "",
             "Written by `python3 scripts/results-joint-sensitivity.py%s`, on %s (%d processors "
             "online), Release build. Seconds of one simulation (dynamics), of the forward "
             "sensitivity (DDM) and of the discrete adjoint (DAVM) of every parameter, the least "
             "of %d runs of `mbopt bench --repeat 1 --no-fd`, the formulations alternating; "
             "the ratios are to the same formulation's dynamics, and the last rows of each "
             "model are joint over natural, here and as A. Lopez Varela's thesis (\"Sensitivity "
             "analysis and optimization of the dynamics of multibody systems using analytical "
             "gradient based methods\", 2022) reports the same manoeuvres in its own model, "
             "implementation and machine." %
             ("" if args.runs == 3 else " --runs %d" % args.runs, cpu_name(), os.cpu_count() or 1,
              args.runs), ""]
    for model in MODELS:
        lines += ["## `%s`" % model, "",
                  "| formulation | dynamics (s) | DDM (s) | DAVM (s) | DDM / dynamics | "
                  "DAVM / dynamics |", "|---|---|---|---|---|---|"]
        for formulation in FORMULATIONS:
            t = [best[(model, formulation, key)] for key, _ in KEYS]
            lines.append("| %s | %.3f | %.3f | %.3f | %.2f | %.2f |" % (
                formulation if formulation == "natural" else "joint (RTdyn0)", t[0], t[1], t[2],
                t[1] / t[0], t[2] / t[0]))
        r = [best[(model, "joint", key)] / best[(model, "natural", key)] for key, _ in KEYS]
        lines.append("| joint / natural | %.2f | %.2f | %.2f | | |" % tuple(r))
        lines.append("| joint / natural, published | %.2f | %.2f | %.2f | | |" %
                     tuple(joint / natural for joint, natural in PUBLISHED[model]))
        lines.append("")
        names = grads[(model, "natural")]["parameters"]
        lines += ["| functional | formulation | " + " | ".join(names) + " |",
                  "|---|---|" + "---|" * len(names)]
        gap = 0.0
        for fn in range(len(grads[(model, "natural")]["functionals"])):
            rows = []
            for formulation in FORMULATIONS:
                f = grads[(model, formulation)]["functionals"][fn]
                rows.append(f["gradient"])
                lines.append("| %s | %s | %s |" % (f["name"], formulation, " | ".join(
                    "%.6g" % v for v in f["gradient"])))
            gap = max([gap] + [abs(a - b) / abs(a) for a, b in zip(rows[0], rows[1]) if a])
        lines += ["", "Largest relative gap between the formulations' gradients at the model's "
                  "step: %.2e (both converge as h^2: `results/joint/formulations.md`)." % gap, ""]
    os.makedirs("results/joint", exist_ok=True)
    with open("results/joint/sensitivities.md", "w") as f:
        f.write("\n".join(lines))
    print("wrote results/joint/sensitivities.md")


if __name__ == "__main__":
    main()
