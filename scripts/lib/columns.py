"""Units and targets of the output columns of a model, for plots.

    python3 scripts/lib/columns.py SPEC COLUMN ...

prints one line per column: the column, its unit (from the output's type; "-" when it has none)
and its targets, tab-separated ("-" when none): the constant references of the functionals'
squared_error and smooth_abs terms on it (0 without one), and the constant reference of a
controller whose error is that one column (the setpoint r / w of e = r - w s).
"""
import json
import sys

UNITS = {"position": "m", "velocity": "m/s", "acceleration": "m/s^2",
         "angular_velocity": "rad/s", "angular_velocity_body": "rad/s", "angles": "rad",
         "spring_length": "m", "spring_force": "N", "kinetic_energy": "J", "gravity_energy": "J",
         "elastic_energy": "J", "total_energy": "J"}


def coordinate_unit(model, output, rate):
    """rad or m for a joint coordinate (rad/s or m/s for its rate)."""
    joint = next((j for j in model.get("joints", []) if j["name"] == output.get("joint")), {})
    coord = output.get("coordinate") or {"prismatic": "translation"}.get(joint.get("type"), "angle")
    unit = "m" if coord == "translation" else "rad"
    return unit + "/s" if rate else unit


def unit(model, output):
    kind = output["type"]
    if kind in UNITS:
        return UNITS[kind]
    if kind in ("joint", "joint_rate"):
        return coordinate_unit(model, output, kind == "joint_rate")
    if kind == "control":
        ctrl = next((c for c in model.get("controllers", []) if c["name"] == output["controller"]), {})
        return "N m" if ctrl.get("actuator", {}).get("type") == "torque" else "N"
    return "-"


def number(model, value):
    """A constant reference: a number, or a parameter's value; None for a time function."""
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and value.startswith("$") and value[1:] in model.get("parameters", {}):
        v = model["parameters"][value[1:]]
        return float(v) if isinstance(v, (int, float)) else None
    return None


def main():
    model = json.load(open(sys.argv[1]))
    outputs = {o["name"]: o for o in model.get("outputs", [])}
    targets = {}
    for f in model.get("functionals", []):
        for term in f.get("integral", []) + f.get("final", []):
            if term.get("shape", "squared_error") == "value":
                continue
            r = number(model, term.get("reference", 0))
            if r is not None:
                targets.setdefault(term["output"], set()).add(r)
    for c in model.get("controllers", []):
        terms = c.get("error", [])
        r = number(model, c.get("reference", 0))
        if len(terms) == 1 and r is not None:
            w = number(model, terms[0].get("weight", 1))
            if w:
                targets.setdefault(terms[0]["output"], set()).add(r / w)
    for column in sys.argv[2:]:
        output = outputs.get(column) or outputs.get(column.split(".")[0])
        u = unit(model, output) if output else "-"
        t = ",".join("%.15g" % r for r in sorted(targets.get(column, ()))) or "-"
        print("%s\t%s\t%s" % (column, u, t))


if __name__ == "__main__":
    main()
