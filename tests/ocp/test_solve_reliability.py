"""Hostile inputs to casrbd.ocp's solving: failed solves say why, the guess is checked, options and sizes
are refused by name, and compiled Functions inside a jitted NLP neither kill the process nor go wrong.

The failures are built so that their cause is known by construction: two terminal constraints whose
rows are multiples of each other (rank-deficient, inconsistent by 1e-3), a tolerance of 1e-20 (below
rounding), an iteration limit of 2, contradictory constraints, a squared constraint (no slope at its
solution); each message must name that cause and the constraint, not only the solver's status.
"""

import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import casadi as ca
import numpy as np
import pytest
from test_stagewise import pendulum

from casrbd import ocp
from casrbd.models import serial_chain
from casrbd.ocp.diagnostics import diagnose

N = 12
OLD_FATROP = tuple(int(p) for p in ca.__version__.split(".")[:2]) < (3, 8)  # casadi 3.7's fatrop stops otherwise


def pendulum_problem(terminal=(), solver="ipopt", stages=N, **options):
    """A damped pendulum from rest, stage by stage; ``terminal``: (constraint(x_N), name) pairs."""
    st = ocp.Stagewise()
    x = st.state(2)
    st.subject_to(x == [0, 0], name="start")
    cost = 0
    for _ in range(stages):
        u = st.control(1)
        st.subject_to(st.opti.bounded(-6, u, 6), name="torque")
        cost += ca.sumsqr(u) + ca.sumsqr(x)
        x = st.step(ca.vertcat(x[0] + 0.1 * x[1], x[1] + 0.1 * (u - 9.81 * ca.sin(x[0]))))
    st.opti.minimize(cost)
    for constraint, name in terminal:
        st.subject_to(constraint(x), name=name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ocp.UncompiledStagesWarning)
        st.solver(solver, ocp.solver_options(solver=solver, **options))
    return st


# ---- failed solves say why ----


@pytest.mark.parametrize("solver", ocp.SOLVERS)
def test_a_rank_deficient_terminal_constraint_is_named_as_the_cause(solver):
    """x0 + x1 == 1 and 2 x0 + 2 x1 == 2.001 at the last stage: linearly dependent rows, no solution."""
    goal = [(lambda x: x[0] + x[1] == 1, "goal"), (lambda x: 2 * x[0] + 2 * x[1] == 2.001, "goal again")]
    st = pendulum_problem(goal, solver)
    stats = ocp.solve(st.opti)
    assert not stats["success"] and "locally infeasible" in stats["hint"] and "iteration limit" not in stats["hint"]
    message = stats["message"]
    assert "rank-deficient" in message and "linearly dependent" in message, message
    assert f"stage {N} (last), path constraint 'goal' [entry 0]" in message
    assert f"stage {N} (last), path constraint 'goal again' [entry 0]" in message
    # at least the least violation possible (1e-3 / 3, split evenly), at most the l1 split (5e-4) the solvers stop
    # at, or the l2 split (4e-4; casadi 3.7's fatrop)
    assert 1e-3 / 3 < stats["violation"] < 5e-4 * (1 + 1e-3)
    assert stats["violation_at"].startswith(f"stage {N} (last), path constraint 'goal")
    with pytest.raises(ocp.SolveError, match="rank-deficient") as e:
        ocp.solve(pendulum_problem(goal, solver).opti, raise_on_failure=True)
    assert e.value.stats["status"] == stats["status"]


def test_a_terminal_constraint_on_more_entries_than_the_state_names_the_stage():
    """fatrop stops at its dimension check (an assertion in C++; casadi 3.7's solves on): refused before
    solving, for both, naming the stage and counts; a plain Opti gets fatrop's words as a SolveError."""
    terminal = [(lambda x: x == [1, 0], "goal"), (lambda x: x[0] + x[1] == 1, "sum")]
    with pytest.raises(ocp.SolveError, match=rf"rank-deficient.*stage {N}: 3 equalities on 2 variables"):
        pendulum_problem(terminal, "fatrop")
    assert ocp.solve(pendulum_problem(terminal, "ipopt").opti)["success"]  # consistent: IPOPT solves it


