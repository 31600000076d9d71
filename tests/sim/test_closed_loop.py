"""Whole-body MPC in closed loop with MuJoCo as the plant: the arm (the Panda, else arm7) reaches a target
within 5 mm without leaving its torque and joint limits, and the same check fails with a controller whose
model has every mass three times the plant's (so it catches a broken controller)."""

import numpy as np
import pytest
from example_runner import example
from sim_robots import load

import casrbd
from casrbd.models import load_arm
from casrbd.ocp.mpc import MPC, reaching_horizon
from casrbd.sim import Plant, scaled_masses

pytest.importorskip("mujoco")
BOUND = 5e-3  # m
Q0 = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])


def reach(controller_model, model, tool):
    """(final tool error in m, the run's Record) of a 1 s reach at 50 Hz updates from rest at Q0."""
    start = np.asarray(casrbd.frame_placement(model, Q0, tool))[:3, 3]
    target = start + [0.05, 0.05, -0.05]
    horizon = reaching_horizon(controller_model, tool, target, nodes=6, dt=0.05, max_iter=1)
    record = Plant(model).run(MPC(horizon, 0.05), 1.0, 50, Q0)
    end = np.asarray(casrbd.frame_placement(model, record.q[-1], tool))[:3, 3]
    return np.linalg.norm(end - target), record


def test_mpc_reaches_the_target_within_the_limits():
    model, tool = load_arm()
    error, record = reach(model, model, tool)
    assert error < BOUND
    assert np.all(np.abs(record.tau) <= model.effort_limit)
    assert np.all((record.q >= model.lower) & (record.q <= model.upper))
    assert len(record.update_cpu) == 50


def test_a_wrong_model_in_the_controller_fails_the_check():
    model, tool = load_arm()
    error, _ = reach(scaled_masses(model, 3.0), model, tool)
    assert error > BOUND


def test_the_example_runs_and_writes_its_plots_and_replay(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    main = example("mpc_panda").main
    plot, html = tmp_path / "mpc.png", tmp_path / "mpc.html"
    main(["--no-compiled", "--rate", "50", "--hold", "0.2", "--nodes", "4", "--plot", str(plot), "--html", str(html)])
    assert "update CPU time" in capsys.readouterr().out
    for path in (plot, tmp_path / "mpc_cpu.png"):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<canvas" in html.read_text()


@pytest.mark.slow
def test_solo12_stands_under_the_contact_dynamics_mpc(capsys):
    load("solo12")  # skips without example-robot-data
    mpc_solo12 = example("mpc_solo12")
    result = mpc_solo12.run(duration=0.7, compiled=False)  # the first push at 0.5 s
    q, q0 = result["record"].q, result["q0"]
    assert abs(q[-1, 2] - q0[2]) < 0.01 and np.linalg.norm(q[-1, :2] - q0[:2]) < 0.05
    assert np.abs(result["record"].tau).max() <= mpc_solo12.TORQUE
