"""Shared fixtures and robots.

The error measure and the random states are casrbd.testing's: ``rel_err(x, ref)``
= max |x - ref| / max(1, max |ref|), ``random_state(model, rng)`` = (q, v, a or
tau, f_ext), with f_ext 6 x njoints, and ``central_differences``.

Robots are named as in ``casrbd.models.load_robot`` ("arm7", "panda", ...)
plus three synthetic trees whose joint types cycle over every type with a
constant motion subspace (revolute, helical, prismatic, spherical, planar,
floating; the universal joint has its own tests in test_joints.py):

- ``chain``:  a serial chain of 10 bodies;
- ``binary``: a complete binary tree of 11 bodies;
- ``random``: 12 bodies with random parents and a free-flyer root.

``get_model(name)`` returns a model shared by all tests (models are immutable,
so sharing it and its cached Functions is safe); ``fresh_model(name)`` builds a
new one. Robots from example-robot-data are skipped when it is not installed.

Pinocchio is an optional reference: a test that compares against it takes the
``pin`` fixture, which skips that test alone when Pinocchio is absent, and
imports tests/oracle.py only after it.
"""

import functools
import warnings
from typing import NamedTuple

import numpy as np
import pytest

from casrbd.models import example_robot_data_dir, load_robot, random_tree
from casrbd.testing import random_state, rel_err

# the constant-subspace joint types, in the order the synthetic trees cycle over them
SYNTHETIC_TYPES = ("revolute", "helical", "prismatic", "spherical", "planar", "floating")
SYNTHETIC = {
    "chain": {"n_bodies": 10, "joint_types": SYNTHETIC_TYPES, "branching": 1, "seed": 11},
    "binary": {"n_bodies": 11, "joint_types": SYNTHETIC_TYPES, "branching": 2, "seed": 12},
    "random": {
        "n_bodies": 12,
        "branching": None,
        "seed": 13,
        "joint_types": ("floating", "spherical", "revolute", "planar", "prismatic", "helical"),
    },
}
SYNTHETIC_ROBOTS = tuple(SYNTHETIC)
SHIPPED_ROBOTS = ("arm7",)
EXAMPLE_ROBOTS = ("panda", "ur5", "double_pendulum", "double_pendulum_continuous", "solo12", "hyq", "talos_reduced")
ALL_ROBOTS = SYNTHETIC_ROBOTS + SHIPPED_ROBOTS + EXAMPLE_ROBOTS


@pytest.fixture(scope="session")
def pin():
    """Pinocchio, the reference implementation; the test that asks for it is skipped without it."""
    return pytest.importorskip("pinocchio")


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


@functools.cache
def _shared_model(name):
    return fresh_model(name)


def get_model(name):
    """The shared model of robot ``name`` (skips if its data is not installed)."""
    requires_example_robot_data(name)
    return _shared_model(name)


def normalized_slices(model):
    """(joint index, slice of q) of every quaternion and planar (cos, sin) pair."""
    out = []
    for i, joint in enumerate(model.joints):
        start = model.idx_q[i]
        if joint.normalized.stop > joint.normalized.start:
            out.append((i, slice(start + joint.normalized.start, start + joint.normalized.stop)))
    return out


def scale_normalized(model, q, factor):
    """q with every quaternion and planar (cos, sin) pair multiplied by ``factor``."""
    q = np.array(q, dtype=float)
    for _, s in normalized_slices(model):
        q[s] *= factor
    return q


class RobotStates(NamedTuple):
    name: str
    model: object
    states: list  # (q, v, a or tau, f_ext (6 x njoints)) tuples


@functools.cache
def robot_states(name, n, salt):
    """The shared model of robot ``name`` and n random states, reproducible from the name and ``salt``
    (each test module its own salt, so that modules sample different states)."""
    model = get_model(name)
    rng = np.random.default_rng(sum(map(ord, name)) + salt)
    return RobotStates(name, model, [random_state(model, rng) for _ in range(n)])


def motion_states(name, n, salt):
    """``robot_states`` with (q, v, a) states, for the kinematic and centroidal tests."""
    name, model, states = robot_states(name, n, salt)
    return RobotStates(name, model, [s[:3] for s in states])


@pytest.fixture(scope="module")
def oracle(case, pin):
    """Pinocchio's model of a module's ``case`` robot (tests/oracle.py); modules whose robots come
    otherwise define their own."""
    from oracle import Oracle

    return Oracle.from_robot(case.name, case.model)


def called(fun):
    """Names of the Functions a Function's graph calls, recursively."""
    return {g.name() for g in fun.find_functions()}


def assert_exact_hessian_is_analytical(hess_l, iterates, name, tol):
    """IPOPT's exact Hessian of two solves of one problem, {"analytical": ..., "ad": ...}: the first
    calls the analytical contracted Hessian jac_adj1_<name> and the second does not, both take the
    same iterates, and the two nlp_hess_l agree at a random point."""
    assert "jac_adj1_" + name in called(hess_l["analytical"])
    assert "jac_adj1_" + name not in called(hess_l["ad"])
    assert len(iterates["analytical"]) == len(iterates["ad"])
    for a, b in zip(iterates["analytical"], iterates["ad"]):
        assert rel_err(a, b) < 1e-8
    rng = np.random.default_rng(0)
    x = rng.normal(size=hess_l["ad"].size1_in(0))
    lam_g = rng.normal(size=hess_l["ad"].size1_in(3))
    values = [np.array(hess_l[h](x, [], 1.0, lam_g)) for h in ("analytical", "ad")]
    assert rel_err(values[0], values[1]) < tol


def mujoco_full_m(m, d):
    """MuJoCo's dense mass matrix of (m, d) after mj_forward or the like (the oracle of the MJCF tests)."""
    import mujoco

    M = np.zeros((m.nv, m.nv))
    if hasattr(d, "qM"):
        mujoco.mj_fullM(m, M, d.qM)  # mujoco 3
    else:
        mujoco.mj_fullM(m, d, M)  # mujoco 4
    return M
