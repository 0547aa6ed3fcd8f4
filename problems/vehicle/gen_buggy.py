#!/usr/bin/env python3
"""Generate problems/vehicle/buggy.json, the model of a light off-road buggy, and its manoeuvres on
four tyres: step_descent.json, double_lane_change.json and cg_height.json (see README.md).

Usage (from the repository root):
    python3 problems/vehicle/gen_buggy.py [path/to/mbopt] [--checks DIR]

Every body has the identity orientation in the design pose, so every marker is written as
(global design point - body origin). The design pose is the static ride height: wheel centres at
z = R_WHEEL (buggy.json has no tyres; the manoeuvres start from the static equilibrium on the
tyres, which mbopt finds), chassis level.

The spring preloads are computed so that the design pose is in static equilibrium when the
wheel centres carry the vehicle's weight: the virtual velocities of every suspension body for a
unit suspension motion are measured with mbopt itself (a kinematic run of a copy with the chassis
welded to the ground and the arm hinges driven at 1 rad/s), then, per corner,
    F_wheel * dz_wheel - g * sum(m_i dz_i) - f_spring * dl_spring = 0   (virtual power)
gives the spring tension f_spring (negative: compression). Each spring's natural length is its
design length and its constant force f_spring, so the equilibrium does not move with k.
With --checks DIR the script also writes the verification variants used in README.md.
"""
import copy
import csv
import json
import math
import os
import subprocess
import sys
import tempfile

G = 9.81
# ---------------------------------------------------------------- design data (see README.md)
WHEELBASE = 2.20        # m
TRACK = 1.40            # m, front and rear
R_WHEEL = 0.30          # m
X_F = 1.32              # front axle x: CG 60 % of the wheelbase behind it (40/60 static split)
X_R = X_F - WHEELBASE   # rear axle x = -0.88
YW = TRACK / 2

M_CHASSIS = 330.0       # kg, sprung mass incl. 75 kg driver, engine and transmission
Z_CG = 0.45             # m, chassis CG height above ground
BOX = (3.0, 1.5, 1.1)   # m, equivalent uniform box for the chassis inertia
I_CHASSIS = [M_CHASSIS * (BOX[1] ** 2 + BOX[2] ** 2) / 12,
             M_CHASSIS * (BOX[0] ** 2 + BOX[2] ** 2) / 12,
             M_CHASSIS * (BOX[0] ** 2 + BOX[1] ** 2) / 12]

M_WHEEL, I_WHEEL = 12.0, [0.30, 0.50, 0.30]   # kg, kg m^2 (spin axis y)
M_LA, M_UA, M_UP, M_TR, M_RACK, M_RA = 2.5, 1.8, 4.0, 0.5, 2.0, 7.0

K_F, C_F, K_R, C_R = 1.4e4, 250.0, 1.6e4, 300.0

# front double wishbone, left side (y > 0); the right side is the mirror image y -> -y
LA_PIVOT = (X_F, 0.25, 0.20)     # lower arm hinge on the chassis, axis x
UA_PIVOT = (X_F, 0.30, 0.43)     # upper arm hinge, axis x (shorter arm: camber gain in bump)
LBJ = (X_F, 0.62, 0.18)          # lower ball joint
UBJ = (X_F, 0.58, 0.45)          # upper ball joint (kingpin inclination atan(0.04/0.27) = 8.4 deg)
X_T = X_F - 0.12                 # steering arm 0.12 m behind the axle (rear steer)
Z_T = 0.30
# tie-rod ends on the lines through the inner hinges and the ball joints (front view) at z = Z_T:
# the tie rod is then parallel to the arms' instant geometry -> near zero bump steer
TR_IN = (X_T, LA_PIVOT[1] + (Z_T - LA_PIVOT[2]) / (UA_PIVOT[2] - LA_PIVOT[2]) * (UA_PIVOT[1] - LA_PIVOT[1]), Z_T)
TR_OUT = (X_T, LBJ[1] + (Z_T - LBJ[2]) / (UBJ[2] - LBJ[2]) * (UBJ[1] - LBJ[1]), Z_T)
F_SPRING_TOP = (X_F, 0.40, 0.62)     # coil-over upper mount on the chassis
F_SPRING_BOT = (X_F, 0.52, 0.1946)   # coil-over lower mount on the lower arm

