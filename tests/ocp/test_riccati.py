"""ocp.riccati: one step against the dense KKT system of the same LQ subproblem (assembled from casadi's AD of
the stage's parts, not from its written-out derivatives), the gains against finite differences of that
KKT solution, iterations against fatrop's optimum of a small arm's problem, and bad inputs."""

import casadi as ca
import numpy as np
import pytest

import casrbd
from casrbd.ocp import Cost, Knot, Problem, State, free_dynamics, gauss_newton_stage
from casrbd.ocp.riccati import RTI, riccati
from casrbd.ocp.terms import WeightedQuadratic

NX, NU, NP, N, DT = 3, 2, 2, 6, 0.1


def parts(terminal=False, control_weight=0.1):
    """A small nonlinear system's inner (x, u) -> (x_next, y) and cost (x, u, p, y), as SX Functions."""
    x, u, p = ca.SX.sym("x", NX), ca.SX.sym("u", 0 if terminal else NU), ca.SX.sym("p", NP)
    rate = ca.vertcat(x[1], ca.sin(x[0]) + u[0], x[0] * x[1] - x[2] + u[1] * ca.cos(x[2])) if not terminal else 0
    x_next = x + DT * rate
    features = ca.vertcat(ca.sin(x[0]) + x[2] ** 2, x[1] * x[2], ca.exp(0.3 * x[1]))
    y = ca.SX.sym("y", features.numel())
    cost = ca.sumsqr(y[:2] - p) + 0.5 * y[2] ** 2 + ca.sumsqr(x) + control_weight * ca.sumsqr(u)
    inner = ca.Function("inner", [x, u], [x_next, features])
    return inner, ca.Function("cost", [x, u, p, y], [(1 if terminal else DT) * cost])


def stages(control_weight=0.1):
    running = gauss_newton_stage("toy", *reversed(parts(control_weight=control_weight)))
    return [running] * N, gauss_newton_stage("toy_end", *reversed(parts(terminal=True)))


def lq_reference(x0, xs, us, p, start=0):
    """(dxs, dus) of the LQ subproblem at (xs, us) from knot ``start`` on, dx_start = x0 - xs[start]: its
    KKT system, dense; the Gauss-Newton Hessian T^T (d2 cost/dw2) T, gradient T^T grad cost, with
    T = d(x, u, p, y)/d(x, u), and the dynamics' Jacobians all from casadi's AD of the parts."""
    blocks, rows = [], []
    for k in range(start, N + 1):
        inner, cost = parts(terminal=k == N)
        x, u = ca.SX.sym("x", NX), ca.SX.sym("u", inner.numel_in(1))
        x_next, y = inner(x, u)
        z = ca.vertcat(x, u)
        w = ca.vertcat(x, u, ca.DM(p[k]), y)
        ws = ca.SX.sym("w", w.numel())
        c = cost(ws[:NX], ws[NX : NX + u.numel()], ws[NX + u.numel() : NX + u.numel() + NP], ws[-y.numel() :])
        T = ca.jacobian(w, z)
        H, g = ca.hessian(c, ws)
        at = ca.Function("at", [x, u, ws], [T.T @ H @ T, T.T @ g, ca.jacobian(x_next, z), x_next, w])
        point = (xs[k], us[k] if k < N else np.zeros(0))
        w_value = at(*point, np.zeros(w.numel()))[4]
        hess, grad, AB, xn, _ = (np.array(v) for v in at(*point, w_value))
        blocks.append((hess, grad.ravel()))
        if k < N:
            rows.append((AB, xn.ravel() - xs[k + 1]))
    sizes = [len(g) for _, g in blocks]
    at = np.r_[0, np.cumsum(sizes)]
    H, g = np.zeros((at[-1], at[-1])), np.zeros(at[-1])
    for i, (h, gk) in enumerate(blocks):
        H[at[i] : at[i + 1], at[i] : at[i + 1]], g[at[i] : at[i + 1]] = h, gk
    C, rhs = np.zeros((NX * len(blocks), at[-1])), np.zeros(NX * len(blocks))
    C[:NX, :NX], rhs[:NX] = np.eye(NX), x0 - xs[start]
    for i, (AB, gap) in enumerate(rows):  # dx_i+1 - A dx_i - B du_i = gap
        r = NX * (i + 1)
        C[r : r + NX, at[i] : at[i + 1]], C[r : r + NX, at[i + 1] : at[i + 1] + NX] = -AB, np.eye(NX)
        rhs[r : r + NX] = gap
    kkt = np.block([[H, C.T], [C, np.zeros((len(C), len(C)))]])
    z = np.linalg.solve(kkt, np.r_[-g, rhs])[: at[-1]]
    return [z[a : a + NX] for a in at[:-1]], [z[a + NX : a + NX + NU] for a in at[:-2]]


