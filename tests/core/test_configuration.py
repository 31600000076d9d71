"""Configuration-space operations: integrate, difference, neutral, random_configuration.

Against Pinocchio's integrate, difference, neutral and URDF limits (those tests take the
``pin`` fixture), and against identities and casadi's AD (run without Pinocchio)."""

import casadi as ca
import numpy as np
import pytest
from conftest import get_model, normalized_slices, scale_normalized

import casrbd
from casrbd.testing import central_differences, rel_err

ROBOTS = ("chain", "binary", "random", "hyq", "double_pendulum_continuous")
TOL = 1e-10
N = 20
QUATERNION_JOINTS = ("spherical", "floating")


@pytest.fixture(scope="module", params=ROBOTS)
def robot_name(request):
    return request.param


@pytest.fixture(scope="module")
def model(robot_name):
    return get_model(robot_name)


@pytest.fixture(scope="module")
def oracle(robot_name, model, pin):
    """Pinocchio's model of the robot."""
    from oracle import Oracle

    return Oracle.from_robot(robot_name, model)


def rotation_slices(model):
    """(joint, slice of v) of every joint's rotation vector (spherical, free-flyer) or angle (planar)."""
    out = []
    for i, j in enumerate(model.joints):
        if j.type in QUATERNION_JOINTS or j.type == "planar":
            n = 1 if j.type == "planar" else 3
            out.append((j, slice(model.idx_v[i] + j.nv - n, model.idx_v[i] + j.nv)))
    return out


def below_pi(model, v, max_angle=3.0):
    """v with every joint's rotation angle scaled down to at most max_angle (< pi)."""
    v = np.array(v, dtype=float)
    for _, s in rotation_slices(model):
        n = np.linalg.norm(v[s])
        if n > max_angle:
            v[s] *= max_angle / n
    return v


def canonical(model, q):
    """q with every quaternion in the hemisphere w >= 0 (q and -q are the same rotation)."""
    q = np.array(q, dtype=float)
    for i, s in normalized_slices(model):
        if model.joints[i].type in QUATERNION_JOINTS and q[s][3] < 0:
            q[s] = -q[s]
    return q


def assert_unit(model, q):
    for i, s in normalized_slices(model):
        assert abs(np.linalg.norm(q[s]) - 1) < 1e-12, (model.names[i], q[s])


def wrapped(oracle, q):
    """q with the angles that Pinocchio stores as (cos, sin) (URDF continuous joints) in (-pi, pi]."""
    return oracle.from_q(oracle.q(q))


def difference_error(oracle, dq, reference):
    """rel_err, with the angle differences of (cos, sin) joints compared modulo 2 pi: casrbd's
    continuous joint is an angle on the real line, Pinocchio's a point of the circle."""
    d = np.array(dq, dtype=float) - reference
    d[oracle.cos_sin_v] = (d[oracle.cos_sin_v] + np.pi) % (2 * np.pi) - np.pi
    return float(np.max(np.abs(d)) / max(1.0, np.max(np.abs(reference))))


def pin_integrate(pin, oracle, q, v):
    return oracle.from_q(pin.integrate(oracle.pmodel, oracle.q(q), oracle.v(v)))


def pin_difference(pin, oracle, q0, q1):
    return oracle.from_v(pin.difference(oracle.pmodel, oracle.q(q0), oracle.q(q1)))


@pytest.mark.parametrize("scale", [0.0, 1e-12, 1e-10, 1e-7, 1e-5, 1e-3, 0.1, 1.0])
def test_integrate_matches_pinocchio(model, oracle, pin, scale):
    """Rotations below pi: the same numbers, quaternion signs included."""
    rng = np.random.default_rng(1)
    for _ in range(N):
        q = casrbd.random_configuration(model, rng)
        v = below_pi(model, scale * rng.normal(size=model.nv))
        q1 = casrbd.integrate(model, q, v)
        assert rel_err(wrapped(oracle, q1), pin_integrate(pin, oracle, q, v)) < TOL
        assert_unit(model, q1)


