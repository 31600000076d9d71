"""Crocoddyl's solo12 trot and jump (``SimpleQuadrupedalGaitProblem``) rebuilt in casadi with casrbd.

The same knots, dynamics and costs as Crocoddyl 3.2's ``utils/quadruped.py``:
running knots step the contact dynamics of their stance feet (3-D point
contacts in world axes, Baumgarte gain kd = 50 on the feet's velocity, one
``constraint_dynamics`` Function per contact set, ``aba`` in flight) by
semi-implicit Euler, v+ = v + a dt, q+ = q (+) v+ dt; a touchdown is an impulse
knot (``impulse_dynamics``: velocity jump, no control). Costs per knot: CoM and
swing-foot tracking, the friction cone of each stance foot and the state bounds
as quadratic barriers, weighted state and control regularisation, times dt at
running knots. Variables and constraints go stage by stage (``ocp.Stagewise``),
so fatrop solves it by a Riccati recursion, IPOPT as well (``--solver``). The
``--hessian gauss-newton`` stages write out their Jacobian and Gauss-Newton
Hessian (``ocp.gauss_newton_stage``: no curvature of the dynamics and the
residuals, as in Crocoddyl's FDDP); ``--compiled`` compiles the few distinct
stage Functions with them (``ocp.compile_stages``), so that the NLP holds only
calls. The guess: the standing state at every knot, quasi-static torques.

    python examples/quadruped_gait.py --problem jump --solver ipopt --hessian gauss-newton --compiled
"""

import argparse
import functools
from typing import NamedTuple

import casadi as ca
import common
import numpy as np

import casrbd
from casrbd import ocp
from casrbd.models import load_robot

FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
STANDING = np.r_[0, 0, 0.235, 0, 0, 0, 1, 0.1, 0.8, -1.6, -0.1, 0.8, -1.6, 0.1, -0.8, 1.6, -0.1, -0.8, 1.6]
CONE = np.array([[1, 0, -0.7], [-1, 0, -0.7], [0, 1, -0.7], [0, -1, -0.7], [0, 0, 1]])  # mu = 0.7, 4 facets
V_MAX = 1000.0  # solo12's joint velocity limit (its URDF)
HESSIANS = ("exact", "gauss-newton")


class Knot(NamedTuple):
    """A knot: its feet in contact (landing feet at an impulse), dt (0: an impulse), tasks."""

    feet: tuple
    dt: float
    com: object = None  # CoM target
    targets: tuple = ()  # (foot, target position) of swing feet (landing feet at an impulse)


def footstep(com, feet0, swing, length, height, dt, n):
    """Crocoddyl's createFootstepModels: n knots swinging ``swing`` by ``length`` (moving com, feet0)."""
    knots, half = [], n / 2
    for k in range(n):
        lift = height * k / half if k < half else height * (1 - (k - half) / half)
        targets = tuple((f, p + [length * (k + 1) / n, 0, lift]) for f, p in zip(swing, feet0))
        stance = tuple(f for f in FEET if f not in swing)
        knots.append(Knot(stance, dt, com + [length * (k + 1) / n * len(swing) / 4, 0, 0], targets))
    com += [length * len(swing) / 4, 0, 0]
    for p in feet0:
        p += [length, 0, 0]
    return knots + [Knot(swing, 0.0, None, targets)]


def trot(model, q0, length=0.06, height=0.03, dt=1e-2, step_knots=25, support_knots=2):
    """createTrottingProblem's knots: the last is the terminal one."""
    p = {f: casrbd.frame_placement(model, q0, f)[:3, 3] for f in FEET}
    com = np.mean(list(p.values()), axis=0)
    com[2] = casrbd.center_of_mass(model, q0, np.zeros(model.nv), np.zeros(model.nv))[0][2]
    rest = [Knot(FEET, dt)] * support_knots
    first = footstep(com, [p["FR_FOOT"], p["HL_FOOT"]], ("FR_FOOT", "HL_FOOT"), length / 2, height, dt, step_knots)
    second = footstep(com, [p["FL_FOOT"], p["HR_FOOT"]], ("FL_FOOT", "HR_FOOT"), length, height, dt, step_knots)
    return rest + first + rest + second + rest[:1]


