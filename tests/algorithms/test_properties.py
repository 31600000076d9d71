"""Property-based tests: identities of the dynamics on trees drawn by hypothesis.

A drawn tree has 1 to 12 bodies, each with a random parent among the
earlier bodies or the world (so forests too), one of the registered joint
types (``casrbd.joints.JOINT_TYPES``; the tests of the analytical derivative
methods draw the types with a constant motion subspace, which they require),
a random placement, axes and pitch, and a physical inertia: a mass, a centre
of mass and principal moments J_x = S_y + S_z, ... from second moments S_k =
m r_k^2 (so the triangle inequality holds) in random principal axes. The
state is a random configuration with its quaternions and (cos, sin) pairs
scaled off unit norm, random v, a and external forces (6 x njoints).

Each example builds one SX Function holding every expression its test checks
(casadi Functions cost 0.1 to 1 s to build for such trees, so the examples
are few): ``CASRBD_HYPOTHESIS_EXAMPLES`` sets the examples per test
(default 50; the derivative and exact-zero tests run a fifth of them, at
least 5, and the Pinocchio one half).

The references are independent of the quantity checked: the inverse of an
algorithm, the mass matrix's time derivative against the Coriolis matrix
built from body Jacobians, kinetic energy from body velocities obtained by
differentiating forward kinematics, casadi's AD of rnea on the tangent
space, and Pinocchio for extreme masses.
"""

import os

import casadi as ca
import numpy as np
from conftest import scale_normalized
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import casrbd
from casrbd.joints import JOINT_TYPES
from casrbd.model import Body, Frame, Model
from casrbd.models import ALL_JOINT_TYPES, CONSTANT_SUBSPACE_TYPES
from casrbd.spatial import SE3, Inertia

EXAMPLES = int(os.environ.get("CASRBD_HYPOTHESIS_EXAMPLES", "50"))
# the same examples at every run (CI must not fail at random); CASRBD_HYPOTHESIS_RANDOM=1 explores anew
PROPERTY = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not os.environ.get("CASRBD_HYPOTHESIS_RANDOM"),
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TOL = 1e-9  # relative; rounding errors grow with the condition number of M (1e2 to 1e4 here)


# ---- strategies ----


def _vectors(n, lo, hi):
    return st.lists(st.floats(lo, hi), min_size=n, max_size=n).map(np.array)


def rotation(r):
    """Rotation matrix of a rotation vector, by Rodrigues' formula (written here, not casrbd's)."""
    angle = np.linalg.norm(r)
    if angle == 0:
        return np.eye(3)
    K = skew(r / angle)
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


ROTATIONS = _vectors(3, -np.pi, np.pi).map(rotation)
AXES = st.tuples(st.floats(0, np.pi), st.floats(0, 2 * np.pi)).map(
    lambda a: np.array([np.sin(a[0]) * np.cos(a[1]), np.sin(a[0]) * np.sin(a[1]), np.cos(a[0])])
)


@st.composite
def inertias(draw, masses=(0.1, 10.0)):
    mass = 10 ** draw(st.floats(*np.log10(masses)))
    S = mass * draw(_vectors(3, 0.02, 0.5)) ** 2  # second moments sum m x_k^2 of a body of these extents
    R = draw(ROTATIONS)
    return Inertia.from_com(mass, draw(_vectors(3, -0.3, 0.3)), R @ np.diag(S.sum() - S) @ R.T)


@st.composite
def joints(draw, jtype):
    """(a joint of type ``jtype`` with drawn axes and pitch, its lower and upper limits or None)."""
    if jtype == "universal":
        axis1 = draw(AXES)
        e1 = np.cross(axis1, [1.0, 0, 0] if abs(axis1[0]) < 0.9 else [0, 1.0, 0])
        e1 /= np.linalg.norm(e1)
        angle = draw(st.floats(0, 2 * np.pi))
        return JOINT_TYPES[jtype](axis1, np.cos(angle) * e1 + np.sin(angle) * np.cross(axis1, e1)), None
    if jtype == "helical":
        joint = JOINT_TYPES[jtype](draw(AXES), draw(st.floats(-0.3, 0.3)))
    elif jtype in ("revolute", "prismatic"):
        joint = JOINT_TYPES[jtype](draw(AXES))
    else:
        return JOINT_TYPES[jtype](), None
    bounded = jtype != "revolute" or draw(st.booleans())  # a revolute joint without limits: URDF continuous
    return joint, ([-2.0], [2.0]) if bounded else None


