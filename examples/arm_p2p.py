"""7-dof arm point to point: rest to rest in given time, with joint, velocity and torque limits.

The arm is example-robot-data's Panda with its two finger joints made fixed
(closed, their mass merged into the hand), so q is the 7 arm joints;
without example-robot-data it is the package's ``arm7``. The limits are
the URDF's (position, velocity and effort: ``model.lower``, ``model.upper``,
``model.velocity_limit``, ``model.effort_limit``). Multiple shooting, one RK4 step
of x' = [v; aba(q, v, tau)] per interval. The cost is the effort
sum (tau / tau_max)^2 dt, each joint scaled by its torque limit, plus
``w_v`` sum v^2 dt: without it the light wrist joints swing wide to spare
the shoulder a little torque.

    python examples/arm_p2p.py --nodes 40 --jacobian analytical --plot arm.png
"""

import casadi as ca
import common
import numpy as np

import casrbd
from casrbd import ocp
from casrbd.models import load_arm
from casrbd.ocp.opti import interpolate, solve_ipopt, trajectories

# start and goal within both arms' joint limits
Q_START = np.array([-1.0, 0.2, 0.0, -2.0, 0.0, 1.8, 0.8])
Q_GOAL = np.array([1.0, -0.3, 0.4, -1.4, 0.3, 1.2, -0.4])


def limits(model):
    """The URDF's limits of ``model``: its lower, upper, velocity and effort arrays over the joints."""
    return {"lower": model.lower, "upper": model.upper, "velocity": model.velocity_limit, "effort": model.effort_limit}


def solve(
    nodes=40,
    duration=1.5,
    jacobian="analytical",
    compiled=False,
    hessian="exact",
    verbose=False,
    q_start=Q_START,
    q_goal=Q_GOAL,
    w_v=0.01,
    second_order=None,
):
    """Solve the point-to-point problem; returns a dict with the model, limits, tool frame,
    times t, q, v (nodes + 1 rows), tau (nodes rows), dt and the solver stats."""
    if nodes < 2:
        raise ValueError(f"nodes must be at least 2, got {nodes}")
    if not duration > 0:
        raise ValueError(f"duration must be positive, got {duration}")
    model, tool = load_arm()
    lim = limits(model)
    n, dt = model.nv, duration / nodes
    fd = ocp.dynamics(model, "aba", jacobian, second_order=second_order)
    x, u = ca.MX.sym("x", 2 * n), ca.MX.sym("u", n)
    step = ca.Function("rk4", [x, u], [ocp.rk4(ocp.forward_dynamics_ode(model, fd), x, u, dt)])

    opti = ca.Opti()
    Q, V, T = opti.variable(n, nodes + 1), opti.variable(n, nodes + 1), opti.variable(n, nodes)
    opti.subject_to(ca.vertcat(Q[:, 1:], V[:, 1:]) == step.map(nodes)(ca.vertcat(Q[:, :-1], V[:, :-1]), T))
    opti.subject_to(Q[:, 0] == q_start)
    opti.subject_to(Q[:, -1] == q_goal)
    opti.subject_to(V[:, 0] == 0)
    opti.subject_to(V[:, -1] == 0)
    opti.subject_to(opti.bounded(lim["lower"], Q, lim["upper"]))
    opti.subject_to(opti.bounded(-lim["velocity"], V, lim["velocity"]))
    opti.subject_to(opti.bounded(-lim["effort"], T, lim["effort"]))
    opti.minimize(dt * ca.sumsqr(T / lim["effort"]) + w_v * dt * ca.sumsqr(V))
    # guess: straight line at constant speed, holding gravity
    q_guess = interpolate(q_start, q_goal, nodes)
    opti.set_initial(Q, q_guess)
    opti.set_initial(V, np.tile((q_goal - q_start)[:, None] / duration, nodes + 1))
    opti.set_initial(T, np.column_stack([casrbd.generalized_gravity(model, q) for q in q_guess[:, :-1].T]))
    stats, value = solve_ipopt(opti, hessian=hessian, verbose=verbose, compiled=compiled)
    result = trajectories(value, dt, q=Q, v=V, tau=T)
    result.update(model=model, limits=lim, tool=tool, q_start=np.array(q_start), q_goal=np.array(q_goal), stats=stats)
    return result


def plot(result, path, snapshots=8):
    """q, v and tau over time at ``path``, and a stick-figure sequence at ``<path>_snapshots.png``."""
    name = result["model"].name
    series = {"q [rad]": result["q"], "v [rad/s]": result["v"], "tau [Nm]": result["tau"]}
    title = f"{name}: {snapshots} snapshots (light to dark)"
    common.plot_motion(path, result, series, f"{name} point to point", snapshots, title, frames=(result["tool"],))


def main(argv=None):
    p = common.parser(__doc__, 40, "shooting intervals", "write q, v, tau over time and PATH_snapshots.png")
    p.add_argument("--duration", type=float, default=1.5, help="seconds (default 1.5)")
    args = p.parse_args(argv)
    result = common.call(args, solve)
    robot = "panda" if result["model"].name == "panda" else None
    return common.finish(args, "arm point to point", result, plot, robot, details=(result["model"].name,))


if __name__ == "__main__":
    raise SystemExit(main())
