"""The joint contract: every registered joint type answers the protocol of casrbd/joints.py.

Parametrised over ``casrbd.joints.JOINT_TYPES`` (each type's ``sample(rng)``:
random axes and pitch), and checked against references independent of the
joint's own answers:

- the transform X_J(q) is a rigid transform, the identity at the neutral
  configuration, and blind to the norm of the ``normalized`` entries;
- S(q) is the derivative of the joint's own transform along q (+) delta at
  delta = 0 (casadi AD), as a spatial velocity in the child frame; c_J(q, v)
  is d/dt S(q(t)) v along q(t) = q (+) t v (AD); ``constant_subspace`` holds
  exactly when that S does not depend on q (AD);
- integrate and difference invert each other, difference(q, q) = 0, and
  ``tangent_map`` is the AD Jacobian of difference(q, q') in q' at q' = q;
- ``random`` stays within the limits, ``neutral`` has unit quaternions,
  ``axis`` is set only for one-dof screws, ``full_motion`` only when S = I;
- the registries: names match the classes, file formats map to registered names.

Then, per joint type, a small random tree of that type matches Pinocchio
(rnea, aba, crba, minverse; skipped without Pinocchio), and the analytical
derivative methods refuse a joint whose S depends on q (universal) naming it,
while method="ad" differentiates it (against central differences).
"""

import casadi as ca
import numpy as np
import pytest
from conftest import SYNTHETIC_TYPES

import casrbd
from casrbd.joints import FORMAT_TYPES, JOINT_TYPES
from casrbd.models import CONSTANT_SUBSPACE_TYPES, random_tree
from casrbd.testing import central_differences, random_state, rel_err

TYPES = list(JOINT_TYPES)
# the coordinates that ``random`` bounds by finite limits (the others: angles, unit quaternions, (cos, sin))
LIMITED = {
    "revolute": [0],
    "prismatic": [0],
    "helical": [0],
    "universal": [0, 1],
    "spherical": [],
    "floating": [0, 1, 2],
    "planar": [0, 1],
}
# where ``random`` draws coordinates without finite limits: angles in [-pi, pi], lengths in [-1, 1]
UNLIMITED_RANGE = {
    "revolute": np.pi,
    "helical": np.pi,
    "universal": np.pi,
    "prismatic": 1.0,
    "floating": 1.0,
    "planar": 1.0,
}
N_CONFIGURATIONS = 4


def seed(name):
    return sum(map(ord, name))


@pytest.fixture(params=TYPES)
def joint(request):
    """A joint of every registered type, with random parameters."""
    return JOINT_TYPES[request.param].sample(np.random.default_rng(seed(request.param)))


def function(build, *sizes):
    """ca.Function of ``build(*SX symbols of these sizes)``, a list of expressions (numpy constants too)."""
    syms = [ca.SX.sym(f"x{k}", n) for k, n in enumerate(sizes)]
    outs = [ca.SX(o) for o in build(*syms)]
    f = ca.Function("f", syms, outs)
    return lambda *args: [o.full() for o in f(*args)] if len(outs) > 1 else f(*args).full()


def unlimited(joint):
    return np.full(joint.nq, -np.inf), np.full(joint.nq, np.inf)


def configurations(joint, rng):
    """The neutral configuration and random ones."""
    return [joint.neutral()] + [joint.random(rng, *unlimited(joint)) for _ in range(N_CONFIGURATIONS - 1)]


def scaled(joint, q, factor):
    """q with its ``normalized`` entries multiplied by ``factor``."""
    q = np.array(q, dtype=float)
    q[joint.normalized] *= factor
    return q


def small_velocity(joint, rng):
    """A random velocity of norm at most 2 (rotations below pi)."""
    v = rng.normal(size=joint.nv)
    return v * min(1.0, 2.0 / np.linalg.norm(v))


def vee(W):
    """w of a skew matrix [w]x."""
    return ca.vertcat(W[2, 1], W[0, 2], W[1, 0])


