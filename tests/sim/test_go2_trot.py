"""Whole-body MPC of Go2 trotting in MuJoCo on its own parameters (``casrbd.sim.trot.ROBOTS["go2"]``, uncompiled
stages, the scenario's 100 Hz and 16 knots): under pushes scaled to its mass it stays up, walks forward near its
velocity reference and turns at its yaw-rate reference."""

import numpy as np
import pytest
from sim_robots import load

pytest.importorskip("mujoco")
PUSH = 3.2  # N s: solo12's 0.5 N s per kilogram of its 2.5 kg, on Go2's 16 kg
YAW_RATE = 0.5  # rad/s


@pytest.mark.slow
def test_go2_trots_forward_and_turns_under_pushes():
    from casrbd.sim import trot

    load("go2")  # skips without example-robot-data
    result = trot.run(2.0, push=PUSH, yaw_rate=YAW_RATE, compiled=False, robot="go2")
    metrics, r = trot.metrics(result), result["record"]
    assert not metrics["fell"]
    assert 0.15 < metrics["mean_speed"] < 0.45
    qx, qy, qz, qw = r.q[:, 3:7].T
    yaw = np.unwrap(np.arctan2(2 * (qw * qz + qx * qy), 1 - 2 * (qy * qy + qz * qz)))
    late = r.t > 1.0
    assert 0.5 * YAW_RATE < (yaw[late][-1] - yaw[late][0]) / (r.t[late][-1] - r.t[late][0]) < 1.5 * YAW_RATE
