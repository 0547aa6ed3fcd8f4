#!/usr/bin/env python3
"""Checks that the folders of core/ call downward only.

    python3 scripts/check-layers.py [--graph]

The folders, lowest first (a file may call its own folder's functions and those of any folder
below it, never one above):

    linalg      patterns, factorisations, dense least squares, vector helpers
    model       the natural model's parts: expressions, functions of time, linear vectors, frames,
                constraints, reactions, mass, bodies, the workspace, the chain rule of kinematic
                measures
    elements    force elements with their values and partials: spring, tyre, joint friction,
                stored energy
    outputs     output columns, controller signals (which read and are outputs), functionals
    forces      the controllers' actuators and the sum of every generalised force
    integrator  the ALI3-P step every formulation shares
    natural     the natural-coordinate formulation: compiler, structure, assembly, equilibrium,
                integration, sensitivities
    joint       the joint-coordinate formulation, over the natural model's elements
    (core/)     the formulation table behind the public entry points

A function is a call target when it is defined without `static` in one file of core/; a file
calls it when its name is followed by "(" outside comments. Prints each call across folders that
goes upward, and exits 1 if there is one; --graph also prints every file's callees.
"""
import argparse
import glob
import os
import re
import sys

LAYERS = ["linalg", "model", "elements", "outputs", "forces", "integrator", "natural", "joint", ""]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", action="store_true", help="print every file's callees")
    args = ap.parse_args()
    core = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "core")
    files = sorted(glob.glob(os.path.join(core, "*.c")) + glob.glob(os.path.join(core, "*", "*.c")))
    source, owner = {}, {}
    for path in files:
        rel = os.path.relpath(path, core)
        text = re.sub(r"/\*.*?\*/", "", open(path).read(), flags=re.S)
        source[rel] = text
        for m in re.finditer(r"^(?!static)[A-Za-z_][\w \*]*?\b(\w+)\s*\([^;{]*\)\s*\{", text, re.M):
            owner.setdefault(m.group(1), rel)
    calls = {}
    for rel, text in source.items():
        for name in set(re.findall(r"\b(\w+)\s*\(", text)):
            target = owner.get(name)
            if target and target != rel:
                calls.setdefault((rel, target), set()).add(name)

    def layer(rel):
        folder = os.path.dirname(rel)
        if folder not in LAYERS:
            sys.exit("check-layers: core/%s is in no known folder (%s)" % (rel, ", ".join(LAYERS[:-1])))
        return LAYERS.index(folder)

    upward = [(a, b, sorted(f)) for (a, b), f in sorted(calls.items()) if layer(a) < layer(b)]
    if args.graph:
        for rel in sorted(source):
            print("%s -> %s" % (rel, " ".join(sorted(b for (a, b) in calls if a == rel))))
    for a, b, names in upward:
        print("core/%s calls up into core/%s: %s" % (a, b, ", ".join(names)))
    if upward:
        print("check-layers: %d upward calls" % len(upward))
        return 1
    print("check-layers: %d files in %d folders, every call across folders goes downward"
          % (len(source), len({os.path.dirname(r) for r in source})))
    return 0


if __name__ == "__main__":
    sys.exit(main())
