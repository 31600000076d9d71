"""Whole-body MPC of solo12 trotting in MuJoCo (``casrbd.sim.trot``, uncompiled stages, Riccati real-time
iteration, a short horizon and gait at 50 Hz): the robot stays up and walks forward near its velocity
reference, and the same check fails with a controller whose model has every mass three times the plant's
(its plans diverge: so it catches a broken controller)."""

import numpy as np
import pytest
from sim_robots import load

import casrbd
from casrbd.sim import scaled_masses

pytest.importorskip("mujoco")
SPEED = (0.1, 0.5)  # m/s: the mean forward speed after the first second, its reference 0.3


def trot(controller_model=None):
    from casrbd.sim import trot

    load("solo12")  # skips without example-robot-data
    result = trot.run(1.5, 50, 8, push=0.0, compiled=False, model=controller_model, swing=6)
    return trot.metrics(result)


def check(metrics):
    return not metrics["fell"] and SPEED[0] < metrics["mean_speed"] < SPEED[1]


def test_solo12_trots_forward_under_the_mpc():
    assert check(trot())


def test_a_wrong_model_in_the_trot_controller_fails_the_check():
    try:
        metrics = trot(scaled_masses(casrbd.load_robot("solo12"), 3.0))
    except np.linalg.LinAlgError:  # the Riccati recursion of a diverged plan
        return
    assert not check(metrics)
