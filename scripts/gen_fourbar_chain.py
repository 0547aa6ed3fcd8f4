#!/usr/bin/env python3
"""Writes the N-four-bar mechanism (a chain of N planar four-bar linkages) as an mbopt model.

Usage: python3 scripts/gen_fourbar_chain.py N [--t-end T] [--step H] [-o FILE]

The mechanism is problem A02, "N four-bar mechanism", of the MBS benchmark library of the
Laboratorio de Ingenieria Mecanica, Universidade da Coruna (specification sheet "N four-bar
mechanism", M. Gonzalez, 2005: "Dynamic simulation of an assembly of 40 four-bar linkages"), the
problem set usually meant by the "IFToMM multibody benchmark" N-four-bar. Its reference is
[GDLC06] M. Gonzalez, D. Dopico, U. Lugris, J. Cuadrado, "A benchmarking system for MBS
simulation software: problem standardization and performance measurement", Multibody System
Dynamics 16 (2006). The mechanism extends the two-four-bar example of [BA94] E. Bayo, A. Avello,
"Singularity-free augmented Lagrangian algorithms for constrained multibody dynamics", Nonlinear
Dynamics 5 (1994). A second description read: "MBS Benchmark A02: N-Four-Bar Mechanism" of the
MBSbenchmarksInOpenSim project (Rehab Engineering Group), which reproduces the problem in OpenSim.

Numbers and where they come from ("spec" is the A02 specification sheet):
- 2N+1 links, each 1 m long with a uniformly distributed mass of 1 kg: spec ("The one
  degree-of-freedom assembly of N four-bar linkages is composed by 2N+1 links of 1 m length with
  a uniformly distributed mass of 1 kg"); also the OpenSim page's table (link mass 1.0 kg, link
  length 1.0 m). The centroidal inertia of a uniform slender rod, m L^2 / 12 = 1/12 kg m^2,
  follows from "uniformly distributed" (thin-rod assumption, as in docs/model-format.md, Bodies).
- gravity 9.81 along -y: spec ("9.81 N/kg acting in the negative y direction").
- initial position: spec, "in the position shown in the figure" (the figure itself was not
  available as text): the N+1 cranks vertical, pointing up, on ground pivots A_i = (i, 0),
  i = 0..N, their tips B_i = (i, 1) joined by N horizontal couplers B_{i-1}B_i. The pivot spacing
  of 1 m is forced by this position (vertical 1 m cranks joined by 1 m horizontal couplers), so
  every window is a unit square, a parallelogram, and all cranks turn together.
- initial velocity: spec ("the velocity of the x-coordinate of point B0 is 1 m/s"); the OpenSim
  page: "an initial speed for the point B0 in the positive x-direction of 1 m/s". With the first
  crank vertical this is a crank rate of -1 rad/s (clockwise); the model prescribes the first
  crank's absolute angle pi/2 and rate -1 rad/s, which the assembly turns into x'(B0) = +1 m/s.
- duration 20 s (the default --t-end): spec ("a dynamic simulation with a duration of 20 s"); the
  spec particularises the chain to N = 40 (the OpenSim page runs N = 2 for 10 s).
- step 1e-3 s (the default --step) is not in the spec: it is mbopt's default step
  (docs/model-format.md, Simulation), the same as the committed five-bar runs.
- the outputs are the spec's reference solution, "the time-history of the position and velocity
  of point B0 (x and y coordinates)", plus the total energy, by which the OpenSim page judges
  accuracy (it is conserved: nothing dissipates).

Singular positions: when the cranks reach the horizontal, all links are collinear and the number
of degrees of freedom jumps from 1 to N+1 (the specification says so); the constraint Jacobian
then loses N of its 2N+1 rows of rank. The chain falls from the vertical and first gets there
near t = 0.715 s (slightly depending on N). mbopt passes it with the default settings: the
Newton iteration raises the penalty of the steps next to it and accepts the positions once they
stop moving (core/natural/ali3p.c). tests/test_iftomm.c runs N = 2 and N = 40 over the 20 s against the
parallelogram motion in one angle (tests/reference/iftomm_reference.c).

Model in mbopt terms (natural coordinates): ground markers A0..AN; bodies crank0..crankN
(frame origin at the pivot, local x along the crank, markers A at 0 and B at 1 m, centre of mass
at 0.5 m) and coupler1..couplerN (origin at B_{i-1}, local x towards B_i, markers L and R);
revolute joints ground.Ai - crank_i.A (N+1) and crank_{i-1}.B - coupler_i.L,
coupler_i.R - crank_i.B (2N). mbopt shares the joint points, so the coordinates are the tip
points B0..BN (nq = 2N+2) and the constraints are the 2N+1 bar lengths: Gruebler's count
3(2N+1) - 2(3N+1) = 1 degree of freedom with no redundant constraint, so every joint of the
figure is kept and the constraints are independent at the initial (vertical) position.

Standard library only. The model goes to stdout unless -o is given.
"""
import argparse
import json
import math
import sys

