"""Model-predictive control of the 7-dof arm, with the dynamics compiled to C.

Every ``dt`` the controller solves a short-horizon problem from the measured state (RK4 multiple shooting
within the arm's limits, a cost pulling q to the goal: ``ocp.reach.reaching_stages``) and the first torque
goes to the plant, the numeric aba (``casrbd.sim.simulate_aba``). The dynamics and their derivatives are
C (``casrbd.codegen``). After the first (cold) solve, IPOPT starts from the previous solution shifted by
one interval and from its multipliers (``ocp.solver_options(warm_start=True)``).

    python examples/mpc_arm.py --nodes 10 --steps 40 --jacobian analytical --plot mpc.png
"""

import casadi as ca
import common
import numpy as np
from arm_p2p import Q_GOAL, Q_START, limits  # the same start and goal

import casrbd
from casrbd import ocp
from casrbd.models import load_arm
from casrbd.ocp.reach import reaching_stages
from casrbd.sim import simulate_aba


def build(model, lim, nodes, dt, q_goal, jacobian, compiled, hessian, flags, second_order=None):
    """(opti, x0 parameter, X, U): dt (|q - q_goal|^2 + 0.01 |v|^2 + 0.1 |tau / effort|^2) + 10 |q_N - q_goal|^2."""
    n = model.nv
    fd = ocp.dynamics(model, "aba", jacobian, compiled, hessian=hessian, flags=flags, second_order=second_order)
    # node 0 is x0 (its terms are constant), node N's running terms go to the terminal cost
    stage, terminal = reaching_stages(model, dt, None, (1.0, 0.01, 0.1, 10 + dt, 0.01 * dt), False, fd=fd)
    opti = ca.Opti()
    x0 = opti.parameter(2 * n)
    X, U = opti.variable(2 * n, nodes + 1), opti.variable(n, nodes)
    costs, x_next = stage.map(nodes)(X[:, :-1], U, ca.repmat(ca.DM(q_goal), 1, nodes))
    opti.subject_to(X[:, 1:] == x_next)
    opti.subject_to(X[:, 0] == x0)
    opti.subject_to(opti.bounded(lim["lower"], X[:n, 1:], lim["upper"]))
    opti.subject_to(opti.bounded(-lim["velocity"], X[n:, 1:], lim["velocity"]))
    opti.subject_to(opti.bounded(-lim["effort"], U, lim["effort"]))
    opti.minimize(ca.sum2(costs) + terminal(X[:, -1], ca.DM(0, 1), q_goal)[0])
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
    """Closed loop from rest at q_start: a dict with the model, limits, tool, t, the plant's q, v, the applied
    tau, every solve's stats and dt. ``compiled``: the dynamics as C (``ocp.dynamics``, with ``flags``)."""
    for arg, count in (("steps", steps), ("nodes", nodes)):
        if count < 1:
            raise ValueError(f"{arg} must be at least 1, got {count}")
    if not dt > 0:
        raise ValueError(f"dt must be positive, got {dt}")
    model, tool = load_arm()
    lim = limits(model)
    opti, x0, X, U = build(model, lim, nodes, dt, q_goal, jacobian, compiled, hessian, flags, second_order)
    q, v = np.array(q_start, dtype=float), np.zeros(model.nv)
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
        q, v = np.split(simulate_aba(model, np.r_[q, v], [tau], dt, substeps=10), 2)  # the plant
        qs.append(q), vs.append(v), taus.append(tau)
        for var, val in ((X, Xs), (U, Us)):  # shift by one interval, repeating the last node
            opti.set_initial(var, np.column_stack([val[:, 1:], val[:, -1]]))
        opti.set_initial(opti.lam_g, lam)
    result = {"model": model, "limits": lim, "tool": tool, "t": np.arange(steps + 1) * dt, "dt": dt}
    result.update(q=np.array(qs), v=np.array(vs), tau=np.array(taus), solves=solves, q_goal=np.array(q_goal))
    return result


def summary(result):
    """The closed loop's solves (the first cold, the others warm-started) and its final distance to the goal."""
    s, err = result["solves"], np.abs(result["q"][-1] - result["q_goal"]).max()
    if len(s) == 1:
        return f"1 solve: {ocp.format_stats(s[0])}"
    it, t = np.array([x["iterations"] for x in s]), np.array([x["t_total"] for x in s])
    return (
        f"{len(s)} solves, {sum(x['success'] for x in s)} succeeded; iterations first {it[0]}, then mean "
        f"{it[1:].mean():.1f} max {it[1:].max()}; solve time first {t[0]:.3f} s, then mean {1e3 * t[1:].mean():.1f} "
        f"ms max {1e3 * t[1:].max():.1f} ms; final |q - q_goal| {err:.2e} rad"
    )


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
    result = common.call(args, run)
    print(f"arm MPC ({result['model'].name}, {common.modes(args)}): {summary(result)}")
    common.outputs(args, result, plot, "panda" if result["model"].name == "panda" else None)
    return 0 if all(s["success"] for s in result["solves"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