# rear semi-trailing arm, left side
ALPHA_ST = math.radians(15.0)    # semi-trailing angle of the hinge axis (0 = pure trailing arm)
RA_PIVOT = (X_R + 0.45, 0.30, 0.32)
RA_AXIS = (math.sin(ALPHA_ST), math.cos(ALPHA_ST), 0.0)
R_SPRING_TOP = (X_R + 0.10, 0.45, 0.72)
R_SPRING_BOT = (X_R + 0.10, 0.60, 0.30)

FRONT_POINT = (X_F + 0.40, 0.0, 0.50)  # "point 1" of López Varela et al. 2023, sec. 10.2.1: front of the chassis

# step_descent.json (López Varela et al. 2023: 1 cm step descent at 3 m/s), see README.md "step_descent"
K_TYRE, C_TYRE = 1.5e5, 300.0   # N/m, N s/m radial, per tyre
C_SLIP_X, C_SLIP_Y, MU = 3.0e4, 3.0e4, 0.9   # N/(m/s) slip stiffnesses, friction coefficient
V0 = 3.0                        # m/s, straight run
STEP_X, STEP_H, STEP_W = 5.5, -0.01, 0.02   # road step: position, height (down), smoothing width
T_END_SD = 4.5
# double_lane_change.json: ISO 3888-1 style course (entry, lane change, hold, return), open-loop rack
# h = 4 ms, not the papers' 10 ms: at 10 ms the wheels turn 0.33 rad per step and the natural
# coordinates' roll is 3e-3 off its converged value (joint coordinates: 4e-4); at 4 ms the two
# formulations' roll and gradients agree within 8e-4 (results/joint/formulations.md)
V_DLC, T_END_DLC, H_DLC = 10.0, 12.0, 4e-3   # m/s, s, s
DLC_ENTRY, DLC_CHANGE, DLC_HOLD, DLC_RETURN, DLC_OFFSET = 15.0, 30.0, 25.0, 25.0, 3.5   # m
DLC_TABLE_DT = 0.1              # s, samples of the rack travel (natural cubic spline between them)
RACK_PER_STEER = -0.12          # m of rack per rad of steer (steering arm 0.12 m behind the axle)
SLIP_DLC = (3.0e3, 4.0e3)  # N/(m/s): C_kappa / V = 3e4 N and C_alpha / V = 4e4 N/rad per tyre at 10 m/s
ZCG_BOUNDS = (-0.3, 0.8)        # m: brackets the roll axis height (near the ground for this geometry)
# stopping: design variables to 5 digits and objectives to 6; below that the objectives' noise
# from the Newton tolerance (about 1e-9 relative) steers the search
STOP = {"ftol_rel": 1e-6, "xtol_rel": 1e-5}
# the optimisation's starting design: a firm, heavily damped setup (k_f, c_f, k_r, c_r)
BASELINE = {"k_f": 2.5e4, "c_f": 2000.0, "k_r": 2.5e4, "c_r": 2000.0}


def mir(p, s):
    return [p[0], s * p[1], p[2]]


def sub(a, b):
    return [a[i] - b[i] for i in range(3)]


def r(v, n=10):
    return [round(x, n) + 0.0 for x in v]


def rod_inertia(m, a, b, rad=0.015):
    """Inertia tensor of a thin tube of mass m from a to b (radius rad), global = body axes."""
    d = sub(b, a)
    L = math.sqrt(sum(x * x for x in d))
    u = [x / L for x in d]
    It = m * (3 * rad * rad + L * L) / 12   # transverse
    Ia = m * rad * rad / 2                  # axial
    return [[round(It * (i == j) + (Ia - It) * u[i] * u[j], 8) + 0.0 for j in range(3)] for i in range(3)]