def test_a_terminal_constraint_repeating_the_last_gap_is_named_as_breaking_fatrops_structure():
    """x_N == f(x_{N-1}, u_{N-1}) declared again as a terminal constraint couples two stages: fatrop's
    structure detection refuses it (IPOPT solves it); the error says so instead of casadi's assertion."""
    st = ocp.Stagewise()
    x = st.state(1)
    st.subject_to(x == 1)
    for _ in range(3):
        x_prev, u = x, st.control(1)
        x = st.step(x_prev + u)
    st.opti.minimize(ca.sumsqr(ca.vertcat(*st.u)))
    st.subject_to(x == x_prev + u, name="again")
    st.solver("fatrop", ocp.solver_options(solver="fatrop"))
    with pytest.raises(ocp.SolveError, match=r"(?s)fatrop's structure detection failed.*\(Fatrop: specified structure"):
        ocp.solve(st.opti)


@pytest.mark.parametrize("solver", ocp.SOLVERS)
def test_a_tolerance_stall_is_named_as_the_cause(solver):
    st = pendulum_problem([(lambda x: x[0] == 1, "goal")], solver, tol=1e-20)
    stats = ocp.solve(st.opti)
    if solver == "fatrop":  # it declares success where rounding stops it (casadi 3.7) or stops at its acceptable
        # tolerance (fatrop 1.1's flag 2; a success, as casadi counts IPOPT's): check that it is feasible
        assert stats["success"] and np.abs(st.opti.value(st.opti.g)[-1] - 1) < 1e-12
        if not OLD_FATROP:
            assert stats["solver_status"] == "fatrop: StopAtAcceptablePoint (return flag 2)"
            assert stats["status"] == "Solved_To_Acceptable_Level"
        return
    assert not stats["success"] and stats["status"] == "Search_Direction_Becomes_Too_Small"
    assert "stall at tolerance" in stats["message"] and "tol" in stats["hint"]
    assert stats["violation"] < 1e-10  # feasible: what stopped it is the tolerance


@pytest.mark.parametrize("solver", ocp.SOLVERS)
def test_an_iteration_limit_is_named_as_the_cause(solver):
    stats = ocp.solve(pendulum_problem([(lambda x: x[0] == 1, "goal")], solver, max_iter=2).opti)
    assert stats["status"] == "Maximum_Iterations_Exceeded" and "iteration limit" in stats["message"]
    assert stats["violation"] > 0 and stats["violation_at"].startswith("stage ")
    if solver == "fatrop":
        assert stats["solver_status"] == "fatrop: MaxIterExceeded (return flag 1)"


@pytest.mark.parametrize("solver", ocp.SOLVERS)
def test_contradictory_constraints_are_infeasible_and_the_start_is_named(solver):
    st = pendulum_problem([(lambda x: x[0] == 1, "one"), (lambda x: x[0] == 2, "two")], solver)
    stats = ocp.solve(st.opti)
    assert not stats["success"] and "iteration limit" not in stats["hint"]  # casadi 3.7's fatrop says MaxIter
    assert "locally infeasible" in stats["hint"] and "infeasible start (the guess violates it by" in stats["hint"]
    assert stats["violation"] == pytest.approx(0.5, rel=1e-2)


@pytest.mark.parametrize("solver", ocp.SOLVERS)
def test_contradictory_bounds_name_the_variable(solver):
    st = ocp.Stagewise()
    x = st.state(1)
    u = st.control(1)
    st.subject_to(u >= 1, name="push")
    st.subject_to(u <= 0, name="hold")
    st.step(x + u)
    st.opti.minimize(ca.sumsqr(u))
    st.solver(solver, ocp.solver_options(solver=solver))
    stats = ocp.solve(st.opti)
    assert not stats["success"] and "locally infeasible" in stats["hint"] and "iteration limit" not in stats["hint"]
    bound = r"stage 0, path constraint '(push|hold)' \[entry 0\] \(a bound on u_0\[0\]\)"
    assert re.fullmatch(bound, stats["violation_at"]), stats["violation_at"]


@pytest.mark.parametrize("solver", ocp.SOLVERS)
def test_local_infeasibility_is_recognised_from_the_last_iterate_whatever_the_status_word(solver):
    """casadi 3.7's fatrop stops at contradictory constraints with MaxIterExceeded: the last iterate, a
    stationary point of the violation, says infeasible; a feasible problem cut off by max_iter does not."""
    word, raw = "Maximum_Iterations_Exceeded", {"iter_count": 3}
    contradictory = pendulum_problem([(lambda x: x[0] == 1, "one"), (lambda x: x[0] == 2, "two")], solver)
    ocp.solve(contradictory.opti)
    hint = diagnose(contradictory.opti, contradictory.names, raw, word)["hint"]
    assert "locally infeasible" in hint and "iteration limit" not in hint, hint
    cut = pendulum_problem([(lambda x: x[0] == 1, "goal")], solver, max_iter=2)
    ocp.solve(cut.opti)
    hint = diagnose(cut.opti, cut.names, raw, word)["hint"]
    assert "iteration limit" in hint and "locally infeasible" not in hint, hint


