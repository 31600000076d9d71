"""Accuracy of finite differences and of the analytical derivatives, after Carpentier & Mansard (RSS 2018) Fig. 3 and
Singh, Russell & Wensing (RA-L 2022) section V-A.

The reference is casadi's AD of the same dynamics graph (exact up to
rounding). Two states per robot:

- ``random``: random q, v and a (ID) or tau (FD), gravity on;
- ``rest``: their state, random q, v = 0, a = tau = 0 and zero gravity,
  where ∂ID/∂v and ∂FD/∂v vanish (Fig. 3). The velocity terms are quadratic
  in v: forward differences return a residue proportional to h there,
  central differences cancel it up to rounding.

Finite differences (``finite_differences.fd_function`` with the step as an
input) are central and one-sided (forward), over a sweep of step sizes.
Errors are ``measure.rel_err`` per output (d/dq, d/dv, d/da or d/dtau); at
the rest state also the largest |entry| of d/dv.
"""

import numpy as np

from .finite_differences import SCHEMES, fd_function
from .measure import rel_err
from .table1 import ENTRIES, make_model, random_state

ROBOTS = ("panda", "solo12")
QUICK_ROBOTS = ("double_pendulum",)
STEPS = tuple(10.0**-k for k in range(1, 12))
QUICK_STEPS = (1e-3, 1e-6, 1e-9)
KINDS = {
    "rnea": ("dID ad", ("dID chain_rule", "dID idsva")),
    "aba": ("dFD ad", ("dFD chain_rule/dmm", "dFD chain_rule/aza", "dFD idsva/dmm", "dFD idsva/aza", "dFD idsva/ltdl")),
}
OUTPUTS = ("d/dq", "d/dv", "d/dx")


def _state(name, state):
    model = make_model(name)
    q, v, x = random_state(model)
    if state == "rest":
        model = model.with_gravity(np.zeros(3))
        v, x = np.zeros(model.nv), np.zeros(model.nv)
    return model, q, v, x


def _errors(out, ref):
    errs = {o: rel_err(np.array(x), r) for o, x, r in zip(OUTPUTS, out, ref)}
    errs["max_abs_dv"] = float(np.max(np.abs(np.array(out[1]))))
    return errs


def max_error(errors):
    """The largest error over the outputs."""
    return max(errors[o] for o in OUTPUTS)


def run_robot(name, steps=STEPS, log=print):
    """{state: {kind: {"analytical": {method: errors}, "central"/"forward": [errors per step]}}}."""
    rec = {"robot": name, "steps": list(steps), "states": {}}
    for state in ("random", "rest"):
        model, q, v, x = _state(name, state)
        rec["states"][state] = by_kind = {}
        for kind, (ad_key, analytical) in KINDS.items():
            ref = [np.array(r) for r in ENTRIES[ad_key].build(model)(q, v, x)]
            res = by_kind[kind] = {"analytical": {}}
            for key in analytical:
                res["analytical"][key] = _errors(ENTRIES[key].build(model)(q, v, x), ref)
            for scheme in SCHEMES:
                fd = fd_function(model, kind, scheme, h=None)
                res[scheme] = [_errors(fd(q, v, x, h), ref) for h in steps]
            best = min(range(len(steps)), key=lambda i: max_error(res["central"][i]))
            log(
                f"  {name} {state} {kind}: central differences best at h = {steps[best]:.0e} "
                f"(error {max_error(res['central'][best]):.1e}); analytical "
                + ", ".join(f"{k} {max_error(e):.1e}" for k, e in res["analytical"].items())
            )
    return rec