def plate_inertia(m, ly, lx, t=0.03):
    """A-arm as a thin plate spanning ly (lateral) by lx (longitudinal), thickness t."""
    return [round(m * (ly ** 2 + t ** 2) / 12, 6), round(m * (lx ** 2 + t ** 2) / 12, 6),
            round(m * (lx ** 2 + ly ** 2) / 12, 6)]


class Body:
    def __init__(self, name, mass, com_global, inertia, origin):
        self.name, self.origin = name, list(origin)
        self.d = {"name": name, "mass": mass, "com": r(sub(com_global, origin)), "inertia": inertia,
                  "position": r(origin), "orientation": [0, 0, 0], "markers": {}}

    def marker(self, mname, p_global, axis=None, ref=None):
        m = {"point": r(sub(p_global, self.origin))}
        if axis is not None:
            m["axis"] = r(axis)
        if ref is not None:
            m["ref"] = r(ref)
        self.d["markers"][mname] = m
        return self.name + "." + mname


def build(preload=None):
    """The model as a dict; preload = {spring name: spring force at the design pose} (none if None).
    Each spring's natural length is its design length and its constant force the preload, so the
    design pose stays the static equilibrium whatever the stiffness."""
    preload = preload or {}
    bodies, joints, forces, outputs = [], [], [], []
    unsprung = {}   # corner -> list of (body name, mass, com marker)
    springs = {}    # spring name -> (top, bottom) global points

    ch = Body("chassis", "$m_chassis", [0, 0, Z_CG], [round(x, 4) for x in I_CHASSIS], [0, 0, 0])
    ch.d["com"] = [0, 0, "$z_cg"]
    ch.marker("G", [0, 0, Z_CG])
    ch.marker("P1", FRONT_POINT)
    bodies.append(ch)

    # steering rack, prismatic along y, locked by a driver for now
    rack = Body("rack", M_RACK, [X_T, 0, Z_T], [0.0524, 0.001, 0.0524], [X_T, 0, Z_T])
    joints.append({"name": "rack_guide", "type": "prismatic",
                   "marker1": ch.marker("rack", [X_T, 0, Z_T], [0, 1, 0], [1, 0, 0]),
                   "marker2": rack.marker("slide", [X_T, 0, Z_T], [0, 1, 0], [1, 0, 0])})
    bodies.append(rack)

    def spin_and_spring(c, s, carrier, wheel, lower, top, bottom, axle, corner_bodies):
        """The wheel's spin joint on its carrier and the corner's spring-damper (chassis to the
        lower member), with the wheel centre wc; records the unsprung masses."""
        wc = wheel.origin
        joints.append({"name": "spin_" + c, "type": "revolute",
                       "marker1": carrier.marker("hub", wc, [0, s, 0], [1, 0, 0]),
                       "marker2": wheel.marker("hub", wc, [0, s, 0], [1, 0, 0])})
        sp = "spring_" + c
        springs[sp] = (mir(top, s), mir(bottom, s))
        length = math.dist(*springs[sp])
        forces.append({"name": sp, "type": "spring",
                       "marker1": ch.marker("S_" + c, mir(top, s)),
                       "marker2": lower.marker("S", mir(bottom, s)),
                       "stiffness": "$k_" + axle, "damping": "$c_" + axle,
                       "natural_length": round(length, 9), "force": round(preload.get(sp, 0.0), 4)})
        unsprung[c] = [(b.name, b.d["mass"]) for b in corner_bodies]
        bodies.extend(corner_bodies)

    for side, s in (("l", 1), ("r", -1)):
        c = "f" + side
        wc = [X_F, s * YW, R_WHEEL]
        la = Body("LA_" + c, M_LA, [X_F, s * (LA_PIVOT[1] + (LBJ[1] - LA_PIVOT[1]) / 3), 0.193],
                  plate_inertia(M_LA, LBJ[1] - LA_PIVOT[1], 0.30), mir(LA_PIVOT, s))
        ua = Body("UA_" + c, M_UA, [X_F, s * (UA_PIVOT[1] + (UBJ[1] - UA_PIVOT[1]) / 3), 0.437],
                  plate_inertia(M_UA, UBJ[1] - UA_PIVOT[1], 0.25), mir(UA_PIVOT, s))
        up = Body("UP_" + c, M_UP, [X_F, s * 0.62, 0.30], [0.025, 0.02, 0.012], [X_F, s * 0.62, 0.30])
        tr = Body("TR_" + c, M_TR, [(a + b) / 2 for a, b in zip(mir(TR_IN, s), mir(TR_OUT, s))],
                  rod_inertia(M_TR, TR_IN, TR_OUT), mir(TR_IN, s))
        wh = Body("W_" + c, M_WHEEL, wc, I_WHEEL, wc)
        for b in (la, ua, up, tr, wh):
            b.marker("G", [b.origin[i] + b.d["com"][i] for i in range(3)])
        joints += [
            {"name": "LA_hinge_" + c, "type": "revolute",
             "marker1": ch.marker("LA_" + c, mir(LA_PIVOT, s), [1, 0, 0], [0, s, 0]),
             "marker2": la.marker("hinge", mir(LA_PIVOT, s), [1, 0, 0], [0, s, 0])},
            {"name": "UA_hinge_" + c, "type": "revolute",
             "marker1": ch.marker("UA_" + c, mir(UA_PIVOT, s), [1, 0, 0], [0, s, 0]),
             "marker2": ua.marker("hinge", mir(UA_PIVOT, s), [1, 0, 0], [0, s, 0])},
            {"name": "LBJ_" + c, "type": "spherical",
             "marker1": la.marker("BJ", mir(LBJ, s)), "marker2": up.marker("LBJ", mir(LBJ, s))},
            {"name": "UBJ_" + c, "type": "spherical",
             "marker1": ua.marker("BJ", mir(UBJ, s)), "marker2": up.marker("UBJ", mir(UBJ, s))},
            # tie rod: universal at the rack (cross axes z on the rack, x on the rod: both
            # perpendicular to the rod, so the rod cannot spin), spherical at the steering arm
            {"name": "TR_inner_" + c, "type": "universal",
             "marker1": rack.marker("end_" + side, mir(TR_IN, s), [0, 0, 1]),
             "marker2": tr.marker("in", mir(TR_IN, s), [1, 0, 0])},
            {"name": "TR_outer_" + c, "type": "spherical",
             "marker1": tr.marker("out", mir(TR_OUT, s)), "marker2": up.marker("arm", mir(TR_OUT, s))},
        ]
        spin_and_spring(c, s, up, wh, la, F_SPRING_TOP, F_SPRING_BOT, "f", (la, ua, up, tr, wh))

    for side, s in (("l", 1), ("r", -1)):
        c = "r" + side
        wc = [X_R, s * YW, R_WHEEL]
        ra_axis = [RA_AXIS[0], s * RA_AXIS[1], 0]
        ref = [-RA_AXIS[1], s * RA_AXIS[0], 0]   # horizontal, perpendicular to the hinge axis
        com = [X_R + 0.15, s * 0.57, 0.31]
        ra = Body("RA_" + c, M_RA, com, [0.12, 0.10, 0.20], mir(RA_PIVOT, s))
        wh = Body("W_" + c, M_WHEEL, wc, I_WHEEL, wc)
        for b in (ra, wh):
            b.marker("G", [b.origin[i] + b.d["com"][i] for i in range(3)])
        joints += [
            {"name": "RA_hinge_" + c, "type": "revolute",
             "marker1": ch.marker("RA_" + c, mir(RA_PIVOT, s), ra_axis, ref),
             "marker2": ra.marker("hinge", mir(RA_PIVOT, s), ra_axis, ref)},
        ]
        spin_and_spring(c, s, ra, wh, ra, R_SPRING_TOP, R_SPRING_BOT, "r", (ra, wh))

    design_len = {k: math.dist(*v) for k, v in springs.items()}
    params = {"m_chassis": M_CHASSIS, "z_cg": Z_CG, "k_f": K_F, "c_f": C_F, "k_r": K_R, "c_r": C_R}

    outputs = [
        {"name": "chassis_pos", "type": "position", "marker": "chassis.G"},
        {"name": "chassis_angles", "type": "angles", "body": "chassis"},
        {"name": "chassis_omega", "type": "angular_velocity", "body": "chassis"},
        {"name": "front_pos", "type": "position", "marker": "chassis.P1"},
        {"name": "front_acc", "type": "acceleration", "marker": "chassis.P1"},
    ]
    for c in ("fl", "fr", "rl", "rr"):
        outputs.append({"name": "wheel_" + c, "type": "position", "marker": "W_" + c + ".hub"})
    for c in ("fl", "fr", "rl", "rr"):
        outputs.append({"name": "len_" + c, "type": "spring_length", "force": "spring_" + c})
    for c in ("fl", "fr", "rl", "rr"):
        outputs.append({"name": "fs_" + c, "type": "spring_force", "force": "spring_" + c})
    outputs.append({"name": "E", "type": "total_energy"})

    model = {
        "name": "light off-road buggy",
        "dimension": 3,
        "gravity": [0, 0, -G],
        "parameters": params,
        "bodies": [b.d for b in bodies],
        "joints": joints,
        "forces": forces,
        "drivers": [{"name": "steering", "joint": "rack_guide", "function": 0}],
        "outputs": outputs,
        "simulation": {"t_end": 1.0, "step": 1e-3, "penalty": 1e11},
    }
    return model, unsprung, springs, design_len


