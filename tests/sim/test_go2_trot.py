"""Whole-body MPC of Go2 trotting in MuJoCo on its own parameters (``casrbd.sim.trot.ROBOTS["go2"]``, uncompiled
stages, the scenario's 100 Hz and 16 knots): under pushes scaled to its mass it stays up, walks forward near its
velocity reference and turns near its yaw-rate reference; the same check fails with a controller whose model has
every mass three times the plant's (its plans diverge: so it catches a broken controller)."""

import numpy as np
import pytest
from sim_robots import load

import casrbd
from casrbd.sim import scaled_masses

pytest.importorskip("mujoco")
PUSH = 3.2  # N s: solo12's 0.5 N s per kilogram of its 2.5 kg, on Go2's 16 kg
YAW_RATE = 0.5  # rad/s


def trot(controller_model=None):
    from casrbd.sim import trot

    load("go2")  # skips without example-robot-data
    return trot.run(2.0, push=PUSH, yaw_rate=YAW_RATE, compiled=False, robot="go2", model=controller_model)


def check(result):
    from casrbd.sim import trot

    metrics, r = trot.metrics(result), result["record"]
    qx, qy, qz, qw = r.q[:, 3:7].T
    yaw = np.unwrap(np.arctan2(2 * (qw * qz + qx * qy), 1 - 2 * (qy * qy + qz * qz)))
    late = r.t > 1.0
    yaw_rate = (yaw[late][-1] - yaw[late][0]) / (r.t[late][-1] - r.t[late][0])
    return not metrics["fell"] and 0.15 < metrics["mean_speed"] < 0.45 and 0.5 < yaw_rate / YAW_RATE < 1.5


@pytest.mark.slow
def test_go2_trots_forward_and_turns_under_pushes():
    assert check(trot())


@pytest.mark.slow
def test_a_wrong_model_in_the_go2_controller_fails_the_check():
    try:
        result = trot(scaled_masses(casrbd.load_robot("go2"), 3.0))
    except np.linalg.LinAlgError:  # the Riccati recursion of a diverged plan
        return
    assert not check(result)
