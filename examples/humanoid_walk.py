"""Talos walks two steps: Crocoddyl's biped walking problem (``SimpleBipedGaitProblem``) in casadi.

The knots of Crocoddyl 3.2's ``createWalkingProblem(x0, 0.6, 0.1, 0.03, 15, 4)``
on the whole-body talos_reduced (38 dofs) from its half-sitting pose: double
support, the right foot steps half a stride, double support, the left foot a
whole one. Running knots step the contact dynamics of their stance soles (6-D
contacts, wrenches in world axes, Baumgarte gain kd = 30 on the soles' spatial
velocity; ``constraint_dynamics``) by semi-implicit Euler; a touchdown is an
impulse knot (``impulse_dynamics`` on the landing sole), the last one also the
terminal knot. Costs: CoM tracking, the swing sole's placement (log6 of its
error), each stance sole's wrench cone (friction, centre of pressure, yaw
torque: Caron et al. 2015, as Crocoddyl's ``WrenchCone``) as a quadratic
barrier, weighted state and control regularisation, times dt at running knots.
Built as examples/quadruped_gait.py builds the solo12 trot: one SX cost of
(x, u, p, y) per knot type, y from calls of the kinematics and the dynamics,
Gauss-Newton stages (``ocp.gauss_newton_stage``), compiled with ``--compiled``.

    python examples/humanoid_walk.py --compiled --html walk.html    # fatrop; --solver ipopt
"""

import argparse
import functools
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import casadi as ca
import common
import numpy as np

import casrbd
from casrbd import ocp
from casrbd.models import example_robot_data_dir, load_robot
from casrbd.spatial import SE3, log6

FEET = ("right_sole_link", "left_sole_link")
MU, SOLE = 0.7 / np.sqrt(2), (0.05, 0.025)  # inner pyramid of the cone mu = 0.7; half length, half width
KD = 30.0


def wrench_cone(mu=MU, X=SOLE[0], Y=SOLE[1]):
    """A of the contact wrench cone CONE_LB <= A [f; tau] <= CONE_UB (A w <= 0 but row 4, f_z >= 0) of a
    2X x 2Y sole, w about its centre (Caron, Pham, Nakamura, ICRA 2015): friction, centre of pressure, yaw."""
    rows = [[1, 0, -mu, 0, 0, 0], [-1, 0, -mu, 0, 0, 0], [0, 1, -mu, 0, 0, 0], [0, -1, -mu, 0, 0, 0]]
    rows += [[0, 0, 1, 0, 0, 0], [0, 0, -Y, 1, 0, 0], [0, 0, -Y, -1, 0, 0], [0, 0, -X, 0, 1, 0], [0, 0, -X, 0, -1, 0]]
    for s in (-1, 1):  # tau_z above its lower (s = -1) and below its upper bound (s = 1)
        for a, b in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
            rows.append([a * Y, b * X, -mu * (X + Y), s * a * mu, s * b * mu, s])
    return np.array(rows, dtype=float)


CONE = wrench_cone()
CONE_LB = np.where(np.arange(len(CONE)) == 4, 0.0, -np.inf)
CONE_UB = np.where(np.arange(len(CONE)) == 4, np.inf, 0.0)


class Knot:
    """A knot: its soles in contact (the landing sole at an impulse), dt (0: an impulse), tasks."""

    def __init__(self, feet, dt, com=None, targets=()):
        self.feet, self.dt, self.com, self.targets = feet, dt, com, dict(targets)


def load_talos():
    """talos_reduced with its SRDF's rotor inertias (armature: rotor inertia times gear ratio squared)
    and x0 = (the SRDF's half-sitting pose, zero velocity), as example-robot-data loads it for Crocoddyl."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the grippers' mimic joints are loaded as independent joints
        model = load_robot("talos_reduced")
    srdf = ET.parse(Path(example_robot_data_dir()) / "talos_data" / "srdf" / "talos.srdf").getroot()
    rotors = srdf.find("rotor_params").iter("joint")
    model = model.with_armature({j.get("name"): float(j.get("mass")) * float(j.get("gear_ratio")) ** 2 for j in rotors})
    q = np.array(casrbd.neutral(model), dtype=float)
    for joint in srdf.find("group_state[@name='half_sitting']").iter("joint"):
        q[model.q_slice(model.joint_index(joint.get("name")))] = np.array(joint.get("value").split(), dtype=float)
    return model, np.r_[q, np.zeros(model.nv)]


def footstep(com, p0, swing, length, height, dt, n):
    """Crocoddyl's createFootstepModels for one swing sole starting at p0: n knots, then its touchdown."""
    knots, stance = [], tuple(f for f in FEET if f != swing)
    for k in range(n):
        lift = height * k / (n / 2) if k < n / 2 else height * (1 - (k - n / 2) / (n / 2))
        target = p0 + [length * (k + 1) / n, 0, lift]
        knots.append(Knot(stance, dt, com + [length * (k + 1) / n / 2, 0, 0], {swing: target}))
    com += [length / 2, 0, 0]
    p0 += [length, 0, 0]
    return knots + [Knot((swing,), 0.0, None, {swing: target})]