def test_a_constraint_without_slope_at_its_solution_is_named():
    """(x0 - 1)^2 == 0: its Jacobian vanishes where it holds; IPOPT cannot compute a step there."""
    stats = ocp.solve(pendulum_problem([(lambda x: (x[0] - 1) ** 2 == 0, "squared")]).opti)
    assert not stats["success"]
    assert f"the Jacobian of stage {N} (last), path constraint 'squared' [entry 0] is zero" in stats["hint"]


def test_a_plain_opti_names_the_line_that_declared_the_constraint():
    opti = ca.Opti()
    x = opti.variable(2)
    opti.subject_to(x[0] >= 1)
    opti.subject_to(x[0] + 0 * x[1] <= 0)  # this line
    opti.minimize(ca.sumsqr(x))
    opti.solver("ipopt", ocp.solver_options())
    stats = ocp.solve(opti)
    assert not stats["success"] and "locally infeasible" in stats["hint"]
    assert f"{Path(__file__).name}:" in stats["violation_at"], stats["violation_at"]


def test_a_success_reports_no_failure_and_fatrops_own_words():
    stats = ocp.solve(pendulum_problem(solver="fatrop").opti, raise_on_failure=True)
    assert stats["success"] and stats["status"] == "Solve_Succeeded"
    assert stats["solver_status"] == "fatrop: Success (return flag 0)"
    assert stats["message"] == "" and stats["violation"] is None and stats["hint"] is None


# ---- the guess ----


def nan_stage(x, u):
    return ca.sumsqr(u), ca.vertcat(x[0] + 0.1 * x[1], x[1] + 0.1 * u / (x[0] - x[0]))  # 0/0 at any x


def norm_cost(x, u):
    return ca.norm_2(x) + ca.sumsqr(u), ca.vertcat(x[0] + 0.1 * x[1], x[1] + 0.1 * u)


def log_cost(x, u):
    return ca.log(u**2) + ca.sumsqr(x), ca.vertcat(x[0] + 0.1 * x[1], x[1] + 0.1 * u)


@pytest.mark.parametrize("solver", ocp.SOLVERS)
@pytest.mark.parametrize(
    "stage, culprit",
    [
        (nan_stage, r"the constraints at the initial guess not finite: stage 0, gap-closing x_1 == x_next \[entry 1\]"),
        (norm_cost, r"the cost's gradient at the initial guess not finite: by x_1\[0\]"),
        (log_cost, r"the cost at the initial guess not finite"),
    ],
    ids=["0/0 in a stage", "norm_2 at a zero guess", "log(0) in the cost"],
)
def test_non_finite_values_at_the_guess_are_refused_before_solving(stage, culprit, solver):
    """None of these reaches the solver (fatrop iterates on NaN): the error names the stage and variable."""
    st = ocp.Stagewise()
    x = st.state(2)
    st.subject_to(x == [0, 0])
    cost = 0
    for _ in range(3):
        u = st.control(1)
        c, x_next = stage(x, u)
        cost, x = cost + c, st.step(x_next)
    st.opti.minimize(cost)
    for k, xk in enumerate(st.x):
        st.opti.set_initial(xk, [0, 0] if k else [1, 0])  # x_0 away from zero: the culprit is x_1
    with pytest.raises(ValueError, match=culprit):
        st.solver(solver, ocp.solver_options(solver=solver))


def test_a_non_finite_constraint_jacobian_at_the_guess_names_the_constraint_and_variable():
    st = ocp.Stagewise()
    x = st.state(2)
    u = st.control(2)
    st.subject_to(ca.norm_2(u) <= 1, name="friction cone")
    st.step(x + u)
    st.opti.minimize(ca.sumsqr(u))
    with pytest.raises(ValueError, match=r"Jacobian.*stage 0, path constraint 'friction cone' \[entry 0\] by u_0\["):
        st.solver("fatrop", ocp.solver_options(solver="fatrop"))


