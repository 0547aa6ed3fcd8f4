"""The Python package against the command line (an independent path to the same library, whose
own tests check the numbers against the benchmark) and against SciPy's optimiser."""
import json
import os
import subprocess

import numpy as np
import pytest
from scipy.optimize import minimize

import mbopt

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
COMMAND = os.environ.get("MBOPT_COMMAND", os.path.join(ROOT, "build", "mbopt"))


def spec(name):
    return os.path.join(ROOT, "problems", name)


def command_json(*args):
    out = subprocess.run([COMMAND, *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def test_fivebar_gradient_equals_the_command_line():
    ours = mbopt.load(spec("fivebar.json")).gradient()
    theirs = command_json("gradient", spec("fivebar.json"))
    assert ours["parameters"] == theirs["parameters"]
    assert ours["method"] == theirs["method"] == "adjoint"
    for a, b in zip(ours["functionals"], theirs["functionals"]):
        assert a["name"] == b["name"]
        assert a["value"] == b["value"]  # the JSON's numbers read back to the same doubles
        assert isinstance(a["gradient"], np.ndarray)
        assert a["gradient"].tolist() == b["gradient"]
    # the module's function takes a path as well; the forward method agrees to 1e-8 of each
    # row's largest entry (the five-bar's methods differ by about 1e-9 there)
    forward = mbopt.gradient(spec("fivebar.json"), method="forward")
    assert forward["method"] == "forward"
    for a, b in zip(ours["functionals"], forward["functionals"]):
        scale = np.max(np.abs(b["gradient"]))
        assert np.allclose(a["gradient"], b["gradient"], rtol=0, atol=1e-8 * scale)


def test_simulate_outputs_and_functionals():
    model = mbopt.load(spec("fivebar.json"))
    out = model.simulate(interval=0.5)
    assert out["t"].tolist() == [0.5 * i for i in range(11)]
    assert set(out) >= {"t", "x1", "y1", "x2", "y2", "functionals"}
    theirs = command_json("simulate", spec("fivebar.json"))
    assert out["functionals"] == theirs["functionals"]


def test_joint_coordinates_simulate_as_the_command_line(tmp_path):
    # a model with "formulation": "joint" runs in joint coordinates through the package too: the
    # same psi as `mbopt simulate --formulation joint`, the published five-bar objectives
    with open(spec("fivebar.json")) as f:
        model = json.load(f)
    model["simulation"]["formulation"] = "joint"
    path = tmp_path / "fivebar_joint.json"
    path.write_text(json.dumps(model))
    out = mbopt.load(str(path)).simulate(interval=0.5)
    theirs = command_json("simulate", spec("fivebar.json"), "--formulation", "joint")
    assert theirs["formulation"] == "joint" and theirs["coordinates"] == 4
    assert out["functionals"] == theirs["functionals"]
    published = [0.726877, 7.34229, 304.921]
    for value, ref in zip(out["functionals"].values(), published):
        assert abs(value - ref) <= 1e-5 * abs(ref)
    # gradients in joint coordinates as the command line gives them, by both methods
    for method in ("forward", "adjoint"):
        ours = mbopt.load(str(path)).set_span(t_end=0.5).gradient(method)
        theirs = command_json("gradient", str(path), "--t-end", "0.5", "--method", method)
        assert ours["method"] == method
        assert [list(f["gradient"]) for f in ours["functionals"]] == [
            list(f["gradient"]) for f in theirs["functionals"]]


def test_parameters_settings_and_rules():
    model = mbopt.load(spec("fivebar.json"))
    assert model.parameters["m_A1"] == 1.0
    assert model.settings == {"t_end": 5.0, "step": 0.001}
    model.set(m_A1=1.5).set_span(t_end=1.0)
    assert model.parameters["m_A1"] == 1.5 and model.settings["t_end"] == 1.0
    with pytest.raises(mbopt.Error, match=r'parameter "m_A1" = 0: bodies\[0\].mass must be > 0'):
        model.set(m_A1=0)
    with pytest.raises(mbopt.Error, match='no parameter "mass"'):
        model.set(mass=1)


def test_bad_spec_raises_with_path_and_reason():
    bad = os.path.join(ROOT, "tests", "models", "bad", "mass_string.json")
    with pytest.raises(mbopt.Error, match=r"mass_string.json: bodies\[0\].mass: expression"):
        mbopt.load(bad)
    with pytest.raises(mbopt.Error, match="no_such_file.json"):
        mbopt.load("no_such_file.json")


def test_scipy_minimize_reaches_the_optimum_of_mbopt_optimize(tmp_path):
    model = mbopt.load(spec("fivebar_springs.json"))
    names = list(model.parameters)

    def value_and_gradient(x):
        model.set(**dict(zip(names, x)))
        g = model.gradient()["functionals"][0]
        return g["value"], g["gradient"]

    x0 = np.array([model.parameters[n] for n in names])
    result = minimize(value_and_gradient, x0, jac=True, method="L-BFGS-B",
                      options={"ftol": 1e-30, "gtol": 1e-14})
    subprocess.run([COMMAND, "optimize", spec("fivebar_springs.json"), "--out",
                    str(tmp_path / "o"), "--quiet"], check=True, capture_output=True)
    theirs = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert result.fun < 1e-12
    assert np.allclose(result.x, theirs["x"], rtol=1e-6, atol=0)


def test_optimize_with_an_observer():
    seen = []
    model = mbopt.load(spec("fivebar_springs.json"))
    result = model.optimize(observer=lambda i, x, f, grad, failed: seen.append((i, x, f)))
    assert result["status"] == "converged" and result["evaluations"] == len(seen) == 9
    assert [i for i, _, _ in seen] == list(range(1, 10))
    assert result["x"] == dict(zip(["Ls1", "Ls2"], seen[-1][1].tolist()))
    assert model.parameters["Ls1"] == result["x"]["Ls1"]
    with pytest.raises(mbopt.Error, match="optimization: missing"):
        mbopt.optimize(spec("fivebar.json"))
    with pytest.raises(mbopt.Error, match="method: expected auto, forward or adjoint"):
        mbopt.gradient(model, method="backward")


def test_an_observer_error_is_raised():
    def fails(*args):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        mbopt.load(spec("fivebar_springs.json")).optimize(observer=fails)