@pytest.mark.parametrize("scale", [3.0, 10.0, 100.0])
def test_integrate_large_velocities_matches_pinocchio(model, oracle, pin, scale):
    """Any rotation: the same configuration (Pinocchio keeps the result's quaternion in the
    hemisphere of q's, casrbd does not: compared up to the quaternions' sign)."""
    rng = np.random.default_rng(2)
    for _ in range(N):
        q = casrbd.random_configuration(model, rng)
        v = scale * rng.normal(size=model.nv)
        q1 = casrbd.integrate(model, q, v)
        assert rel_err(canonical(model, wrapped(oracle, q1)), canonical(model, pin_integrate(pin, oracle, q, v))) < 1e-9
        assert_unit(model, q1)


@pytest.mark.parametrize("scale", [None, 0.0, 1e-10, 1e-6, 1e-3, 1.0])
def test_difference_matches_pinocchio(model, oracle, pin, scale):
    """q1 random (scale None) or q1 = q0 (+) scale * v, with quaternions of either sign.

    Below 1e-8 the reference is v itself: Pinocchio's planar difference returns an angle of 0
    for angles of order 1e-10 (seen at 2e-10), which the exact value (mpmath) does not."""
    rng = np.random.default_rng(3)
    for k in range(N):
        q0 = casrbd.random_configuration(model, rng)
        if scale is None:
            q1 = casrbd.random_configuration(model, rng)
        else:
            v = below_pi(model, scale * rng.normal(size=model.nv))
            q1 = pin_integrate(pin, oracle, q0, v)
        if k % 2:  # the other quaternion of the same rotations
            for i, s in normalized_slices(model):
                if model.joints[i].type in QUATERNION_JOINTS:
                    q1[s] *= -1
        reference = v if scale is not None and scale < 1e-8 else pin_difference(pin, oracle, q0, q1)
        assert difference_error(oracle, casrbd.difference(model, q0, q1), reference) < TOL


@pytest.mark.parametrize("scale", [1e-10, 1e-4, 0.5, 3.0])
def test_difference_inverts_integrate(model, scale):
    rng = np.random.default_rng(4)
    for _ in range(N):
        q = casrbd.random_configuration(model, rng)
        v = below_pi(model, scale * rng.normal(size=model.nv))
        assert rel_err(casrbd.difference(model, q, casrbd.integrate(model, q, v)), v) < 1e-9
        q1 = casrbd.random_configuration(model, rng)
        q1_again = casrbd.integrate(model, q, casrbd.difference(model, q, q1))
        assert rel_err(canonical(model, q1_again), canonical(model, q1)) < 1e-9


def test_integrate_difference_normalize(model):
    """Quaternions and (cos, sin) of any norm are the same configuration."""
    rng = np.random.default_rng(5)
    for _ in range(N):
        q0, q1 = casrbd.random_configuration(model, rng), casrbd.random_configuration(model, rng)
        v = rng.normal(size=model.nv)
        scaled = [scale_normalized(model, q0, 3.7), scale_normalized(model, q1, 0.25)]
        assert rel_err(casrbd.integrate(model, scaled[0], v), casrbd.integrate(model, q0, v)) < TOL
        assert rel_err(casrbd.difference(model, *scaled), casrbd.difference(model, q0, q1)) < TOL


def nonfinite_columns(model, J):
    """{joint type: velocity indices} of the columns of J with NaN or inf entries."""
    out = {}
    for k in np.flatnonzero(~np.all(np.isfinite(J), axis=0)):
        i = next(i for i in range(model.njoints) if model.idx_v[i] <= k < model.idx_v[i] + model.joints[i].nv)
        out.setdefault(model.joints[i].type, []).append(int(k))
    return out


@pytest.mark.parametrize("at", ["zero", "small", "moderate"])
def test_derivative_of_difference_of_integrate_is_identity(model, at):
    """d/dv difference(q, q (+) v) = I for rotations below pi, v = 0 included (AD through both)."""
    rng = np.random.default_rng(6)
    q = ca.SX.sym("q", model.nq)
    v = ca.SX.sym("v", model.nv)
    J = ca.Function("J", [q, v], [ca.jacobian(casrbd.difference(model, q, casrbd.integrate(model, q, v)), v)])
    for _ in range(5):
        q0 = casrbd.random_configuration(model, rng)
        v0 = {"zero": 0.0, "small": 1e-6, "moderate": 0.5}[at] * below_pi(model, rng.normal(size=model.nv))
        Jv = J(q0, v0).full()
        assert rel_err(Jv, np.eye(model.nv)) < 1e-8, f"non-finite columns {nonfinite_columns(model, Jv)}"


