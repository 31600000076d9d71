"""Transcriptions: the dynamics Function for MX graphs, RK4, implicit Euler, Euler on the manifold.

The analytical Jacobian of ``casrbd.function(..., jacobian="analytical")``
takes effect where casadi differentiates a *call* of the Function, that is
inside MX graphs (Opti builds MX): build transcription Functions from MX
symbols, since an SX graph inlines the call and differentiates it by AD.
"""

import numbers

import casadi as ca
import numpy as np

from .. import codegen
from ..codegen.flags import COMPILE_FLAGS
from ..functions import function
from ..spec import DYNAMICS, HESSIANS, JACOBIANS, choice


def dynamics(
    model,
    name="aba",
    jacobian="analytical",
    compiled=False,
    f_ext=False,
    hessian="exact",
    flags=COMPILE_FLAGS,
    second_order=None,
    **options,
):
    """The forward (``"aba"``) or inverse (``"rnea"``) dynamics Function for MX graphs.

    ``jacobian="analytical"``: casadi's Jacobian of a call is the analytical
    one (``options``, e.g. ``method="idsva"``, pick it); ``"ad"``: casadi
    differentiates the Function's graph. ``second_order`` (with the
    analytical Jacobian; default "analytical"): casadi's gradient and the exact
    Hessian's forward-over-reverse go through the analytical adjoint and
    contracted Hessian (``casrbd.function``'s ``hessian``); "ad": through AD of
    the dynamics graph.
    ``compiled=True``: ``casrbd.compiled``, the dynamics as a compiled,
    disk-cached library (the rest of the NLP stays in casadi's VM; to compile
    the whole NLP, pass ``compiled=True`` to ``solver_options`` instead). A
    compiled Function cannot be differentiated by casadi, so the library
    carries the derivatives casadi asks for: the Jacobian ``jac_<name>`` and,
    for ``hessian="exact"``, the adjoint and its Jacobian (``adj1_<name>``,
    ``jac_adj1_<name>``: analytical, or AD's with ``second_order="ad"``).
    ``flags``: the C compiler's (``COMPILE_FLAGS``, ``codegen.flags``).
    """
    choice("name", name, DYNAMICS)
    choice("jacobian", jacobian, JACOBIANS)
    choice("hessian", hessian, HESSIANS)
    if jacobian == "ad" and (options or second_order == "analytical"):
        raise TypeError(
            f"options {sorted(options)} and second_order='analytical' select analytical derivatives; "
            f"jacobian='ad' takes neither"
        )
    second_order = second_order or ("analytical" if jacobian == "analytical" else "ad")
    choice("second_order", second_order, JACOBIANS)
    if not compiled:
        return function(model, name, f_ext=f_ext, jacobian=jacobian, second_order=second_order, **options)
    return codegen.compiled(
        model, name, flags, hessian=hessian, f_ext=f_ext, jacobian=jacobian, second_order=second_order, **options
    )


def forward_dynamics_ode(model, fd):
    """(x, u) -> dx/dt = [v; fd(q, v, u)] for x = [q; v]; needs nq == nv (no quaternions),
    since then dq/dt = v. Use ``euler_step`` on a manifold."""
    if model.nq != model.nv:
        raise ValueError(
            f"model {model.name!r} has nq = {model.nq} != nv = {model.nv}: its configuration "
            f"is not a vector space; integrate it with euler_step"
        )
    nq = model.nq
    return lambda x, u: ca.vertcat(x[nq:], fd(x[:nq], x[nq:], u))


def _check_dt(dt):
    """A numeric dt must be a finite positive number (a casadi symbol passes: it is the problem's)."""
    if isinstance(dt, (ca.SX, ca.MX)) and not dt.is_constant():
        return
    if isinstance(dt, bool) or not isinstance(dt, (numbers.Real, ca.DM, ca.SX, ca.MX, np.ndarray, np.generic)):
        raise TypeError(f"dt must be a number (the step in s) or a casadi symbol, got {type(dt).__name__} {dt!r}")
    value = np.asarray(ca.evalf(dt) if isinstance(dt, (ca.SX, ca.MX)) else dt, dtype=float)
    if value.size != 1 or not np.isfinite(value).all() or not value.item() > 0:
        raise ValueError(f"dt must be a finite positive number (the step in s), got {dt!r}")


def rk4(ode, x, u, dt):
    """One explicit Runge-Kutta-4 step of dx/dt = ode(x, u), u held over the step."""
    _check_dt(dt)
    k1 = ode(x, u)
    k2 = ode(x + dt / 2 * k1, u)
    k3 = ode(x + dt / 2 * k2, u)
    k4 = ode(x + dt * k3, u)
    return x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def implicit_euler_residual(ode, x0, x1, u, dt):
    """x1 - x0 - dt * ode(x1, u): zero exactly when x1 is the implicit-Euler step from x0."""
    _check_dt(dt)
    return x1 - x0 - dt * ode(x1, u)


def euler_step(model, q, v, a, dt):
    """(q (+) v dt, v + a dt): explicit Euler on the configuration manifold, so that the
    quaternions of q stay unit quaternions (``integrate`` normalises and rotates them)."""
    _check_dt(dt)
    return function(model, "integrate")(q, v * dt), v + a * dt
