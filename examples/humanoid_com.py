"""Talos shifts its weight onto the left foot: centroidal dynamics on whole-body kinematics.

The centroidal momentum h = A_G(q) v (``centroidal_momentum``: linear and angular momentum about the
centre of mass; its Jacobian analytical or casadi's AD) carries the dynamics: h_{k+1} = h_k + dt (the
soles' wrenches about the centre of mass + m g), the wrenches (world axes) in friction pyramids with their
centre of pressure inside the sole. The whole body follows kinematically: q_{k+1} = q_k (+) v_k dt, the
soles stay put, the joints within their limits, and the centre of mass ends above the left sole, at rest
(Dai, Valenzuela & Tedrake, "Whole-body motion planning with centroidal dynamics and full kinematics",
Humanoids 2014, in its simplest form). The check (``whole_body_residual``): rnea's base rows with the
planned wrenches and a_k = (v_{k+1} - v_k) / dt vanish up to the time discretisation.

    python examples/humanoid_com.py --nodes 20 --jacobian analytical --plot talos.png
"""

import warnings

import casadi as ca
import common
import numpy as np

import casrbd
from casrbd import ocp
from casrbd.models import feet_on_ground, load_robot
from casrbd.ocp.opti import contact_forces, sole_wrench_cone, solve_ipopt, trajectories, wrench_about

FEET = ("left_sole_link", "right_sole_link")
LEG = (0.0, 0.0, -0.411354, 0.859395, -0.448041, 0.0)  # hip yaw, roll, pitch, knee, ankle pitch, roll: knees bent
SOLE = (0.10, 0.05)  # half length and half width of the sole (m), for the centre of pressure