def jump(model, q0, height=0.15, span=(0.0, 0.3, 0.0), dt=1e-2, ground=10, flying=20):
    """createJumpingProblem's knots: the last is the terminal one."""
    p = {f: casrbd.frame_placement(model, q0, f)[:3, 3] * [1, 1, 0] for f in FEET}
    df = span[2] - casrbd.frame_placement(model, q0, "FR_FOOT")[2, 3]
    com = np.mean(list(p.values()), axis=0)
    com[2] = casrbd.center_of_mass(model, q0, np.zeros(model.nv), np.zeros(model.nv))[0][2]
    up = [Knot((), dt, com + (np.array(span) / 2 + [0, 0, height]) * (k + 1) / flying) for k in range(flying)]
    landing = Knot(FEET, 0.0, None, tuple((f, p[f] + span) for f in FEET))
    landed = [Knot(FEET, dt, com + [span[0], span[1], df])] * ground
    return [Knot(FEET, dt)] * ground + up + [Knot((), dt)] * flying + [landing] + landed


@functools.cache
def kinematics(model):
    """q -> (CoM, the feet's positions, q (-) STANDING), one SX graph (its Jacobian by AD is compact)."""
    q, zero = ca.SX.sym("q", model.nq), ca.DM.zeros(model.nv)
    out = [casrbd.function(model, "center_of_mass")(q, zero, zero)[0]]
    out += [casrbd.function(model, "frame_placement", frame=f)(q)[:3, 3] for f in FEET]
    return ca.Function("kinematics", [q], [*out, casrbd.function(model, "difference")(STANDING, q)])


@functools.cache
def dynamics(model, feet, dt, second_order="analytical", kd=50.0):
    """(x, u) -> (x_next, contact forces or impulses) of a knot with contact set ``feet``: a running
    knot (semi-implicit Euler over the contact dynamics, ``aba`` without contacts), an impulse at dt = 0.
    ``second_order``: of the contact dynamics ("ad": built only if asked, as Gauss-Newton never does)."""
    nq, nv = model.nq, model.nv
    x, u = ca.MX.sym("x", nq + nv), ca.MX.sym("u", nv - 6 if dt else 0)
    q, v = x[:nq], x[nq:]
    contacts = {"contacts": [(f, "3d") for f in feet], "reference": "local_world_aligned", "second_order": second_order}
    name = "_".join(["impulse" if dt == 0 else "step", *(f[0] + f[1] for f in feet)])  # a C name per contact set
    if dt == 0:
        v_next, lam = casrbd.function(model, "impulse_dynamics", jacobian="analytical", damping=1e-12, **contacts)(q, v)
        return ca.Function(name, [x, u], [ca.vertcat(q, v_next), lam], ["x", "u"], ["x_next", "lam"])
    tau = ca.vertcat(ca.MX.zeros(6), u)
    if feet:
        a, lam = casrbd.function(model, "constraint_dynamics", jacobian="analytical", kd=kd, **contacts)(q, v, tau)
    else:
        a = casrbd.function(model, "aba", jacobian="analytical", second_order=second_order)(q, v, tau)
        lam = ca.MX(0, 1)
    v_next = v + a * dt
    x_next = ca.vertcat(casrbd.function(model, "integrate")(q, v_next * dt), v_next)
    return ca.Function(name, [x, u], [x_next, lam], ["x", "u"], ["x_next", "lam"])