def walk(model, x0, length=0.6, height=0.1, dt=0.03, step_knots=15, support_knots=4):
    """createWalkingProblem's knots (the first step a half one): the last is the terminal one."""
    p = {f: casrbd.frame_placement(model, x0[: model.nq], f)[:3, 3] for f in FEET}
    com = (p[FEET[0]] + p[FEET[1]]) / 2
    com[2] = casrbd.center_of_mass(model, x0[: model.nq])[2]
    rest = [Knot(FEET, dt)] * support_knots
    right = footstep(com, p[FEET[0]], FEET[0], length / 2, height, dt, step_knots)
    return rest + right + rest + footstep(com, p[FEET[1]], FEET[1], length, height, dt, step_knots)


@functools.cache
def kinematics(model, q_ref):
    """q -> (CoM, each sole's rotation (by columns) and position, q_ref (-) q), one SX graph."""
    q, zero = ca.SX.sym("q", model.nq), ca.DM.zeros(model.nv)
    out = [casrbd.function(model, "center_of_mass")(q, zero, zero)[0]]
    for f in FEET:
        oMf = casrbd.function(model, "frame_placement", frame=f)(q)
        out += [ca.vec(oMf[:3, :3]), oMf[:3, 3]]
    return ca.Function("kinematics", [q], [*out, casrbd.function(model, "difference")(np.array(q_ref), q)])


@functools.cache
def dynamics(model, feet, dt):
    """(x, u) -> (x_next, the soles' wrenches or impulses): semi-implicit Euler over the contact
    dynamics of ``feet`` (v+ = v + a dt, q+ = q (+) v+ dt), or the impulse on ``feet`` at dt = 0."""
    nq, nv = model.nq, model.nv
    x, u = ca.MX.sym("x", nq + nv), ca.MX.sym("u", nv - 6 if dt else 0)
    q, v, contacts = x[:nq], x[nq:], {"contacts": [(f, "6d") for f in feet], "reference": "local_world_aligned"}
    name = "_".join(["impulse" if dt == 0 else "step", *(f[0] for f in feet)])
    first = {"jacobian": "analytical", "second_order": "ad"}  # Gauss-Newton stages: Jacobians only
    if dt == 0:
        impulse = casrbd.function(model, "impulse_dynamics", **first, damping=1e-12, **contacts)
        v_next, lam = impulse(q, v)
        return ca.Function(name, [x, u], [ca.vertcat(q, v_next), lam], ["x", "u"], ["x_next", "lam"])
    cd = casrbd.function(model, "constraint_dynamics", **first, kd=KD, **contacts)
    a, lam = cd(q, v, ca.vertcat(ca.MX.zeros(6), u))
    v_next = v + a * dt
    x_next = ca.vertcat(casrbd.function(model, "integrate")(q, v_next * dt), v_next)
    return ca.Function(name, [x, u], [x_next, lam], ["x", "u"], ["x_next", "lam"])