@st.composite
def trees(draw, max_bodies=12, masses=(0.1, 10.0), joint_types=ALL_JOINT_TYPES):
    n = draw(st.integers(1, max_bodies))
    bodies, frames = [], []
    for i in range(n):
        jtype = draw(st.sampled_from(joint_types))
        placement = SE3(draw(ROTATIONS), draw(_vectors(3, -0.5, 0.5)))
        inertia = draw(inertias(masses))
        joint, limits = draw(joints(jtype))
        bodies.append(
            Body(f"j{i}_{jtype}", joint, draw(st.integers(-1, i - 1)), placement, inertia, *(limits or (None, None)))
        )
        frames.append(Frame(f"body{i}", i, SE3.identity()))
    return Model("drawn_tree", bodies, frames)


@st.composite
def states(draw, model, unit=False):
    """(q, v, a, f_ext) as numpy arrays; quaternions and (cos, sin) pairs off unit norm unless ``unit``."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    q = casrbd.random_configuration(model, rng)
    if not unit:
        q = scale_normalized(model, q, draw(st.floats(0.5, 2.0)))
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv), rng.normal(size=(6, model.njoints))


@st.composite
def cases(draw, unit=False, **tree_options):
    model = draw(trees(**tree_options))
    return model, draw(states(model, unit))


# ---- helpers ----


def evaluate(inputs, build):
    """Evaluate the expressions ``build(*symbols)`` of one SX Function at the numeric ``inputs``
    (a scalar input is a direction parameter t, evaluated at 0)."""
    symbols = [ca.SX.sym(f"x{k}", *np.shape(x)) if np.ndim(x) else ca.SX.sym("t") for k, x in enumerate(inputs)]
    outputs = build(*symbols)
    fun = ca.Function("f", symbols, outputs)
    return [np.array(o.full()) for o in fun.call([ca.DM(x) for x in inputs])]


def rel(x, ref):
    """|x - ref| / |ref| (Frobenius), with |ref| at least 1e-300 to allow exact zeros."""
    return np.linalg.norm(np.asarray(x) - ref) / max(np.linalg.norm(ref), 1e-300)


def spatial_inertia(Y):
    """6 x 6 matrix of an inertia acting on [linear; angular] velocity."""
    return np.block([[Y.mass * np.eye(3), -skew(Y.h)], [skew(Y.h), Y.I]])


def skew(x):
    return np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])


def ca_skew(x):
    return ca.vertcat(ca.horzcat(0, -x[2], x[1]), ca.horzcat(x[2], 0, -x[0]), ca.horzcat(-x[1], x[0], 0))


def time_derivative(expr, t):
    """d expr / dt, same shape (expr depends on t through q(t) = q (+) t v; evaluated at t = 0)."""
    return ca.reshape(ca.jacobian(ca.vec(expr), t), *expr.shape)


# ---- identities ----


@PROPERTY
@given(cases())
def test_aba_undoes_rnea_and_rnea_splits(case):
    model, (q, v, a, F) = case

    def build(q, v, a, F):
        tau = casrbd.rnea(model, q, v, a, F)
        return [tau, casrbd.aba(model, q, v, tau, F), casrbd.crba(model, q), casrbd.rnea(model, q, v, 0 * a, F)]

    tau, a_back, M, bias = evaluate([q, v, a, F], build)
    assert rel(a_back.ravel(), a) < TOL
    assert rel(M @ a + bias.ravel(), tau.ravel()) < TOL


@PROPERTY
@given(cases())
def test_minverse_inverts_crba(case):
    model, (q, *_) = case
    M, Minv = evaluate([q], lambda q: [casrbd.crba(model, q), casrbd.minverse(model, q)])
    assert rel(M, M.T) < 1e-15
    assert np.linalg.eigvalsh(M)[0] > 0
    assert rel(M @ Minv, np.eye(model.nv)) < TOL
    assert rel(Minv, Minv.T) < TOL


@PROPERTY
@given(cases())
def test_mdot_minus_twice_coriolis_is_skew(case):
    """C = sum_i J_i^T (I_i dJ_i/dt + B_i J_i) from local body Jacobians J_i, with B_i = -[(I_i v_i)]^
    the skew body Coriolis matrix (B_i v_i = v_i x* I_i v_i); then M-dot - 2 C is skew and
    C v = nle - g, where M-dot is the derivative of crba along q(t) = q (+) t v."""
    model, (q, v, *_) = case
    inertia = [spatial_inertia(Y) for Y in model.inertias]

    def build(q, v, t):
        qt = casrbd.integrate(model, q, t * v)
        C = 0
        for i, I in enumerate(inertia):
            J = casrbd.frame_jacobian(model, qt, f"body{i}", "local")  # at t = 0, J(q)
            f = ca.mtimes(I, ca.mtimes(J, v))
            B = -ca.blockcat([[ca.SX.zeros(3, 3), ca_skew(f[:3])], [ca_skew(f[:3]), ca_skew(f[3:])]])
            C += ca.mtimes(J.T, ca.mtimes(I, time_derivative(J, t)) + ca.mtimes(B, J))
        bias = casrbd.nonlinear_effects(model, q, v) - casrbd.generalized_gravity(model, q)
        return [casrbd.crba(model, q), time_derivative(casrbd.crba(model, qt), t), C, bias]

    M, Mdot, C, bias = evaluate([q, v, 0.0], build)
    N = Mdot - 2 * C
    scale = np.linalg.norm(M) * np.linalg.norm(v)  # of the terms of M-dot and C, which can cancel to 0
    assert np.linalg.norm(N + N.T) <= TOL * scale
    assert np.linalg.norm(C @ v - bias.ravel()) <= TOL * scale * np.linalg.norm(v)


@PROPERTY
@given(cases())
def test_kinetic_energy_from_body_velocities(case):
    """1/2 v^T M v = sum_i 1/2 v_i^T I_i v_i, body velocities v_i = (R^T dp/dt, vee(R^T dR/dt))
    from differentiating forward kinematics along q(t) = q (+) t v."""
    model, (q, v, *_) = case

    def build(q, v, t):
        placements = casrbd.forward_kinematics(model, casrbd.integrate(model, q, t * v))
        out = [casrbd.crba(model, q)]
        for T in placements:
            R, dT = T[:3, :3], time_derivative(T, t)
            W = ca.mtimes(R.T, dT[:3, :3])
            out.append(ca.vertcat(ca.mtimes(R.T, dT[:3, 3]), W[2, 1], W[0, 2], W[1, 0]))
        return out

    M, *body_velocities = evaluate([q, v, 0.0], build)
    energy = sum(0.5 * vi.ravel() @ spatial_inertia(Y) @ vi.ravel() for vi, Y in zip(body_velocities, model.inertias))
    assert abs(0.5 * v @ M @ v - energy) <= TOL * energy


@settings(PROPERTY, max_examples=max(5, EXAMPLES // 5))
@given(cases(joint_types=CONSTANT_SUBSPACE_TYPES))
def test_rnea_derivatives_match_ad(case):
    """Both analytical methods against casadi's AD of rnea(q (+) d, v, a, f) at d = 0."""
    model, (q, v, a, F) = case

    def build(q, v, a, F, d):
        tau_d = casrbd.rnea(model, casrbd.integrate(model, q, d), v, a, F)
        tau = casrbd.rnea(model, q, v, a, F)
        out = [ca.jacobian(tau_d, d), ca.jacobian(tau, v), ca.jacobian(tau, a)]
        for method in ("idsva", "chain_rule"):
            out += casrbd.rnea_derivatives(model, q, v, a, F, method=method)
        return out

    outputs = evaluate([q, v, a, F, np.zeros(model.nv)], build)
    reference = np.hstack(outputs[:3])  # compared as a whole: single blocks can be zero by cancellation
    assert rel(np.hstack(outputs[3:6]), reference) < TOL, "idsva"
    assert rel(np.hstack(outputs[6:9]), reference) < TOL, "chain_rule"