LENGTH = 1.0  # m, every link (A02 specification)
MASS = 1.0  # kg, every link (A02 specification)
GRAVITY = 9.81  # m/s^2 along -y (A02 specification)
B0_X_RATE = 1.0  # m/s, initial x velocity of the first crank's tip (A02 specification)
T_END = 20.0  # s (A02 specification)
STEP = 1e-3  # s (mbopt default, not part of the specification)


def num(x):
    """A whole number as an int (1.0 -> 1), so that the file reads like the hand-written models."""
    return int(x) if float(x).is_integer() else x


def bar(name, x, y, angle, left, right):
    """A uniform bar with its frame at one end (x, y), local x along the bar."""
    return {
        "name": name,
        "mass": num(MASS),
        "com": [num(LENGTH / 2), 0],
        "inertia": num(MASS * LENGTH * LENGTH / 12),
        "position": [num(x), num(y)],
        "angle": num(angle),
        "markers": {left: {"point": [0, 0]}, right: {"point": [num(LENGTH), 0]}},
    }


def build(n, t_end, step):
    half_pi = math.pi / 2
    ground = {"markers": {f"A{i}": {"point": [num(i * LENGTH), 0]} for i in range(n + 1)}}
    bodies = [bar(f"crank{i}", i * LENGTH, 0, half_pi, "A", "B") for i in range(n + 1)]
    bodies += [bar(f"coupler{i}", (i - 1) * LENGTH, LENGTH, 0, "L", "R") for i in range(1, n + 1)]
    joints = [{"name": f"pivot{i}", "type": "revolute", "marker1": f"ground.A{i}",
               "marker2": f"crank{i}.A"} for i in range(n + 1)]
    for i in range(1, n + 1):
        joints.append({"name": f"left{i}", "type": "revolute", "marker1": f"crank{i - 1}.B",
                       "marker2": f"coupler{i}.L"})
        joints.append({"name": f"right{i}", "type": "revolute", "marker1": f"coupler{i}.R",
                       "marker2": f"crank{i}.B"})
    return {
        "name": f"N-four-bar mechanism (IFToMM A02), N = {n}",
        "dimension": 2,
        "gravity": [0, -GRAVITY],
        "ground": ground,
        "bodies": bodies,
        "joints": joints,
        # one degree of freedom: the first crank's absolute angle and rate (tip B0 at x' = +1 m/s)
        "initial": [{"body": "crank0", "angle": half_pi, "rate": num(-B0_X_RATE / LENGTH)}],
        "outputs": [
            {"name": "B0", "type": "position", "marker": "crank0.B"},
            {"name": "vB0", "type": "velocity", "marker": "crank0.B"},
            {"name": "E", "type": "total_energy"},
        ],
        "simulation": {"t_end": num(t_end), "step": num(step)},
    }


def dump(model):
    """JSON with one array entry per line, so that the file reads and diffs like the examples."""
    out = ["{"]
    keys = list(model)
    for k, key in enumerate(keys):
        value = model[key]
        comma = "," if k < len(keys) - 1 else ""
        if isinstance(value, list) and value and isinstance(value[0], dict):
            out.append(f"  {json.dumps(key)}: [")
            for i, item in enumerate(value):
                sep = "," if i < len(value) - 1 else ""
                out.append(f"    {json.dumps(item)}{sep}")
            out.append(f"  ]{comma}")
        elif key == "ground":
            out.append(f'  "ground": {{"markers": {{')
            items = list(value["markers"].items())
            for i, (name, marker) in enumerate(items):
                sep = "," if i < len(items) - 1 else ""
                out.append(f"    {json.dumps(name)}: {json.dumps(marker)}{sep}")
            out.append(f"  }}}}{comma}")
        else:
            out.append(f"  {json.dumps(key)}: {json.dumps(value)}{comma}")
    out.append("}")
    return "\n".join(out) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(
        description="Write the IFToMM N-four-bar benchmark mechanism (A02) as an mbopt model.")
    p.add_argument("n", type=int, metavar="N", help="number of four-bar windows (>= 1)")
    p.add_argument("--t-end", type=float, default=T_END, metavar="T",
                   help=f"final time in s (default {T_END:g}, the benchmark's)")
    p.add_argument("--step", type=float, default=STEP, metavar="H",
                   help=f"integration step in s (default {STEP:g})")
    p.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    a = p.parse_args(argv)
    if a.n < 1:
        p.error("N must be >= 1")
    if not (math.isfinite(a.t_end) and a.t_end > 0):
        p.error("--t-end must be > 0")
    if not (math.isfinite(a.step) and 0 < a.step <= a.t_end):
        p.error("--step must be > 0 and <= --t-end")
    text = dump(build(a.n, a.t_end, a.step))
    if a.output:
        with open(a.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