def stage_function(model, q_ref, feet, kind, dt):
    """The Gauss-Newton stage (x, u, p) -> (cost, x_next) of a knot: ``kind`` "running", "impulse" or
    "terminal" (an impulse knot's costs); p = [CoM target, its weight, 2 sole targets, their weights]."""
    nq, nv, nu = model.nq, model.nv, model.nv - 6
    name = "_".join([kind, *(f[0] for f in feet)])  # a C identifier, unique per knot type
    nf = len(feet) if kind == "running" else 0
    x, u, p = ca.SX.sym("x", nq + nv), ca.SX.sym("u", nu if kind == "running" else 0), ca.SX.sym("p", 12)
    y = ca.SX.sym("y", 27 + nv + 6 * nf)
    com, dq, lam, v = y[:3], y[27 : 27 + nv], y[27 + nv :], x[nq:]
    cost = 0.5 * p[3] * ca.sumsqr(com - p[:3])
    for i in range(2):  # the sole's placement error log6(target^-1 oMf), the target's rotation the identity
        R, pos = ca.reshape(y[3 + 12 * i : 12 + 12 * i], 3, 3), y[12 + 12 * i : 15 + 12 * i]
        cost += 0.5 * p[10 + i] * ca.sumsqr(log6(SE3(R, pos - p[4 + 3 * i : 7 + 3 * i])))
    w = [1.0] * 6 + [0.1] * nu if dt == 0 else [0.0] * 3 + [500.0] * 3 + [0.01] * nu
    cost += 10 * 0.5 * ca.sumsqr(ca.DM(w + [10.0] * nv) * ca.vertcat(dq, v))
    for i in range(nf):
        cost += 10 * common.barrier(ca.mtimes(CONE, lam[6 * i : 6 * i + 6]), CONE_LB, CONE_UB)
    if kind == "running":
        cost = dt * (cost + 0.1 * 0.5 * ca.sumsqr(u))
    cost = ca.Function("cost_" + name, [x, u, p, y], [cost], ["x", "u", "p", "y"], ["cost"])
    X, U = ca.MX.sym("x", nq + nv), ca.MX.sym("u", u.numel())
    x_next, forces = (X, ca.MX(0, 1)) if kind == "terminal" else dynamics(model, feet, dt)(X, U)
    Y = ca.vertcat(*kinematics(model, q_ref)(X[:nq]), forces if nf else ca.MX(0, 1))
    return ocp.gauss_newton_stage(
        name, cost, ca.Function("inner_" + name, [X, U], [x_next, Y], ["x", "u"], ["x_next", "y"])
    )


def parameters(knot):
    """p of ``stage_function``: the knot's CoM and sole targets and their weights (0 where none)."""
    return np.r_[
        knot.com if knot.com is not None else np.zeros(3),
        0.0 if knot.com is None else 1e6,
        np.concatenate([knot.targets.get(f, np.zeros(3)) for f in FEET]),
        [(1e8 if knot.dt == 0 else 1e6) * (f in knot.targets) for f in FEET],
    ]


def transcribe(model, knots, x0, compiled=None):
    """The knots as a stage-wise Opti problem from x0 with Crocoddyl's guess (``common.transcribe_knots``);
    returns (Stagewise, the stage Functions with their parameters, knot by knot)."""
    q_ref = tuple(x0[: model.nq])
    return common.transcribe_knots(
        knots,
        x0,
        lambda feet, kind, dt: stage_function(model, q_ref, feet, kind, dt),
        parameters,
        lambda knot: common.quasi_static(model, x0[: model.nq], knot.feet, rows=6),
        compiled,
    )


def solve(solver="fatrop", compiled=False, verbose=False, **sizes):
    """Solve the walk (``sizes``: ``walk``'s arguments); returns a dict with the model, knots, states
    xs (knots x 77), controls us (empty at impulses), the stage Functions and the solver's stats."""
    model, x0 = load_talos()
    knots = walk(model, x0, **sizes)
    st, stages = transcribe(model, knots, x0, "talos_walk" if compiled else None)
    xs, us, stats = common.solve_knots(st, solver, verbose, expand=compiled)
    return {"model": model, "knots": knots, "xs": xs, "us": us, "stages": stages, "stats": stats}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solver", choices=ocp.SOLVERS, default="fatrop")
    parser.add_argument("--compiled", action="store_true", help="the stage Functions as C")
    parser.add_argument("--verbose", action="store_true", help="the solver's iteration log")
    parser.add_argument("--html", metavar="PATH", help="write the motion as an HTML animation")
    args = parser.parse_args(argv)
    result = solve(args.solver, args.compiled, args.verbose)
    modes = args.solver + (", compiled stages" if args.compiled else "")
    print(f"talos walk ({modes}): {ocp.format_stats(result['stats'])}")
    if args.html:
        common.write_knots_html(args.html, result["model"], result["knots"], result["xs"], "talos_reduced")
    return 0 if result["stats"]["success"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