def total_mass_and_cg_x(model):
    m = mx = 0.0
    for b in model["bodies"]:
        mass = M_CHASSIS if b["mass"] == "$m_chassis" else b["mass"]
        m += mass
        mx += mass * (b["position"][0] + b["com"][0])
    return m, mx / m


def welded(model):
    """Copy with the chassis welded to the ground: the chassis markers become ground markers.

    (A "fixed" joint between the chassis and the ground was tried first; the assembly then
    reported a rank deficiency of 2, see README.md, so the chassis is replaced by the ground.)
    """
    w = copy.deepcopy(model)
    chassis = w["bodies"].pop(0)
    w["ground"] = {"markers": chassis["markers"]}   # chassis frame = global frame in the design pose

    def fix(ref):
        return "ground." + ref.split(".", 1)[1] if ref.startswith("chassis.") else ref
    for item in w["joints"] + w["forces"]:
        for key in ("marker1", "marker2"):
            if key in item:
                item[key] = fix(item[key])
    w["outputs"] = [o for o in w["outputs"] if "chassis" not in json.dumps(o)]
    w["parameters"] = {k: v for k, v in w["parameters"].items() if k not in ("m_chassis", "z_cg")}
    return w


def wheel_loads(model):
    m, xg = total_mass_and_cg_x(model)
    front = m * G * (xg - X_R) / WHEELBASE / 2
    rear = m * G * (X_F - xg) / WHEELBASE / 2
    return m, xg, {"fl": front, "fr": front, "rl": rear, "rr": rear}


