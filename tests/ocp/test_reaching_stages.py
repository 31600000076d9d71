"""``casrbd.ocp.reach.reaching_stages``, the arm-reaching problem written once (``reach.build``,
``mpc.reaching_horizon`` and examples/mpc_arm.py use it): its exact and Gauss-Newton stages against the
formula evaluated with the numeric ``aba``, ``frame_placement`` and ``generalized_gravity`` and a hand-written
RK4 step."""

import numpy as np
import pytest

import casrbd
from casrbd.models import load_robot
from casrbd.ocp.reach import REST, WEIGHTS, reaching_stages

DT = 0.05


def rk4_by_hand(model, x, u, dt):
    def f(x):
        return np.r_[x[7:], casrbd.aba(model, x[:7], x[7:], u)]

    k1 = f(x)
    k2 = f(x + dt / 2 * k1)
    k3 = f(x + dt / 2 * k2)
    k4 = f(x + dt * k3)
    return x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


@pytest.fixture(scope="module")
def arm():
    rng = np.random.default_rng(0)
    return load_robot("arm7"), np.r_[REST, 0.3 * rng.normal(size=7)], 5 * rng.normal(size=7)


@pytest.mark.parametrize("gauss_newton", [False, True])
def test_tool_goal_stages_match_the_formula(arm, gauss_newton):
    model, x, u = arm
    p = np.array([0.5, 0.2, 0.4])
    stage, terminal = reaching_stages(model, DT, "tool", gauss_newton=gauss_newton)
    tool = np.asarray(casrbd.frame_placement(model, x[:7], "tool"))[:3, 3]
    tau = (u - np.ravel(casrbd.generalized_gravity(model, x[:7]))) / model.effort_limit
    w_p, w_v, w_u, w_pN, w_vN = WEIGHTS
    cost, x_next = (np.ravel(v) for v in stage(x, u, p))
    expected = DT * (w_p * np.sum((tool - p) ** 2) + w_v * np.sum(x[7:] ** 2) + w_u * np.sum(tau**2))
    np.testing.assert_allclose(cost, expected, rtol=1e-10)
    np.testing.assert_allclose(x_next, rk4_by_hand(model, x, u, DT), rtol=1e-10, atol=1e-10)
    end, x_end = (np.ravel(v) for v in terminal(x, np.zeros(0), p))
    np.testing.assert_allclose(end, w_pN * np.sum((tool - p) ** 2) + w_vN * np.sum(x[7:] ** 2), rtol=1e-10)
    np.testing.assert_allclose(x_end, x)


def test_joint_goal_without_gravity_and_euler(arm):
    model, x, u = arm
    q_goal = np.zeros(7)
    weights = (1.0, 0.01, 0.1, 10.0, 0.0)
    stage, _ = reaching_stages(model, DT, None, weights, gravity=False, integrator="euler")
    cost, x_next = (np.ravel(v) for v in stage(x, u, q_goal))
    expected = DT * (np.sum(x[:7] ** 2) + 0.01 * np.sum(x[7:] ** 2) + 0.1 * np.sum((u / model.effort_limit) ** 2))
    np.testing.assert_allclose(cost, expected, rtol=1e-10)
    np.testing.assert_allclose(x_next, x + DT * np.r_[x[7:], casrbd.aba(model, x[:7], x[7:], u)], rtol=1e-10)


def test_bad_input_is_a_clear_error(arm):
    model = arm[0]
    with pytest.raises(ValueError, match="weights must be"):
        reaching_stages(model, DT, "tool", (1.0, 2.0))
    with pytest.raises(ValueError, match="nq = nv"):
        reaching_stages(casrbd.models.random_tree(3, ("floating", "revolute")), DT)