def solve(nodes=20, duration=1.2, mu=0.7, jacobian="analytical", compiled=False, hessian="exact", verbose=False):
    """Solve the weight shift: a dict with the model, t, q, v (nodes + 1 rows), the wrenches (nodes x 6 x 2
    feet), the momentum h, the centre of mass, dt and the stats. ``jacobian``: the momentum's, or AD."""
    if nodes < 4:
        raise ValueError(f"nodes must be at least 4, got {nodes}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the grippers' mimic joints are loaded as independent joints
        model = load_robot("talos_reduced")
    nq, nv, m = model.nq, model.nv, model.mass
    dt = duration / nodes
    q0 = np.array(casrbd.neutral(model), dtype=float)  # half-sitting legs, the rest neutral, soles on the ground
    q0[[model.idx_q[model.joint_index(f"leg_{s}_{k}_joint")] for s in ("left", "right") for k in range(1, 7)]] = LEG * 2
    q0 = feet_on_ground(model, q0, FEET)
    soles = [casrbd.frame_placement(model, q0, f) for f in FEET]
    g = np.r_[model.gravity, 0, 0, 0]

    Q, V, W = ca.MX.sym("q", nq), ca.MX.sym("v", nv), ca.MX.sym("w", 12)
    hg = casrbd.function(model, "centroidal_momentum", jacobian=jacobian)(Q, V)
    com = casrbd.function(model, "center_of_mass")(Q, ca.DM.zeros(nv), ca.DM.zeros(nv))[0]
    rate = sum(wrench_about(com, X[:3, 3], W[6 * i : 6 * i + 6]) for i, X in enumerate(soles)) + m * g
    placed = []  # each sole's position and rotation error (vee of R0^T R - R^T R0, zero at R = R0)
    for f, X in zip(FEET, soles):
        oMf = casrbd.function(model, "frame_placement", frame=f)(Q)
        E = ca.mtimes(X[:3, :3].T, oMf[:3, :3])
        placed += [oMf[:3, 3] - X[:3, 3], ca.vertcat(E[2, 1] - E[1, 2], E[0, 2] - E[2, 0], E[1, 0] - E[0, 1])]
    node = ca.Function("node", [Q, V, W], [hg, rate, com, ca.vertcat(*placed)]).map(nodes + 1)
    step = ca.Function("step", [Q, V], [ocp.euler_step(model, Q, V, ca.DM.zeros(nv), dt)[0]]).map(nodes)

    opti = ca.Opti()
    Qs, Vs, Ws = opti.variable(nq, nodes + 1), opti.variable(nv, nodes + 1), opti.variable(12, nodes + 1)
    Ws = m * 9.81 * Ws  # the wrenches' variables in units of the weight
    H, Hdot, C, Placed = node(Qs, Vs, Ws)
    opti.subject_to(Qs[:, 1:] == step(Qs[:, :-1], Vs[:, :-1]))
    opti.subject_to(H[:, 1:] == H[:, :-1] + dt * Hdot[:, :-1])  # the centroidal dynamics
    opti.subject_to(Qs[:, 0] == q0)
    opti.subject_to(Vs[:, 0] == 0)
    opti.subject_to(Vs[:, -1] == 0)
    opti.subject_to(ca.vec(Placed[:, 1:]) == 0)  # the soles stay put
    opti.subject_to(C[:2, -1] == soles[0][:2, 3])  # over the left sole at the end
    opti.subject_to(Hdot[:, -1] == 0)  # and in equilibrium there
    joints = slice(7, nq)
    opti.subject_to(opti.bounded(model.lower[joints], Qs[joints, :], model.upper[joints]))
    for i in range(2):
        sole_wrench_cone(opti, Ws[6 * i : 6 * i + 6, :], mu, *SOLE)
    weight = np.r_[0, 0, m * 9.81 / 2, 0, 0, 0]
    smooth = ca.sumsqr((Vs[:, 1:] - Vs[:, :-1]) / dt)  # the whole body follows closely
    wrenches = ca.sumsqr(Ws - np.tile(weight, 2)[:, None])
    posture = ca.sumsqr(Qs[joints, :] - q0[joints, None])
    opti.minimize(dt * (ca.sumsqr(Vs) + 1e-2 * smooth + 1e-4 * wrenches + 10 * posture))
    opti.set_initial(Qs, np.tile(q0[:, None], nodes + 1))
    opti.set_initial(Ws, np.tile(np.tile(weight, 2)[:, None], nodes + 1))  # a linear map of the variables
    stats, value = solve_ipopt(opti, hessian=hessian, verbose=verbose, compiled=compiled)
    result = trajectories(value, dt, q=Qs, v=Vs, h=H, com=C)
    wrenches = value(Ws).T.reshape(nodes + 1, 2, 6).transpose(0, 2, 1)
    result.update(model=model, wrenches=wrenches, soles=soles, feet=FEET, mu=mu, stats=stats)
    return result


def whole_body_residual(result):
    """Per interval, the base rows of rnea(q_k, v_k, a_k, f_ext) with a_k = (v_{k+1} - v_k) / dt and
    the planned sole wrenches as external forces: what the unactuated base would have to supply."""
    model, q, v, dt = result["model"], result["q"], result["v"], result["dt"]
    out = []
    for k in range(len(q) - 1):
        f_ext = np.array(contact_forces(model, q[k], result["feet"], result["wrenches"][k]))
        out.append(casrbd.rnea(model, q[k], v[k], (v[k + 1] - v[k]) / dt, f_ext)[:6])
    return np.array(out)


def plot(result, path):
    series = {
        "CoM x, y [m]": result["com"][:, :2],
        "momentum [kg m/s, kg m^2/s]": result["h"],
        "sole F_z [N]": result["wrenches"][:, 2, :],
    }
    title = "talos weight shift (centroidal dynamics)"
    common.plot_motion(path, result, series, title, 3, frames=result["feet"], planes=("yz", "xy"))


def main(argv=None):
    p = common.parser(
        __doc__, 20, "intervals over the 1.2 s motion", "write the trajectories and PATH_snapshots.png", ("jacobian",)
    )
    args = p.parse_args(argv)
    result = common.call(args, solve)
    residual, weight = np.abs(whole_body_residual(result)).max(), result["model"].mass * 9.81
    check = f"whole-body check: largest base wrench entry {residual:.3g} N or N m (weight {weight:.1f} N)"
    return common.finish(args, "talos weight shift", result, plot, "talos_reduced", notes=(check,))


if __name__ == "__main__":
    raise SystemExit(main())