def with_wheel_loads(model, loads):
    w = copy.deepcopy(model)
    for c, f in loads.items():
        w["forces"].append({"name": "road_" + c, "type": "force", "marker": "W_" + c + ".hub",
                            "value": [0, 0, round(f, 6)]})
    return w


def run_csv(mbopt, spec, path_json, path_csv, extra=()):
    with open(path_json, "w") as f:
        json.dump(spec, f, indent=1)
    subprocess.run([mbopt, "simulate", path_json, "--csv", path_csv, "--quiet", *extra],
                   check=True, stdout=subprocess.DEVNULL)
    with open(path_csv) as f:
        rows = list(csv.reader(f))
    return rows[0], [float(x) for x in rows[1]]


def spring_preloads(mbopt, tmp):
    """Virtual-power balance per corner from a driven kinematic run of the welded copy."""
    model, unsprung, springs, design_len = build()
    m_tot, xg, loads = wheel_loads(model)
    w = welded(model)
    drv = []
    for c in ("fl", "fr"):
        drv.append({"name": "bump_" + c, "joint": "LA_hinge_" + c, "function": {"polynomial": [0, 1]}})
    for c in ("rl", "rr"):
        drv.append({"name": "bump_" + c, "joint": "RA_hinge_" + c, "function": {"polynomial": [0, 1]}})
    w["drivers"] += drv
    w["gravity"] = [0, 0, 0]
    outs = []
    for c, bl in unsprung.items():
        for name, _ in bl:
            outs.append({"name": "v_" + name, "type": "velocity", "marker": name + ".G", "component": "z"})
        outs.append({"name": "vw_" + c, "type": "velocity", "marker": "W_" + c + ".hub", "component": "z"})
        outs.append({"name": "vs_" + c, "type": "velocity",
                     "marker": [f["marker2"] for f in w["forces"] if f["name"] == "spring_" + c][0]})
    w["outputs"] = outs
    w["simulation"] = {"t_end": 1e-3, "step": 1e-3}
    head, row = run_csv(mbopt, w, os.path.join(tmp, "buggy_mr.json"), os.path.join(tmp, "buggy_mr.csv"))
    val = dict(zip(head, row))
    preload, info = {}, {}
    for c, bl in unsprung.items():
        top, bot = springs["spring_" + c]
        L = design_len["spring_" + c]
        e = [(bot[i] - top[i]) / L for i in range(3)]
        ldot = sum(val["vs_%s.%s" % (c, a)] * e[i] for i, a in enumerate("xyz"))
        zw = val["vw_" + c]
        gpow = G * sum(mass * val["v_" + name] for name, mass in bl)
        f = (loads[c] * zw - gpow) / ldot          # spring tension at the design pose
        preload["spring_" + c] = f
        info[c] = {"motion_ratio": ldot / zw, "wheel_load": loads[c], "spring_force": f,
                   "length": L, "unsprung_mass": sum(mass for _, mass in bl)}
    return preload, info, m_tot, xg