def stage_function(model, feet, kind, dt, hessian="exact"):
    """(x, u, p) -> (cost, x_next) of a knot: ``kind`` "running", "impulse" (u empty) or "terminal";
    p = [CoM target, its weight, 4 foot targets, their weights]; ``feet``: the contact set. The cost
    is one SX graph of (x, u, p, y), y = (CoM, feet, q (-) STANDING, contact forces) from the calls of
    the kinematics and the dynamics; "gauss-newton" writes out its derivatives (``ocp.gauss_newton_stage``)."""
    nq, nv, nu = model.nq, model.nv, model.nv - 6
    name = "_".join([kind, *(f[0] + f[1] for f in feet)])  # a C identifier, unique per knot type
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
        bound = np.r_[model.upper[7:], [V_MAX] * nu]
        cost += 1e3 * common.barrier(ca.vertcat(q[7:], v[6:]), -bound, bound)
    cost += 10 * 0.5 * ca.sumsqr(ca.DM(w) * ca.vertcat(dq, v))
    if nf:
        cone = ca.vec(ca.mtimes(CONE, ca.reshape(lam, 3, nf)))
        cost += 10 * common.barrier(cone, np.tile([-np.inf] * 4 + [0], nf), np.tile([0.0] * 4 + [np.inf], nf))
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


def parameters(knot):
    """p of ``stage_function``: the knot's CoM and foot targets and their weights (0 where none)."""
    targets = dict(knot.targets)
    weight = 1e7 if knot.dt == 0 else 1e6
    return np.r_[
        knot.com if knot.com is not None else np.zeros(3),
        weight if knot.com is not None else 0.0,
        np.concatenate([targets.get(f, np.zeros(3)) for f in FEET]),
        [weight * (f in targets) for f in FEET],
    ]


def transcribe(model, knots, x0, hessian="exact", compiled=None):
    """The knots as a stage-wise Opti problem from x0 with Crocoddyl's initial guess
    (``common.transcribe_knots``); returns (Stagewise, the stage Functions with their parameters)."""
    return common.transcribe_knots(
        knots,
        x0,
        lambda feet, kind, dt: stage_function(model, feet, kind, dt, hessian),
        parameters,
        lambda knot: common.quasi_static(model, x0[: model.nq], knot.feet),
        compiled,
    )


def solve(problem="trot", solver="fatrop", hessian="gauss-newton", compiled=False, verbose=False, **sizes):
    """Solve Crocoddyl's ``problem`` ("trot" or "jump", ``sizes`` to change its arguments) for solo12;
    returns a dict with the model, knots, states xs (knots x 37), controls us (a list, empty at
    impulses), the stage Functions and the solver's stats."""
    if compiled and hessian != "gauss-newton":
        raise ValueError(
            "compiled=True takes hessian='gauss-newton' (AD's second order of the contact dynamics is too large)"
        )
    model = load_robot("solo12")
    knots = {"trot": trot, "jump": jump}[problem](model, STANDING, **sizes)
    x0 = np.r_[STANDING, np.zeros(model.nv)]
    st, stages = transcribe(model, knots, x0, hessian, f"solo12_{problem}" if compiled else None)
    xs, us, stats = common.solve_knots(st, solver, verbose, expand=compiled)
    return {"model": model, "knots": knots, "xs": xs, "us": us, "stages": stages, "stats": stats}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", choices=("trot", "jump"), default="trot")
    parser.add_argument("--solver", choices=ocp.SOLVERS, default="fatrop")
    parser.add_argument("--hessian", choices=HESSIANS, default="gauss-newton")
    parser.add_argument("--compiled", action="store_true", help="the stage Functions as C (Gauss-Newton Hessian)")
    parser.add_argument("--verbose", action="store_true", help="the solver's iteration log")
    parser.add_argument("--html", metavar="PATH", help="write the motion as an HTML animation")
    args = parser.parse_args(argv)
    result = solve(args.problem, args.solver, args.hessian, args.compiled, args.verbose)
    modes = f"{args.solver}, {args.hessian} Hessian" + (", compiled stages" if args.compiled else "")
    print(f"solo12 {args.problem} ({modes}): {ocp.format_stats(result['stats'])}")
    if args.html:
        common.write_knots_html(args.html, result["model"], result["knots"], result["xs"], "solo12")
    return 0 if result["stats"]["success"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
