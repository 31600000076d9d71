"""Co-design of a two-link arm: its motors' sizes and its swing-up motion, optimised together.

The arm swings in a vertical plane (joints about y, q = 0 horizontal, q1 = pi/2 hanging down) and
carries a payload at its tip. Each joint's motor has a mass m_i and a torque limit kappa m_i (a
family of geared motors with the torque density kappa); the elbow motor sits on link 1, so its mass
changes link 1's inertial parameters, pi_1 = pi_1^0 + m_2 pi_point(elbow): the forward dynamics are
``casrbd.function(model, "aba", parameters=True, jacobian="analytical")``, with pi an expression of
the design. The arm must go from hanging at rest to upright at rest in ``duration`` seconds (RK4
multiple shooting as examples/swingup.py). The cost is the motors' total mass plus a small effort
term.

The reference is the sequential design: plan the minimum-effort motion for given motors, size each
motor for its peak torque, and repeat with the new elbow motor until the sizes settle. Optimising both
at once finds a motion that needs smaller motors.

    python examples/codesign.py --nodes 50 [--plot codesign.png]
"""

import casadi as ca
import common
import numpy as np
from common import point_mass, rod

import casrbd
from casrbd import ocp
from casrbd.joints import Revolute
from casrbd.parameters import model_parameters, with_parameters
from casrbd.spatial import SE3

L1, L2 = 0.4, 0.4  # link lengths, m
KAPPA = 15.0  # torque per motor mass, Nm/kg
M_MIN, M_MAX = 0.05, 5.0  # motor mass bounds, kg
START, GOAL = np.array([np.pi / 2, 0.0]), np.array([-np.pi / 2, 0.0])


def build_arm():
    """The arm without the elbow motor: link 1 a 0.5 kg rod, link 2 a 0.3 kg rod with a 0.5 kg payload."""
    bodies = [
        casrbd.Body("shoulder", Revolute([0, 1, 0]), -1, SE3.identity(), rod(0.5, L1)),
        casrbd.Body("elbow", Revolute([0, 1, 0]), 0, SE3(np.eye(3), [L1, 0, 0]), rod(0.3, L2) + point_mass(0.5, L2)),
    ]
    return casrbd.Model("codesign_arm", bodies)


def parameters(model, m2):
    """pi of the arm with an elbow motor of mass m2 (numbers or a casadi expression): linear in m2."""
    elbow_motor = np.concatenate([point_mass(1.0, L1).dynamic_parameters(), np.zeros(10)])
    return ca.DM(model_parameters(model)) + m2 * ca.DM(elbow_motor)


def solve(model, nodes=50, duration=1.2, motors=None, w_effort=1e-3, verbose=False, guess=None):
    """Co-design (``motors=None``: motor masses are variables) or motion planning for given ``motors``
    (no torque limits, minimum effort). Returns a dict with q, v, tau, the motor masses and the stats."""
    n, dt = model.nv, duration / nodes
    fd = casrbd.function(model, "aba", jacobian="analytical", parameters=True)
    x, u, p = ca.MX.sym("x", 2 * n), ca.MX.sym("u", n), ca.MX.sym("pi", 10 * model.njoints)
    ode = ocp.forward_dynamics_ode(model, lambda q, v, tau: fd(q, v, tau, p))
    step = ca.Function("rk4", [x, u, p], [ocp.rk4(ode, x, u, dt)])

    opti = ca.Opti()
    X, U = opti.variable(2 * n, nodes + 1), opti.variable(n, nodes)
    if motors is None:
        m = opti.variable(2)
        opti.subject_to(opti.bounded(M_MIN, m, M_MAX))
        opti.subject_to(opti.bounded(-KAPPA * m[0], U[0, :], KAPPA * m[0]))
        opti.subject_to(opti.bounded(-KAPPA * m[1], U[1, :], KAPPA * m[1]))
        opti.set_initial(m, [1.0, 1.0] if guess is None else guess["motors"])
        cost = m[0] + m[1]
    else:
        m, cost = ca.DM(motors), 0
    pi = parameters(model, m[1])
    opti.subject_to(X[:, 1:] == step.map(nodes)(X[:, :-1], U, ca.repmat(pi, 1, nodes)))
    opti.subject_to(X[:, 0] == np.r_[START, 0, 0])
    opti.subject_to(X[:, -1] == np.r_[GOAL, 0, 0])
    opti.minimize(cost + w_effort * dt * ca.sumsqr(U))
    if guess is None:  # the joints at constant speed from start to goal
        opti.set_initial(X[:n, :], common.interpolate(START, GOAL, nodes))
    else:
        opti.set_initial(X, np.vstack([guess["q"].T, guess["v"].T]))
        opti.set_initial(U, guess["tau"].T)
    stats, value = common.solve_ipopt(opti, verbose=verbose)
    result = common.trajectories(value, dt, q=X[:n, :], v=X[n:, :], tau=U)
    result.update(motors=np.asarray(value(m) if motors is None else motors, dtype=float).reshape(2), stats=stats)
    return result


def sequential(model, nodes=50, duration=1.2, rounds=4, verbose=False):
    """Plan for the current motors, size them for the peak torques, repeat: the motors after each round."""
    motors, history, result = np.array([1.0, 1.0]), [], None
    for _ in range(rounds):
        result = solve(model, nodes, duration, motors=motors, verbose=verbose, guess=result)
        motors = np.maximum(np.abs(result["tau"]).max(axis=0) / KAPPA, M_MIN)
        history.append(motors)
    result["motors"] = motors
    return result, history


def simulate(model, result, substeps=1):
    """The optimised torques replayed on the arm built with those motors (a numeric model: aba with its
    own inertias), ``substeps`` RK4 steps per interval: the final state."""
    arm = with_parameters(model, parameters(model, result["motors"][1]))
    return common.simulate_aba(arm, np.r_[START, 0, 0], result["tau"], result["dt"], substeps)


def run(nodes=50, duration=1.2, verbose=False):
    """The sequential design, then the co-design from its solution, and the co-design replayed on the
    designed arm (its final state's errors with the transcription's RK4 steps and with 10 per interval);
    with the co-design's motion (t, q)."""
    model = build_arm()
    seq, history = sequential(model, nodes, duration, verbose=verbose)
    co = solve(model, nodes, duration, verbose=verbose, guess=seq)
    replay = [np.abs(simulate(model, co, k) - np.r_[GOAL, 0, 0]).max() for k in (1, 10)]
    r = {"model": model, "sequential": seq, "history": history, "codesign": co, "replay": replay}
    return {**r, "kappa": KAPPA, "t": co["t"], "q": co["q"]}


def plot(r, path):
    co, seq = r["codesign"], r["sequential"]
    series = {"q [rad]": co["q"], "tau [Nm] co-design": co["tau"], "tau [Nm] sequential": seq["tau"]}
    common.plot_series(path, co["t"], series, title="two-link arm: co-designed motors and swing-up")


def main(argv=None):
    p = common.parser(__doc__, 50, "shooting intervals", "write q and the torques over time", derivatives=())
    p.add_argument("--duration", type=float, default=1.2, help="seconds (default 1.2)")
    args = p.parse_args(argv)
    r = run(**common.arguments(args, run))
    common.codesign_report(r)
    common.outputs(args, r, plot)
    return 0 if r["codesign"]["stats"]["success"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
