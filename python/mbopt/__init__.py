"""mbopt from Python: load a model or spec, simulate it, take exact gradients of its functionals
and optimise it, over the shared library libmbopt (ctypes; NumPy arrays).

    import mbopt
    model = mbopt.load("problems/fivebar.json")
    model.parameters                  # {"Ls1": 2.236..., ...}
    out = model.simulate()            # {"t": array, "x1": array, ...}
    g = model.gradient()              # as `mbopt gradient --json`: gradients as arrays
    r = model.optimize(observer=print)

Every failure raises mbopt.Error with the library's one-line message.
"""
import ctypes
import os

import numpy as np

__all__ = ["Error", "Model", "gradient", "load", "optimize", "simulate", "version"]

_MESSAGE = 1024


class Error(Exception):
    """A failure of the library: its one-line message (file, place and reason)."""


def _find_library():
    """libmbopt.so: $MBOPT_LIBRARY, else beside an installed package (PREFIX/lib), else the
    build folder of a source tree (build/)."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.environ.get("MBOPT_LIBRARY", "")]
    candidates += [os.path.join(here, *[".."] * 3, name) for name in ("libmbopt.so.0", "libmbopt.so")]
    candidates += [os.path.join(here, "..", "..", "build", "libmbopt.so")]
    for path in candidates:
        if path and os.path.exists(path):
            return ctypes.CDLL(os.path.abspath(path))
    raise ImportError("mbopt: libmbopt.so not found (set MBOPT_LIBRARY to its path)")


_lib = _find_library()
_c_double_p = ctypes.POINTER(ctypes.c_double)
_OBSERVER = ctypes.CFUNCTYPE(None, ctypes.c_int, _c_double_p, ctypes.c_int, ctypes.c_double,
                             ctypes.c_int, ctypes.c_int, ctypes.c_void_p)


def _declare(name, restype, *argtypes):
    f = getattr(_lib, name)
    f.restype, f.argtypes = restype, list(argtypes)
    return f


_P, _S, _I, _D = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_double
_version = _declare("mb_version", _S)
_open = _declare("mb_binding_open", _P, _S, _S, ctypes.c_size_t)
_close = _declare("mb_binding_close", None, _P)
_param_count = _declare("mb_binding_parameter_count", _I, _P)
_param_name = _declare("mb_binding_parameter_name", _S, _P, _I)
_param_value = _declare("mb_binding_parameter_value", _D, _P, _I)
_functional_count = _declare("mb_binding_functional_count", _I, _P)
_functional_name = _declare("mb_binding_functional_name", _S, _P, _I)
_t_end = _declare("mb_binding_t_end", _D, _P)
_step = _declare("mb_binding_step", _D, _P)
_design_count = _declare("mb_binding_design_count", _I, _P)
_design_name = _declare("mb_binding_design_name", _S, _P, _I)
_set_parameter = _declare("mb_binding_set_parameter", _I, _P, _S, _D, _S, ctypes.c_size_t)
_set_span = _declare("mb_binding_set_span", _I, _P, _D, _D, _S, ctypes.c_size_t)
_simulate = _declare("mb_binding_simulate", _I, _P, _D, ctypes.POINTER(_c_double_p),
                     ctypes.POINTER(_I), ctypes.POINTER(_I), ctypes.POINTER(ctypes.c_void_p),
                     _c_double_p, _S, ctypes.c_size_t)
_gradient = _declare("mb_binding_gradient", _I, _P, _I, _c_double_p, _c_double_p, _S, _S, _S,
                     ctypes.c_size_t)
_optimize = _declare("mb_binding_optimize", _I, _P, _S, _OBSERVER, ctypes.c_void_p, _c_double_p,
                     _S, ctypes.POINTER(_D), ctypes.POINTER(_I), _S, ctypes.c_size_t)
_free = _declare("mb_binding_free", None, ctypes.c_void_p)

_METHODS = {"auto": 0, "forward": 1, "adjoint": 2}


def version():
    """The library's version, "MAJOR.MINOR.PATCH"."""
    return _version().decode()


def _check(status, message):
    if status < 0:
        raise Error(message.value.decode(errors="replace"))


