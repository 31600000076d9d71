"""Solo12 forward jump in inverse-dynamics form, with a fixed contact schedule.

Decision variables at each node: the configuration q (free-flyer base with a quaternion), the velocity
v, the acceleration a and a world-frame force per foot. The torques are tau = rnea(q, v, a, f_ext), the
forces moved to their knees' frames (``ocp.opti.contact_forces``); the base rows of tau vanish (it is
not actuated), the joint torques stay within their limit. The schedule: all feet on the ground, a flight,
all feet down again ``jump`` metres further on. Stance feet stay put and push inside a friction pyramid;
q_{k+1} = q_k (+) v_k dt on the manifold, so the quaternion stays a unit quaternion.

    python examples/legged.py --nodes 40 --jacobian analytical --plot solo.png
"""

import casadi as ca
import common
import numpy as np

import casrbd
from casrbd import ocp
from casrbd.models import feet_on_ground, load_robot, reference_configurations
from casrbd.ocp.legged import SOLO_FEET as FEET
from casrbd.ocp.opti import contact_forces, friction_pyramid, interpolate, schedule, solve_ipopt, trajectories

PHASES = (("stance", 0.3), ("flight", 0.2), ("stance", 0.3))  # (contact, seconds)


def solve(
    nodes=40,
    jump=0.1,
    tau_max=2.5,
    mu=0.7,
    jacobian="analytical",
    compiled=False,
    hessian="exact",
    verbose=False,
    second_order=None,
):
    """Solve the jump; returns a dict with the model, times t, q, v (nodes + 1 rows), a, tau,
    forces (nodes rows; forces as nodes x 3 x feet), the contact flags, dt and the solver stats."""
    if nodes < 6:
        raise ValueError(f"nodes must be at least 6 (two per phase), got {nodes}")
    for arg, val in (("tau_max", tau_max), ("mu", mu)):
        if not val > 0:
            raise ValueError(f"{arg} must be positive, got {val}")
    model = load_robot("solo12")
    nq, nv, nf = model.nq, model.nv, len(FEET)
    phase, dt = schedule(nodes, PHASES)
    contact = np.array([PHASES[p][0] == "stance" for p in phase])  # all feet on the ground, per interval
    if contact.all() or not contact.any():
        raise ValueError(f"nodes={nodes} is too few to resolve the contact schedule {PHASES}")
    q_start = feet_on_ground(model, reference_configurations("solo12")["straight_standing"], FEET)
    q_goal = q_start + np.r_[jump, np.zeros(nq - 1)]
    rnea = ocp.dynamics(model, "rnea", jacobian, f_ext=True, second_order=second_order)

    # per node, as an MX Function mapped over the nodes: torques and foot positions
    q, v, a, F = ca.MX.sym("q", nq), ca.MX.sym("v", nv), ca.MX.sym("a", nv), ca.MX.sym("F", 3 * nf)
    feet = ca.horzcat(*[casrbd.function(model, "frame_placement", frame=f)(q)[:3, 3] for f in FEET])
    node = ca.Function(
        "node", [q, v, a, F], [rnea(q, v, a, contact_forces(model, q, FEET, ca.reshape(F, 3, nf))), feet]
    )
    q_next, v_next = ocp.euler_step(model, q, v, a, dt)
    step = ca.Function("step", [q, v, a], [ca.vertcat(q_next, v_next)])

    opti = ca.Opti()
    Q, V = opti.variable(nq, nodes + 1), opti.variable(nv, nodes + 1)
    A, Fs = opti.variable(nv, nodes), opti.variable(3 * nf, nodes)
    tau, P = node.map(nodes)(Q[:, :-1], V[:, :-1], A, Fs)
    opti.subject_to(ca.vertcat(Q[:, 1:], V[:, 1:]) == step.map(nodes)(Q[:, :-1], V[:, :-1], A))
    opti.subject_to(Q[:, 0] == q_start)
    opti.subject_to(V[:, 0] == 0)
    opti.subject_to(Q[:, -1] == q_goal)
    opti.subject_to(V[:, -1] == 0)
    opti.subject_to(tau[:6, :] == 0)  # the base is not actuated
    opti.subject_to(opti.bounded(-tau_max, tau[6:, :], tau_max))
    feet_start = np.column_stack([casrbd.frame_placement(model, q_start, f)[:3, 3] for f in FEET])
    landed = False
    for k in range(nodes):
        Fk = ca.reshape(Fs[:, k], 3, nf)
        if contact[k]:
            landed = landed or (k > 0 and not contact[k - 1])
            # feet stay on their spot: where they started, or where they land (jump further on)
            opti.subject_to(P[:, nf * k : nf * (k + 1)] == feet_start + np.array([[jump if landed else 0.0], [0], [0]]))
            friction_pyramid(opti, Fk, mu)
        else:
            opti.subject_to(Fs[:, k] == 0)
            opti.subject_to(P[:, nf * k : nf * (k + 1)][2, :] >= 0)
    opti.minimize(dt * (ca.sumsqr(tau[6:, :]) + 1e-3 * ca.sumsqr(A) + 1e-4 * ca.sumsqr(Fs)))
    # guess: standing while the base moves on at constant speed, weight shared by the feet in stance
    opti.set_initial(Q, interpolate(q_start, q_goal, nodes))
    weight = model.mass * np.linalg.norm(model.gravity) / nf
    opti.set_initial(Fs, np.tile(np.array([0, 0, weight] * nf)[:, None], nodes) * contact)
    stats, value = solve_ipopt(opti, hessian=hessian, verbose=verbose, compiled=compiled)
    result = trajectories(value, dt, q=Q, v=V, a=A, tau=tau)
    forces = value(Fs).T.reshape(nodes, nf, 3).transpose(0, 2, 1)
    result.update(model=model, contact=contact, forces=forces, feet=FEET, q_start=q_start, q_goal=q_goal)
    result.update(tau_max=tau_max, mu=mu, stats=stats)
    return result


def plot(result, path, snapshots=8):
    """Base height, joint torques and vertical foot forces over time at ``path``, and a
    stick-figure sequence at ``<path>_snapshots.png``."""
    t, q = result["t"], result["q"]
    series = {"base x, z [m]": q[:, [0, 2]], "joint tau [Nm]": result["tau"][:, 6:]}
    series["foot F_z [N]"] = result["forces"][:, 2, :]
    picks = common.picks(len(q), snapshots)
    phase = ["stance" if k == len(q) - 1 or result["contact"][k] else "flight" for k in picks]
    strip = {"planes": ("xz",), "strip": True, "labels": [f"t = {t[k]:.2f} s ({p})" for k, p in zip(picks, phase)]}
    common.plot_motion(path, result, series, "solo12 jump", snapshots, "solo12 jump", frames=result["feet"], **strip)


def main(argv=None):
    p = common.parser(__doc__, 40, "intervals over the 0.8 s schedule", "write the trajectories and PATH_snapshots.png")
    p.add_argument("--jump", type=float, default=0.1, help="forward distance in m (default 0.1)")
    p.add_argument("--tau-max", type=float, default=2.5, help="joint torque limit in Nm (default 2.5)")
    args = p.parse_args(argv)
    result = common.call(args, solve)
    return common.finish(args, "solo12 jump", result, plot, "solo12")


if __name__ == "__main__":
    raise SystemExit(main())
