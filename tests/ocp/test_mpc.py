"""ocp.mpc: the horizon problem against the linear-quadratic solution from its KKT system (numpy), hard bounds,
warm starts that keep an optimum, the shift and the feedback law."""

import casadi as ca
import numpy as np
import pytest

from casrbd.ocp.mpc import MPC, FeedbackLaw, Horizon

DT, NODES = 0.1, 8
A = np.array([[1, DT], [0, 1]])
B = np.array([[0.5 * DT**2], [DT]])
Q, R, QN = np.diag([1.0, 0.1]), 0.01, np.diag([10.0, 1.0])


def double_integrator():
    x, u, p = ca.SX.sym("x", 2), ca.SX.sym("u", 1), ca.SX.sym("p", 1)
    stage = ca.Function("stage", [x, u, p], [ca.bilin(Q, x - ca.vertcat(p, 0)) + R * u**2, A @ x + B @ u])
    u0 = ca.SX(0, 1)
    terminal = ca.Function("terminal", [x, u0, p], [ca.bilin(QN, x - ca.vertcat(p, 0)), x])
    return stage, terminal


def lq_solution(x0, goal):
    """The states and controls minimising the cost subject to the dynamics: the KKT system, solved."""
    nx, nu, n = 2, 1, NODES
    size = nx * (n + 1) + nu * n
    H, g = np.zeros((size, size)), np.zeros(size)
    ref = np.array([goal, 0.0])
    xi = [k * (nx + nu) for k in range(n + 1)]
    for k in range(n):
        H[xi[k] : xi[k] + 2, xi[k] : xi[k] + 2] = 2 * Q
        H[xi[k] + 2, xi[k] + 2] = 2 * R
        g[xi[k] : xi[k] + 2] = -2 * Q @ ref
    H[xi[n] :, xi[n] :], g[xi[n] :] = 2 * QN, -2 * QN @ ref
    rows, rhs = [], []
    first = np.zeros((nx, size))
    first[:, :2] = np.eye(2)
    rows.append(first), rhs.append(x0)
    for k in range(n):
        gap = np.zeros((nx, size))
        gap[:, xi[k + 1] : xi[k + 1] + 2], gap[:, xi[k] : xi[k] + 2], gap[:, xi[k] + 2 : xi[k] + 3] = np.eye(2), -A, -B
        rows.append(gap), rhs.append(np.zeros(nx))
    C = np.vstack(rows)
    K = np.block([[H, C.T], [C, np.zeros((len(C), len(C)))]])
    w = np.linalg.solve(K, np.r_[-g, np.concatenate(rhs)])[:size]
    return np.array([w[i : i + 2] for i in xi]), np.array([w[i + 2] for i in xi[:-1]])[:, None]


def horizon(u_bound=np.inf, max_iter=1, solver="ipopt"):
    stage, terminal = double_integrator()
    bounds = [[-np.inf, -np.inf], [np.inf, np.inf]]
    u_bounds = [[-u_bound], [u_bound]]
    return Horizon(stage, terminal, NODES, bounds, u_bounds, [1.0], max_iter=max_iter, solver=solver, tol=1e-10)


@pytest.mark.parametrize("solver", ["ipopt", "fatrop"])
def test_cold_solve_is_the_lq_solution(solver):
    x0 = np.array([0.2, -0.3])
    plan = horizon(solver=solver).solve(x0)
    xs, us = lq_solution(x0, 1.0)
    np.testing.assert_allclose(plan.xs, xs, atol=1e-7)
    np.testing.assert_allclose(plan.us, us, atol=1e-7)


def test_bad_arguments_are_named():
    stage, terminal = double_integrator()
    with pytest.raises(ValueError, match="solver must be"):
        Horizon(stage, terminal, NODES, [-1, 1], [-1, 1], [1.0], solver="snopt")
    with pytest.raises(ValueError, match="u_bounds: expected"):
        Horizon(stage, terminal, NODES, [-1, 1], [[-1, -1], [1, 1]], [1.0])
    with pytest.raises(ValueError, match="terminal Function 'stage'"):
        Horizon(stage, stage, NODES, [-1, 1], [-1, 1], [1.0])


def test_controls_stay_within_their_bounds():
    plan = horizon(u_bound=0.5).solve(np.zeros(2))
    assert np.abs(plan.us).max() <= 0.5
    assert np.abs(plan.us).max() > 0.49  # the bound is active


def test_a_warm_start_at_the_optimum_stays_there_and_a_shift_moves_it():
    h = horizon(u_bound=0.5)
    x0 = np.zeros(2)
    first = h.solve(x0)
    again = h.solve(x0)  # one iteration from the solution and its multipliers
    np.testing.assert_allclose(again.us, first.us, atol=1e-7)
    h.shift(1.0)
    rows = h._vector_to_nodes(h._last["x"])
    np.testing.assert_array_equal(rows[:-2, :2], again.xs[1:-1])
    np.testing.assert_array_equal(rows[-1, :2], again.xs[-1])


def test_mpc_answers_the_plan_or_its_feedback_law():
    x0 = np.array([0.2, -0.3])
    plan_u = horizon().solve(x0).us[0]
    np.testing.assert_allclose(MPC(horizon(), DT)(0.0, x0[:1], x0[1:]), plan_u, atol=1e-8)
    law = MPC(horizon(), DT, kp=10.0, kd=2.0)(0.0, x0[:1], x0[1:])
    assert isinstance(law, FeedbackLaw)
    np.testing.assert_allclose(law(0.0, x0[:1], x0[1:]), plan_u, atol=1e-8)  # on the plan: no feedback
    xs, _ = lq_solution(x0, 1.0)
    half = (xs[0] + xs[1]) / 2
    np.testing.assert_allclose(law(DT / 2, [0.0], [0.0]), plan_u + 10 * half[0] + 2 * half[1], atol=1e-7)
    with pytest.raises(ValueError, match="kp and kd"):
        MPC(horizon(), DT, kp=1.0)
