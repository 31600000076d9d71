"""Identities the dynamics must satisfy, with no reference implementation needed."""

import casadi as ca
import numpy as np
import pytest
from conftest import ALL_ROBOTS, robot_states, scale_normalized
from hypothesis import given, settings
from hypothesis import strategies as st

import casrbd
from casrbd.models import ALL_JOINT_TYPES, random_tree
from casrbd.testing import random_state, rel_err

N_STATES = 10
TOL = 1e-10


@pytest.fixture(scope="module", params=ALL_ROBOTS)
def case(request):
    return robot_states(request.param, N_STATES, 1)


def skew(x):
    return np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])


def spatial_inertia(Y):
    """6 x 6 matrix of an inertia (m, h = m c, I about the origin) acting on [v; w]."""
    return np.block([[Y.mass * np.eye(3), -skew(Y.h)], [skew(Y.h), np.asarray(Y.I)]])


def body_frames(model):
    """For each joint, the index of a frame attached to it with identity placement."""
    out = []
    for i in range(model.njoints):
        out.append(
            next(
                k
                for k, f in enumerate(model.frames)
                if f.joint == i
                and np.array_equal(f.placement.R, np.eye(3))
                and np.array_equal(f.placement.p, np.zeros(3))
            )
        )
    return out


def test_mass_matrix_symmetric_positive_definite(case):
    for q, *_ in case.states:
        M = casrbd.crba(case.model, q)
        assert M.shape == (case.model.nv, case.model.nv)
        assert rel_err(M, M.T) < 1e-14
        assert np.linalg.eigvalsh(M)[0] > 0


@pytest.mark.parametrize("with_f_ext", [False, True])
def test_rnea_inverts_aba(case, with_f_ext):
    m = case.model
    for q, v, tau, F in case.states:
        F = F if with_f_ext else None
        a = casrbd.aba(m, q, v, tau, F)
        assert rel_err(casrbd.rnea(m, q, v, a, F), tau) < TOL


def test_minverse_inverts_crba(case):
    for q, *_ in case.states:
        M, Minv = casrbd.crba(case.model, q), casrbd.minverse(case.model, q)
        assert rel_err(Minv, Minv.T) < 1e-14
        assert rel_err(Minv @ M, np.eye(case.model.nv)) < TOL


def test_rnea_splits_into_inertia_bias_and_gravity(case):
    m = case.model
    zero = np.zeros(m.nv)
    for q, v, a, _ in case.states:
        nle, g, M = casrbd.nonlinear_effects(m, q, v), casrbd.generalized_gravity(m, q), casrbd.crba(m, q)
        assert rel_err(casrbd.rnea(m, q, v, zero), nle) < TOL
        assert rel_err(casrbd.rnea(m, q, zero, zero), g) < TOL
        assert rel_err(casrbd.rnea(m, q, v, a), M @ a + nle) < TOL
        assert rel_err(casrbd.aba(m, q, v, a), casrbd.minverse(m, q) @ (a - nle)) < 1e-8


def test_external_forces_act_through_local_jacobians(case):
    """rnea(q, v, a, f) = rnea(q, v, a) - sum_i J_i^T f_i, J_i the LOCAL Jacobian of joint i's body frame."""
    m = case.model
    frames = body_frames(m)
    for q, v, a, F in case.states:
        expected = casrbd.rnea(m, q, v, a)
        for f, k in zip(F.T, frames):
            expected = expected - casrbd.frame_jacobian(m, q, k, "local").T @ f
        assert rel_err(casrbd.rnea(m, q, v, a, F), expected) < TOL


def test_mass_matrix_is_jacobian_of_rnea(case):
    m = case.model
    a = ca.SX.sym("a", m.nv)
    for q, v, *_ in case.states[:3]:
        dtau_da = ca.Function("dtau_da", [a], [ca.jacobian(casrbd.rnea(m, q, v, a), a)])
        assert rel_err(dtau_da(np.zeros(m.nv)).full(), casrbd.crba(m, q)) < TOL


def _quaternion_product(a, b):
    return ca.vertcat(a[3] * b[:3] + b[3] * a[:3] + ca.cross(a[:3], b[:3]), a[3] * b[3] - ca.dot(a[:3], b[:3]))


