"""Co-design: a fixed-base robot's motors and its motion, optimised together (examples/codesign.py).

Each joint i has a motor of mass m_i and torque limit kappa m_i (a family of geared motors of torque
density kappa); the motors' masses change the inertial parameters pi(m) (a motor carried by a link), so
the forward dynamics are ``function(model, "aba", parameters=True, jacobian="analytical")`` with pi an
expression of the design. RK4 multiple shooting from rest at ``start`` to rest at ``goal``; the cost is
the motors' total mass plus ``w_effort`` times the effort. ``sequential_design`` is the reference: plan
the minimum-effort motion for given motors, size each motor for its peak torque, repeat.
"""

import casadi as ca
import numpy as np

from ..functions import function
from .opti import interpolate, solve_ipopt, trajectories
from .transcription import forward_dynamics_ode, rk4


def codesign(
    model,
    parameters,
    start,
    goal,
    kappa,
    bounds,
    nodes=50,
    duration=1.2,
    motors=None,
    w_effort=1e-3,
    verbose=False,
    guess=None,
):
    """Co-design (``motors=None``: the motor masses are variables within ``bounds`` = (lower, upper)) or motion
    planning for given ``motors`` (no torque limits, minimum effort); ``parameters(m)``: pi of the robot with
    motors m (numbers or casadi expressions); ``guess``: an earlier result to start from. A dict with t, q, v,
    tau, dt, the motor masses and the stats."""
    n, dt = model.nv, duration / nodes
    if model.nq != n:
        raise ValueError(f"model {model.name!r}: codesign takes a fixed-base model (nq = nv)")
    fd = function(model, "aba", jacobian="analytical", parameters=True)
    x, u, p = ca.MX.sym("x", 2 * n), ca.MX.sym("u", n), ca.MX.sym("pi", 10 * model.njoints)
    ode = forward_dynamics_ode(model, lambda q, v, tau: fd(q, v, tau, p))
    step = ca.Function("rk4", [x, u, p], [rk4(ode, x, u, dt)])

    opti = ca.Opti()
    X, U = opti.variable(2 * n, nodes + 1), opti.variable(n, nodes)
    if motors is None:
        m = opti.variable(n)
        opti.subject_to(opti.bounded(bounds[0], m, bounds[1]))
        for i in range(n):
            opti.subject_to(opti.bounded(-kappa * m[i], U[i, :], kappa * m[i]))
        opti.set_initial(m, np.ones(n) if guess is None else guess["motors"])
        cost = ca.sum1(m)
    else:
        m, cost = ca.DM(motors), 0
    pi = parameters(m)
    opti.subject_to(X[:, 1:] == step.map(nodes)(X[:, :-1], U, ca.repmat(pi, 1, nodes)))
    opti.subject_to(X[:, 0] == np.r_[start, np.zeros(n)])
    opti.subject_to(X[:, -1] == np.r_[goal, np.zeros(n)])
    opti.minimize(cost + w_effort * dt * ca.sumsqr(U))
    if guess is None:  # the joints at constant speed from start to goal
        opti.set_initial(X[:n, :], interpolate(start, goal, nodes))
    else:
        opti.set_initial(X, np.vstack([guess["q"].T, guess["v"].T]))
        opti.set_initial(U, guess["tau"].T)
    stats, value = solve_ipopt(opti, verbose=verbose)
    result = trajectories(value, dt, q=X[:n, :], v=X[n:, :], tau=U)
    result.update(motors=np.asarray(value(m) if motors is None else motors, dtype=float).reshape(n), stats=stats)
    return result


def sequential_design(model, parameters, start, goal, kappa, m_min, nodes=50, duration=1.2, rounds=4, verbose=False):
    """Plan for the current motors (1 kg each at first), size each for its peak torque (at least ``m_min``),
    repeat ``rounds`` times: (the last plan with its motors, the motors after each round)."""
    motors, history, result = np.ones(model.nv), [], None
    for _ in range(rounds):
        result = codesign(
            model, parameters, start, goal, kappa, None, nodes, duration, motors, verbose=verbose, guess=result
        )
        motors = np.maximum(np.abs(result["tau"]).max(axis=0) / kappa, m_min)
        history.append(motors)
    result["motors"] = motors
    return result, history