def inline(model, names):
    """A copy of model with the parameters `names` replaced by their values (plain numbers)."""
    values = {"$" + n: model["parameters"][n] for n in names}

    def walk(x):
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v) for v in x]
        return values.get(x, x) if isinstance(x, str) else x
    out = walk(model)
    out["parameters"] = {k: v for k, v in model["parameters"].items() if k not in names}
    return out


def on_tyres(model, name, v0, road, slip):
    """The buggy on four tyres, rolling straight ahead at v0 (m/s) at t = 0.

    The initial pose is the static equilibrium on the tyres ("initial": {"equilibrium": true}):
    mbopt lowers the car from the design pose until the tyre forces carry it (the springs keep
    about their design lengths, where they already carry the wheel loads). The tyres carry no
    force along the road at rest, so where the car stands is held: the chassis CoM's x and y and
    the front point's y (the yaw). All 14 rates are
    prescribed (an unprescribed rate is not zero but whatever the velocity assembly makes of it):
    chassis translation (3), pitch, yaw and roll rates through P1 z, P1 y and the left front
    spring mount z; suspension travel rates; spins v0 / R_WHEEL.
    The sensitivity parameters are k_f, c_f, k_r, c_r and m_chassis (z_cg is inlined).
    """
    sd = inline(model, ["z_cg"])
    sd["name"] = name
    for c, s in (("fl", 1), ("fr", -1), ("rl", 1), ("rr", -1)):
        tyre = {"name": "tyre_" + c, "type": "tyre", "wheel": "W_" + c + ".hub",
                "radius": R_WHEEL, "stiffness": K_TYRE, "damping": C_TYRE,
                "slip": {"longitudinal": slip[0], "lateral": slip[1], "friction": MU}}
        if road:
            tyre["road"] = road
        sd["forces"].append(tyre)
    init = [{"marker": "chassis.G", "component": "x", "value": 0, "rate": v0},
            {"marker": "chassis.G", "component": "y", "value": 0, "rate": 0},
            {"marker": "chassis.G", "component": "z", "rate": 0},
            {"marker": "chassis.P1", "component": "z", "rate": 0},
            {"marker": "chassis.P1", "component": "y", "value": 0, "rate": 0},
            {"marker": "chassis.S_fl", "component": "z", "rate": 0}]
    for c in ("fl", "fr", "rl", "rr"):
        init.append({"marker": "W_" + c + ".hub", "component": "z", "rate": 0})
    for c, s in (("fl", 1), ("fr", -1), ("rl", 1), ("rr", -1)):
        # the spin joint's axis is (0, s, 0): rolling forward needs +v0/R about +y
        init.append({"joint": "spin_" + c, "rate": round(s * v0 / R_WHEEL, 9)})
    sd["initial"] = {"equilibrium": True, "coordinates": init}
    return sd


