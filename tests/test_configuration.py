"""Configuration-space operations: integrate, difference, neutral, random_configuration."""
import casadi as ca
import numpy as np
import pytest

import casrbd
from conftest import get_model, rel_err, scale_normalized

pin = pytest.importorskip("pinocchio")
from oracle import Oracle  # noqa: E402  (needs pinocchio)

ROBOTS = ("chain", "binary", "random", "hyq", "double_pendulum_continuous")
TOL = 1e-10
N = 20
QUATERNION_JOINTS = ("spherical", "floating")


@pytest.fixture(scope="module", params=ROBOTS)
def case(request):
    model = get_model(request.param)
    return model, Oracle.from_robot(request.param, model)


def rotation_slices(model):
    """(joint, slice of v) of every joint's rotation vector (spherical, free-flyer) or angle (planar)."""
    out = []
    for i, j in enumerate(model.joints):
        if j.type in QUATERNION_JOINTS or j.type == "planar":
            n = 1 if j.type == "planar" else 3
            out.append((j, slice(j.idx_v + j.nv - n, j.idx_v + j.nv)))
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
    for j in model.joints:
        if j.type in QUATERNION_JOINTS:
            s = slice(j.idx_q + j.normalized.start, j.idx_q + j.normalized.stop)
            if q[s][3] < 0:
                q[s] = -q[s]
    return q


def assert_unit(model, q):
    for j in model.joints:
        if j.normalized.stop > j.normalized.start:
            part = q[j.idx_q + j.normalized.start:j.idx_q + j.normalized.stop]
            assert abs(np.linalg.norm(part) - 1) < 1e-12, (j.name, part)


def wrapped(oracle, q):
    """q with the angles that Pinocchio stores as (cos, sin) (URDF continuous joints) in (-pi, pi]."""
    return oracle.from_q(oracle.q(q))


def difference_error(oracle, dq, reference):
    """rel_err, with the angle differences of (cos, sin) joints compared modulo 2 pi: casrbd's
    continuous joint is an angle on the real line, Pinocchio's a point of the circle."""
    d = np.array(dq, dtype=float) - reference
    d[oracle.cos_sin_v] = (d[oracle.cos_sin_v] + np.pi) % (2 * np.pi) - np.pi
    return float(np.max(np.abs(d)) / max(1.0, np.max(np.abs(reference))))


def pin_integrate(oracle, q, v):
    return oracle.from_q(pin.integrate(oracle.pmodel, oracle.q(q), oracle.v(v)))


def pin_difference(oracle, q0, q1):
    return oracle.from_v(pin.difference(oracle.pmodel, oracle.q(q0), oracle.q(q1)))


@pytest.mark.parametrize("scale", [0.0, 1e-12, 1e-10, 1e-7, 1e-5, 1e-3, 0.1, 1.0])
def test_integrate_matches_pinocchio(case, scale):
    """Rotations below pi: the same numbers, quaternion signs included."""
    model, oracle = case
    rng = np.random.default_rng(1)
    for _ in range(N):
        q = casrbd.random_configuration(model, rng)
        v = below_pi(model, scale * rng.normal(size=model.nv))
        q1 = casrbd.integrate(model, q, v)
        assert rel_err(wrapped(oracle, q1), pin_integrate(oracle, q, v)) < TOL
        assert_unit(model, q1)


@pytest.mark.parametrize("scale", [3.0, 10.0, 100.0])
def test_integrate_large_velocities_matches_pinocchio(case, scale):
    """Any rotation: the same configuration (Pinocchio keeps the result's quaternion in the
    hemisphere of q's, casrbd does not: compared up to the quaternions' sign)."""
    model, oracle = case
    rng = np.random.default_rng(2)
    for _ in range(N):
        q = casrbd.random_configuration(model, rng)
        v = scale * rng.normal(size=model.nv)
        q1 = casrbd.integrate(model, q, v)
        assert rel_err(canonical(model, wrapped(oracle, q1)), canonical(model, pin_integrate(oracle, q, v))) < 1e-9
        assert_unit(model, q1)


@pytest.mark.parametrize("scale", [None, 0.0, 1e-10, 1e-6, 1e-3, 1.0])
def test_difference_matches_pinocchio(case, scale):
    """q1 random (scale None) or q1 = q0 (+) scale * v, with quaternions of either sign."""
    model, oracle = case
    rng = np.random.default_rng(3)
    for k in range(N):
        q0 = casrbd.random_configuration(model, rng)
        if scale is None:
            q1 = casrbd.random_configuration(model, rng)
        else:
            q1 = pin_integrate(oracle, q0, below_pi(model, scale * rng.normal(size=model.nv)))
        if k % 2:  # the other quaternion of the same rotations
            for j in model.joints:
                if j.type in QUATERNION_JOINTS:
                    q1[j.idx_q + 3 * (j.type == "floating"):j.idx_q + j.nq] *= -1
        assert difference_error(oracle, casrbd.difference(model, q0, q1), pin_difference(oracle, q0, q1)) < TOL


