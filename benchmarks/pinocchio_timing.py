"""Pinocchio's side of the benchmarks: its twin of a casrbd model, its results and its times.

The twin is ``tests/oracle.py``'s (imported by path: it is a test helper):
robots from example-robot-data are parsed by Pinocchio's own URDF parser
(with a free-flyer root where casrbd adds one), as a Pinocchio user would
build them, with its specialised joint types; synthetic trees are built
joint by joint from the casrbd model. The oracle maps joints by name and
converts q, v and the results between the two orderings.

Pinocchio is timed through its Python bindings in a tight loop. The binding
overhead of each function is the time of the same call on a model with no
joints (argument conversion, the call, the returned arrays); it does not
include copying nv x nv outputs, so subtracting it leaves a slight
overestimate of Pinocchio's C++ time.
"""

import importlib.util
from pathlib import Path

import numpy as np
import pinocchio as pin

from casrbd.models import EXAMPLE_ROBOTS, robot_path

from .measure import python_time

_ORACLE_PATH = Path(__file__).resolve().parent.parent / "tests" / "oracle.py"

# casrbd Function -> Pinocchio function and the arguments it takes after (model, data)
CALLS = {
    "rnea": (pin.rnea, ("q", "v", "x")),
    "rnea_derivatives": (pin.computeRNEADerivatives, ("q", "v", "x")),
    "aba": (pin.aba, ("q", "v", "x")),
    "aba_derivatives": (pin.computeABADerivatives, ("q", "v", "x")),
    "minverse": (pin.computeMinverse, ("q",)),
}


def _oracle_module():
    spec = importlib.util.spec_from_file_location("casrbd_bench_oracle", _ORACLE_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class PinocchioTwin:
    """Pinocchio's model of robot ``name`` (casrbd ``model``), evaluated and timed at one state."""

    def __init__(self, name, model, q, v, x):
        oracle = _oracle_module()
        if name in EXAMPLE_ROBOTS:
            path, floating = robot_path(name)
            self.oracle = oracle.Oracle.from_urdf(model, path, floating)
        else:
            self.oracle = oracle.Oracle.from_model(model)
        self.symmetrize = oracle.symmetrize_upper
        o = self.oracle
        self.args = {"q": o.q(q), "v": o.v(v), "x": o.v(x)}
        empty = pin.Model()
        self.empty = (empty, empty.createData(), {k: np.zeros(0) for k in self.args})

    def evaluate(self, kind):
        """Pinocchio's result for casrbd Function ``kind``, in casrbd's order, as its list of outputs."""
        fn, names = CALLS[kind]
        out = fn(self.oracle.pmodel, self.oracle.data, *(self.args[n] for n in names))
        o = self.oracle
        if kind in ("rnea", "aba"):
            return [o.from_v(out)]
        if kind == "minverse":
            return [o.from_vv(self.symmetrize(out))]
        # derivatives: d/dq and d/dv are full; M (rnea) and Minv (aba) have their upper triangle filled
        return [o.from_vv(out[0]), o.from_vv(out[1]), o.from_vv(self.symmetrize(out[2]))]

    def time(self, kind, settings):
        """Seconds per call of Pinocchio's function for ``kind`` and of its binding overhead, min and median."""
        fn, names = CALLS[kind]
        pm, pd = self.oracle.pmodel, self.oracle.data
        args = [self.args[n] for n in names]
        em, ed, eargs = self.empty
        zero = [eargs[n] for n in names]
        t_min, t_med = python_time(lambda: fn(pm, pd, *args), settings)
        o_min, o_med = python_time(lambda: fn(em, ed, *zero), settings)
        return {"min": t_min, "median": t_med, "overhead_min": o_min, "overhead_median": o_med}


def net_time(record):
    """Pinocchio's min time less its binding overhead; None when the overhead is as long as the call
    (tiny robots, where the binding is all that is measured)."""
    net = record["min"] - record["overhead_min"]
    return net if net > 0 else None
