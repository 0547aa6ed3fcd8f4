#!/usr/bin/env python3
"""Regenerates results/iftomm/convergence.md: the step sweep of the IFToMM benchmarks A01 (simple
pendulum), A02 (N-four-bar, N = 2 and 40), A03 (Andrews' squeezing mechanism), A04 (Bricard's
mechanism) and A05 (stiff flyball governor) with the default settings, and A02 again with a
penalty set, against references computed here: A01 and A02 in one angle (theta'' = -k cos theta,
RK4 at h = 1e-5), A04 in joint angles along its one direction of motion (RK4 at h = 1e-3), A05 in
its four coordinates (RK4 at h = 1e-4); they are the references of tests/reference/, written
again so that the two check each other. A03 against the published values of the Test Set for IVP
Solvers.

Usage: python3 scripts/results-iftomm.py [--mbopt build/mbopt]
Standard library only; runs in about five minutes.
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


def angle_points(k, theta0, rate0, t_end, h=1e-5):
    """(cos theta, sin theta) every DT_OUT over [0, t_end], theta'' = -k cos theta (RK4)."""
    per = round(DT_OUT / h)
    th, w = theta0, rate0
    out = [(math.cos(th), math.sin(th))]
    f = lambda x: -k * math.cos(x)
    for _ in range(round(t_end / DT_OUT)):
        for _ in range(per):
            k1t, k1w = w, f(th)
            k2t, k2w = w + 0.5 * h * k1w, f(th + 0.5 * h * k1t)
            k3t, k3w = w + 0.5 * h * k2w, f(th + 0.5 * h * k2t)
            k4t, k4w = w + h * k3w, f(th + h * k3t)
            th += h / 6 * (k1t + 2 * k2t + 2 * k3t + k4t)
            w += h / 6 * (k1w + 2 * k2w + 2 * k3w + k4w)
        out.append((math.cos(th), math.sin(th)))
    return out


# Bricard's mechanism: five rods (1 m, 1 kg, 0.1 m square section) and six revolute joints in a
# loop, gravity -9.81 along y, released from rest. The rods form a chain from the ground through
# joints 1..5 (angles about the initial axes); the six joint twists xi_j = (z_j, o_j x z_j) obey
# sum_{j<=5} xi_j theta_j' = xi_6 theta_6', of rank 5: its unit null vector s is the direction
# of motion. With the arc length sigma along s, mu = s^T M s and Lagrange's equation
# mu sigma'' + mu' sigma'^2 / 2 = -dV/dsigma, mu' by a central difference along s.
AXES = [(0, 1, 0), (0, 0, 1), (1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 0, 0)]
POINTS = [(0, 0, 0), (1, 0, 0), (1, -1, 0), (1, -1, 1), (0, -1, 1), (0, 0, 1)]
CENTRES = [(0.5, 0, 0), (1, -0.5, 0), (1, -1, 0.5), (0.5, -1, 1), (0, -0.5, 1)]
ALONG = [0, 1, 2, 0, 1]  # the axis each rod lies along at t = 0
AXIAL, TRANSVERSE = 2 * 0.01 / 12, (1 + 0.01) / 12


def cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def rot(a, angle):
    c, s, v = math.cos(angle), math.sin(angle), 1 - math.cos(angle)
    x, y, z = a
    return ((c + x * x * v, x * y * v - z * s, x * z * v + y * s),
            (y * x * v + z * s, c + y * y * v, y * z * v - x * s),
            (z * x * v - y * s, z * y * v + x * s, c + z * z * v))


def mul(R, x):
    return tuple(sum(R[i][j] * x[j] for j in range(3)) for i in range(3))


def carry(theta, k, x):
    """x (initial, global) moved by joints k-1 .. 0."""
    for j in range(k - 1, -1, -1):
        d = mul(rot(AXES[j], theta[j]), [x[i] - POINTS[j][i] for i in range(3)])
        x = tuple(d[i] + POINTS[j][i] for i in range(3))
    return x


def pose(theta):
    """Rod orientations, joint axes and points (joint 6 as carried by rod 5), rod centres."""
    R = ((1, 0, 0), (0, 1, 0), (0, 0, 1))
    Rs, z, o, c = [], [], [], []
    for k in range(5):
        z.append(mul(R, AXES[k]))
        o.append(carry(theta, k, POINTS[k]))
        Rk = rot(AXES[k], theta[k])
        R = tuple(tuple(sum(R[i][m] * Rk[m][j] for m in range(3)) for j in range(3)) for i in range(3))
        Rs.append(R)
        c.append(carry(theta, k + 1, CENTRES[k]))
    z.append(mul(R, AXES[5]))
    o.append(carry(theta, 5, POINTS[5]))
    return Rs, z, o, c


def det(A):
    A = [row[:] for row in A]
    n, d = len(A), 1.0
    for col in range(n):
        piv = max(range(col, n), key=lambda r: abs(A[r][col]))
        if A[piv][col] == 0:
            return 0.0
        if piv != col:
            A[col], A[piv] = A[piv], A[col]
            d = -d
        d *= A[col][col]
        for r in range(col + 1, n):
            f = A[r][col] / A[col][col]
            for j in range(col, n):
                A[r][j] -= f * A[col][j]
    return d


def null_vector(z, o, drop):
    """Cofactors of the twist matrix [xi_1 .. xi_5, -xi_6] without row `drop`."""
    cols = []
    for j in range(6):
        sign = 1 if j < 5 else -1
        cols.append([sign * v for v in z[j] + cross(o[j], z[j])])
    rows = [[cols[j][i] for j in range(6)] for i in range(6) if i != drop]
    return [(-1) ** c * det([[r[j] for j in range(6) if j != c] for r in rows]) for c in range(6)]


def direction(theta, drop, ref):
    Rs, z, o, c = pose(theta)
    s = null_vector(z, o, drop)
    n = math.sqrt(sum(v * v for v in s))
    s = [v / n for v in s]
    if ref is not None and sum(a * b for a, b in zip(s, ref)) < 0:
        s = [-v for v in s]
    return s, (Rs, z, o, c)


def mu_load(p, s):
    Rs, z, o, c = p
    mu = load = 0.0
    for k in range(5):
        w, v = [0.0] * 3, [0.0] * 3
        for j in range(k + 1):
            zr = cross(z[j], [c[k][i] - o[j][i] for i in range(3)])
            for i in range(3):
                w[i] += z[j][i] * s[j]
                v[i] += zr[i] * s[j]
        wb = [sum(Rs[k][m][i] * w[m] for m in range(3)) for i in range(3)]
        mu += sum(v[i] ** 2 for i in range(3)) + sum(
            (AXIAL if i == ALONG[k] else TRANSVERSE) * wb[i] ** 2 for i in range(3))
        load -= G * v[1]
    return mu, load


def bricard_rates(y, drop, ref, eps=1e-5):
    s, p = direction(y[:5], drop, ref)
    mu, load = mu_load(p, s)
    side = []
    for e in (eps, -eps):
        ss, q = direction([y[j] + e * s[j] for j in range(5)], drop, s)
        side.append(mu_load(q, ss)[0])
    dmu = (side[0] - side[1]) / (2 * eps)
    return [y[5] * s[j] for j in range(5)] + [(load - 0.5 * dmu * y[5] ** 2) / mu], s


def bricard_points(t_end, h=1e-3):
    """P3 (the joint of rods 2 and 3) every DT_OUT over [0, t_end] (RK4)."""
    y, ref = [0.0] * 6, None
    out = [carry(y, 2, (1, -1, 0))]
    per = round(DT_OUT / h)
    for _ in range(round(t_end / DT_OUT)):
        for _ in range(per):
            _, z, o, _ = pose(y[:5])
            drop = max(range(6), key=lambda r: sum(v * v for v in null_vector(z, o, r)))
            k1, ref = bricard_rates(y, drop, ref)
            k2, _ = bricard_rates([y[i] + 0.5 * h * k1[i] for i in range(6)], drop, ref)
            k3, _ = bricard_rates([y[i] + 0.5 * h * k2[i] for i in range(6)], drop, ref)
            k4, _ = bricard_rates([y[i] + h * k3[i] for i in range(6)], drop, ref)
            y = [y[i] + h / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]) for i in range(6)]
        out.append(carry(y, 2, (1, -1, 0)))
    return out


# The stiff flyball governor: a shaft turning freely about z at phi, two arms (1 m rods of 0.3 kg
# with 5 kg at the tip) hinged at (+-0.05, 0, 1) at psi_i from the downward vertical, a 3 kg sleeve
# at height s, spring-dampers (8e5 N/m, 4e4 N s/m, 0.5 m) from the sleeve's sides to the arms'
# midpoints. T = J(psi) phi'^2 / 2 + M_PSI sum psi_i'^2 / 2 + M_S s'^2 / 2, so the mass matrix
# is diagonal and Lagrange's equations are explicit.
GOV_A, GOV_MR, GOV_MP, GOV_MS, GOV_K, GOV_C = 0.05, 0.3, 5.0, 3.0, 8e5, 4e4
GOV_IA, GOV_IT = GOV_MR * 2e-4 / 12, GOV_MR * 1.0001 / 12  # the rod's axial, transverse inertia
GOV_I0 = GOV_IA + GOV_MS * 0.02 / 12  # shaft and sleeve about z
M_PSI = GOV_MR / 4 + GOV_IT + GOV_MP


def governor_rates(y):
    phi_rate, s, s_rate = y[4], y[3], y[7]
    J, dJ, s_force, dy = GOV_I0, 0.0, -GOV_MS * G, y[4:] + [0.0] * 4
    for arm in (1, 2):
        psi, w = y[arm], y[4 + arm]
        sn, cs = math.sin(psi), math.cos(psi)
        J += (GOV_MR * (GOV_A + sn / 2) ** 2 + GOV_IA * cs * cs + GOV_IT * sn * sn
              + GOV_MP * (GOV_A + sn) ** 2)
        dj = 2 * cs * (GOV_MR * (GOV_A + sn / 2) / 2 + (GOV_IT - GOV_IA) * sn + GOV_MP * (GOV_A + sn))
        dJ += dj * w
        u, v = sn / 2, 1 - cs / 2 - s  # the spring, horizontally and vertically
        length = math.hypot(u, v)
        dl_dpsi, dl_ds = (u * cs + v * sn) / (2 * length), -v / length
        f = GOV_K * (length - 0.5) + GOV_C * (dl_dpsi * w + dl_ds * s_rate)
        dy[4 + arm] = (dj * phi_rate ** 2 / 2 - G * (GOV_MR / 2 + GOV_MP) * sn - f * dl_dpsi) / M_PSI
        s_force -= f * dl_ds
    dy[4] = -dJ * phi_rate / J
    dy[7] = s_force / GOV_MS
    return dy


def governor_points(t_end, h=1e-4):
    """The tip of the arm at +x (x, y, z) and s every DT_OUT over [0, t_end] (RK4)."""
    y = [0.0, math.pi / 3, math.pi / 3, 0.5, 2 * math.pi, 0.0, 0.0, 0.0]
    sample = lambda y: ((GOV_A + math.sin(y[1])) * math.cos(y[0]),
                        (GOV_A + math.sin(y[1])) * math.sin(y[0]), 1 - math.cos(y[1]), y[3])
    out = [sample(y)]
    for _ in range(round(t_end / DT_OUT)):
        for _ in range(round(DT_OUT / h)):
            k1 = governor_rates(y)
            k2 = governor_rates([y[i] + 0.5 * h * k1[i] for i in range(8)])
            k3 = governor_rates([y[i] + 0.5 * h * k2[i] for i in range(8)])
            k4 = governor_rates([y[i] + h * k3[i] for i in range(8)])
            y = [y[i] + h / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]) for i in range(8)]
        out.append(sample(y))
    return out


# Andrews' squeezing mechanism: the seven angles at t = 0.03 s published by the Test Set for IVP
# Solvers (F. Mazzia, F. Iavernaro, C. Magherini, University of Bari, problem "andrews").
ANDREWS_COLUMNS = ["beta", "Theta", "gamma", "Phi", "delta", "Omega", "epsilon"]
ANDREWS_T003 = [0.1581077119629904e2, -0.1575637105984298e2, 0.4082224013073101e-1,
                -0.5347301163226948, 0.5244099658805304, 0.5347301163226948,
                0.1048080741042263e1]


def xy(p):
    return [p + ".x", p + ".y"]


CASES = [  # name, model, columns compared, reference {sample index: values}, step sweep[,
    # simulation settings set on top of the model's]
    ("A01 simple pendulum", "tests/models/iftomm/a01_pendulum.json", xy("P"),
     lambda t: dict(enumerate(angle_points(G, math.pi, 0.0, t))), STEPS),
    ("A02 N-four-bar, N = 2", "tests/models/iftomm/a02_fourbar_2.json", xy("B0"),
     lambda t: dict(enumerate(angle_points(chain_k(2), math.pi / 2, -1.0, t))), STEPS),
    ("A02 N-four-bar, N = 40", "tests/models/iftomm/a02_fourbar_40.json", xy("B0"),
     lambda t: dict(enumerate(angle_points(chain_k(40), math.pi / 2, -1.0, t))), STEPS),
    # the default penalty against one that makes every c_i = 1e4 at these steps: the
    # multipliers then converge faster where Phi_q nearly loses rank
    ("A02 N-four-bar, N = 2, with \"penalty\": 1e13", "tests/models/iftomm/a02_fourbar_2.json",
     xy("B0"), lambda t: dict(enumerate(angle_points(chain_k(2), math.pi / 2, -1.0, t))), STEPS,
     {"penalty": 1e13}),
    ("A02 N-four-bar, N = 40, with \"penalty\": 1e13", "tests/models/iftomm/a02_fourbar_40.json",
     xy("B0"), lambda t: dict(enumerate(angle_points(chain_k(40), math.pi / 2, -1.0, t))), STEPS,
     {"penalty": 1e13}),
    ("A03 Andrews' squeezing mechanism, the angles at the end in rad",
     "tests/models/iftomm/a03_andrews.json", ANDREWS_COLUMNS,
     lambda t: {round(t / DT_OUT): ANDREWS_T003}, [1e-5, 5e-6, 2.5e-6, 1.25e-6]),
    ("A04 Bricard's mechanism", "tests/models/iftomm/a04_bricard.json", xy("P3") + ["P3.z"],
     lambda t: dict(enumerate(bricard_points(t))), STEPS),
    ("A05 stiff flyball governor", "tests/models/iftomm/a05_governor.json",
     ["B1.x", "B1.y", "B1.z", "s"], lambda t: dict(enumerate(governor_points(t))), STEPS),
]


def run(mbopt, model, columns, step, reference):
    """Largest deviation of the columns from the reference over the run, and the summary."""
    csv_path = f"/tmp/mbopt-iftomm-{os.getpid()}.csv"
    cmd = [mbopt, "simulate", model, "--step", repr(step), "--output-interval", repr(DT_OUT),
           "--csv", csv_path, "--json", "--quiet"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return None, proc.stderr.strip()
    summary = json.loads(proc.stdout)
    err, met = 0.0, 0
    with open(csv_path) as fh:
        for row in csv.DictReader(fh):
            k = round(float(row["t"]) / DT_OUT)
            if abs(k * DT_OUT - float(row["t"])) > 1e-9 or k not in reference:
                continue
            met += 1
            for c, value in zip(columns, reference[k]):
                err = max(err, abs(float(row[c]) - value))
    os.remove(csv_path)
    if met != len(reference):
        return None, f"only {met} of the {len(reference)} reference samples met by an output"
    return err, summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mbopt", default="build/mbopt")
    args = ap.parse_args()
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    out = io.StringIO()
    out.write("# IFToMM benchmarks A01 to A05: error against the step\n\n")
    out.write("Written by `python3 scripts/results-iftomm.py`. Default settings (the models set only\n"
              "t_end and step; the sections named with a penalty set it too); error = largest\n"
              "deviation of the tracked coordinates from the reference over the whole run, sampled\n"
              "every 10 ms, in m (A03: of the seven angles at the end, in rad); order = log2 of the\n"
              "ratio to the previous row.\n")
    for name, model, columns, reference, steps, *settings in CASES:
        with open(model) as fh:
            spec = json.load(fh)
        t_end = spec["simulation"]["t_end"]
        source = model
        if settings:
            spec["simulation"].update(settings[0])
            model = f"/tmp/mbopt-iftomm-{os.getpid()}.json"
            with open(model, "w") as fh:
                json.dump(spec, fh)
        points = reference(t_end)
        out.write(f"\n## {name} ({t_end:g} s: {', '.join(columns)})\n\n")
        out.write("| h (s) | error (m) | order | Newton iterations per step | stalled at round-off | max \\|d2Phi/dt2\\| |\n")
        out.write("|---|---|---|---|---|---|\n")
        prev = None
        for h in steps:
            err, s = run(args.mbopt, model, columns, h, points)
            if err is None:
                out.write(f"| {h:g} | failed: {s.replace(model, source)} | | | | |\n")
                prev = None
                continue
            order = f"{math.log2(prev / err):.2f}" if prev else ""
            out.write(f"| {h:g} | {err:.3e} | {order} | {s['newton_iterations'] / s['steps']:.2f} | "
                      f"{s['stalled_steps']} | {s['max_phidd']:.2e} |\n")
            prev = err
            print(f"{name} h = {h:g}: {err:.3e}", file=sys.stderr)
        if settings:
            os.remove(model)
    os.makedirs("results/iftomm", exist_ok=True)
    with open("results/iftomm/convergence.md", "w") as fh:
        fh.write(out.getvalue())
    print("wrote results/iftomm/convergence.md", file=sys.stderr)


if __name__ == "__main__":
    main()