@pytest.mark.parametrize("scale", [1e-10, 1e-4, 0.5, 3.0])
def test_difference_inverts_integrate(case, scale):
    model, _ = case
    rng = np.random.default_rng(4)
    for _ in range(N):
        q = casrbd.random_configuration(model, rng)
        v = below_pi(model, scale * rng.normal(size=model.nv))
        assert rel_err(casrbd.difference(model, q, casrbd.integrate(model, q, v)), v) < 1e-9
        q1 = casrbd.random_configuration(model, rng)
        q1_again = casrbd.integrate(model, q, casrbd.difference(model, q, q1))
        assert rel_err(canonical(model, q1_again), canonical(model, q1)) < 1e-9


def test_integrate_difference_normalize(case):
    """Quaternions and (cos, sin) of any norm are the same configuration."""
    model, _ = case
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
        joint = next(j for j in model.joints if j.idx_v <= k < j.idx_v + j.nv)
        out.setdefault(joint.type, []).append(int(k))
    return out


@pytest.mark.parametrize("at", ["zero", "small", "moderate"])
def test_derivative_of_difference_of_integrate_is_identity(case, at):
    """d/dv difference(q, q (+) v) = I for rotations below pi, v = 0 included (AD through both)."""
    model, _ = case
    rng = np.random.default_rng(6)
    q = ca.SX.sym("q", model.nq)
    v = ca.SX.sym("v", model.nv)
    J = ca.Function("J", [q, v], [ca.jacobian(casrbd.difference(model, q, casrbd.integrate(model, q, v)), v)])
    for _ in range(5):
        q0 = casrbd.random_configuration(model, rng)
        v0 = {"zero": 0.0, "small": 1e-6, "moderate": 0.5}[at] * below_pi(model, rng.normal(size=model.nv))
        Jv = J(q0, v0).full()
        assert rel_err(Jv, np.eye(model.nv)) < 1e-8, f"non-finite columns {nonfinite_columns(model, Jv)}"


def test_derivative_of_integrate_at_zero_velocity(case):
    """The AD Jacobian of q (+) v at v = 0 equals central differences of the numeric integrate."""
    model, _ = case
    rng = np.random.default_rng(7)
    q = ca.SX.sym("q", model.nq)
    v = ca.SX.sym("v", model.nv)
    J = ca.Function("J", [q, v], [ca.jacobian(casrbd.integrate(model, q, v), v)])
    h = 1e-5
    for _ in range(5):
        q0 = casrbd.random_configuration(model, rng)
        fd = np.column_stack([(casrbd.integrate(model, q0, h * e) - casrbd.integrate(model, q0, -h * e)) / (2 * h)
                              for e in np.eye(model.nv)])
        J0 = J(q0, np.zeros(model.nv)).full()
        assert rel_err(J0, fd) < 1e-8, f"non-finite columns {nonfinite_columns(model, J0)}"


def test_neutral_matches_pinocchio(case):
    model, oracle = case
    q = casrbd.neutral(model)
    assert isinstance(q, np.ndarray) and q.shape == (model.nq,)
    assert rel_err(oracle.q(q), pin.neutral(oracle.pmodel)) == 0


def test_random_configuration(case):
    model, oracle = case
    pm = oracle.pmodel
    samples = np.array([casrbd.random_configuration(model, seed) for seed in range(200)])
    assert samples.shape == (200, model.nq)
    assert len({tuple(s) for s in samples}) == 200
    for i, j in enumerate(model.joints):
        part = samples[:, model.q_slice(i)]
        if j.type in ("revolute", "prismatic"):
            if oracle.from_urdf_parser:  # the limits of Pinocchio's parse of the URDF
                idx = pm.joints[oracle.joint_ids[i]].idx_q
                lo, hi = pm.lowerPositionLimit[idx], pm.upperPositionLimit[idx]
            else:
                lo, hi = j.lower[0], j.upper[0]
            assert np.all((lo <= part) & (part <= hi)), (j.name, lo, hi)
            assert part.max() - part.min() > 0.5 * (hi - lo), "not spread over the limits"
        elif j.type == "continuous":
            assert np.all(np.abs(part) <= np.pi)
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
