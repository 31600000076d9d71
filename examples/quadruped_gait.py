"""Solo12 trot in forward-dynamics form with the contact dynamics Function.

Decision variables at each node: the configuration q (free-flyer base with a
quaternion), the velocity v and the twelve joint torques u. Each interval
steps the rigid-contact forward dynamics of its contact phase,
(a, lambda) = constraint_dynamics(q, v, [0; u]), one casadi Function per
contact set (Pinocchio's ``constraintDynamics``; its Jacobian analytical or
casadi's AD), then q (+) v dt, v + a dt. The schedule: four feet on the
ground, a trot step (front left and hind right in stance, the other two
swing), the other diagonal, and four feet again, the base moving
``distance`` forward. The contact forces come out of the Function (world
axes: ``reference="local_world_aligned"``) and stay in a linearised friction
cone with a minimum normal force; a foot that touches down does so at zero
height and velocity, swing feet stay above the ground and lift to
``clearance`` mid-swing. A Baumgarte velocity gain ``kd`` keeps the stance
feet from drifting between nodes. The initial guess is the neutral standing
pose at every node, at rest, with the torques that hold it on four feet.

    python examples/quadruped_gait.py --nodes 32 --jacobian analytical --plot trot.png
"""

import argparse

import casadi as ca
import numpy as np

import casrbd
from casrbd import ocp
from casrbd.models import load_robot

FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
LEGS = np.array([0, 0.8, -1.6, 0, 0.8, -1.6, 0, -0.8, 1.6, 0, -0.8, 1.6])  # HAA, HFE, KFE per leg
# (feet in contact, seconds)
PHASES = ((FEET, 0.1), (("FL_FOOT", "HR_FOOT"), 0.2), (("FR_FOOT", "HL_FOOT"), 0.2), (FEET, 0.1))


def standing(model, x=0.0):
    """The standing configuration with the feet on the ground (z = 0), base at ``x``."""
    q = np.r_[0, 0, 0, 0, 0, 0, 1, LEGS]
    q[2] = -min(casrbd.frame_placement(model, q, f)[2, 3] for f in FEET)
    q[0] = x
    return q


def standing_torques(model, q):
    """Joint torques that hold the standing pose on four feet: the least-norm (u, lambda) with
    g(q) = [0; u] + J^T lambda, J the feet's world-aligned point Jacobians."""
    J = np.vstack([casrbd.frame_jacobian(model, q, f, "local_world_aligned")[:3] for f in FEET])
    B = np.hstack([np.vstack([np.zeros((6, model.nv - 6)), np.eye(model.nv - 6)]), J.T])
    return np.linalg.lstsq(B, casrbd.generalized_gravity(model, q), rcond=None)[0][: model.nv - 6]


def schedule(nodes, phases=PHASES):
    """The phase index of every interval and dt, for ``nodes`` intervals."""
    duration = sum(s for _, s in phases)
    ends = np.cumsum([s for _, s in phases]) / duration * nodes
    phase = np.searchsorted(ends, np.arange(nodes) + 0.5)
    return phase, duration / nodes


def dynamics(model, feet, jacobian, kd):
    """The contact dynamics Function of the contact set ``feet`` (3-D point contacts)."""
    contacts = [(f, "3d") for f in feet]
    return casrbd.function(
        model, "constraint_dynamics", jacobian=jacobian, contacts=contacts, reference="local_world_aligned", kd=kd
    )


