"""Test oracles: the hand-built stage Functions of the gait examples before ``casrbd.ocp.Problem``
(Crocoddyl's solo12 trot and jump, talos' walk), inputs packed by offsets. ``casrbd.ocp.legged``'s
problems must equal them knot by knot."""

import functools

import casadi as ca
import numpy as np

import casrbd
from casrbd import ocp
from casrbd.ocp.legged import SOLO_FEET, SOLO_STANDING, SOLO_V_MAX, TALOS_FEET, TALOS_KD

CONE = np.array([[1, 0, -0.7], [-1, 0, -0.7], [0, 1, -0.7], [0, -1, -0.7], [0, 0, 1]])  # mu = 0.7, 4 facets


def barrier(r, lb, ub):
    return 0.5 * ca.sumsqr(r - ca.fmin(ca.fmax(r, lb), ub))


@functools.cache
def kinematics(model):
    """q -> (CoM, the feet's positions, q (-) STANDING), one SX graph."""
    q, zero = ca.SX.sym("q", model.nq), ca.DM.zeros(model.nv)
    out = [casrbd.function(model, "center_of_mass")(q, zero, zero)[0]]
    out += [casrbd.function(model, "frame_placement", frame=f)(q)[:3, 3] for f in SOLO_FEET]
    return ca.Function("kinematics", [q], [*out, casrbd.function(model, "difference")(SOLO_STANDING, q)])


@functools.cache
def dynamics(model, feet, dt, second_order="analytical", kd=50.0, rows="3d", damping=1e-12):
    """(x, u) -> (x_next, contact forces or impulses): semi-implicit Euler over the contact dynamics of
    ``feet``, ``aba`` without contacts, the impulse at dt = 0."""
    nq, nv = model.nq, model.nv
    x, u = ca.MX.sym("x", nq + nv), ca.MX.sym("u", nv - 6 if dt else 0)
    q, v = x[:nq], x[nq:]
    contacts = {"contacts": [(f, rows) for f in feet], "reference": "local_world_aligned", "second_order": second_order}
    if dt == 0:
        impulse = casrbd.function(model, "impulse_dynamics", jacobian="analytical", damping=damping, **contacts)
        v_next, lam = impulse(q, v)
        return ca.Function("impulse", [x, u], [ca.vertcat(q, v_next), lam], ["x", "u"], ["x_next", "lam"])
    tau = ca.vertcat(ca.MX.zeros(6), u)
    if feet:
        a, lam = casrbd.function(model, "constraint_dynamics", jacobian="analytical", kd=kd, **contacts)(q, v, tau)
    else:
        a = casrbd.function(model, "aba", jacobian="analytical", second_order=second_order)(q, v, tau)
        lam = ca.MX(0, 1)
    v_next = v + a * dt
    x_next = ca.vertcat(casrbd.function(model, "integrate")(q, v_next * dt), v_next)
    return ca.Function("step", [x, u], [x_next, lam], ["x", "u"], ["x_next", "lam"])


def quadruped_stage(model, feet, kind, dt, hessian="gauss-newton"):
    """(x, u, p) -> (cost, x_next) of a solo12 knot; p = [CoM target, its weight, 4 foot targets, their
    weights]; y = (CoM, feet, q (-) STANDING, contact forces)."""
    nq, nv, nu = model.nq, model.nv, model.nv - 6
    name = "_".join(["hand", kind, *(f[0] + f[1] for f in feet)])
    nf = len(feet) if kind == "running" else 0
    x, u, p = ca.SX.sym("x", nq + nv), ca.SX.sym("u", nu if kind == "running" else 0), ca.SX.sym("p", 20)
    y = ca.SX.sym("y", 15 + nv + 3 * nf)
    com, P, dq, lam = y[:3], [y[3 + 3 * i : 6 + 3 * i] for i in range(4)], y[15 : 15 + nv], y[15 + nv :]
    q, v = x[:nq], x[nq:]
    cost = 0.5 * p[3] * ca.sumsqr(com - p[:3])
    cost += 0.5 * sum(p[16 + i] * ca.sumsqr(P[i] - p[4 + 3 * i : 7 + 3 * i]) for i in range(4))
    if kind == "impulse":
        w = [1.0] * 6 + [10.0] * (nv + nu)
    else:
        w = [0.0] * 3 + [500.0] * 3 + [0.01] * nu + [10.0] * 6 + [1.0] * nu
        bound = np.r_[model.upper[7:], [SOLO_V_MAX] * nu]
        cost += 1e3 * barrier(ca.vertcat(q[7:], v[6:]), -bound, bound)
    cost += 10 * 0.5 * ca.sumsqr(ca.DM(w) * ca.vertcat(dq, v))
    if nf:
        cone = ca.vec(ca.mtimes(CONE, ca.reshape(lam, 3, nf)))
        cost += 10 * barrier(cone, np.tile([-np.inf] * 4 + [0], nf), np.tile([0.0] * 4 + [np.inf], nf))
    if kind == "running":
        cost = dt * (cost + 0.1 * 0.5 * ca.sumsqr(u))
    cost = ca.Function("cost_" + name, [x, u, p, y], [cost], ["x", "u", "p", "y"], ["cost"])
    X, U, Pm = ca.MX.sym("x", nq + nv), ca.MX.sym("u", u.numel()), ca.MX.sym("p", 20)
    x_next, forces = X, ca.MX(0, 1)
    if kind != "terminal":
        second_order = "ad" if hessian == "gauss-newton" else "analytical"
        x_next, forces = dynamics(model, feet, dt if kind == "running" else 0.0, second_order)(X, U)
    Y = ca.vertcat(*kinematics(model)(X[:nq]), forces if nf else ca.MX(0, 1))
    inner = ca.Function("inner_" + name, [X, U], [x_next, Y], ["x", "u"], ["x_next", "y"])
    if hessian == "gauss-newton":
        return ocp.gauss_newton_stage(name, cost, inner)
    c = ocp.sx_second_order(cost)(X, U, Pm, Y)
    return ca.Function(name, [X, U, Pm], [c, x_next], ["x", "u", "p"], ["cost", "x_next"])


def quadruped_parameters(step):
    """p of ``quadruped_stage``: a step's CoM and foot targets and their weights (0 where none)."""
    targets = dict(step.targets)
    weight = 1e7 if step.dt == 0 else 1e6
    return np.r_[
        step.com if step.com is not None else np.zeros(3),
        weight if step.com is not None else 0.0,
        np.concatenate([targets.get(f, np.zeros(3)) for f in SOLO_FEET]),
        [weight * (f in targets) for f in SOLO_FEET],
    ]


def kinds(steps):
    """Each step's kind: the last "terminal", dt = 0 "impulse", else "running"."""
    return ["terminal" if n == len(steps) - 1 else "running" if s.dt else "impulse" for n, s in enumerate(steps)]


def biped_dynamics(model, feet, dt):
    """talos' (x, u) -> (x_next, the soles' wrenches or impulses)."""
    return dynamics(model, tuple(feet), dt, "ad", TALOS_KD, "6d")


__all__ = ["TALOS_FEET", "biped_dynamics", "kinds", "quadruped_parameters", "quadruped_stage"]
