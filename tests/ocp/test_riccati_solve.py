"""Problem.solve(solver="riccati") (ocp.shooting): Gauss-Newton multiple shooting by the Riccati recursion
reaches fatrop's optimum (an arm; a short solo12 trot with impulse knots, nu = 0 there); path constraints and
control bounds are refused, naming fatrop; an iteration limit is reported, not silent."""

import numpy as np
import pytest
from conftest import requires_example_robot_data

import casrbd
from casrbd import ocp
from casrbd.ocp import Constraint, Cost, Knot, Problem, State, WeightedQuadratic, free_dynamics, legged


def arm_problem(extra=()):
    model = casrbd.models.random_tree(2, ("revolute",), seed=1)
    x0, goal = np.r_[0.3, -0.2, 0.0, 0.0], np.r_[1.0, 0.5, 0.0, 0.0]
    terms = [
        Cost(State(goal), 1.0, WeightedQuadratic([10, 10, 1, 1]), name="goal"),
        Cost(ocp.Control(), 1e-2, name="control"),
        *extra,
    ]
    return Problem(model, x0, [Knot(free_dynamics(), 0.05, terms)] * 10, [Cost(State(goal), 100.0, name="goal")])


def check_same_optimum(ours, reference):
    assert ours.stats["success"], ours.stats["message"]
    assert abs(ours.cost - reference.cost) <= 1e-8 * max(1.0, abs(reference.cost))
    np.testing.assert_allclose(ours.xs, reference.xs, rtol=0, atol=1e-6)
    for u, u_ref in zip(ours.us, reference.us):
        np.testing.assert_allclose(u, u_ref, rtol=0, atol=1e-5)
    assert ours.violation < 1e-9


def test_reaches_fatrops_optimum_of_an_arm_problem():
    problem = arm_problem()
    optimum = problem.solve("fatrop", tol=1e-12)
    ours = problem.solve("riccati", tol=1e-14)
    check_same_optimum(ours, optimum)
    s = ours.stats
    assert s["status"] == "Solve_Succeeded" and s["iterations"] > 1 and s["gradient"] <= 1e-14
    assert {"cpu_linearisation", "cpu_riccati", "cpu_rest"} <= set(s)
    # from the optimum it stops at once
    assert problem.solve("riccati", guess=ours, tol=1e-14).stats["iterations"] == 0


def test_reaches_fatrops_optimum_of_a_short_trot_with_impulse_knots():
    requires_example_robot_data("solo12")
    problem = legged.quadruped_problem("trot", casrbd.models.load_robot("solo12"), step_knots=2, support_knots=1)
    assert 0 in {s.function.numel_in(1) for s in problem.stages[:-1]}  # impulses: no control
    optimum = problem.solve("fatrop", tol=1e-10, max_iter=300)
    ours = problem.solve("riccati", tol=1e-14)
    check_same_optimum(ours, optimum)
    assert [f.keys() for f in ours.forces] == [f.keys() for f in optimum.forces]
    for f, f_ref in zip(ours.forces, optimum.forces):
        for frame in f:
            np.testing.assert_allclose(f[frame], f_ref[frame], rtol=0, atol=1e-4)


@pytest.mark.parametrize(
    "constraint, named",
    [(Constraint(ocp.JointTorque(), -1.0, 1.0), "control bounds"), (Constraint(ocp.JointPosition(), -2.0, 2.0), "h")],
)
def test_path_constraints_are_refused(constraint, named):
    problem = arm_problem([constraint])
    with pytest.raises(ValueError, match=f"knot 0 has .*{named}.*solver='fatrop'"):
        problem.solve("riccati")


def test_an_iteration_limit_is_reported():
    solution = arm_problem().solve("riccati", max_iter=1)
    s = solution.stats
    assert not s["success"] and s["status"] == "Maximum_Iterations_Exceeded" and s["iterations"] == 1
    assert "after 1 iterations" in s["message"] and "gap" in s["message"]
