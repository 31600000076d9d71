"""Shared helpers and robot fixtures.

``rel_err(x, y)``: max |x - y| / max(1, max |y|), the error measure of every
comparison (y is the reference).

Robots are named as in ``casrbd.models.load_robot`` ("arm7", "panda", ...)
plus three synthetic trees that use every joint type:

- ``chain``:  a serial chain of 10 bodies, joint types cycling over all six;
- ``binary``: a complete binary tree of 11 bodies, all six types;
- ``random``: 12 bodies with random parents and a free-flyer root.

``get_model(name)`` returns a model shared by all tests (do not mutate it:
its cached Functions are shared too); ``fresh_model(name)`` a new one.
Robots from example-robot-data are skipped when it is not installed.
"""
import functools
import warnings

import numpy as np
import pytest

import casrbd
from casrbd.models import ALL_JOINT_TYPES, example_robot_data_dir, load_robot, random_tree

SYNTHETIC = {
    "chain": dict(n_bodies=10, joint_types=ALL_JOINT_TYPES, branching=1, seed=11),
    "binary": dict(n_bodies=11, joint_types=ALL_JOINT_TYPES, branching=2, seed=12),
    "random": dict(n_bodies=12, branching=None, seed=13,
                   joint_types=("floating", "spherical", "revolute", "planar", "prismatic", "continuous")),
}
SYNTHETIC_ROBOTS = tuple(SYNTHETIC)
SHIPPED_ROBOTS = ("arm7",)
EXAMPLE_ROBOTS = ("panda", "ur5", "double_pendulum", "double_pendulum_continuous", "solo12", "hyq",
                  "talos_reduced")
ALL_ROBOTS = SYNTHETIC_ROBOTS + SHIPPED_ROBOTS + EXAMPLE_ROBOTS


def rel_err(x, y):
    """max |x - y| / max(1, max |y|) of two arrays of the same shape (y the reference)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    assert x.shape == y.shape, f"shape {x.shape} != reference shape {y.shape}"
    if y.size == 0:
        return 0.0
    return float(np.max(np.abs(x - y)) / max(1.0, np.max(np.abs(y))))


def requires_example_robot_data(name):
    if name in EXAMPLE_ROBOTS and example_robot_data_dir() is None:
        pytest.skip("example-robot-data is not installed")


def fresh_model(name):
    """A new model of robot ``name`` (synthetic tree name or load_robot name)."""
    if name in SYNTHETIC:
        return random_tree(**SYNTHETIC[name], name=name)
    requires_example_robot_data(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # panda's mimic fingers
        return load_robot(name)


@functools.lru_cache(maxsize=None)
def _shared_model(name):
    return fresh_model(name)


def get_model(name):
    """The shared model of robot ``name`` (skips if its data is not installed)."""
    requires_example_robot_data(name)
    return _shared_model(name)


def random_state(model, rng):
    """(q, v, a_or_tau, f_ext): a random configuration, normal velocities/accelerations
    and an njoints x 6 array of normal external forces."""
    q = np.asarray(casrbd.random_configuration(model, rng))
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv), rng.normal(size=(model.njoints, 6))


@pytest.fixture(scope="module", params=ALL_ROBOTS)
def robot(request):
    """Every robot: the synthetic trees, arm7 and the example-robot-data robots."""
    return get_model(request.param)


@pytest.fixture(scope="module", params=SYNTHETIC_ROBOTS)
def synthetic_robot(request):
    """The synthetic trees with every joint type."""
    return get_model(request.param)


@pytest.fixture(scope="module", params=SHIPPED_ROBOTS + EXAMPLE_ROBOTS)
def urdf_robot(request):
    """The URDF robots (arm7 and the example-robot-data robots)."""
    return get_model(request.param)


def scale_normalized(model, q, factor):
    """q with every quaternion and planar (cos, sin) pair multiplied by ``factor``."""
    q = np.array(q, dtype=float)
    for joint in model.joints:
        q[joint.idx_q + joint.normalized.start:joint.idx_q + joint.normalized.stop] *= factor
    return q