def test_derivative_of_integrate_at_zero_velocity(model):
    """The AD Jacobian of q (+) v at v = 0 equals central differences of the numeric integrate."""
    rng = np.random.default_rng(7)
    q = ca.SX.sym("q", model.nq)
    v = ca.SX.sym("v", model.nv)
    J = ca.Function("J", [q, v], [ca.jacobian(casrbd.integrate(model, q, v), v)])
    for _ in range(5):
        q0 = casrbd.random_configuration(model, rng)
        (fd,) = central_differences(
            model, lambda q, v: casrbd.integrate(model, q, v), q0, np.zeros(model.nv), h=1e-5, tangent=(), vectors=(1,)
        )
        J0 = J(q0, np.zeros(model.nv)).full()
        assert rel_err(J0, fd) < 1e-8, f"non-finite columns {nonfinite_columns(model, J0)}"


def test_neutral_matches_pinocchio(model, oracle, pin):
    q = casrbd.neutral(model)
    assert isinstance(q, np.ndarray) and q.shape == (model.nq,)
    assert rel_err(oracle.q(q), pin.neutral(oracle.pmodel)) == 0


def test_limits_match_pinocchio(model, oracle):
    """The position limits of bounded one-dof joints are those of Pinocchio's parse of the URDF."""
    if not oracle.from_urdf_parser:
        pytest.skip("a synthetic tree: its limits have no other source")
    pm = oracle.pmodel
    bounded = [i for i, j in enumerate(model.joints) if j.nq == 1 and np.isfinite(model.lower[model.idx_q[i]])]
    for i in bounded:
        idx = pm.joints[oracle.joint_ids[i]].idx_q
        assert model.lower[model.idx_q[i]] == pm.lowerPositionLimit[idx], model.names[i]
        assert model.upper[model.idx_q[i]] == pm.upperPositionLimit[idx], model.names[i]
    unbounded = [i for i, j in enumerate(model.joints) if j.nq == 1 and i not in bounded]
    assert all(model.joints[i].type == "revolute" for i in unbounded)  # URDF continuous joints
    assert [model.idx_v[i] for i in unbounded] == oracle.cos_sin_v


def test_random_configuration(model):
    samples = np.array([casrbd.random_configuration(model, seed) for seed in range(200)])
    assert samples.shape == (200, model.nq)
    assert len({tuple(s) for s in samples}) == 200
    for i, j in enumerate(model.joints):
        part = samples[:, model.q_slice(i)]
        lo, hi = model.lower[model.q_slice(i)], model.upper[model.q_slice(i)]
        if j.nq == 1 and np.isfinite(lo[0]) and np.isfinite(hi[0]):
            assert np.all((lo <= part) & (part <= hi)), (model.names[i], lo, hi)
            assert part.max() - part.min() > 0.5 * (hi - lo), "not spread over the limits"
        elif j.type in ("revolute", "helical"):  # unbounded angles (a revolute one: URDF continuous)
            assert np.all(np.abs(part) <= np.pi)
        elif j.type == "prismatic":
            assert np.all(np.abs(part) <= 1)
        elif j.type in QUATERNION_JOINTS:
            quat = part[:, j.normalized]
            assert np.allclose(np.linalg.norm(quat, axis=1), 1, atol=1e-14, rtol=0)
            assert np.all(np.abs(quat).max(axis=0) > 0.5)  # every component varies
            if j.type == "floating":
                assert np.all(np.abs(part[:, :3]) <= 1)
        elif j.type == "planar":
            assert np.allclose(np.hypot(part[:, 2], part[:, 3]), 1, atol=1e-14, rtol=0)
            assert np.all(np.abs(part[:, :2]) <= 1)
    # a seed or a Generator; the same seed gives the same configuration
    assert np.array_equal(casrbd.random_configuration(model, 3), samples[3])
    assert np.array_equal(casrbd.random_configuration(model, np.random.default_rng(3)), samples[3])
