"""The legged-robot problems: Crocoddyl's solo12 trot (``casrbd.ocp.legged``, shortened, stage by stage, as
examples/quadruped_gait.py builds it) and examples/humanoid_com.py (talos weight shift with the centroidal momentum).

The trot runs in a reduced size with fatrop and with IPOPT from Crocoddyl's guess: both must succeed
and reach the same optimum. Both solutions are then checked with code that does not share the
examples' transcription: the trot's semi-implicit Euler steps (integrate), its torques against crba,
nonlinear_effects and the feet's frame Jacobians (M a + b - [0; u] is a force on the stance feet), the
contact accelerations (frame_classical_acceleration: zero up to the Baumgarte term), the impulses at
touchdown (the landing feet at rest after them); the weight shift's soles, centre of mass, momentum
(ccrba of the whole-body trajectory), centre of pressure, and its whole-body check (rnea with the
planned wrenches: the base's wrench is a small fraction of the weight).
"""

import example_runner
import numpy as np
import pytest
from conftest import requires_example_robot_data

import casrbd
from casrbd import ocp
from casrbd.models import load_robot
from casrbd.ocp import legged

PNG = b"\x89PNG\r\n\x1a\n"
TOL = 1e-6


def example(name):
    return example_runner.example(name)


@pytest.fixture(scope="module")
def trots():
    requires_example_robot_data("solo12")
    model, short = load_robot("solo12"), {"step_knots": 6, "support_knots": 1}
    steps = legged.trot(model, legged.SOLO_STANDING, **short)
    problem = legged.quadruped_problem("trot", model, **short)
    solutions = {s: problem.solve(s) for s in ocp.SOLVERS}
    return {s: {"model": model, "knots": steps, "xs": r.xs, "us": r.us, "stats": r.stats} for s, r in solutions.items()}


def test_trot_fatrop_and_ipopt_reach_the_same_optimum(trots):
    r = trots
    a, b = r["fatrop"], r["ipopt"]
    assert a["stats"]["success"] and b["stats"]["success"]
    assert abs(a["stats"]["cost"] - b["stats"]["cost"]) <= 1e-7 * abs(b["stats"]["cost"])
    np.testing.assert_allclose(a["xs"], b["xs"], atol=1e-6)


def test_trot_is_physical(trots):
    """Crocoddyl's dynamics, checked with casrbd's numeric API: semi-implicit Euler; at running knots
    M a + b = [0; u] + J^T F with the stance feet's acceleration -kd times their velocity; at impulse
    knots M (v+ - v) = J^T P with the landing feet at rest after it."""
    r, model, kd = trots["fatrop"], trots["fatrop"]["model"], legged.SOLO_KD
    nq, dt = model.nq, r["knots"][0].dt
    np.testing.assert_allclose(np.linalg.norm(r["xs"][:, 3:7], axis=1), 1, atol=1e-9)
    assert any(k.dt == 0 for k in r["knots"]) and any(len(k.feet) == 2 for k in r["knots"])
    for k, (knot, u) in enumerate(zip(r["knots"], r["us"])):
        (q, v), (q1, v1) = np.split(r["xs"][k], [nq]), np.split(r["xs"][k + 1], [nq])
        J = np.vstack([casrbd.frame_jacobian(model, q, f, "local_world_aligned")[:3] for f in knot.feet])
        M = casrbd.crba(model, q)
        if knot.dt == 0:
            np.testing.assert_allclose(q1, q, atol=1e-12)
            rhs = M @ (v1 - v)
            for foot in knot.feet:
                np.testing.assert_allclose(casrbd.frame_velocity(model, q, v1, foot, "local")[:3], 0, atol=1e-8)
        else:
            a = (v1 - v) / dt
            np.testing.assert_allclose(q1, casrbd.integrate(model, q, v1 * dt), atol=1e-9)
            rhs = M @ a + casrbd.nonlinear_effects(model, q, v) - np.r_[np.zeros(6), u]
            for foot in knot.feet:
                acc = casrbd.frame_classical_acceleration(model, q, v, a, foot, "local")[:3]
                vel = casrbd.frame_velocity(model, q, v, foot, "local")[:3]
                np.testing.assert_allclose(acc + kd * vel, 0, atol=1e-6 * max(1, np.abs(acc).max()))
        # the generalised force left over is a contact force (impulse) on the contact set
        F = np.linalg.lstsq(J.T, rhs, rcond=None)[0] if len(knot.feet) else np.zeros(0)
        np.testing.assert_allclose(J.T @ F if len(F) else 0, rhs, atol=1e-7 * max(1, np.abs(rhs).max()))
    with pytest.raises(ValueError, match="gauss-newton"):
        legged.quadruped_problem("trot", model, compiled=True, hessian="exact", step_knots=2, support_knots=1)