def subspace_from_transform(joint):
    """q -> the columns d/d delta_k of X_J(q (+) delta) at delta = 0 as spatial velocities in the
    child frame: [R^T dp; vee(R^T dR)], by casadi's AD of the joint's transform and integrate."""

    def build(q, d):
        X = joint.transform(joint.integrate(q, d))
        R, p = ca.SX(X.R), ca.SX(X.p)
        dR, dp = ca.jacobian(ca.vec(R), d), ca.jacobian(p, d)
        cols = [
            ca.vertcat(ca.mtimes(R.T, dp[:, k]), vee(ca.mtimes(R.T, ca.reshape(dR[:, k], 3, 3))))
            for k in range(joint.nv)
        ]
        return [ca.substitute(ca.horzcat(*cols), d, ca.DM.zeros(joint.nv))]

    f = function(build, joint.nq, joint.nv)
    return lambda q: f(q, np.zeros(joint.nv))


# ---------------------------------------------------------------- the transform


def test_transform_is_a_rigid_transform_and_the_identity_at_neutral(joint):
    T = function(lambda q: [joint.transform(q).R, joint.transform(q).p], joint.nq)
    for q in configurations(joint, np.random.default_rng(1)):
        R, p = T(q)
        assert R.shape == (3, 3) and p.shape == (3, 1)
        assert rel_err(R.T @ R, np.eye(3)) < 1e-14
        assert abs(np.linalg.det(R) - 1) < 1e-14
        assert np.all(np.isfinite(p))
    R, p = T(joint.neutral())
    assert rel_err(R, np.eye(3)) < 1e-15 and rel_err(p, np.zeros((3, 1))) < 1e-15


def test_transform_does_not_depend_on_the_norm_of_normalized_entries(joint):
    T = function(lambda q: [joint.transform(q).R, joint.transform(q).p], joint.nq)
    for q in configurations(joint, np.random.default_rng(2)):
        R, p = T(q)
        for factor in (3.7, 0.25):
            R2, p2 = T(scaled(joint, q, factor))
            assert rel_err(R2, R) < 1e-14 and rel_err(p2, p) < 1e-14


def test_normalized_entries_have_unit_norm_at_neutral_and_random_configurations(joint):
    q0 = joint.neutral()
    assert isinstance(q0, np.ndarray) and q0.shape == (joint.nq,)
    for q in configurations(joint, np.random.default_rng(3)):
        if q[joint.normalized].size:
            assert abs(np.linalg.norm(q[joint.normalized]) - 1) < 1e-14


# ---------------------------------------------------------------- motion subspace and bias


def test_motion_subspace_is_the_derivative_of_the_transform(joint):
    S_ad = subspace_from_transform(joint)
    S = function(lambda q: [joint.motion_subspace(q)], joint.nq)
    for q in configurations(joint, np.random.default_rng(4)):
        expected = S_ad(q)
        assert expected.shape == (6, joint.nv) and np.all(np.isfinite(expected))
        assert rel_err(S(q), expected) < 1e-13
        assert rel_err(S(scaled(joint, q, 1.6)), expected) < 1e-13  # the dynamics normalise q
    if joint.constant_subspace:  # the algorithms ask a constant S without a configuration
        assert rel_err(np.asarray(joint.motion_subspace(None), dtype=float), S_ad(joint.neutral())) < 1e-13


def test_bias_is_the_time_derivative_of_the_motion_subspace_times_v(joint):
    """c_J(q, v) = d/dt [S(q (+) t v)] v at t = 0."""

    def build(q, v, t):
        S_t = ca.SX(joint.motion_subspace(joint.integrate(q, t * v)))
        expected = ca.substitute(ca.jacobian(ca.mtimes(S_t, v), t), t, 0)
        return [joint.bias(q, v), expected]

    f = function(build, joint.nq, joint.nv, 1)
    rng = np.random.default_rng(5)
    for q in configurations(joint, rng):
        got, expected = f(q, rng.normal(size=joint.nv), 0.0)
        assert got.shape == (6, 1)
        assert rel_err(got, expected) < 1e-13