# ---- numerical edge cases ----


@settings(PROPERTY, max_examples=max(5, EXAMPLES // 5))
@given(cases(max_bodies=8, joint_types=CONSTANT_SUBSPACE_TYPES))
def test_at_rest_without_gravity_everything_is_exactly_zero(case):
    """g = 0, v = 0, a = 0 (tau = 0): tau, a and their derivatives in q and v are exact zeros, for
    both analytical methods (algorithms/test_derivatives.py::test_rounding_zero_velocity_derivatives_are_exactly_zero
    shows d/dv on two robots through the cached Functions)."""
    model, (q, *_) = case
    model = model.with_gravity([0.0, 0.0, 0.0])

    def build(q, v, a):
        out = [casrbd.rnea(model, q, v, a), casrbd.aba(model, q, v, a)]
        for method in ("idsva", "chain_rule"):
            out += casrbd.rnea_derivatives(model, q, v, a, method=method)[:2]
            out += casrbd.aba_derivatives(model, q, v, a, method=method)[:2]
        return out

    zero = np.zeros(model.nv)
    for k, X in enumerate(evaluate([q, zero, zero], build)):
        assert np.all(X == 0), f"output {k}: largest entry {np.abs(X).max():.3g}"


@settings(PROPERTY, max_examples=max(5, EXAMPLES // 2))
@given(cases(unit=True, masses=(1e-6, 1e4)))
def test_masses_from_a_milligram_to_ten_tonnes_match_pinocchio(pin, case):
    """Bodies of 1e-6 to 1e4 kg (inertias scaled alike, 1e-10 to 1e3 kg m^2), mixed in one tree:
    rnea and crba match Pinocchio to a relative 1e-11 (normwise, no absolute floor; seen: 2e-15, and
    1.8e-12 once with helical and universal joints);
    aba's backward error (Pinocchio's rnea of casrbd's a, minus tau) is below 1e-13 (|M| |a| + |tau|)
    (seen: 1e-16), and its difference from Pinocchio's aba below |M^-1| times twice that."""
    from oracle import Oracle

    model, (q, v, x, _) = case  # x: an acceleration for rnea, a torque for aba
    oracle = Oracle.from_model(model)
    pm, data = oracle.pmodel, oracle.data
    qp, vp = oracle.q(q), oracle.v(v)
    tau, M, acc = evaluate(
        [q, v, x], lambda q, v, x: [casrbd.rnea(model, q, v, x), casrbd.crba(model, q), casrbd.aba(model, q, v, x)]
    )
    tau, acc = tau.ravel(), acc.ravel()
    assert rel(tau, oracle.from_v(pin.rnea(pm, data, qp, vp, oracle.v(x)))) < 1e-11
    assert rel(M, oracle.from_upper(pin.crba(pm, data, qp))) < 1e-11
    backward = 1e-13 * (np.linalg.norm(M, 2) * np.linalg.norm(acc) + np.linalg.norm(x))
    assert np.linalg.norm(oracle.from_v(pin.rnea(pm, data, qp, vp, oracle.v(acc))) - x) <= backward
    # two solutions within that backward error of the same system differ by at most |M^-1| twice it
    a_pin = oracle.from_v(pin.aba(pm, data, qp, vp, oracle.v(x)))
    assert np.linalg.norm(acc - a_pin) <= 2 * np.linalg.norm(np.linalg.inv(M), 2) * backward