def _rotation(quat):
    x, y, z, w = ca.vertsplit(quat)
    return ca.blockcat(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def first_order_retraction(model, q, v):
    """A map with the value and first derivative of q (+) v at v = 0, written here so that
    the gravity check does not depend on casrbd.integrate (quaternions are left unnormalised:
    casrbd normalises them, and the norm is 1 to first order)."""
    parts = []
    for i, joint in enumerate(model.joints):
        qi, vi = q[model.q_slice(i)], v[model.v_slice(i)]
        if joint.type == "spherical":
            parts.append(_quaternion_product(qi, ca.vertcat(vi / 2, 1)))
        elif joint.type == "floating":
            parts += [
                qi[:3] + ca.mtimes(_rotation(qi[3:]), vi[:3]),
                _quaternion_product(qi[3:], ca.vertcat(vi[3:] / 2, 1)),
            ]
        elif joint.type == "planar":
            c, s = qi[2], qi[3]
            parts.append(
                ca.vertcat(qi[0] + c * vi[0] - s * vi[1], qi[1] + s * vi[0] + c * vi[1], c - s * vi[2], s + c * vi[2])
            )
        else:
            parts.append(qi + vi)
    return ca.vertcat(*parts)


def potential_energy_gradient(model):
    """Function q -> dU/dv of U(q (+) v) at v = 0, U = -g . (sum of m_i * world com_i)."""
    q, v = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv)
    oMi = casrbd.forward_kinematics(model, first_order_retraction(model, q, v))
    first_moment = sum(M[:3, 3] * Y.mass + ca.mtimes(M[:3, :3], Y.h.reshape(3, 1)) for M, Y in zip(oMi, model.inertias))
    U = -ca.dot(ca.DM(model.gravity), first_moment)
    return ca.Function("dU", [q, v], [ca.jacobian(U, v).T])


def test_gravity_is_gradient_of_potential_energy(case):
    dU = potential_energy_gradient(case.model)
    zero = np.zeros(case.model.nv)
    for q, *_ in case.states[:5]:
        assert rel_err(casrbd.generalized_gravity(case.model, q), dU(q, zero).full().ravel()) < TOL


def test_kinetic_energy_sums_over_bodies(case):
    m = case.model
    frames = body_frames(m)
    for q, v, *_ in case.states:
        body_energies = 0.0
        for Y, k in zip(m.inertias, frames):
            vi = casrbd.frame_jacobian(m, q, k, "local") @ v
            body_energies += 0.5 * vi @ spatial_inertia(Y) @ vi
        assert rel_err(0.5 * v @ casrbd.crba(m, q) @ v, body_energies) < TOL


def test_normalization_invariance(case):
    m = case.model
    if not any(j.type in ("spherical", "planar", "floating") for j in m.joints):
        pytest.skip(f"{case.name} has no quaternion or (cos, sin) joint")
    for q, v, a, F in case.states:
        q2 = scale_normalized(m, q, 3.7)
        assert np.max(np.abs(q2 - q)) > 0.1
        assert rel_err(casrbd.rnea(m, q2, v, a, F), casrbd.rnea(m, q, v, a, F)) < TOL
        assert rel_err(casrbd.aba(m, q2, v, a, F), casrbd.aba(m, q, v, a, F)) < TOL
        assert rel_err(casrbd.crba(m, q2), casrbd.crba(m, q)) < TOL
        assert rel_err(casrbd.minverse(m, q2), casrbd.minverse(m, q)) < TOL


@settings(max_examples=25, deadline=None)
@given(
    n_bodies=st.integers(2, 7),
    branching=st.sampled_from([1, 2, 3, None]),
    seed=st.integers(0, 2**16),
    shift=st.integers(0, len(ALL_JOINT_TYPES) - 1),
)
def test_random_trees_aba_rnea_crba_consistent(n_bodies, branching, seed, shift):
    """Trees of any shape; from 2 bodies on (1-dof outputs: test_backends.py's shape tests)."""
    types = ALL_JOINT_TYPES[shift:] + ALL_JOINT_TYPES[:shift]
    m = random_tree(n_bodies, types, branching=branching, seed=seed)
    q, v, tau, F = random_state(m, np.random.default_rng(seed))
    a = casrbd.aba(m, q, v, tau, F)
    assert rel_err(casrbd.rnea(m, q, v, a, F), tau) < TOL
    M = casrbd.crba(m, q)
    assert rel_err(M @ a, tau - casrbd.rnea(m, q, v, np.zeros(m.nv), F)) < TOL
    assert rel_err(casrbd.minverse(m, q) @ M, np.eye(m.nv)) < 1e-9