def test_constant_subspace_holds_exactly_when_S_does_not_depend_on_q(joint):
    """The S obtained from the transform (not the joint's own S) is differentiated in raw q by AD."""

    def build(q):
        d = ca.SX.sym("d", joint.nv)
        X = joint.transform(joint.integrate(q, d))
        R, p = ca.SX(X.R), ca.SX(X.p)
        dR, dp = ca.jacobian(ca.vec(R), d), ca.jacobian(p, d)
        S = ca.horzcat(
            *[
                ca.vertcat(ca.mtimes(R.T, dp[:, k]), vee(ca.mtimes(R.T, ca.reshape(dR[:, k], 3, 3))))
                for k in range(joint.nv)
            ]
        )
        return [ca.substitute(ca.jacobian(ca.vec(S), q), d, ca.DM.zeros(joint.nv))]

    dS_dq = function(build, joint.nq)
    rng = np.random.default_rng(6)
    largest = max(np.abs(dS_dq(q)).max() for q in configurations(joint, rng)[1:])
    if joint.constant_subspace:
        assert largest < 1e-12
    else:
        assert largest > 1e-2


# ---------------------------------------------------------------- the configuration manifold


def test_integrate_and_difference_invert_each_other(joint):
    integrate = function(lambda q, v: [joint.integrate(q, v)], joint.nq, joint.nv)
    difference = function(lambda q0, q1: [joint.difference(q0, q1)], joint.nq, joint.nq)
    T = function(lambda q: [joint.transform(q).R, joint.transform(q).p], joint.nq)
    rng = np.random.default_rng(7)
    for q in configurations(joint, rng):
        v = small_velocity(joint, rng)
        assert rel_err(difference(q, integrate(q, v)).ravel(), v) < 1e-12
        q1 = joint.random(rng, *unlimited(joint))
        back = integrate(q, difference(q, q1)).ravel()
        if back[joint.normalized].size:
            assert abs(np.linalg.norm(back[joint.normalized]) - 1) < 1e-14
        # the same configuration (a quaternion and its negative are one rotation: compare transforms)
        for x, y in zip(T(back), T(q1)):
            assert rel_err(x, y) < 1e-12


def test_difference_of_a_configuration_with_itself_is_zero(joint):
    difference = function(lambda q0, q1: [joint.difference(q0, q1)], joint.nq, joint.nq)
    for q in configurations(joint, np.random.default_rng(8)):
        for factor in (1.0, 2.5):
            assert np.abs(difference(scaled(joint, q, factor), q)).max() < 1e-14


def test_tangent_map_is_the_jacobian_of_difference(joint):
    """tangent_map(q) = d difference(q, q') / dq' at q' = q, at unit and at scaled configurations."""

    def build(q, q1):
        return [joint.tangent_map(q), ca.jacobian(joint.difference(q, q1), q1)]

    f = function(build, joint.nq, joint.nq)
    for q in configurations(joint, np.random.default_rng(9)):
        for factor in (1.0, 1.4):
            qs = scaled(joint, q, factor)
            T, J = f(qs, qs)
            assert T.shape == (joint.nv, joint.nq)
            assert np.all(np.isfinite(J)) and rel_err(T, J) < 1e-12


