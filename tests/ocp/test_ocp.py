"""casrbd.ocp helpers and the optimal-control examples (examples/swingup.py, arm_p2p.py, legged.py, mpc_arm.py).

The helpers are checked against independent references: RK4 on a linear
system against its 4th-order Taylor polynomial and the matrix exponential,
the implicit-Euler residual at the step solved by linear algebra, the
manifold update against casrbd.integrate.

Each example runs in a reduced size with analytical and with AD Jacobians
from the same initial guess: both must succeed and reach the same optimum.
Their solutions are then checked physically with code that does not share
the examples' transcription: the numeric aba integrated with fine steps
between the nodes (swing-up, arm), the torques recomputed as
rnea(q, v, a) - sum J_foot^T F with frame Jacobians instead of the examples'
f_ext mapping (legged), and the plant's closed loop (MPC).
"""

from pathlib import Path

import casadi as ca
import example_runner
import numpy as np
import pytest
from conftest import normalized_slices, requires_example_robot_data

import casrbd
from casrbd import codegen, ocp
from casrbd.models import load_robot, serial_chain

ROOT = Path(__file__).resolve().parents[2]
COST_RTOL = 1e-6
TRAJ_ATOL = 1e-5
PNG = b"\x89PNG\r\n\x1a\n"


def example(name):
    """The module examples/<name>.py (its main logic is a function; main() is the command line)."""
    return example_runner.example(name)


def fine_rk4(model, x, tau, dt, substeps=50):
    """x after dt of the numeric aba with tau held: RK4 with many substeps, written here."""
    n, h = model.nv, dt / substeps
    f = lambda x: np.r_[x[n:], casrbd.aba(model, x[:n], x[n:], tau)]  # noqa: E731
    for _ in range(substeps):
        k1 = f(x)
        k2 = f(x + h / 2 * k1)
        k3 = f(x + h / 2 * k2)
        k4 = f(x + h * k3)
        x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return x


def assert_same_optimum(a, b, keys):
    assert a["stats"]["status"] == b["stats"]["status"] == "Solve_Succeeded", (a["stats"], b["stats"])
    assert abs(a["stats"]["cost"] - b["stats"]["cost"]) <= COST_RTOL * abs(b["stats"]["cost"])
    for k in keys:
        assert np.max(np.abs(np.asarray(a[k]) - np.asarray(b[k]))) <= TRAJ_ATOL, k


def within(x, lower, upper):
    """lower <= x <= upper up to IPOPT's bound relaxation (1e-8 relative, bound_relax_factor)."""
    lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    slack = lambda b: 1e-7 * np.maximum(1, np.abs(b))  # noqa: E731
    return bool(np.all(x >= lower - slack(lower)) and np.all(x <= upper + slack(upper)))


@pytest.fixture
def matplotlib():
    """The plots need matplotlib, a test extra: their tests are skipped without it."""
    return pytest.importorskip("matplotlib")


def assert_png(path):
    assert Path(path).read_bytes()[:8] == PNG


# ---- helpers against independent references ----


def linear_system(seed=0):
    rng = np.random.default_rng(seed)
    A, B = rng.normal(size=(3, 3)), rng.normal(size=(3, 2))
    return A, B, rng.normal(size=3), rng.normal(size=2)


def exact_step(A, B, x0, u, dt):
    """e^{A dt} x0 + A^-1 (e^{A dt} - I) B u, with e^{A dt} from A's eigendecomposition."""
    lam, V = np.linalg.eig(A)
    E = np.real(V @ np.diag(np.exp(lam * dt)) @ np.linalg.inv(V))
    return E @ x0 + np.linalg.solve(A, (E - np.eye(3)) @ B @ u)


def test_rk4_is_the_4th_order_taylor_step_of_a_linear_system():
    A, B, x0, u = linear_system()
    dt = 0.1
    x1 = np.array(ocp.rk4(lambda x, u: A @ x + B @ u, x0, u, dt), dtype=float).ravel()
    taylor, term = x0.copy(), A @ x0 + B @ u  # d^k x/dt^k = A^(k-1) (A x0 + B u)
    for k in range(1, 5):
        taylor = taylor + dt**k / np.prod(range(1, k + 1)) * term
        term = A @ term
    np.testing.assert_allclose(x1, taylor, rtol=0, atol=1e-14)


