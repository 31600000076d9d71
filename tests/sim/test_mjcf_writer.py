"""casrbd.sim: the MuJoCo model written from a casrbd model against MuJoCo itself (its mass matrix, bias
forces and integration step) and the plant's pushes, contact forces and sensor noise against physics."""

import numpy as np
import pytest
from conftest import mujoco_full_m
from sim_robots import load

import casrbd
from casrbd.joints import JOINT_TYPES
from casrbd.loaders.mujoco_state import from_mujoco_force, to_mujoco_state, velocity_map
from casrbd.model import Body, Model
from casrbd.sim import Plant, Push, to_mjcf
from casrbd.spatial import SE3, Inertia
from casrbd.testing import rel_err

mujoco = pytest.importorskip("mujoco")
SOLO_FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")


def mujoco_of(model, **options):
    m = mujoco.MjModel.from_xml_string(to_mjcf(model, **options))
    return m, mujoco.MjData(m)


@pytest.mark.parametrize("name", ["arm7", "panda", "solo12"])
def test_mass_matrix_and_bias_are_mujocos(name):
    model = load(name)
    if name == "arm7":  # armature written as MuJoCo's
        model = model.with_armature(np.linspace(0.01, 0.07, model.nv))
    feet = SOLO_FEET if name == "solo12" else ()
    m, d = mujoco_of(model, feet=feet, ground=bool(feet))
    rng = np.random.default_rng(3)
    for _ in range(5):
        q, v = np.asarray(casrbd.random_configuration(model, rng)), rng.normal(size=model.nv)
        qpos, qvel, _ = to_mujoco_state(model, q, v)
        dT_v = to_mujoco_state(model, q, v, np.zeros(model.nv))[2]  # dT/dt v: qacc at a = 0
        d.qpos[:], d.qvel[:] = qpos, qvel
        mujoco.mj_forward(m, d)
        T, M_mj = velocity_map(model, q), mujoco_full_m(m, d)
        assert rel_err(casrbd.crba(model, q), T.T @ M_mj @ T) < 1e-9
        bias = from_mujoco_force(model, qpos, d.qfrc_bias + M_mj @ dT_v)
        assert rel_err(np.ravel(casrbd.nonlinear_effects(model, q, v)), bias) < 1e-9


def test_limits_actuators_and_sites_are_written():
    model = load("arm7")
    m, d = mujoco_of(model)
    assert m.nu == model.nv and list(m.actuator_gear[:, 0]) == [1.0] * model.nv
    np.testing.assert_array_equal(m.actuator_ctrlrange, np.c_[-model.effort_limit, model.effort_limit])
    np.testing.assert_array_equal(m.jnt_range, np.c_[model.lower, model.upper])
    q = np.asarray(casrbd.random_configuration(model, np.random.default_rng(1)))
    d.qpos[:] = q
    mujoco.mj_kinematics(m, d)
    site = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, "tool")
    tool = np.asarray(casrbd.frame_placement(model, q, "tool"))[:3, 3]
    np.testing.assert_allclose(d.site_xpos[site], tool, rtol=0, atol=1e-12)


def test_one_step_is_semi_implicit_euler_of_aba():
    model = load("arm7")
    plant = Plant(model, timestep=1e-3)
    rng = np.random.default_rng(0)
    q, v, tau = np.asarray(casrbd.random_configuration(model, rng)) * 0.5, rng.normal(size=7), rng.normal(size=7)
    record = plant.run(lambda t, q, v: tau, 1e-3, 1000, q, v)
    v1 = v + 1e-3 * np.ravel(casrbd.aba(model, q, v, tau))
    np.testing.assert_allclose(record.v[1], v1, rtol=0, atol=1e-9)
    np.testing.assert_allclose(record.q[1], q + 1e-3 * v1, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(record.tau, [tau])


def test_push_changes_the_momentum_by_its_impulse():
    model = load("solo12").with_gravity([0, 0, 0])
    plant = Plant(model, timestep=1e-5)
    impulse = np.array([2.0, -1.0, 0.5])
    q0 = np.r_[0, 0, 1, 0, 0, 0, 1, np.zeros(12)]
    push = Push(5e-5, "root_joint", impulse)
    record = plant.run(lambda t, q, v: np.zeros(12), 1e-4, 1e5, q0, pushes=[push])
    momentum = [np.ravel(casrbd.centroidal_momentum(model, q, v))[:3] for q, v in zip(record.q, record.v)]
    np.testing.assert_allclose(momentum[5], 0, atol=1e-12)
    # Euler steps conserve momentum to first order in the timestep, hence its small size
    np.testing.assert_allclose(momentum[-1], impulse, rtol=1e-3)


def test_standing_feet_carry_the_weight():
    model = load("solo12")
    q0 = np.r_[0, 0, 0, 0, 0, 0, 1, np.tile([0, 0.8, -1.6], 2), np.tile([0, -0.8, 1.6], 2)]
    radius = 0.02
    q0[2] = radius - min(np.asarray(casrbd.frame_placement(model, q0, f))[2, 3] for f in SOLO_FEET)
    plant = Plant(model, feet=SOLO_FEET, foot_radius=radius, ground=True)
    joints = q0[7:]

    def hold(t, q, v):  # joint PD around the standing posture
        return 50 * (joints - q[7:]) - 1.0 * v[6:]

    record = plant.run(lambda t, q, v: hold, 1.0, 100, q0)  # the law, evaluated at every step
    weight = model.mass * 9.81
    total = record.contact_forces[-100:].sum(axis=1).mean(axis=0)
    np.testing.assert_allclose(total, [0, 0, weight], atol=0.01 * weight)
    assert np.all(record.contact_forces[-1, :, 2] > 0.1 * weight / 4)


def test_sensor_noise_is_seeded_and_of_its_size():
    model, q0 = load("arm7"), np.zeros(7)
    plant = Plant(model)
    runs = []
    for seed in (0, 0, 1):
        measured = []

        def listen(t, q, v, measured=measured):
            measured.append((q, v))
            return np.zeros(7)

        record = plant.run(listen, 0.2, 500, q0, noise=(1e-3, 0.0), seed=seed)
        runs.append(np.array([q for q, _ in measured]) - record.q[::2][:-1])
        np.testing.assert_array_equal([v for _, v in measured], record.v[::2][:-1])
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])
    assert runs[0].shape == (100, 7) and 0.8e-3 < runs[0].std() < 1.2e-3


def test_bad_input_names_the_culprit():
    body = Inertia.from_com(1.0, np.zeros(3), np.eye(3))
    planar = Model("flat", [Body("slider", JOINT_TYPES["planar"](), -1, SE3.identity(), body)])
    with pytest.raises(ValueError, match="joint 'slider' is planar"):
        to_mjcf(planar)
    with pytest.raises(ValueError, match="foot frame 'toe'"):
        to_mjcf(load("arm7"), feet=("toe",))
    with pytest.raises(ValueError, match="rate 300"):
        Plant(load("arm7")).run(lambda t, q, v: np.zeros(7), 0.1, 300, np.zeros(7))