def test_fatrops_objective_scale_is_capped_and_a_huge_weight_gives_ipopts_optimum_or_a_failure():
    """Weights scale the objective, not its minimiser: fatrop at a weight of 1e20 (a gradient of 1e21 at
    the guess) either fails or lands on IPOPT's optimum at weight 1; the scale stops at MAX_SCALE."""
    goal = [(lambda x: x[0] == 1, "goal")]
    reference = pendulum_problem(goal, "ipopt")
    assert ocp.solve(reference.opti)["success"]
    for weight in (1e20, 1e300):
        st = pendulum_problem(goal, "ipopt")
        st.opti.minimize(weight * st.opti.f)
        for u in st.u:
            st.opti.set_initial(u, 1.0)  # a gradient of 2 weight by each u_k at the guess
        st.solver("fatrop", ocp.solver_options(solver="fatrop"))
        assert st.opti.f_linear_scale == ocp.MAX_SCALE
        if ocp.solve(st.opti)["success"]:
            for a, b in zip(st.x + st.u, reference.x + reference.u):
                np.testing.assert_allclose(st.opti.value(a), reference.opti.value(b), atol=1e-6)


# ---- the uncompiled-stages warning ----


def stage_function():
    x, u = ca.MX.sym("x", 2), ca.MX.sym("u")
    step, residual = pendulum()
    outputs = [ca.sumsqr(residual(x, u)), step(x, u)]
    return ca.Function("pendulum_stage", [x, u], outputs, ["x", "u"], ["cost", "x_next"])