def test_random_respects_limits(joint, request):
    rng = np.random.default_rng(10)
    limited = LIMITED[joint.type]
    lower, upper = unlimited(joint)
    lower[limited] = -0.3 - 0.1 * np.arange(len(limited))
    upper[limited] = 0.2 + 0.1 * np.arange(len(limited))
    samples = np.array([joint.random(rng, lower, upper) for _ in range(200)])
    assert samples.shape == (200, joint.nq)
    inside = samples[:, limited]
    assert np.all((lower[limited] <= inside) & (inside <= upper[limited]))
    assert np.all(inside.max(axis=0) - inside.min(axis=0) > 0.5 * (upper - lower)[limited]), "not spread"
    free = np.array([joint.random(rng, *unlimited(joint)) for _ in range(200)])
    if limited:
        assert np.all(np.abs(free[:, limited]) <= UNLIMITED_RANGE[joint.type])
    if free[:, joint.normalized].size:
        assert np.allclose(np.linalg.norm(free[:, joint.normalized], axis=1), 1, rtol=0, atol=1e-14)
        assert np.allclose(np.linalg.norm(samples[:, joint.normalized], axis=1), 1, rtol=0, atol=1e-14)


# ---------------------------------------------------------------- what the algorithm frames rely on


def test_axis_is_set_only_for_one_dof_screws(joint):
    """An ``axis`` a means S = [t a; r a] for numbers t, r (rotation about and translation along a)."""
    if joint.axis is None:
        return
    assert joint.nq == joint.nv == 1
    a = np.asarray(joint.axis, dtype=float)
    assert a.shape == (3,) and abs(np.linalg.norm(a) - 1) < 1e-14
    S = subspace_from_transform(joint)(joint.random(np.random.default_rng(11), *unlimited(joint)))[:, 0]
    for part in (S[:3], S[3:]):
        assert np.allclose(part, (part @ a) * a, rtol=0, atol=1e-14)
    assert np.abs(S).max() > 0.1


def test_full_motion_exactly_when_S_is_the_identity(joint):
    S = subspace_from_transform(joint)(joint.random(np.random.default_rng(12), *unlimited(joint)))
    is_identity = S.shape == (6, 6) and rel_err(S, np.eye(6)) < 1e-13
    assert joint.full_motion == is_identity


def test_joints_are_immutable_and_their_constants_read_only(joint, request):
    """Assigning an attribute raises; the arrays a joint holds are read-only, and the constant S it
    hands out is read-only or a new array at every call."""
    for name in ("axis", "nq", "type", "pitch", "anything"):
        with pytest.raises(AttributeError):
            setattr(joint, name, 1.0)
    for name in ("axis", "axis1", "axis2"):
        x = getattr(joint, name, None)
        assert x is None or not x.flags.writeable, name
    if joint.constant_subspace:  # (checked without writing: a shared array would be corrupted for good)
        S = joint.motion_subspace(None)
        assert not S.flags.writeable or not np.shares_memory(S, joint.motion_subspace(None)), (
            "a writeable S shared by every call"
        )


# ---------------------------------------------------------------- registries


@pytest.mark.parametrize("name", TYPES)
def test_registry_names_match_the_classes(name):
    cls = JOINT_TYPES[name]
    assert cls.type == name
    joint = cls.sample(np.random.default_rng(0))
    assert type(joint) is cls and joint.type == name
    assert isinstance(joint.nq, int) and isinstance(joint.nv, int) and 0 < joint.nv <= joint.nq
    assert isinstance(joint.constant_subspace, bool) and isinstance(joint.full_motion, bool)


def test_format_types_map_to_registered_names():
    assert set(FORMAT_TYPES) >= {"urdf"}
    for fmt, types in FORMAT_TYPES.items():
        for name, target in types.items():
            assert target is None or target in JOINT_TYPES, (fmt, name, target)
    assert FORMAT_TYPES["urdf"]["continuous"] == "revolute" and FORMAT_TYPES["urdf"]["fixed"] is None


def test_the_synthetic_robots_cover_every_constant_subspace_type():
    assert (
        set(SYNTHETIC_TYPES)
        == set(CONSTANT_SUBSPACE_TYPES)
        == {name for name, cls in JOINT_TYPES.items() if cls.constant_subspace}
    )
    assert "universal" not in CONSTANT_SUBSPACE_TYPES


# ---------------------------------------------------------------- in a tree


