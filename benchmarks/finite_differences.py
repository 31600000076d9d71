"""Finite differences of the dynamics as casadi SX Functions.

``fd_function(model, "rnea", h)`` is a Function (q, v, a) -> (dtau_dq,
dtau_dv, dtau_da) with the inputs and outputs of the analytical derivative
Functions, computed by differencing the ``rnea`` graph: d/dq on the manifold
through ``integrate`` (q (+) h e_k), d/dv and d/da by plain steps. Central
differences evaluate the dynamics 2 nv times per input (6 nv in all),
forward differences nv times per input plus once at the point (3 nv + 1).
The step is a constant of the graph, as in a hand-written C loop, or with
``h=None`` a fourth input ``h`` (one graph for a sweep over step sizes).
The graph gets the same common-subexpression pass as every casrbd Function,
which shares the kinematics of evaluations that differ only in v or a.
"""

import casadi as ca

import casrbd

SCHEMES = ("central", "forward")
OUTPUTS = {"rnea": ("dtau_dq", "dtau_dv", "dtau_da"), "aba": ("da_dq", "da_dv", "da_dtau")}


def fd_function(model, kind, scheme="central", h=1e-6):
    """SX Function of the derivatives of ``kind`` ("rnea" or "aba") by finite differences of step ``h``."""
    if scheme not in SCHEMES:
        raise ValueError(f"unknown finite-difference scheme {scheme!r}; valid: {SCHEMES}")
    dyn = casrbd.function(model, kind)
    integrate = casrbd.function(model, "integrate")
    names = [dyn.name_in(i) for i in range(3)]
    q, v, x = args = [ca.SX.sym(n, dyn.size1_in(i)) for i, n in enumerate(names)]
    step = h
    if h is None:
        step = ca.SX.sym("h")
        args, names = args + [step], names + ["h"]

    def evaluations(sign):
        """The dynamics at q (+) sign*step*e_k, v + sign*step*e_k and x + sign*step*e_k, for every k."""
        out = [[], [], []]
        for k in range(model.nv):
            e = ca.DM.zeros(model.nv)
            e[k] = sign
            out[0].append(dyn(integrate(q, step * e), v, x))
            out[1].append(dyn(q, v + step * e, x))
            out[2].append(dyn(q, v, x + step * e))
        return out

    plus = evaluations(1.0)
    if scheme == "central":
        minus = evaluations(-1.0)
        columns = [[(hi - lo) / (2 * step) for hi, lo in zip(p, m)] for p, m in zip(plus, minus)]
    else:
        at_point = dyn(q, v, x)
        columns = [[(hi - at_point) / step for hi in p] for p in plus]
    outs = ca.cse([ca.horzcat(*c) for c in columns])
    return ca.Function(f"{dyn.name()}_fd_{scheme}", args, outs, names, list(OUTPUTS[kind]))
