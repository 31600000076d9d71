"""Table I of Carpentier & Mansard (RSS 2018), per robot, against Pinocchio.

Every entry is a casadi SX Function of the quantity, timed in casadi's VM
and compiled (``measure.measure``), next to Pinocchio's function computing
the same quantity. Each result is checked twice: compiled against the VM,
and against Pinocchio (with a looser tolerance for finite differences,
whose error at the step 1e-6 used here is 1e-9 to 1e-6 relative).

Robots: example-robot-data names, ``chainN`` (``serial_chain(N)``: revolute
joints with random axes) and ``treeN`` (``random_tree(N, branching=None)``:
random parents, every joint type).
"""

import re
import time
import warnings
from typing import Callable, NamedTuple

import casadi as ca
import numpy as np

import casrbd
from casrbd.models import load_robot, random_tree, serial_chain

from .finite_differences import fd_function
from .measure import measure, rel_err
from .pinocchio_timing import PinocchioTwin

ROBOTS = ("ur5", "panda", "solo12", "hyq", "talos_reduced", "talos_full_v2", "chain12", "tree12")
QUICK_ROBOTS = ("double_pendulum", "chain3")
TOLERANCE = 1e-8  # exact methods, against Pinocchio and compiled against the VM
FD_TOLERANCE = 1e-4  # finite differences against Pinocchio
FD_VM_TOLERANCE = 1e-6  # finite differences compiled against the VM (1/h amplifies last-bit differences)


def minverse_ldl(model):
    """M^-1 by Cholesky: crba, casadi's sparse symbolic LDL^T (approximate-minimum-degree
    ordering, so the tree's zeros give no fill-in) and ldl_solve on the identity; all SX."""
    crba = casrbd.function(model, "crba")
    q = ca.SX.sym("q", model.nq)
    D, LT, p = ca.ldl(ca.sparsify(crba(q)))
    Minv = ca.ldl_solve(ca.SX.eye(model.nv), D, LT, p)
    return ca.Function(f"{crba.name()}_ldl_inverse", [q], ca.cse([Minv]), ["q"], ["Minv"])


class Entry(NamedTuple):
    label: str
    pinocchio: str  # the Pinocchio function of the same quantity (pinocchio_timing.CALLS)
    build: Callable  # model -> casadi Function
    finite_differences: bool = False


def _function(name, **options):
    return lambda model: casrbd.function(model, name, **options)


ENTRIES = {
    "ID": Entry("ID (rnea)", "rnea", _function("rnea")),
    "dID chain_rule": Entry("∂ID chain rule", "rnea_derivatives", _function("rnea_derivatives", method="chain_rule")),
    "dID idsva": Entry("∂ID IDSVA", "rnea_derivatives", _function("rnea_derivatives", method="idsva")),
    "dID ad": Entry("∂ID AD", "rnea_derivatives", _function("rnea_derivatives", method="ad")),
    "dID fd": Entry("∂ID finite differences", "rnea_derivatives", lambda m: fd_function(m, "rnea"), True),
    "FD": Entry("FD (aba)", "aba", _function("aba")),
    "dFD chain_rule/dmm": Entry(
        "∂FD chain rule, DMM", "aba_derivatives", _function("aba_derivatives", method="chain_rule", minv_product="dmm")
    ),
    "dFD chain_rule/aza": Entry(
        "∂FD chain rule, AZA", "aba_derivatives", _function("aba_derivatives", method="chain_rule", minv_product="aza")
    ),
    "dFD idsva/dmm": Entry(
        "∂FD IDSVA, DMM", "aba_derivatives", _function("aba_derivatives", method="idsva", minv_product="dmm")
    ),
    "dFD idsva/aza": Entry(
        "∂FD IDSVA, AZA", "aba_derivatives", _function("aba_derivatives", method="idsva", minv_product="aza")
    ),
    "dFD idsva/ltdl": Entry(
        "∂FD IDSVA, LTDL", "aba_derivatives", _function("aba_derivatives", method="idsva", minv_product="ltdl")
    ),
    "dFD ad": Entry("∂FD AD", "aba_derivatives", _function("aba_derivatives", method="ad")),
    "dFD fd": Entry("∂FD finite differences", "aba_derivatives", lambda m: fd_function(m, "aba"), True),
    "Minv": Entry("M⁻¹ dedicated (minverse)", "minverse", _function("minverse")),
    "Minv ldl": Entry("M⁻¹ by LDLᵀ of crba", "minverse", minverse_ldl),
}
AD_REFERENCE = {"dID": "dID ad", "dFD": "dFD ad"}


def make_model(name):
    """casrbd model of a robot name: ``chainN``, ``treeN`` or a ``load_robot`` name."""
    synthetic = re.fullmatch(r"(chain|tree)(\d+)", name)
    if synthetic:
        n = int(synthetic.group(2))
        return serial_chain(n) if synthetic.group(1) == "chain" else random_tree(n, branching=None, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # panda's mimic fingers are loaded as independent joints
        return load_robot(name)


def random_state(model, seed=0):
    rng = np.random.default_rng(seed)
    q = np.asarray(casrbd.random_configuration(model, rng))
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)


def run_robot(name, settings, full=False, entries=tuple(ENTRIES), log=print):
    """The Table I record of one robot: Pinocchio's times and every entry's measurements."""
    start_robot = time.perf_counter()
    model = make_model(name)
    q, v, x = random_state(model)
    twin = PinocchioTwin(name, model, q, v, x)
    rec = {
        "robot": name,
        "nq": model.nq,
        "nv": model.nv,
        "entries": {},
        "pinocchio": {kind: twin.time(kind, settings) for kind in sorted({ENTRIES[k].pinocchio for k in entries})},
    }
    outputs = {}
    for key in entries:
        entry = ENTRIES[key]
        start = time.perf_counter()
        fun = entry.build(model)
        build_seconds = time.perf_counter() - start
        log(f"  {name} {key}: {fun.n_instructions()} instructions, built in {build_seconds:.1f} s, measuring")
        r, outputs[key] = measure(fun, [q, v, x][: fun.n_in()], settings, full)
        r["build_seconds"] = build_seconds
        tol, vm_tol = (FD_TOLERANCE, FD_VM_TOLERANCE) if entry.finite_differences else (TOLERANCE, TOLERANCE)
        r["err_vs_pinocchio"] = max(rel_err(o, p) for o, p in zip(outputs[key], twin.evaluate(entry.pinocchio)))
        r["ok"] = r["err_vs_pinocchio"] <= tol and r.get("err_c_vs_vm", 0.0) <= vm_tol
        rec["entries"][key] = r
        compiled = (
            f"compiled {r['c_min'] * 1e6:.3g} µs (gcc {r['gcc_seconds']:.1f} s {r['flags']})"
            if "c_min" in r
            else f"not compiled: {r['not_compiled']}"
        )
        log(
            f"  {name} {key}: VM {r['vm_min'] * 1e6:.3g} µs, {compiled}, error vs Pinocchio "
            f"{r['err_vs_pinocchio']:.1e}: {'ok' if r['ok'] else 'MISMATCH'}"
        )
    for key, out in outputs.items():
        ref = outputs.get(AD_REFERENCE.get(key.split()[0]))
        if ref is not None:
            rec["entries"][key]["err_vs_ad"] = max(rel_err(o, r) for o, r in zip(out, ref))
    rec["seconds"] = time.perf_counter() - start_robot  # the whole robot: builds, gcc (unless cached), timings
    return rec
