"""The legged-robot examples: examples/quadruped_gait.py (solo12 trot with the contact dynamics
Function) and examples/humanoid_com.py (talos weight shift with the centroidal momentum).

The trot runs in a reduced size with analytical and with AD Jacobians from the same neutral standing
guess: both must succeed and reach the same optimum. Both solutions are then checked with code that
does not share the examples' transcription: the trot's torques and contact forces against crba,
nonlinear_effects and the feet's frame Jacobians (M a + b = [0; u] + sum J^T F), the contact
accelerations (frame_classical_acceleration: zero up to the Baumgarte term), friction, touchdown and
clearance; the weight shift's soles, centre of mass, momentum (ccrba of the whole-body trajectory),
centre of pressure, and its whole-body check (rnea with the planned wrenches: the base's wrench is a
small fraction of the weight).
"""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import requires_example_robot_data

import casrbd
from casrbd import ocp

ROOT = Path(__file__).resolve().parents[1]
PNG = b"\x89PNG\r\n\x1a\n"
TOL = 1e-6


def example(name):
    if str(ROOT / "examples") not in sys.path:
        sys.path.insert(0, str(ROOT / "examples"))  # the examples import common
    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def trots():
    requires_example_robot_data("solo12")
    mod = example("quadruped_gait")
    return mod, {mode: mod.solve(nodes=12, jacobian=mode) for mode in ocp.JACOBIANS}


def test_trot_analytical_and_ad_reach_the_same_optimum(trots):
    _, r = trots
    a, b = r["analytical"], r["ad"]
    assert a["stats"]["status"] == b["stats"]["status"] == "Solve_Succeeded"
    assert abs(a["stats"]["cost"] - b["stats"]["cost"]) <= 1e-6 * abs(b["stats"]["cost"])
    for k in ("q", "v", "a", "u", "forces"):
        assert np.abs(a[k] - b[k]).max() <= 1e-5, k


def test_trot_is_physical(trots):
    _, r = trots
    r = r["analytical"]
    model = r["model"]
    np.testing.assert_allclose(np.linalg.norm(r["q"][:, 3:7], axis=1), 1, atol=1e-9)
    assert r["q"][-1][0] - r["q"][0][0] == pytest.approx(0.06, abs=1e-8)
    assert len(set(r["phase"])) == 4
    previous = r["feet"]
    for k, stance in enumerate(r["stance"]):
        q, v, a, F = r["q"][k], r["v"][k], r["a"][k], r["forces"][k]
        lhs = casrbd.crba(model, q) @ a + casrbd.nonlinear_effects(model, q, v)
        rhs = np.r_[np.zeros(6), r["u"][k]]
        for i, foot in enumerate(r["feet"]):
            J = casrbd.frame_jacobian(model, q, foot, "local_world_aligned")[:3]
            rhs = rhs + J.T @ F[:, i]
            height = casrbd.frame_placement(model, q, foot)[2, 3]
            if foot in stance:
                assert F[2, i] > 0 and np.all(np.abs(F[:2, i]) <= r["mu"] * F[2, i] + TOL)
                acc = casrbd.frame_classical_acceleration(model, q, v, a, foot, "local")[:3]
                vel = casrbd.frame_velocity(model, q, v, foot, "local")[:3]
                np.testing.assert_allclose(acc + r["kd"] * vel, 0, atol=1e-8)
                assert abs(height) < 2e-3  # drift between nodes
                if foot not in previous:  # touchdown
                    assert abs(height) < TOL
                    np.testing.assert_allclose(vel, 0, atol=TOL)
            else:
                np.testing.assert_array_equal(F[:, i], 0)
                assert height > -TOL
        np.testing.assert_allclose(lhs, rhs, atol=1e-8 * max(1, np.abs(lhs).max()))
        assert np.all(np.abs(r["u"][k]) <= r["tau_max"] + TOL)
        previous = stance


def test_trot_plot_and_schedule(trots, tmp_path):
    pytest.importorskip("matplotlib")
    mod, r = trots
    path = tmp_path / "trot.png"
    mod.plot(r["analytical"], str(path))
    assert path.read_bytes()[:8] == PNG and (tmp_path / "trot_snapshots.png").read_bytes()[:8] == PNG
    with pytest.raises(ValueError, match="too few"):
        mod.solve(nodes=6)


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
