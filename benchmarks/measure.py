"""Measuring one casadi Function: graph size, casadi VM time, compiled C time, and its outputs.

Every time is the minimum and the median over ``repeat`` batches of calls,
each batch calibrated to last about ``batch_seconds``. Python-side times
(casadi's VM, Pinocchio's bindings) include the Python call; ``empty_like``
gives the Function that measures that overhead for casadi.
"""

import time
from typing import NamedTuple

import casadi as ca
import numpy as np

from casrbd import codegen, testing

from . import harness

# the feet of the legged robots, as contacts: 3-D points for the quadrupeds, 6-D soles for the humanoids
FEET = {
    "solo12": [(f, "3d") for f in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")],
    "hyq": [(f, "3d") for f in ("lf_foot", "rf_foot", "lh_foot", "rh_foot")],
    "talos_reduced": [("left_sole_link", "6d"), ("right_sole_link", "6d")],
    "talos_full_v2": [("left_sole_link", "6d"), ("right_sole_link", "6d")],
}


class Settings(NamedTuple):
    repeat: int = 15  # batches per timing
    batch_seconds: float = 0.02  # length of one batch
    cap: float = 3.5e5  # graphs above this many instructions are not compiled
    o1_above: float = np.inf  # graphs above this many instructions compile with -O1 instead of -O3


def python_time(call, settings):
    """(min, median) seconds per call of a Python callable."""
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            call()
        if time.perf_counter() - start > settings.batch_seconds:
            break
        number *= 2
    times = []
    for _ in range(settings.repeat):
        start = time.perf_counter()
        for _ in range(number):
            call()
        times.append((time.perf_counter() - start) / number)
    return float(np.min(times)), float(np.median(times))


def empty_like(fun):
    """A Function with ``fun``'s input and output shapes that computes nothing (constant outputs):
    its VM time is what casadi's Python call costs for those arguments."""
    ins = [ca.SX.sym(fun.name_in(i), fun.sparsity_in(i)) for i in range(fun.n_in())]
    return ca.Function("empty", ins, [ca.SX(fun.sparsity_out(i)) for i in range(fun.n_out())])


def rel_err(x, ref):
    """``casrbd.testing.rel_err``, where a column (nv x 1, from casadi) and a flat vector (nv, from
    Pinocchio) compare entry by entry."""
    x, ref = np.asarray(x, dtype=float), np.asarray(ref, dtype=float)
    if x.size != ref.size:
        raise ValueError(f"rel_err: shapes {x.shape} and {ref.shape} differ")
    return testing.rel_err(x.reshape(ref.shape), ref)


def dense_outputs(fun, nonzeros):
    """Dense numpy arrays from the nonzeros of each output (the compiled driver prints nonzeros)."""
    return [np.array(ca.DM(fun.sparsity_out(i), ca.DM(nz))) for i, nz in enumerate(nonzeros)]


def compile_flags(n_instructions, settings):
    return ("-O1",) if n_instructions > settings.o1_above else codegen.DEFAULT_FLAGS


def measure(fun, inputs, settings, full=False):
    """Size, VM and compiled times of ``fun`` at ``inputs``; (record, outputs).

    The outputs are the compiled ones when compiled (checked against the VM's:
    ``err_c_vs_vm``), else the VM's, as dense arrays."""
    n = fun.n_instructions()
    rec = {"instructions": n}
    rec["vm_min"], rec["vm_median"] = python_time(lambda: fun(*inputs), settings)
    empty = empty_like(fun)
    rec["vm_overhead_min"], rec["vm_overhead_median"] = python_time(lambda: empty(*inputs), settings)
    vm_out = [np.array(o) for o in fun.call(list(inputs))]
    if n > settings.cap and not full:
        rec["not_compiled"] = f"{n} instructions > cap {settings.cap:.0f}"
        return rec, vm_out
    flags = compile_flags(n, settings)
    t = harness.time_c(fun, inputs, flags, settings.repeat, settings.batch_seconds)
    c_out = dense_outputs(fun, t.outputs)
    rec.update(
        c_min=t.min,
        c_median=t.median,
        gcc_seconds=t.gcc_seconds,
        gcc_peak_mib=t.gcc_peak_mib,
        cached=t.cached,
        flags=" ".join(flags),
        err_c_vs_vm=max(rel_err(c, r) for c, r in zip(c_out, vm_out)),
    )
    return rec, c_out
