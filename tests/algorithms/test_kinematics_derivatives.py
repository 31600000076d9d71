"""kinematics_derivatives: derivatives of a frame's spatial velocity and acceleration.

casrbd.kinematics_derivatives(model, q, v, a, frame) returns (dv/dq, dv/dv,
da/dq, da/dv, da/da) of the frame's spatial velocity and acceleration (no
gravity), in the frame's local axes, d/dq on the tangent space. References:

- Pinocchio: computeForwardKinematicsDerivatives(q, v, a) then
  getFrameVelocityDerivatives / getFrameAccelerationDerivatives in pin.LOCAL
  (Pinocchio's data.a excludes gravity too), for every frame (skipped without
  Pinocchio);
- casadi AD of the velocity written as J(q) v with J = casrbd.frame_jacobian
  (local), and of the acceleration J(q) a + (d/dt J) v, along a first-order
  retraction q (+) delta written here (not casrbd.integrate);
- da/da = dv/dv = J(q) and the velocity derivatives repeated in the acceleration.
"""

import casadi as ca
import numpy as np
import pytest
from conftest import get_model, motion_states

import casrbd
from casrbd.testing import random_state, rel_err

TOL = 1e-10
N_STATES = 10
ROBOTS = ("ur5", "solo12", "chain", "random", "double_pendulum_continuous")
OUTPUTS = ("dv_dq", "dv_dv", "da_dq", "da_dv", "da_da")


SALT = 2000  # this module's random states


@pytest.fixture(scope="module", params=ROBOTS)
def case(request):
    return motion_states(request.param, N_STATES, SALT)


def test_match_pinocchio_local(case, oracle, pin):
    m, o = case.model, oracle
    pm, pd = o.pmodel, o.data
    worst = dict.fromkeys(OUTPUTS, (0.0, None))
    for k, (q, v, a) in enumerate(case.states):
        pin.computeForwardKinematicsDerivatives(pm, pd, o.q(q), o.v(v), o.v(a))
        for i, fid in enumerate(o.frame_ids):
            got = casrbd.kinematics_derivatives(m, q, v, a, i)
            v_dq, v_dv = (np.array(x) for x in pin.getFrameVelocityDerivatives(pm, pd, fid, pin.LOCAL))
            v_dq2, a_dq, a_dv, a_da = (np.array(x) for x in pin.getFrameAccelerationDerivatives(pm, pd, fid, pin.LOCAL))
            assert np.array_equal(v_dq, v_dq2)
            refs = [o.from_jacobian(x) for x in (v_dq, v_dv, a_dq, a_dv, a_da)]
            for n, x, y in zip(OUTPUTS, got, refs):
                assert x.shape == (6, m.nv)
                err = rel_err(x, y)
                if err >= worst[n][0]:
                    worst[n] = (err, (k, m.frames[i].name))
    for n, (err, where) in worst.items():
        assert err < TOL, f"{case.name} {n}: relative error {err:.3g} vs Pinocchio at (state, frame) {where}"


def test_velocity_derivatives_against_pinocchio_velocity_only(case, oracle, pin):
    """computeForwardKinematicsDerivatives without a: the velocity derivatives do not depend on a."""
    m, o = case.model, oracle
    pm, pd = o.pmodel, o.data
    for q, v, a in case.states[:3]:
        pin.computeForwardKinematicsDerivatives(pm, pd, o.q(q), o.v(v), np.zeros(m.nv))
        for i, fid in enumerate(o.frame_ids):
            got = casrbd.kinematics_derivatives(m, q, v, a, i)
            v_dq, v_dv = (o.from_jacobian(np.array(x)) for x in pin.getFrameVelocityDerivatives(pm, pd, fid, pin.LOCAL))
            assert rel_err(got[0], v_dq) < TOL and rel_err(got[1], v_dv) < TOL


# ---------------------------------------------------------------- casadi AD reference


def _quaternion_product(a, b):
    return ca.vertcat(a[3] * b[:3] + b[3] * a[:3] + ca.cross(a[:3], b[:3]), a[3] * b[3] - ca.dot(a[:3], b[:3]))