def test_rk4_converges_to_the_matrix_exponential_at_4th_order():
    A, B, x0, u = linear_system(1)
    ode = lambda x, u: ca.mtimes(ca.DM(A), x) + ca.mtimes(ca.DM(B), u)  # noqa: E731
    errors = [
        np.abs(np.array(ocp.rk4(ode, ca.DM(x0), ca.DM(u), dt)).ravel() - exact_step(A, B, x0, u, dt)).max()
        for dt in (0.1, 0.05)
    ]
    assert errors[0] < 1e-4
    assert 25 < errors[0] / errors[1] < 40  # local error O(dt^5): halving dt divides it by 32


def test_implicit_euler_residual_vanishes_at_the_implicit_step_only():
    A, B, x0, u = linear_system(2)
    dt = 0.05
    ode = lambda x, u: A @ x + B @ u  # noqa: E731
    x1 = np.linalg.solve(np.eye(3) - dt * A, x0 + dt * B @ u)
    assert np.abs(ocp.implicit_euler_residual(ode, x0, x1, u, dt)).max() < 1e-14
    explicit = x0 + dt * ode(x0, u)
    assert np.abs(ocp.implicit_euler_residual(ode, x0, explicit, u, dt)).max() > 1e-4


def test_euler_step_matches_casrbd_integrate_and_keeps_unit_quaternions():
    model = casrbd.models.random_tree(6, ("floating", "spherical", "revolute"), branching=2, seed=3)
    rng = np.random.default_rng(4)
    q, v, a = casrbd.random_configuration(model, rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
    dt = 0.07
    Q, Vs, As = ca.MX.sym("q", model.nq), ca.MX.sym("v", model.nv), ca.MX.sym("a", model.nv)
    step = ca.Function("step", [Q, Vs, As], list(ocp.euler_step(model, Q, Vs, As, dt)))
    q1, v1 = (np.array(x).ravel() for x in step(q, v, a))
    np.testing.assert_allclose(q1, casrbd.integrate(model, q, v * dt), rtol=0, atol=1e-14)
    np.testing.assert_allclose(v1, v + a * dt, rtol=0, atol=1e-14)
    for _, s in normalized_slices(model):
        assert abs(np.linalg.norm(q1[s]) - 1) < 1e-14


def test_helpers_reject_bad_arguments():
    model = load_robot("arm7")
    with pytest.raises(ValueError, match="jacobian"):
        ocp.dynamics(model, "aba", jacobian="numeric")
    with pytest.raises(ValueError, match="name"):
        ocp.dynamics(model, "crba")
    with pytest.raises(ValueError, match="hessian"):
        ocp.solver_options(hessian="bfgs")
    with pytest.raises(ValueError, match="dt"):
        ocp.rk4(lambda x, u: x, np.zeros(1), np.zeros(1), 0.0)
    floating = casrbd.models.random_tree(2, ("floating", "revolute"))
    with pytest.raises(ValueError, match="nq"):
        ocp.forward_dynamics_ode(floating, casrbd.function(floating, "aba"))


def test_analytical_dynamics_is_differentiated_through_its_jacobian():
    model = load_robot("arm7")
    q, v, tau = (ca.MX.sym(s, model.nv) for s in ("q", "v", "tau"))
    x = ca.vertcat(q, v, tau)
    point = np.random.default_rng(5).normal(size=3 * model.nv)
    jacs = {}
    for mode in ocp.JACOBIANS:
        J = ca.Function("J", [x], [ca.jacobian(ocp.dynamics(model, "aba", mode)(q, v, tau), x)])
        jacs[mode] = np.array(J(point))
        called = {f.name() for f in J.find_functions()}
        assert any(n.startswith("jac_") for n in called) == (mode == "analytical"), called
    np.testing.assert_allclose(jacs["analytical"], jacs["ad"], rtol=0, atol=1e-9 * np.abs(jacs["ad"]).max())


def test_compiled_dynamics_has_the_same_value_jacobian_and_hessian(tmp_path, monkeypatch):
    monkeypatch.setenv("CASRBD_CACHE", str(tmp_path))
    model = example("swingup").load_model()
    q, v, tau = (ca.MX.sym(s, model.nv) for s in ("q", "v", "tau"))
    x = ca.vertcat(q, v, tau)
    point = np.random.default_rng(6).normal(size=3 * model.nv)

    def derivatives(fd):
        a = fd(q, v, tau)
        d = ca.Function("d", [x], [a, ca.jacobian(a, x), ca.hessian(ca.sumsqr(a), x)[0]])
        return [np.array(o) for o in d(point)]

    for mode in ocp.JACOBIANS:
        reference = derivatives(casrbd.function(model, "aba"))
        for got, ref in zip(derivatives(ocp.dynamics(model, "aba", mode, compiled=True)), reference):
            np.testing.assert_allclose(got, ref, rtol=0, atol=1e-9 * max(1, np.abs(ref).max()))


def test_solve_reports_a_failure_without_raising():
    opti = ca.Opti()
    x = opti.variable()
    opti.subject_to(x >= 1)
    opti.subject_to(x <= 0)
    opti.minimize(x**2)
    opti.solver("ipopt", ocp.solver_options())
    stats = ocp.solve(opti)
    assert not stats["success"] and stats["status"] != "Solve_Succeeded"
    assert set(ocp.STAT_FIELDS) <= set(stats)


# ---- swing-up ----


@pytest.fixture(scope="module")
def swingups():
    mod = example("swingup")
    return mod, {mode: mod.solve(nodes=60, jacobian=mode) for mode in ocp.JACOBIANS}


def test_swingup_analytical_and_ad_reach_the_same_optimum(swingups):
    _, r = swingups
    assert_same_optimum(r["analytical"], r["ad"], ("q", "v", "tau"))


def test_swingup_follows_the_true_dynamics_to_the_goal_within_limits(swingups):
    """Each interval, integrated from its node with the numeric aba and fine steps, lands on the
    next node; the last node is the goal. (Replaying the torques open loop from the start instead
    diverges through the unstable upright equilibrium at any discretisation error.)"""
    _, r = swingups
    r = r["analytical"]
    x = np.hstack([r["q"], r["v"]])
    defects = [np.abs(fine_rk4(r["model"], x[k], r["tau"][k], r["dt"]) - x[k + 1]).max() for k in range(len(r["tau"]))]
    assert max(defects) < 1e-2, max(defects)
    np.testing.assert_allclose(x[0], r["x_start"], atol=1e-8)
    np.testing.assert_allclose(x[-1], r["x_goal"], atol=1e-8)
    assert within(r["tau"], -r["tau_max"], r["tau_max"])


def test_swingup_compiled_reaches_the_same_optimum(swingups, tmp_path, monkeypatch):
    monkeypatch.setenv("CASRBD_CACHE", str(tmp_path))
    mod, r = swingups
    for mode in ocp.JACOBIANS:
        assert_same_optimum(mod.solve(nodes=60, jacobian=mode, compiled=True), r[mode], ("q", "v", "tau"))


def test_swingup_falls_back_to_its_own_pendulum(monkeypatch):
    """Without example-robot-data the swing-up uses the URDF in the example: upright at q = 0."""
    mod = example("swingup")
    monkeypatch.setattr(mod, "load_robot", lambda name: (_ for _ in ()).throw(LookupError(name)))
    r = mod.solve(nodes=40)
    assert r["model"].name == "double_pendulum_fallback"
    assert r["stats"]["status"] == "Solve_Succeeded"
    g_up = casrbd.generalized_gravity(r["model"], [0, 0])
    np.testing.assert_allclose(g_up, 0, atol=1e-12)  # an equilibrium ...
    tip = lambda q: casrbd.forward_kinematics(r["model"], q)[1][2, 3]  # noqa: E731
    assert tip([0, 0]) > tip([np.pi, 0])  # ... with the links up


def test_swingup_command_line_writes_the_plot(tmp_path, capsys, matplotlib):
    path = tmp_path / "swingup.png"
    assert example("swingup").main(["--nodes", "20", "--plot", str(path)]) == 0
    assert_png(path)
    assert "Solve_Succeeded" in capsys.readouterr().out


# ---- arm point to point ----


@pytest.fixture(scope="module")
def arms():
    mod = example("arm_p2p")
    return mod, {mode: mod.solve(nodes=24, jacobian=mode) for mode in ocp.JACOBIANS}


def test_arm_analytical_and_ad_reach_the_same_optimum(arms):
    _, r = arms
    assert_same_optimum(r["analytical"], r["ad"], ("q", "v", "tau"))


def test_arm_follows_the_true_dynamics_to_the_goal_within_limits(arms):
    _, r = arms
    r = r["analytical"]
    model, lim = r["model"], r["limits"]
    assert model.nv == 7  # the Panda's fingers are fixed (or it is arm7)
    x = np.hstack([r["q"], r["v"]])
    for k in range(len(r["tau"])):  # one RK4 step of 1/16 s per interval: local errors of a few 1e-3
        np.testing.assert_allclose(fine_rk4(model, x[k], r["tau"][k], r["dt"]), x[k + 1], atol=5e-3)
    np.testing.assert_allclose(r["q"][-1], r["q_goal"], atol=1e-8)
    np.testing.assert_allclose(r["v"][-1], 0, atol=1e-8)
    assert within(r["q"], lim["lower"], lim["upper"])
    assert within(r["v"], -lim["velocity"], lim["velocity"])
    assert within(r["tau"], -lim["effort"], lim["effort"])


def test_arm_falls_back_to_arm7_with_its_urdf_limits(monkeypatch):
    mod = example("arm_p2p")
    real = casrbd.models.robot_path

    def no_panda(name):
        if name == "panda":
            raise LookupError(name)
        return real(name)

    monkeypatch.setattr(casrbd.models, "robot_path", no_panda)
    model, tool = casrbd.models.load_arm()
    assert (model.name, model.nv, tool) == ("arm7", 7, "tool")
    np.testing.assert_array_equal(model.effort_limit[:3], [200, 175, 150])  # arm7.urdf
    np.testing.assert_array_equal(model.velocity_limit, 2.0)
    for q in (mod.Q_START, mod.Q_GOAL):
        assert within(q, model.lower, model.upper)


def test_arm_plot_writes_the_series_and_the_snapshots(arms, tmp_path, matplotlib):
    mod, r = arms
    path = tmp_path / "arm.png"
    mod.plot(r["analytical"], str(path))
    assert_png(path)
    assert_png(tmp_path / "arm_snapshots.png")


# ---- legged ----


@pytest.fixture(scope="module")
def jumps():
    requires_example_robot_data("solo12")
    mod = example("legged")
    return mod, {mode: mod.solve(nodes=12, jacobian=mode) for mode in ocp.JACOBIANS}


def test_legged_analytical_and_ad_reach_the_same_optimum(jumps):
    _, r = jumps
    assert_same_optimum(r["analytical"], r["ad"], ("q", "v", "a", "tau", "forces"))


def test_legged_solution_is_physical(jumps):
    """Unit quaternions; torques from rnea(q, v, a) minus the feet's J^T F (frame Jacobians, not the
    example's f_ext mapping) equal the solution's, with zero base rows and torques in their limit;
    forces inside the friction pyramid, zero in flight; stance feet on the ground."""
    mod, r = jumps
    r = r["analytical"]
    model, tol = r["model"], 1e-6
    np.testing.assert_allclose(np.linalg.norm(r["q"][:, 3:7], axis=1), 1, atol=1e-9)
    for k, in_contact in enumerate(r["contact"]):
        q, F = r["q"][k], r["forces"][k]
        tau = casrbd.rnea(model, q, r["v"][k], r["a"][k])
        for i, foot in enumerate(r["feet"]):
            J = casrbd.frame_jacobian(model, q, foot, "local_world_aligned")
            tau = tau - J[:3].T @ F[:, i]
        np.testing.assert_allclose(tau, r["tau"][k], atol=tol)
        assert np.abs(tau[:6]).max() < tol
        assert within(tau[6:], -r["tau_max"], r["tau_max"])
        if in_contact:
            assert np.all(F[2] >= -tol)
            assert np.all(np.abs(F[:2]) <= r["mu"] * F[2] + tol)
            heights = [casrbd.frame_placement(model, q, f)[2, 3] for f in r["feet"]]
            np.testing.assert_allclose(heights, 0, atol=tol)
        else:
            np.testing.assert_allclose(F, 0, atol=tol)
    assert not r["contact"].all() and r["contact"].any()
    assert r["q"][-1][0] - r["q"][0][0] == pytest.approx(0.1, abs=1e-8)  # it jumped forward


def test_legged_plot_writes_the_series_and_the_snapshots(jumps, tmp_path, matplotlib):
    mod, r = jumps
    path = tmp_path / "solo.png"
    mod.plot(r["analytical"], str(path))
    assert_png(path)
    assert_png(tmp_path / "solo_snapshots.png")


# ---- MPC ----


@pytest.fixture(scope="module")
def mpcs():
    mod = example("mpc_arm")
    return mod, {mode: mod.run(steps=5, nodes=5, jacobian=mode, compiled=False) for mode in ocp.JACOBIANS}


def test_mpc_analytical_and_ad_close_the_same_loop(mpcs):
    _, r = mpcs
    a, b = r["analytical"], r["ad"]
    assert all(s["success"] for s in a["solves"] + b["solves"])
    for k in ("q", "v", "tau"):
        assert np.abs(a[k] - b[k]).max() <= TRAJ_ATOL, k


def test_mpc_plant_moves_toward_the_goal_within_limits(mpcs):
    _, r = mpcs
    r = r["analytical"]
    err = np.abs(r["q"] - r["q_goal"]).max(axis=1)
    assert err[-1] < err[0] - 0.05
    assert within(r["tau"], -r["limits"]["effort"], r["limits"]["effort"])
    # the plant is the numeric aba, in 10 RK4 steps per interval: replay it here
    x = np.r_[r["q"][0], r["v"][0]]
    for k, tau in enumerate(r["tau"]):
        x = fine_rk4(r["model"], x, tau, r["dt"], substeps=10)
        np.testing.assert_allclose(x, np.r_[r["q"][k + 1], r["v"][k + 1]], rtol=0, atol=1e-10)


def test_mpc_compiled_matches_interpreted(mpcs, tmp_path, monkeypatch):
    """The compiled dynamics (value, analytical Jacobian and its Jacobian for the exact Hessian, at
    -O0, which compiles in seconds) close the same loop as the interpreted Functions."""
    # the example's Panda: its arm7 fallback has several optima within rounding of each other
    requires_example_robot_data("panda")
    monkeypatch.setenv("CASRBD_CACHE", str(tmp_path))
    mod, r = mpcs
    compiled = mod.run(steps=5, nodes=5, compiled=True, flags=("-O0",))
    assert all(s["success"] for s in compiled["solves"])
    for k in ("q", "v", "tau"):
        assert np.abs(compiled[k] - r["analytical"][k]).max() <= TRAJ_ATOL, k


def test_a_compiled_function_without_derivatives_says_how_to_build_it(tmp_path, monkeypatch):
    """A library of aba alone (codegen.compile_functions, no derivatives) in an NLP: the solve names
    the Function and casrbd.compiled, instead of casadi's bare "Derivatives cannot be calculated"."""
    monkeypatch.setenv("CASRBD_CACHE", str(tmp_path))
    model = serial_chain(2, seed=1)
    f = casrbd.function(model, "aba")
    fd = codegen.compile_functions(f, flags=("-O0",))[f.name()]
    opti = ca.Opti()
    q, v, tau = (opti.variable(model.nv) for _ in range(3))
    opti.subject_to(fd(q, v, tau) == 0)
    opti.minimize(ca.sumsqr(tau))
    opti.solver("ipopt", ocp.solver_options())
    with pytest.raises(RuntimeError, match=rf"'{f.name()}' carries no derivatives.*casrbd.compiled"):
        ocp.solve(opti)