@pytest.fixture(scope="module")
def shift():
    requires_example_robot_data("talos_reduced")
    mod = example("humanoid_com")
    return mod, mod.solve(nodes=6)


def test_weight_shift_is_physical(shift):
    mod, r = shift
    model = r["model"]
    assert r["stats"]["status"] == "Solve_Succeeded"
    for k, (q, v) in enumerate(zip(r["q"], r["v"])):
        for X, foot in zip(r["soles"], r["feet"]):
            np.testing.assert_allclose(casrbd.frame_placement(model, q, foot), X, atol=1e-8)
        np.testing.assert_allclose(casrbd.ccrba(model, q, v)[1], r["h"][k], atol=1e-7)
        np.testing.assert_allclose(casrbd.center_of_mass(model, q), r["com"][k], atol=1e-9)
        assert np.all(q[7:] >= model.lower[7:] - TOL) and np.all(q[7:] <= model.upper[7:] + TOL)
        for i in range(2):
            f, tau = r["wrenches"][k, :3, i], r["wrenches"][k, 3:, i]
            assert f[2] >= -TOL
            assert abs(tau[1]) <= mod.SOLE[0] * f[2] + TOL and abs(tau[0]) <= mod.SOLE[1] * f[2] + TOL
    np.testing.assert_allclose(r["com"][-1][:2], r["soles"][0][:2, 3], atol=TOL)
    np.testing.assert_allclose(r["v"][-1], 0, atol=TOL)
    weight = model.mass * 9.81
    assert np.abs(mod.whole_body_residual(r)).max() < 0.01 * weight


def test_weight_shift_plot(shift, tmp_path):
    pytest.importorskip("matplotlib")
    mod, r = shift
    path = tmp_path / "talos.png"
    mod.plot(r, str(path))
    assert path.read_bytes()[:8] == PNG and (tmp_path / "talos_snapshots.png").read_bytes()[:8] == PNG


@pytest.mark.slow
def test_gap_crossing_holds_its_hard_constraints():
    """examples/gap_crossing.py (compiled at -O0): solved, torques within the limit (and at it), the feet
    above the ground in flight and beyond the gap after the touchdown, checked with casrbd's numeric API."""
    requires_example_robot_data("solo12")
    gap, tau_max = 0.1, 2.5
    r = example("gap_crossing").solve(gap, tau_max=tau_max, flags=("-O0",))
    model, xs = r["model"], r["xs"]
    assert r["stats"]["success"] and r["violation"] < 1e-6
    torques = max(np.abs(u).max() for u in r["us"] if u.size)
    assert tau_max - 1e-5 < torques <= tau_max + 1e-6
    for k, step in enumerate(r["knots"][:-1]):
        heights = [casrbd.frame_placement(model, xs[k][: model.nq], f)[2, 3] for f in legged.SOLO_FEET]
        if step.feet == ():  # a flight knot: its clearance constraint on its state
            assert min(heights) >= 0.005 - 1e-6
    start = [casrbd.frame_placement(model, xs[0][: model.nq], f)[0, 3] for f in legged.SOLO_FEET]
    end = [casrbd.frame_placement(model, xs[-1][: model.nq], f)[0, 3] for f in legged.SOLO_FEET]
    np.testing.assert_allclose(np.subtract(end, start), gap, atol=0.02)