def point(seed=0):
    rng = np.random.default_rng(seed)
    xs, us, p = rng.normal(size=(N + 1, NX)), 0.5 * rng.normal(size=(N, NU)), rng.normal(size=(N + 1, NP))
    return rng.normal(size=NX), xs, us, p


def test_one_step_is_the_solution_of_the_lq_subproblems_kkt_system():
    x0, xs, us, p = point()
    rti = RTI(*stages())
    lq = rti.linearise(xs, us, p)
    dxs, dus = riccati(lq, x0 - xs[0])[:2]
    ref_x, ref_u = lq_reference(x0, xs, us, p)
    np.testing.assert_allclose(np.array(dxs), np.array(ref_x), rtol=0, atol=1e-10)
    np.testing.assert_allclose(np.array(dus), np.array(ref_u), rtol=0, atol=1e-10)
    step = rti.step(x0, xs, us, p)
    np.testing.assert_allclose(step.xs, xs + np.array(ref_x), rtol=0, atol=1e-10)
    np.testing.assert_allclose(step.xs[0], x0, rtol=0, atol=1e-14)


@pytest.mark.parametrize("knot", [0, N // 2])
def test_the_gains_are_the_derivative_of_the_lq_solution_by_the_initial_state(knot):
    x0, xs, us, p = point(1)
    K = RTI(*stages()).step(x0, xs, us, p).K[knot]
    h, fd = 1e-5, np.zeros((NU, NX))
    for i in range(NX):
        e = h * np.eye(NX)[i]
        plus, minus = (lq_reference(xs[knot] + s * e, xs, us, p, start=knot)[1][0] for s in (1, -1))
        fd[:, i] = (plus - minus) / (2 * h)
    np.testing.assert_allclose(K, fd, rtol=0, atol=1e-8)


def test_iterations_reach_fatrops_optimum_of_an_arm_problem():
    model = casrbd.models.random_tree(2, ("revolute",), seed=1)
    x0, goal = np.r_[0.3, -0.2, 0.0, 0.0], np.r_[1.0, 0.5, 0.0, 0.0]
    terms = [
        Cost(State(goal), 1.0, WeightedQuadratic([10, 10, 1, 1]), name="goal"),
        Cost(casrbd.ocp.Control(), 1e-2, name="control"),
    ]
    knots = [Knot(free_dynamics(), 0.05, terms)] * 10
    problem = Problem(model, x0, knots, [Cost(State(goal), 100.0, name="goal")])
    optimum = problem.solve("fatrop", tol=1e-12)
    rti = RTI([s.function for s in problem.stages[:-1]], problem.stages[-1].function)
    guess = problem.guess()
    xs, us, p = np.array(guess["xs"]), np.array(guess["us"]), np.concatenate(problem.parameters)
    for _ in range(50):
        step = rti.step(x0, xs, us, p)
        xs, us = step.xs, step.us
        if step.step < 1e-12:
            break
    assert step.step < 1e-12
    cost = rti.linearise(xs, us, p).cost
    assert abs(cost - optimum.cost) < 1e-8 * max(1.0, abs(optimum.cost))
    np.testing.assert_allclose(xs, optimum.xs, rtol=0, atol=1e-6)


def test_bad_inputs_are_named():
    rti = RTI(*stages())
    x0, xs, us, p = point()
    with pytest.raises(ValueError, match="x0: expected 3"):
        rti.step(np.zeros(4), xs, us, p)
    with pytest.raises(ValueError, match="xs: expected shape"):
        rti.step(x0, xs[:-1], us, p)
    with pytest.raises(ValueError, match="p: expected"):
        rti.step(x0, xs, us, p[:-1])
    concave = RTI(*stages(control_weight=-10.0))
    with pytest.raises(np.linalg.LinAlgError, match="knot 5: the control Hessian"):
        concave.step(x0, xs, us, p)
    assert np.isfinite(concave.step(x0, xs, us, p, regularisation=100.0).xs).all()
    x, u, q = ca.MX.sym("x", NX), ca.MX.sym("u", NU), ca.MX.sym("p", NP)
    constrained = ca.Function("c", [x, u, q], [ca.sumsqr(x), x, u], ["x", "u", "p"], ["cost", "x_next", "h"])
    with pytest.raises(ValueError, match="path constraints"):
        RTI([constrained], stages()[1])