def _rotation(quat):
    quat = quat / ca.norm_2(quat)
    x, y, z, w = ca.vertsplit(quat)
    return ca.blockcat(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def retraction(model, q, d):
    """A map with the value and first derivative of q (+) d at d = 0, at every q (the dynamics
    normalise quaternions and (cos, sin), so their norm drifting at second order is harmless):
    the velocities are local (body-frame) as in casrbd and Pinocchio."""
    parts = []
    for i, joint in enumerate(model.joints):
        qi, di = q[model.q_slice(i)], d[model.v_slice(i)]
        if joint.type == "spherical":
            parts.append(_quaternion_product(qi, ca.vertcat(di / 2, 0)) + qi)
        elif joint.type == "floating":
            parts += [
                qi[:3] + ca.mtimes(_rotation(qi[3:]), di[:3]),
                qi[3:] + _quaternion_product(qi[3:], ca.vertcat(di[3:] / 2, 0)),
            ]
        elif joint.type == "planar":
            c, s = qi[2], qi[3]
            r = ca.sqrt(c * c + s * s)
            parts.append(
                ca.vertcat(
                    qi[0] + (c * di[0] - s * di[1]) / r,
                    qi[1] + (s * di[0] + c * di[1]) / r,
                    c - s * di[2],
                    s + c * di[2],
                )
            )
        else:
            parts.append(qi + di)
    return ca.vertcat(*parts)


def ad_reference(model, frame):
    """Function (q, v, a) -> (dv/dq, dv/dv, da/dq, da/dv, da/da) by casadi AD of
    v_f = J(q) v and a_f = J(q) a + d/de [J(q (+) e v)] v, with J casrbd's local frame Jacobian."""
    q, v, a = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv), ca.SX.sym("a", model.nv)
    d, e = ca.SX.sym("d", model.nv), ca.SX.sym("e")

    def jac(qq):
        return casrbd.frame_jacobian(model, qq, frame, "local")

    qd = retraction(model, q, d)  # q (+) d
    vel = ca.mtimes(jac(qd), v)
    J_along = ca.mtimes(jac(retraction(model, qd, e * v)), v)
    acc = ca.mtimes(jac(qd), a) + ca.jacobian(J_along, e)
    outs = [ca.jacobian(vel, d), ca.jacobian(vel, v), ca.jacobian(acc, d), ca.jacobian(acc, v), ca.jacobian(acc, a)]
    outs = [ca.substitute(ca.substitute(o, e, 0), d, ca.DM.zeros(model.nv)) for o in outs]
    return ca.Function("ad_kinematics", [q, v, a], outs)


def test_match_casadi_ad_of_jacobian_times_velocity(case):
    m = case.model
    for frame in range(len(m.frames)):
        ref = ad_reference(m, frame)
        for q, v, a in case.states[:3]:
            got = casrbd.kinematics_derivatives(m, q, v, a, frame)
            for n, x, y in zip(OUTPUTS, got, ref(q, v, a)):
                err = rel_err(x, y.full())
                assert err < TOL, f"{case.name} frame {m.frames[frame].name} {n}: {err:.3g} vs AD"


def test_retraction_is_first_order_integrate(case):
    """The reference's retraction agrees with casrbd.integrate to first order (a check on the
    reference, by finite differences: O(h^2) apart, unlike a wrong velocity convention)."""
    m = case.model
    q_sym, d_sym = ca.SX.sym("q", m.nq), ca.SX.sym("d", m.nv)
    R = ca.Function("R", [q_sym, d_sym], [retraction(m, q_sym, d_sym)])
    rng = np.random.default_rng(3)
    h = 1e-4
    for q, _, _ in case.states[:2]:
        d = h * rng.normal(size=m.nv)
        assert rel_err(casrbd.difference(m, q, R(q, d).full().ravel()), d) < 1e-6


# ---------------------------------------------------------------- identities


def test_acceleration_and_velocity_jacobians_are_the_frame_jacobian(case):
    """da/da = dv/dv = J(q) (local); dv/dv does not depend on v or a, nor dv/dq on a."""
    m = case.model
    for q, v, a in case.states[:3]:
        for i in range(len(m.frames)):
            dv_dq, dv_dv, _, _, da_da = casrbd.kinematics_derivatives(m, q, v, a, i)
            J = casrbd.frame_jacobian(m, q, i, "local")
            assert rel_err(dv_dv, J) < 1e-12
            assert rel_err(da_da, J) < 1e-12
            other = casrbd.kinematics_derivatives(m, q, 2 * v, -a, i)
            assert rel_err(other[0], 2 * dv_dq) < 1e-12
            assert rel_err(other[1], dv_dv) < 1e-12


def test_frame_by_name_or_index(case):
    m = case.model
    q, v, a = case.states[0]
    for i, frame in enumerate(m.frames):
        for x, y in zip(
            casrbd.kinematics_derivatives(m, q, v, a, frame.name), casrbd.kinematics_derivatives(m, q, v, a, i)
        ):
            assert np.array_equal(x, y)


def test_world_frames_do_not_move():
    m = get_model("ur5")
    world = [i for i, f in enumerate(m.frames) if f.joint < 0]
    assert world
    q, v, a, _ = random_state(m, np.random.default_rng(0))
    for i in world:
        for x in casrbd.kinematics_derivatives(m, q, v, a, i):
            assert x.shape == (6, m.nv) and np.all(x == 0)


def test_gravity_does_not_enter():
    """A model with another gravity gives the same kinematics derivatives."""
    ref = get_model("random")
    m = ref.with_gravity([3.0, -1.0, 20.0])
    q, v, a, _ = random_state(m, np.random.default_rng(1))
    for frame in ("tip11", "body4"):
        for x, y in zip(
            casrbd.kinematics_derivatives(m, q, v, a, frame), casrbd.kinematics_derivatives(ref, q, v, a, frame)
        ):
            assert np.array_equal(x, y)


def test_unknown_frame_raises():
    m = get_model("ur5")
    q, v, a, _ = random_state(m, np.random.default_rng(0))
    with pytest.raises(KeyError, match="no_such_frame"):
        casrbd.kinematics_derivatives(m, q, v, a, "no_such_frame")
    with pytest.raises(IndexError):
        casrbd.kinematics_derivatives(m, q, v, a, len(m.frames))