def step_descent(model):
    """Straight run at V0 over a 1 cm step down at x = STEP_X; comfort objective."""
    sd = on_tyres(model, "buggy on tyres: 1 cm step descent at 3 m/s",
                  V0, {"step": {"x": STEP_X, "height": STEP_H, "width": STEP_W}}, (C_SLIP_X, C_SLIP_Y))
    sd["outputs"].append({"name": "wheel_fl_omega", "type": "angular_velocity", "body": "W_fl"})
    sd["outputs"].append({"name": "wheel_fr_omega", "type": "angular_velocity", "body": "W_fr"})
    sd["functionals"] = [{"name": "comfort", "integral": [{"output": "front_acc.z"}]}]
    sd["optimization"] = {
        "parameters": {k: {"lower": 10, "upper": 1e5, "initial": v} for k, v in BASELINE.items()},
        "objective": "comfort", "algorithm": "lbfgs", **STOP, "maxeval": 40}
    sd["sensitivity"] = "adjoint"
    sd["simulation"] = dict(model["simulation"], t_end=T_END_SD)
    return sd


def lane_change_offset(x):
    """Lateral offset (m) of the path at distance x (m) along the ISO 3888-1 style course: each
    change follows y = A (u - sin(2 pi u) / (2 pi)), u the fraction of the change, whose curvature
    starts and ends at zero."""
    def change(x, x0, length):
        u = min(max((x - x0) / length, 0.0), 1.0)
        return u - math.sin(2 * math.pi * u) / (2 * math.pi)
    x1, x2 = DLC_ENTRY, DLC_ENTRY + DLC_CHANGE + DLC_HOLD
    return DLC_OFFSET * (change(x, x1, DLC_CHANGE) - change(x, x2, DLC_RETURN))


def lane_change_rack(t):
    """Rack travel (m) at time t: the kinematic (Ackermann, no slip) steer angle of the path's
    curvature at x = V_DLC t, delta = wheelbase * y''(x), through the steering arm:
    rack = RACK_PER_STEER * delta."""
    dx = 1e-3
    x = V_DLC * t
    curvature = (lane_change_offset(x + dx) - 2 * lane_change_offset(x) + lane_change_offset(x - dx)) / dx ** 2
    return RACK_PER_STEER * WHEELBASE * curvature