def solve(
    nodes=32,
    distance=0.06,
    clearance=0.03,
    tau_max=2.5,
    mu=0.7,
    kd=20.0,
    jacobian="analytical",
    compiled=False,
    hessian="exact",
    verbose=False,
):
    """Solve the trot; returns a dict with the model, times t, q, v (nodes + 1 rows), a, u, the contact
    forces (nodes x 3 x feet, zero for swing feet), the phase of each interval, dt and the solver stats."""
    phase, dt = schedule(nodes)
    if len(set(phase)) != len(PHASES) or min(np.bincount(phase)) < 2:
        raise ValueError(f"nodes={nodes} is too few to resolve the contact schedule (two intervals per phase)")
    for arg, val in (("tau_max", tau_max), ("mu", mu)):
        if not val > 0:
            raise ValueError(f"{arg} must be positive, got {val}")
    model = load_robot("solo12")
    nq, nv, nf = model.nq, model.nv, len(FEET)
    q_start, q_goal = standing(model), standing(model, distance)
    Q, V = ca.MX.sym("q", nq), ca.MX.sym("v", nv)
    feet = ca.Function(
        "feet",
        [Q, V],
        [
            ca.horzcat(*[casrbd.function(model, "frame_placement", frame=f)(Q)[:3, 3] for f in FEET]),
            ca.horzcat(
                *[
                    casrbd.function(model, "frame_velocity", frame=f, reference="local_world_aligned")(Q, V)[:3]
                    for f in FEET
                ]
            ),
        ],
    )

    opti = ca.Opti()
    Qs, Vs, Us = opti.variable(nq, nodes + 1), opti.variable(nv, nodes + 1), opti.variable(nv - 6, nodes)
    A, forces = [], []
    for p, (stance, _) in enumerate(PHASES):
        ks = np.flatnonzero(phase == p)
        f = dynamics(model, stance, jacobian, kd).map(len(ks))
        a, lam = f(Qs[:, ks], Vs[:, ks], ca.vertcat(ca.MX.zeros(6, len(ks)), Us[:, ks]))
        A.append(a)
        forces.append(
            [lam[3 * stance.index(ft) : 3 * stance.index(ft) + 3, :] if ft in stance else None for ft in FEET]
        )
    A = ca.horzcat(*A)
    a_sym = ca.MX.sym("a", nv)
    step = ca.Function("step", [Q, V, a_sym], [ca.vertcat(*ocp.euler_step(model, Q, V, a_sym, dt))]).map(nodes)
    opti.subject_to(ca.vertcat(Qs[:, 1:], Vs[:, 1:]) == step(Qs[:, :-1], Vs[:, :-1], A))
    P, Pdot = feet.map(nodes + 1)(Qs, Vs)
    opti.subject_to(Qs[:, 0] == q_start)
    opti.subject_to(Vs[:, 0] == 0)
    opti.subject_to(Qs[:2, -1] == q_goal[:2])
    opti.subject_to(Vs[:6, -1] == 0)  # the base at rest (with four feet down, so is the rest)
    opti.subject_to(opti.bounded(-tau_max, Us, tau_max))
    # knees bent as when standing: a straight leg makes its foot's contact Jacobian singular
    knees = 7 + np.arange(2, 12, 3)
    opti.subject_to(ca.vec(ca.vertcat(*[np.sign(LEGS[k - 7]) * Qs[k, :] for k in knees])) >= 0.3)
    for p, (stance, _) in enumerate(PHASES):
        ks = np.flatnonzero(phase == p)
        for i, ft in enumerate(FEET):
            cols = [nf * k + i for k in ks]
            if ft in stance:
                F = forces[p][i]
                opti.subject_to(F[2, :] >= 0.05 * model.mass * 9.81 / nf)
                opti.subject_to(opti.bounded(-mu * F[2, :], F[0, :], mu * F[2, :]))  # friction pyramid
                opti.subject_to(opti.bounded(-mu * F[2, :], F[1, :], mu * F[2, :]))
                if p > 0 and ft not in PHASES[p - 1][0]:  # touchdown: on the ground, at rest
                    opti.subject_to(P[2, cols[0]] == 0)
                    opti.subject_to(Pdot[:, cols[0]] == 0)
            else:
                opti.subject_to(P[2, cols] >= 0)
                opti.subject_to(P[2, cols[len(cols) // 2]] >= clearance)
    standing_legs = np.tile(LEGS[:, None], nodes + 1)
    opti.minimize(
        dt
        * (
            ca.sumsqr(Us)
            + 1e-2 * ca.sumsqr(Vs)
            + 10 * ca.sumsqr(Qs[7:, :] - standing_legs)
            + 1e3 * ca.sumsqr(Qs[3:6, :])
        )
    )
    # guess: the neutral standing pose at rest, base moving on at constant speed, standing torques
    s = np.linspace(0, 1, nodes + 1)
    opti.set_initial(Qs, np.outer(q_start, 1 - s) + np.outer(q_goal, s))
    opti.set_initial(Vs, 0)
    opti.set_initial(Us, np.tile(standing_torques(model, q_start)[:, None], nodes))
    opti.solver("ipopt", ocp.solver_options(hessian, verbose=verbose, compiled=compiled))
    stats = ocp.solve(opti)
    value = opti.debug.value
    F = np.zeros((nodes, 3, nf))
    for p in range(len(PHASES)):
        ks = np.flatnonzero(phase == p)
        for i in range(nf):
            if forces[p][i] is not None:
                F[ks, :, i] = np.atleast_2d(value(forces[p][i])).reshape(3, len(ks)).T
    return {
        "model": model,
        "t": np.arange(nodes + 1) * dt,
        "dt": dt,
        "phase": phase,
        "stance": [PHASES[p][0] for p in phase],
        "q": value(Qs).T,
        "v": value(Vs).T,
        "a": np.atleast_2d(value(A)).T,
        "u": np.atleast_2d(value(Us)).T,
        "forces": F,
        "feet": FEET,
        "q_start": q_start,
        "q_goal": q_goal,
        "tau_max": tau_max,
        "mu": mu,
        "kd": kd,
        "stats": stats,
    }


def plot(result, path, snapshots=8):
    """Base x and z, joint torques and vertical foot forces over time at ``path``, and a stick-figure
    sequence at ``<path>_snapshots.png``."""
    t, q = result["t"], result["q"]
    ocp.plot_series(
        path,
        t,
        {"base x, z [m]": q[:, [0, 2]], "joint tau [Nm]": result["u"], "foot F_z [N]": result["forces"][:, 2, :]},
        title="solo12 trot (contact dynamics)",
    )
    picks = np.linspace(0, len(q) - 1, snapshots).round().astype(int)
    ocp.plot_snapshots(
        result["model"],
        q[picks],
        ocp.snapshot_path(path),
        frames=result["feet"],
        title="solo12 trot",
        planes=("xz",),
        strip=True,
        labels=[f"t = {t[k]:.2f} s" for k in picks],
    )


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=32, help="intervals over the 0.6 s schedule (default 32)")
    p.add_argument("--distance", type=float, default=0.06, help="forward distance in m (default 0.06)")
    p.add_argument("--jacobian", choices=ocp.JACOBIANS, default="analytical")
    p.add_argument("--hessian", choices=ocp.HESSIANS, default="exact")
    p.add_argument("--compiled", action="store_true", help="the NLP's functions as C code (casadi's jit)")
    p.add_argument("--plot", metavar="PATH.png", help="write the trajectories and PATH_snapshots.png")
    p.add_argument("--verbose", action="store_true", help="IPOPT's iteration log")
    args = p.parse_args(argv)
    result = solve(
        args.nodes,
        args.distance,
        jacobian=args.jacobian,
        compiled=args.compiled,
        hessian=args.hessian,
        verbose=args.verbose,
    )
    print(f"solo12 trot ({args.jacobian}{', compiled' if args.compiled else ''}): {ocp.format_stats(result['stats'])}")
    if args.plot:
        plot(result, args.plot)
    return 0 if result["stats"]["success"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
