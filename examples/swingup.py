"""Double-pendulum swing-up with minimum effort: forward-dynamics multiple shooting.

The pendulum (example-robot-data's ``double_pendulum``, else the same
geometry from the URDF below) starts hanging at rest and must end upright at
rest after ``duration`` seconds. The torques are limited below what holding
a link horizontal takes, so it has to swing, and the velocities are limited
(the light pendulum would otherwise whip faster than the steps resolve). Each shooting interval is one
RK4 step of x' = [v; aba(q, v, tau)] with tau held; the cost is the effort
sum tau^2 dt.

    python examples/swingup.py --nodes 60 --jacobian analytical --plot swingup.png
"""

import casadi as ca
import common
import numpy as np

from casrbd import load_urdf, ocp
from casrbd.models import load_robot
from casrbd.ocp.opti import interpolate, solve_ipopt, trajectories

# two 0.1 m links swinging about x, upright at q = 0 (example-robot-data's pendulum, simplified)
URDF = """<robot name="double_pendulum_fallback">
  <link name="base_link"/>
  <link name="link1"><inertial><origin xyz="0 0 0.05"/><mass value="0.27"/>
    <inertia ixx="4e-4" ixy="0" ixz="0" iyy="4e-4" iyz="0" izz="4e-5"/></inertial></link>
  <link name="link2"><inertial><origin xyz="0 0 0.1"/><mass value="0.33"/>
    <inertia ixx="6e-4" ixy="0" ixz="0" iyy="6e-4" iyz="0" izz="4e-5"/></inertial></link>
  <joint name="joint1" type="continuous"><parent link="base_link"/><child link="link1"/>
    <origin xyz="0 0 0.035"/><axis xyz="1 0 0"/></joint>
  <joint name="joint2" type="continuous"><parent link="link1"/><child link="link2"/>
    <origin xyz="0 0 0.1"/><axis xyz="1 0 0"/></joint>
</robot>"""


def load_model():
    try:
        return load_robot("double_pendulum")
    except LookupError:  # example-robot-data is not installed
        return load_urdf(URDF)


def solve(
    nodes=60,
    duration=1.5,
    tau_max=0.3,
    v_max=10.0,
    jacobian="analytical",
    compiled=False,
    hessian="exact",
    verbose=False,
    second_order=None,
):
    """Solve the swing-up; returns a dict with the model, times t, q, v (nodes + 1 rows),
    tau (nodes rows), the start and goal states, dt and the solver stats."""
    if nodes < 2:
        raise ValueError(f"nodes must be at least 2, got {nodes}")
    for arg, val in (("duration", duration), ("tau_max", tau_max), ("v_max", v_max)):
        if not val > 0:
            raise ValueError(f"{arg} must be positive, got {val}")
    model = load_model()
    n, dt = model.nv, duration / nodes
    x_start = np.r_[np.pi, np.zeros(2 * n - 1)]  # hanging down, at rest
    x_goal = np.zeros(2 * n)  # upright, at rest
    fd = ocp.dynamics(model, "aba", jacobian, second_order=second_order)

    # one RK4 step as an MX Function: the call of fd stays a node that casadi differentiates
    x, u = ca.MX.sym("x", 2 * n), ca.MX.sym("u", n)
    step = ca.Function("rk4", [x, u], [ocp.rk4(ocp.forward_dynamics_ode(model, fd), x, u, dt)])

    opti = ca.Opti()
    X, U = opti.variable(2 * n, nodes + 1), opti.variable(n, nodes)
    opti.subject_to(X[:, 1:] == step.map(nodes)(X[:, :-1], U))
    opti.subject_to(X[:, 0] == x_start)
    opti.subject_to(X[:, -1] == x_goal)
    opti.subject_to(opti.bounded(-tau_max, U, tau_max))
    opti.subject_to(opti.bounded(-v_max, X[n:, :], v_max))
    opti.minimize(dt * ca.sumsqr(U))
    # guess: the first joint turns at constant speed from down to up (the rest of x and u: 0)
    opti.set_initial(X[0, :], interpolate(np.pi, 0, nodes))
    opti.set_initial(X[n, :], -np.pi / duration)
    stats, value = solve_ipopt(opti, hessian=hessian, verbose=verbose, compiled=compiled)
    result = trajectories(value, dt, q=X[:n, :], v=X[n:, :], tau=U)
    result.update(model=model, x_start=x_start, x_goal=x_goal, tau_max=tau_max, stats=stats)
    return result


def plot(result, path):
    common.plot_series(
        path,
        result["t"],
        {"q [rad]": result["q"], "v [rad/s]": result["v"], "tau [Nm]": result["tau"]},
        title="double-pendulum swing-up",
    )


def main(argv=None):
    p = common.parser(__doc__, 60, "shooting intervals", "write q, v and tau over time")
    p.add_argument("--duration", type=float, default=1.5, help="seconds (default 1.5)")
    p.add_argument("--tau-max", type=float, default=0.3, help="torque limit in Nm (default 0.3)")
    p.add_argument("--v-max", type=float, default=10.0, help="velocity limit in rad/s (default 10)")
    args = p.parse_args(argv)
    result = common.call(args, solve)
    robot = "double_pendulum" if result["model"].name == "2dof_planar" else None
    return common.finish(args, "swing-up", result, plot, robot)


if __name__ == "__main__":
    raise SystemExit(main())