class Model:
    """A model or spec loaded from JSON, with its parameters and settings."""

    def __init__(self, path):
        message = ctypes.create_string_buffer(_MESSAGE)
        self._handle = _open(os.fsencode(path), message, _MESSAGE)
        if not self._handle:
            raise Error(message.value.decode(errors="replace"))
        self.path = path

    def __del__(self):
        if getattr(self, "_handle", None):
            _close(self._handle)
            self._handle = None

    @property
    def parameters(self):
        """{name: value} of every parameter (each element of a vector parameter is one)."""
        h = self._handle
        return {_param_name(h, k).decode(): _param_value(h, k) for k in range(_param_count(h))}

    @property
    def functionals(self):
        h = self._handle
        return [_functional_name(h, f).decode() for f in range(_functional_count(h))]

    @property
    def settings(self):
        return {"t_end": _t_end(self._handle), "step": _step(self._handle)}

    def set(self, **values):
        """Sets parameters by name, each checked against the rules of the fields it sets."""
        message = ctypes.create_string_buffer(_MESSAGE)
        for name, value in values.items():
            _check(_set_parameter(self._handle, name.encode(), float(value), message, _MESSAGE),
                   message)
        return self

    def set_span(self, t_end=0.0, step=0.0):
        """The time span and step of the runs (values <= 0 keep the model's)."""
        message = ctypes.create_string_buffer(_MESSAGE)
        _check(_set_span(self._handle, float(t_end), float(step), message, _MESSAGE), message)
        return self

    def simulate(self, interval=0.0):
        """Simulates the model: {"t": times, output name: values, ...} as arrays (a row every
        `interval` seconds, every step when 0), and "functionals": {name: value}."""
        table, names = _c_double_p(), ctypes.c_void_p()
        rows, columns = _I(), _I()
        psi = np.zeros(max(1, _functional_count(self._handle)))
        message = ctypes.create_string_buffer(_MESSAGE)
        status = _simulate(self._handle, float(interval), ctypes.byref(table), ctypes.byref(rows),
                           ctypes.byref(columns), ctypes.byref(names),
                           psi.ctypes.data_as(_c_double_p), message, _MESSAGE)
        _check(status, message)
        try:
            width = columns.value + 1
            values = np.ctypeslib.as_array(table, shape=(rows.value, width)).copy()
            labels = ctypes.string_at(names).decode().split("\n")[:width]
        finally:
            _free(table)
            _free(names)
        result = {label: values[:, c] for c, label in enumerate(labels)}
        result["functionals"] = dict(zip(self.functionals, psi.tolist()))
        return result

    def gradient(self, method="auto"):
        """The functionals and their exact gradients with respect to every parameter, as
        `mbopt gradient --json` prints them: {"parameters": [...], "functionals": [{"name",
        "value", "gradient"}], "method", "reason"}, each gradient an array."""
        if method not in _METHODS:
            raise Error("method: expected auto, forward or adjoint, got %r" % (method,))
        names, functionals = list(self.parameters), self.functionals
        psi = np.zeros(max(1, len(functionals)))
        grad = np.zeros(max(1, len(functionals) * len(names)))
        ran, reason = ctypes.create_string_buffer(16), ctypes.create_string_buffer(256)
        message = ctypes.create_string_buffer(_MESSAGE)
        status = _gradient(self._handle, _METHODS[method], psi.ctypes.data_as(_c_double_p),
                           grad.ctypes.data_as(_c_double_p), ran, reason, message, _MESSAGE)
        _check(status, message)
        rows = grad[: len(functionals) * len(names)].reshape(len(functionals), len(names))
        return {"parameters": names,
                "functionals": [{"name": n, "value": psi[f], "gradient": rows[f].copy()}
                                for f, n in enumerate(functionals)],
                "method": ran.value.decode(), "reason": reason.value.decode()}

    def optimize(self, algorithm=None, observer=None):
        """Runs the spec's optimisation (its algorithm, or the one named); observer(index, x,
        objective, with_gradient, failed) is called per evaluation. Returns {"algorithm",
        "status", "message", "objective", "evaluations", "x": {name: value}}; the model's
        parameters hold the best point afterwards."""
        h = self._handle
        nvar = _design_count(h)
        if nvar == 0:
            raise Error("%s: optimization: missing (the spec needs an \"optimization\" section "
                        "with parameters and an objective)" % self.path)
        design = [_design_name(h, v).decode() for v in range(nvar)]
        failure = []

        def relay(index, x, n, objective, with_gradient, failed, user):
            try:
                observer(index, np.ctypeslib.as_array(x, shape=(n,)).copy(), objective,
                         bool(with_gradient), bool(failed))
            except Exception as e:  # raised again once the C run has returned
                failure.append(e)

        callback = _OBSERVER(relay if observer else 0)
        x = np.zeros(nvar)
        status, objective = ctypes.create_string_buffer(32), _D()
        evaluations = _I()
        message = ctypes.create_string_buffer(_MESSAGE)
        code = _optimize(h, algorithm.encode() if algorithm else None, callback, None,
                         x.ctypes.data_as(_c_double_p), status, ctypes.byref(objective),
                         ctypes.byref(evaluations), message, _MESSAGE)
        if failure:
            raise failure[0]
        _check(code, message)
        return {"algorithm": algorithm, "status": status.value.decode(),
                "message": message.value.decode(), "objective": objective.value,
                "evaluations": evaluations.value, "x": dict(zip(design, x.tolist()))}


def load(path):
    """The model or spec at `path` (docs/model-format.md)."""
    return Model(path)


def _model(path_or_model):
    return path_or_model if isinstance(path_or_model, Model) else Model(path_or_model)


def simulate(path_or_model, interval=0.0):
    """Model.simulate of a loaded model or of the file at a path."""
    return _model(path_or_model).simulate(interval)


def gradient(path_or_model, method="auto"):
    """Model.gradient of a loaded model or of the file at a path."""
    return _model(path_or_model).gradient(method)


def optimize(path_or_model, algorithm=None, observer=None):
    """Model.optimize of a loaded model or of the file at a path."""
    return _model(path_or_model).optimize(algorithm, observer)
