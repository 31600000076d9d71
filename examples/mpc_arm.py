"""Model-predictive control of the 7-dof arm, with the dynamics compiled to C.

Every ``dt`` the controller solves a short-horizon problem from the measured
state: RK4 multiple shooting with the arm's joint, velocity and torque
limits, a cost pulling q to the goal, and the first torque goes to the
plant. The plant is simulated with the numeric aba (RK4 with finer steps).
The forward dynamics, their Jacobian (analytical or AD) and, for the exact
Hessian, its Jacobian are exported to C and loaded back through
``casrbd.codegen``. After the first (cold) solve, IPOPT starts from the
previous solution shifted by one interval and from its multipliers (as they are), with a
small barrier parameter (``ocp.solver_options(warm_start=True)``).

    python examples/mpc_arm.py --nodes 10 --steps 40 --jacobian analytical --plot mpc.png
"""

import time

import casadi as ca
import common
import numpy as np
from arm_p2p import Q_GOAL, Q_START  # the same start and goal

import casrbd
from casrbd import ocp


def build(model, lim, nodes, dt, q_goal, jacobian, compiled, hessian, flags, second_order=None):
    """The horizon problem: (opti, x0 parameter, X, U)."""
    n = model.nv
    fd = ocp.dynamics(model, "aba", jacobian, compiled, hessian=hessian, flags=flags, second_order=second_order)
    x, u = ca.MX.sym("x", 2 * n), ca.MX.sym("u", n)
    step = ca.Function("rk4", [x, u], [ocp.rk4(ocp.forward_dynamics_ode(model, fd), x, u, dt)])
    opti = ca.Opti()
    x0 = opti.parameter(2 * n)
    X, U = opti.variable(2 * n, nodes + 1), opti.variable(n, nodes)
    opti.subject_to(X[:, 1:] == step.map(nodes)(X[:, :-1], U))
    opti.subject_to(X[:, 0] == x0)
    opti.subject_to(opti.bounded(lim["lower"], X[:n, 1:], lim["upper"]))
    opti.subject_to(opti.bounded(-lim["velocity"], X[n:, 1:], lim["velocity"]))
    opti.subject_to(opti.bounded(-lim["effort"], U, lim["effort"]))
    error = X[:n, 1:] - q_goal
    opti.minimize(
        dt * (ca.sumsqr(error) + 0.01 * ca.sumsqr(X[n:, 1:]) + 0.1 * ca.sumsqr(U / lim["effort"]))
        + 10 * ca.sumsqr(error[:, -1])
    )
    return opti, x0, X, U


def run(
    steps=40,
    nodes=10,
    dt=0.05,
    jacobian="analytical",
    compiled=True,
    hessian="exact",
    verbose=False,
    q_start=Q_START,
    q_goal=Q_GOAL,
    flags=ocp.COMPILE_FLAGS,
    second_order=None,
):
    """Closed loop from rest at q_start; returns a dict with the model, limits, tool frame, times t,
    plant q, v (steps + 1 rows), applied tau (steps rows), the stats of every solve and dt.
    ``compiled``: the dynamics as a C library (``ocp.dynamics``), compiled once and cached on disk,
    since the solver is made twice (cold, then warm-started); ``flags``: its C compiler flags."""
    for arg, n in (("steps", steps), ("nodes", nodes)):
        if n < 1:
            raise ValueError(f"{arg} must be at least 1, got {n}")
    if not dt > 0:
        raise ValueError(f"dt must be positive, got {dt}")
    model, lim, tool = common.load_arm()
    n = model.nv
    start = time.perf_counter()
    opti, x0, X, U = build(model, lim, nodes, dt, q_goal, jacobian, compiled, hessian, flags, second_order)
    setup = time.perf_counter() - start
    q, v = np.array(q_start, dtype=float), np.zeros(n)
    opti.set_initial(X, np.tile(np.r_[q, v][:, None], nodes + 1))
    opti.set_initial(U, np.tile(casrbd.generalized_gravity(model, q)[:, None], nodes))
    opti.solver("ipopt", ocp.solver_options(hessian, verbose=verbose))
    qs, vs, taus, solves = [q], [v], [], []
    for k in range(steps):
        opti.set_value(x0, np.r_[q, v])
        solves.append(ocp.solve(opti))
        value = opti.debug.value  # the solution, or the last iterate if the solve failed
        Xs, Us, lam = value(X), np.atleast_2d(value(U)), value(opti.lam_g)
        if k == 0:  # the first solve was cold; from now on start where the last solve ended
            opti.solver("ipopt", ocp.solver_options(hessian, warm_start=True, verbose=verbose))
        tau = Us[:, 0]
        q, v = np.split(common.simulate_aba(model, np.r_[q, v], [tau], dt, substeps=10), 2)  # the plant
        qs.append(q), vs.append(v), taus.append(tau)
        # shift by one interval, repeating the last node
        opti.set_initial(X, np.column_stack([Xs[:, 1:], Xs[:, -1]]))
        opti.set_initial(U, np.column_stack([Us[:, 1:], Us[:, -1]]))
        opti.set_initial(opti.lam_g, lam)
    result = {"model": model, "limits": lim, "tool": tool, "t": np.arange(steps + 1) * dt, "dt": dt}
    result.update(q=np.array(qs), v=np.array(vs), tau=np.array(taus), solves=solves, q_goal=np.array(q_goal))
    result["setup_seconds"] = setup
    return result


def plot(result, path, snapshots=6):
    name = result["model"].name
    series = {"q [rad]": result["q"], "v [rad/s]": result["v"], "tau [Nm]": result["tau"]}
    series["IPOPT iterations"] = [x["iterations"] for x in result["solves"]]
    title = f"{name} MPC: {snapshots} snapshots (light to dark)"
    common.plot_motion(path, result, series, f"{name} MPC (closed loop)", snapshots, title, frames=(result["tool"],))


def main(argv=None):
    derivatives = ("jacobian", "hessian", "second_order", "compiled_dynamics")
    p = common.parser(__doc__, 10, "horizon intervals", "write the closed loop and PATH_snapshots.png", derivatives)
    p.add_argument("--steps", type=int, default=40, help="closed-loop steps (default 40)")
    p.add_argument("--dt", type=float, default=0.05, help="control interval in s (default 0.05)")
    args = p.parse_args(argv)
    result = run(**common.arguments(args, run))
    print(f"arm MPC ({result['model'].name}, {common.modes(args)}): {common.mpc_summary(result)}")
    common.outputs(args, result, plot, "panda" if result["model"].name == "panda" else None)
    return 0 if all(s["success"] for s in result["solves"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