@pytest.mark.parametrize("jtype", TYPES)
def test_a_tree_of_each_type_matches_pinocchio(jtype, pin):
    from oracle import Oracle

    model = random_tree(4, (jtype,), branching=None, seed=seed(jtype))
    o = Oracle.from_model(model)
    rng = np.random.default_rng(seed(jtype))
    for _ in range(3):
        q, v, x, F = random_state(model, rng)
        pq, pv, px = o.q(q), o.v(v), o.v(x)
        assert (
            rel_err(casrbd.rnea(model, q, v, x, F), o.from_v(pin.rnea(o.pmodel, o.data, pq, pv, px, o.f_ext(F))))
            < 1e-10
        )
        assert (
            rel_err(casrbd.aba(model, q, v, x, F), o.from_v(pin.aba(o.pmodel, o.data, pq, pv, px, o.f_ext(F)))) < 1e-10
        )
        assert rel_err(casrbd.crba(model, q), o.from_upper(pin.crba(o.pmodel, o.data, pq))) < 1e-10
        assert rel_err(casrbd.minverse(model, q), o.from_upper(pin.computeMinverse(o.pmodel, o.data, pq))) < 1e-10


@pytest.fixture(scope="module")
def universal_tree():
    """Revolute and universal joints in turn: j1_universal, j3_universal."""
    return random_tree(4, ("revolute", "universal"), branching=None, seed=7)


ANALYTICAL_CALLS = {
    "rnea_derivatives idsva": lambda m, q, v, x, F: casrbd.rnea_derivatives(m, q, v, x, F, method="idsva"),
    "rnea_derivatives chain_rule": lambda m, q, v, x, F: casrbd.rnea_derivatives(m, q, v, x, F, method="chain_rule"),
    "aba_derivatives idsva": lambda m, q, v, x, F: casrbd.aba_derivatives(m, q, v, x, F, method="idsva"),
    "aba_derivatives chain_rule": lambda m, q, v, x, F: casrbd.aba_derivatives(m, q, v, x, F, method="chain_rule"),
    "kinematics_derivatives": lambda m, q, v, x, F: casrbd.kinematics_derivatives(m, q, v, x, "tip3"),
    "rnea analytical Jacobian": lambda m, q, v, x, F: casrbd.function(m, "rnea", jacobian="analytical"),
    "aba analytical Jacobian": lambda m, q, v, x, F: casrbd.function(
        m, "aba", jacobian="analytical", method="chain_rule"
    ),
    "symbolic idsva": lambda m, q, v, x, F: casrbd.rnea_derivatives(m, ca.SX.sym("q", m.nq), v, x, method="idsva"),
}


@pytest.mark.parametrize("call", list(ANALYTICAL_CALLS))
def test_analytical_derivatives_refuse_a_q_dependent_subspace_naming_the_joint(universal_tree, call):
    state = random_state(universal_tree, np.random.default_rng(0))
    with pytest.raises(NotImplementedError, match="joint 'j1_universal' \\(universal\\)"):
        ANALYTICAL_CALLS[call](universal_tree, *state)


@pytest.mark.parametrize("dynamics", ["rnea", "aba"])
def test_ad_derivatives_of_a_universal_tree_match_finite_differences(universal_tree, dynamics):
    m = universal_tree
    fun = casrbd.function(m, dynamics, f_ext=True)
    derivatives = getattr(casrbd, f"{dynamics}_derivatives")
    rng = np.random.default_rng(1)
    for _ in range(3):
        q, v, x, F = random_state(m, rng)
        d_dq, d_dv, d_dx = derivatives(m, q, v, x, F, method="ad")
        fd_q, fd_v, fd_x = central_differences(m, fun, q, v, x, F, vectors=(1, 2))
        assert rel_err(fd_q, d_dq) < 1e-6 and rel_err(fd_v, d_dv) < 1e-6 and rel_err(fd_x, d_dx) < 1e-6
        assert rel_err(d_dx, casrbd.crba(m, q) if dynamics == "rnea" else casrbd.minverse(m, q)) < 1e-10