def staged(f, stages, solver="fatrop", **options):
    st = ocp.Stagewise()
    x = st.state(2)
    st.subject_to(x == [0, 0])
    cost = 0
    for _ in range(stages):
        u = st.control(1)
        c, x_next = f(x, u)
        cost, x = cost + c, st.step(x_next)
    st.opti.minimize(cost)
    st.subject_to(x[0] == 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        st.solver(solver, ocp.solver_options(solver=solver, **options))
        st.solver(solver, ocp.solver_options(solver=solver, **options))  # a second time: no second warning
    return [w for w in caught if issubclass(w.category, ocp.UncompiledStagesWarning)]


def test_many_uncompiled_stages_solved_by_fatrop_warn_once_saying_how_to_compile(tmp_path, monkeypatch):
    f = stage_function()
    (warning,) = staged(f, ocp.WARN_STAGES + 1)
    text = str(warning.message)
    assert "'pendulum_stage'" in text and "ocp.compile_stages" in text and warning.filename == __file__
    assert not staged(f, ocp.WARN_STAGES)  # a few stages
    assert not staged(f, ocp.WARN_STAGES + 1, "ipopt")
    monkeypatch.setenv("CASRBD_CACHE", str(tmp_path))
    (compiled,) = ocp.compile_stages([f], "test_reliability_warning", flags=("-O0",))
    assert not staged(compiled, ocp.WARN_STAGES + 1)


# ---- options and sizes ----


def test_solver_options_take_the_solvers_prefix_and_refuse_anothers():
    assert ocp.solver_options(solver="fatrop", **{"fatrop.tol": 1e-6})["fatrop.tol"] == 1e-6
    assert ocp.solver_options(**{"ipopt.max_iter": 5}, tol=1e-3)["ipopt.max_iter"] == 5
    for solver, name in (("fatrop", "ipopt.tol"), ("ipopt", "fatrop.tol"), ("ipopt", "foo.tol")):
        with pytest.raises(ValueError, match=rf"option '{name}' is .*solver='{solver}'"):
            ocp.solver_options(solver=solver, **{name: 1e-6})


@pytest.mark.parametrize("solver", ocp.SOLVERS)
def test_an_unknown_option_is_named(solver):
    st = pendulum_problem(solver=solver, max_iterations=10)
    with pytest.raises(ValueError, match=rf"{solver} has no option 'max_iterations'"):
        ocp.solve(st.opti)


@pytest.mark.parametrize("n", [6.0, 2.5, -1, True, "2", None, np.float64(2)])
def test_stage_sizes_must_be_integers(n):
    st = ocp.Stagewise()
    with pytest.raises(ValueError, match=r"Stagewise.state\(n\): n must be an integer >= 1.*got " + re.escape(repr(n))):
        st.state(n)
    st.state(np.int64(2))
    with pytest.raises(ValueError, match=r"Stagewise.control\(n\): n must be an integer >= 0"):
        st.control(n)
    assert not st.u and st.control(0).numel() == 0
    with pytest.raises(ValueError, match="integer >= 1"):
        ocp.Stagewise().state(0)


@pytest.mark.parametrize("dt", [0.0, -0.1, float("inf"), float("nan"), ca.DM(float("inf")), ca.MX(-1.0), np.nan])
def test_a_step_must_be_finite_and_positive(dt):
    ode = lambda x, u: -x  # noqa: E731
    for call in (
        lambda: ocp.rk4(ode, np.ones(2), np.zeros(1), dt),
        lambda: ocp.implicit_euler_residual(ode, np.ones(2), np.ones(2), np.zeros(1), dt),
        lambda: ocp.euler_step(serial_chain(1), np.zeros(1), np.zeros(1), np.zeros(1), dt),
    ):
        with pytest.raises(ValueError, match="dt must be a finite positive number"):
            call()


def test_a_step_of_the_wrong_kind_is_refused_and_a_symbol_passes():
    for dt in (True, "0.1", None, [0.1]):
        with pytest.raises(TypeError, match="dt must be a number"):
            ocp.rk4(lambda x, u: -x, np.ones(2), np.zeros(1), dt)
    h = ca.MX.sym("h")
    x1 = ocp.rk4(lambda x, u: -x, ca.MX.ones(2), ca.MX(0, 1), h)
    assert float(ca.Function("f", [h], [x1[0]])(0.1)) == pytest.approx(np.exp(-0.1), abs=1e-7)


# ---- compiled Functions in a jitted NLP ----

JITTED = """
import sys
import casadi as ca
import casrbd
from casrbd import ocp
from casrbd.models import serial_chain
from casrbd.models import random_tree

model = random_tree(2, ("revolute",), seed=1)
fd = ocp.dynamics(model, compiled=True, flags=("-O0",))
opti = ca.Opti()
q, v, tau = (opti.variable(model.nv) for _ in range(3))
opti.subject_to(fd(q, v, tau) == 1)
opti.minimize(ca.sumsqr(tau) + ca.sumsqr(q) + ca.sumsqr(v))
opti.solver("ipopt", ocp.solver_options(compiled=True, flags=("-O0",)))
stats = ocp.solve(opti)
print("dynamics", stats["status"], float(ca.norm_inf(opti.value(fd(q, v, tau)) - 1)), flush=True)

nv, aba = model.nv, casrbd.function(model, "aba")
x, u = ca.MX.sym("x", 2 * nv), ca.MX.sym("u", nv)
stage = ca.Function(
    "tree_stage", [x, u], [ca.sumsqr(u) + ca.sumsqr(x), x + 0.05 * ca.vertcat(x[nv:], aba(x[:nv], x[nv:], u))],
    ["x", "u"], ["cost", "x_next"],
)
(compiled,) = ocp.compile_stages([stage], "test_reliability_jit", flags=("-O0",))
values = {}
for jit in (False, True):
    st = ocp.Stagewise()
    xk, cost = st.state(2 * nv), 0
    st.subject_to(xk == 0.1)
    for _ in range(3):
        uk = st.control(nv)
        c, xn = compiled(xk, uk)
        cost, xk = cost + c, st.step(xn)
    st.opti.minimize(cost + 10 * ca.sumsqr(xk))
    st.solver("fatrop", ocp.solver_options(solver="fatrop", compiled=jit, flags=("-O0",)))
    stats = ocp.solve(st.opti)
    values[jit] = st.opti.value(ca.vertcat(*st.x))
    print("stages", jit, stats["status"], flush=True)
print("difference", float(ca.norm_inf(values[True] - values[False])))
"""


def test_compiled_functions_in_a_jitted_nlp_solve_instead_of_ending_the_process(tmp_path):
    """Before: the jitted NLP could not resolve the libraries' symbols and the process died (exit 127).
    Run in a subprocess, so that a regression fails this test instead of ending pytest."""
    env = {"CASRBD_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(JITTED)],
        cwd=tmp_path,  # casadi's jit writes its library into the working directory
        env={**__import__("os").environ, **env},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    dynamics, stages_vm, stages_jit, difference = lines[-4:]
    assert dynamics.startswith("dynamics Solve_Succeeded") and float(dynamics.split()[-1]) < 1e-8
    assert stages_vm == "stages False Solve_Succeeded" and stages_jit == "stages True Solve_Succeeded"
    assert float(difference.split()[-1]) < 1e-10