def double_lane_change(model):
    """ISO 3888-1 style double lane change at V_DLC with the rack driven open loop; roll objective."""
    sd = on_tyres(model, "buggy on tyres: double lane change at 10 m/s", V_DLC, None, SLIP_DLC)
    times = [round(i * DLC_TABLE_DT, 6) for i in range(int(round(T_END_DLC / DLC_TABLE_DT)) + 1)]
    rack = [round(lane_change_rack(t), 9) for t in times]
    for drv in sd["drivers"]:
        if drv["name"] == "steering":
            drv["function"] = {"table": {"t": times, "values": rack}}
    sd["outputs"].append({"name": "rack", "type": "joint", "joint": "rack_guide"})
    # roll rate: about the chassis's own x axis (the yaw angle reaches about 16 degrees)
    sd["outputs"].append({"name": "roll_rate", "type": "angular_velocity_body", "body": "chassis",
                          "component": "x"})
    sd["functionals"] = [{"name": "roll", "integral": [{"output": "roll_rate"}]}]
    sd["optimization"] = {
        "parameters": {k: {"lower": 10, "upper": 1e5} for k in ("k_f", "c_f", "k_r", "c_r")},
        "objective": "roll", "algorithm": "lbfgs", **STOP, "maxeval": 40}
    sd["sensitivity"] = "adjoint"
    sd["simulation"] = dict(model["simulation"], t_end=T_END_DLC, step=H_DLC)
    return sd


def cg_height(dlc):
    """The double lane change with the chassis centre-of-mass height as the design variable."""
    sd = copy.deepcopy(dlc)
    sd["name"] = "buggy: chassis CoM height for the double lane change"
    sd["parameters"] = dict(sd["parameters"], z_cg=Z_CG)
    sd["bodies"][0]["com"] = [0, 0, "$z_cg"]
    sd["optimization"] = {"parameters": {"z_cg": {"lower": ZCG_BOUNDS[0], "upper": ZCG_BOUNDS[1]}},
                          "objective": "roll", "algorithm": "lbfgs", **STOP, "maxeval": 30}
    return sd


def main():
    args = sys.argv[1:]
    checks = None
    if "--checks" in args:
        i = args.index("--checks")
        checks = args[i + 1]
        del args[i:i + 2]
    mbopt = args[0] if args else "build/mbopt"
    tmp = checks or tempfile.gettempdir()
    preload, info, m_tot, xg = spring_preloads(mbopt, tmp)
    model, *_ = build(preload)
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "buggy.json"), "w") as f:
        json.dump(model, f, indent=1)
        f.write("\n")
    sd = step_descent(model)
    dlc = double_lane_change(model)
    for name, spec in (("step_descent", sd), ("double_lane_change", dlc), ("cg_height", cg_height(dlc))):
        with open(os.path.join(here, name + ".json"), "w") as f:
            json.dump(spec, f, indent=1)
            f.write("\n")
    print("total mass %.2f kg, CG x %.4f m (front axle x %.2f, rear %.2f)" % (m_tot, xg, X_F, X_R))
    for c, d in info.items():
        print("%s: motion ratio dl/dz %.4f, wheel load %.1f N, unsprung %.1f kg, spring force %.1f N, "
              "length %.5f m" % (c, d["motion_ratio"], d["wheel_load"], d["unsprung_mass"],
                               d["spring_force"], d["length"]))
    if checks:
        _, _, loads = wheel_loads(model)
        w = welded(model)
        for name, spec in (("buggy_welded_loaded", with_wheel_loads(w, loads)),
                           ("buggy_welded_hanging", w),
                           ("buggy_free_loaded", with_wheel_loads(model, loads))):
            with open(os.path.join(checks, name + ".json"), "w") as f:
                json.dump(spec, f, indent=1)
        print("check variants written to", checks)


if __name__ == "__main__":
    main()
