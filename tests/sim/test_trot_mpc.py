"""Whole-body MPC of solo12 trotting in MuJoCo (examples/mpc_trot.py, uncompiled, a short horizon and gait at 50 Hz):
the robot stays up and walks forward near its velocity reference, and the same check fails with a
controller whose model has every mass three times the plant's (so it catches a broken controller)."""

import pytest
from example_runner import example as load_example
from sim_robots import load

import casrbd
from casrbd.sim import scaled_masses

pytest.importorskip("mujoco")
SPEED = (0.1, 0.5)  # m/s: the mean forward speed after the first second, its reference 0.3


def trot(controller_model=None):
    load("solo12")  # skips without example-robot-data
    example = vars(load_example("mpc_trot"))
    result = example["run"](1.5, 50, 8, push=0.0, compiled=False, model=controller_model, swing=6)
    return example["metrics"](result)


def check(metrics):
    return not metrics["fell"] and SPEED[0] < metrics["mean_speed"] < SPEED[1]


def test_solo12_trots_forward_under_the_mpc():
    assert check(trot())


def test_a_wrong_model_in_the_trot_controller_fails_the_check():
    assert not check(trot(scaled_masses(casrbd.load_robot("solo12"), 3.0)))
