"""Reference derivatives by casadi's automatic differentiation of the dynamics graphs.

d/dq is taken on the tangent space as the Jacobian of f(q (+) delta) at
delta = 0 (the approach of Pinocchio's unittest/casadi), so quaternion
joints give nv columns like the analytical methods."""

import casadi as ca

from .aba import aba
from .configuration import integrate
from .rnea import rnea


def tangent_jacobians(model, fun, q, v, x, f_ext=None):
    """(df/dq on the tangent space, df/dv, df/dx) of fun(model, q, v, x, f_ext)."""
    args = [q, v, x] + ([] if f_ext is None else [f_ext])
    sym = ca.MX if any(isinstance(t, ca.MX) for t in args) else ca.SX
    Q, V, X, D = (sym.sym(n, model.nq if n == "q" else model.nv) for n in ("q", "v", "x", "delta"))
    F = None if f_ext is None else sym.sym("f_ext", 6, model.njoints)
    out = fun(model, integrate(model, Q, D), V, X, F)
    jacs = [ca.substitute(ca.jacobian(out, w), D, ca.DM.zeros(model.nv)) for w in (D, V, X)]
    return tuple(ca.Function("ad", [Q, V, X] + ([] if F is None else [F]), jacs)(*args))


def rnea_jacobians(model, q, v, a, f_ext=None):
    return tangent_jacobians(model, rnea, q, v, a, f_ext)


def aba_jacobians(model, q, v, tau, f_ext=None):
    return tangent_jacobians(model, aba, q, v, tau, f_ext)
