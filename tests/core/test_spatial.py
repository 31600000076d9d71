"""casrbd.spatial's conventions pinned against Pinocchio's own types, for numpy, DM, SX and MX inputs.

The comparisons with Pinocchio take the ``pin`` fixture (skipped without it); the chained
placements, the 6 x 6 action on symmetric matrices, the derivatives at zero rotation and the
small solves are checked against numpy alone and run without it."""

import casadi as ca
import numpy as np
import pytest

from casrbd.spatial import (
    SE3,
    Inertia,
    SE3Chain,
    exp3,
    exp3_quaternion,
    force_bar_matrix,
    force_cross,
    force_cross_matrix,
    log3_quaternion,
    motion_cross,
    motion_cross_matrix,
    quaternion_matrix,
    quaternion_product,
    se3_exp,
    se3_log_translation,
    spd_solve,
)
from casrbd.testing import rel_err

TOL = 1e-12
KINDS = ("numpy", "DM", "SX", "MX")


def evaluate(fn, args, kind):
    """fn(*args) with the numeric args passed as ``kind``; SX and MX through a ca.Function.

    numpy arguments are passed as given (casrbd's numeric constants: 3-vectors of shape (3,),
    motions and forces as 6 x k arrays); the others as casadi columns or matrices.
    The result is a 2-D numpy array."""
    args = [np.asarray(a, dtype=float) for a in args]
    if kind == "numpy":
        out = fn(*args)
    elif kind == "DM":
        out = fn(*[ca.DM(a) for a in args])
    else:
        sym = getattr(ca, kind)
        syms = [sym.sym(f"x{i}", *(a.shape + (1,) * (2 - a.ndim))) for i, a in enumerate(args)]
        expr = fn(*syms)
        assert isinstance(expr, sym), f"{kind} inputs gave a {type(expr).__name__}"
        out = ca.Function("f", syms, [expr])(*args)
    out = np.array(ca.DM(out)) if not isinstance(out, np.ndarray) else out
    return out.reshape(-1, 1) if out.ndim < 2 else out


@pytest.fixture
def rng(request):
    """A generator seeded by the test's name: every test draws the same numbers alone or in a run."""
    return np.random.default_rng(sum(map(ord, request.node.name)))


def skew(x):
    return np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])


def rotation(w):
    """exp([w]x) by Rodrigues' formula, written here."""
    angle = np.linalg.norm(w)
    K = skew(w / angle)
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def random_se3(rng, pin=None):
    """(R, p) of a random placement, and its pin.SE3 when ``pin`` is given."""
    R, p = rotation(rng.normal(size=3)), rng.normal(size=3)
    return R, p, None if pin is None else pin.SE3(R, p)


def random_inertia(rng, pin):
    """(mass, com, rotational inertia about the com, pin.Inertia)."""
    A = rng.normal(size=(3, 3))
    mass, com, I_com = rng.uniform(0.5, 3), rng.normal(size=3), A @ A.T + 0.1 * np.eye(3)
    return mass, com, I_com, pin.Inertia(mass, com, I_com)


def columns(pin_type, X):
    """6 x k numpy set from 6-vectors X (6 x k)."""
    return X, [pin_type(X[:, k]) for k in range(X.shape[1])]


def col(x):
    return np.asarray(x).reshape(-1, 1)


@pytest.fixture(params=KINDS)
def kind(request):
    return request.param


# --- placements acting on motions and forces ------------------------------------------------


@pytest.mark.parametrize(
    "method, pin_type, pin_method",
    [
        ("act_motion", "Motion", "act"),
        ("inv_act_motion", "Motion", "actInv"),
        ("act_force", "Force", "act"),
        ("inv_act_force", "Force", "actInv"),
    ],
)
def test_se3_actions(kind, method, pin_type, pin_method, rng, pin):
    for _ in range(5):
        R, p, M = random_se3(rng, pin)
        X, items = columns(getattr(pin, pin_type), rng.normal(size=(6, 3)))  # a set of three columns
        got = evaluate(lambda R, p, X: getattr(SE3(R, p), method)(X), [R, p, X], kind)
        ref = np.column_stack([getattr(M, pin_method)(x).vector for x in items])
        assert rel_err(got, ref) < TOL


def test_se3_composition_inverse_homogeneous(kind, rng, pin):
    for _ in range(5):
        R1, p1, M1 = random_se3(rng, pin)
        R2, p2, M2 = random_se3(rng, pin)
        got = evaluate(lambda R1, p1, R2, p2: (SE3(R1, p1) * SE3(R2, p2)).homogeneous(), [R1, p1, R2, p2], kind)
        assert rel_err(got, (M1 * M2).homogeneous) < TOL
        got = evaluate(lambda R, p: SE3(R, p).inverse().homogeneous(), [R1, p1], kind)
        assert rel_err(got, M1.inverse().homogeneous) < TOL
    assert rel_err(evaluate(lambda: SE3.identity().homogeneous(), [], "numpy"), np.eye(4)) == 0


# --- cross products ---------------------------------------------------------------------------


def test_motion_cross(kind, rng, pin):
    for _ in range(5):
        v, m = rng.normal(size=(6, 1)), rng.normal(size=(6, 1))
        ref = pin.Motion(v[:, 0]).cross(pin.Motion(m[:, 0])).vector
        assert rel_err(evaluate(motion_cross, [v, m], kind), col(ref)) < TOL
        assert rel_err(evaluate(lambda v, m: ca.mtimes(motion_cross_matrix(v), m), [v, m], kind), col(ref)) < TOL
        assert rel_err(evaluate(motion_cross_matrix, [v], kind), pin.Motion(v[:, 0]).action) < TOL


def test_force_cross(kind, rng, pin):
    for _ in range(5):
        v, f = rng.normal(size=(6, 1)), rng.normal(size=(6, 1))
        ref = pin.Motion(v[:, 0]).cross(pin.Force(f[:, 0])).vector
        assert rel_err(evaluate(force_cross, [v, f], kind), col(ref)) < TOL
        assert rel_err(evaluate(lambda v, f: ca.mtimes(force_cross_matrix(v), f), [v, f], kind), col(ref)) < TOL
        assert rel_err(evaluate(force_cross_matrix, [v], kind), pin.Motion(v[:, 0]).dualAction) < TOL
        # (f x-bar*) v = v x* f
        assert rel_err(evaluate(lambda f, v: ca.mtimes(force_bar_matrix(f), v), [f, v], kind), col(ref)) < TOL


def test_cross_products_act_on_sets(kind, rng, pin):
    v, X = rng.normal(size=6), rng.normal(size=(6, 4))
    got = evaluate(motion_cross, [col(v), X], kind)
    assert rel_err(got, np.column_stack([pin.Motion(v).cross(pin.Motion(x)).vector for x in X.T])) < TOL
    got = evaluate(force_cross, [col(v), X], kind)
    assert rel_err(got, np.column_stack([pin.Motion(v).cross(pin.Force(x)).vector for x in X.T])) < TOL


# --- inertias ---------------------------------------------------------------------------------


def _inertia_args(Y):
    """casrbd's stored form (m, h = m c, I about the origin) of a pin.Inertia."""
    return [np.array(Y.mass), Y.mass * Y.lever, Y.matrix()[3:, 3:]]


def test_inertia_from_com_matches_pinocchio(rng, pin):
    for _ in range(5):
        m, c, I_c, Y = random_inertia(rng, pin)
        ours = Inertia.from_com(m, c, I_c)
        assert rel_err(np.array(ours.matrix()), Y.matrix()) < TOL
        assert rel_err(ours.com, c) < TOL and rel_err(ours.inertia_com, I_c) < TOL
        assert rel_err(ours.h, m * c) < TOL


def test_inertia_times_motion(kind, rng, pin):
    for _ in range(5):
        Y = random_inertia(rng, pin)[3]
        X = rng.normal(size=(6, 3))
        got = evaluate(lambda m, h, I, X: Inertia(m, h, I).act(X), _inertia_args(Y) + [X], kind)
        assert rel_err(got, np.column_stack([(Y * pin.Motion(x)).vector for x in X.T])) < TOL
        got = evaluate(lambda m, h, I: Inertia(m, h, I).matrix(), _inertia_args(Y), kind)
        assert rel_err(got, Y.matrix()) < TOL


def test_inertia_sum(kind, rng, pin):
    Y1, Y2 = random_inertia(rng, pin)[3], random_inertia(rng, pin)[3]
    got = evaluate(
        lambda m1, h1, I1, m2, h2, I2: (Inertia(m1, h1, I1) + Inertia(m2, h2, I2)).matrix(),
        _inertia_args(Y1) + _inertia_args(Y2),
        kind,
    )
    assert rel_err(got, (Y1 + Y2).matrix()) < TOL


def test_se3_acts_on_inertia(kind, rng, pin):
    for _ in range(5):
        R, p, M = random_se3(rng, pin)
        Y = random_inertia(rng, pin)[3]
        ref = M.act(Y).matrix()
        got = evaluate(
            lambda R, p, m, h, I: SE3(R, p).act_inertia(Inertia(m, h, I)).matrix(), [R, p] + _inertia_args(Y), kind
        )
        assert rel_err(got, ref) < TOL
        got = evaluate(lambda R, p, Ym: SE3(R, p).act_inertia(Ym), [R, p, Y.matrix()], kind)  # 6 x 6 form
        assert rel_err(got, ref) < TOL


def dense_motion_matrix(R, p):
    """The 6 x 6 matrix of SE3(R, p).act_motion, built with numpy alone."""
    P = np.array([[0, -p[2], p[1]], [p[2], 0, -p[0]], [-p[1], p[0], 0]])
    return np.block([[R, P @ R], [np.zeros((3, 3)), R]])


def test_se3_acts_on_symmetric_matrix(kind, rng):
    """The 6 x 6 branch on a general symmetric matrix (an articulated inertia, not a rigid body's)."""
    for _ in range(5):
        R, p, _ = random_se3(rng)
        A = rng.normal(size=(6, 6))
        Y = A + A.T
        Xf = np.linalg.inv(dense_motion_matrix(R, p)).T  # force transform X* = X^-T
        got = evaluate(lambda R, p, Y: SE3(R, p).act_inertia(Y), [R, p, Y], kind)
        assert rel_err(got, Xf @ Y @ Xf.T) < TOL


def test_se3_chain(kind, rng):
    """A chain of placements acts as their product."""
    factors = [random_se3(rng)[:2] for _ in range(3)]
    X = np.linalg.multi_dot([dense_motion_matrix(R, p) for R, p in factors])
    Xf = np.linalg.inv(X).T
    M = rng.normal(size=(6, 4))
    A = rng.normal(size=(6, 6))
    Y = A + A.T

    def chain(*args):
        return SE3Chain([SE3(args[2 * k], args[2 * k + 1]) for k in range(3)])

    args = [x for f in factors for x in f]
    cases = [
        ("act_motion", M, X @ M),
        ("inv_act_motion", M, np.linalg.solve(X, M)),
        ("act_force", M, Xf @ M),
        ("inv_act_force", M, np.linalg.solve(Xf, M)),
        ("act_inertia", Y, Xf @ Y @ Xf.T),
    ]
    for method, x, ref in cases:
        got = evaluate(lambda *a, method=method: getattr(chain(*a[:-1]), method)(a[-1]), args + [x], kind)
        assert rel_err(got, ref) < TOL, method
    got = evaluate(lambda *a: chain(*a).se3().homogeneous(), args, kind)
    H = np.linalg.multi_dot([np.block([[R, p.reshape(3, 1)], [np.zeros((1, 3)), 1]]) for R, p in factors])
    assert rel_err(got, H) < TOL


# --- rotations, exponentials and logarithms --------------------------------------------------


def random_unit_quaternion(rng):
    u = rng.normal(size=4)
    return u / np.linalg.norm(u)


def axis_angle(rng, angle):
    axis = rng.normal(size=3)
    return angle * axis / np.linalg.norm(axis)


ANGLES = [0.0, 1e-9, 1e-5, 1e-3, 0.00999, 0.01001, 0.3, 1.0, 2.0, 3.0, np.pi - 1e-3, np.pi - 1e-6]


def test_quaternion_matrix(kind, rng, pin):
    for _ in range(5):
        quat = random_unit_quaternion(rng)
        ref = pin.Quaternion(quat).matrix()  # coefficients [x, y, z, w]
        assert rel_err(evaluate(quaternion_matrix, [quat], kind), ref) < TOL
        assert rel_err(evaluate(quaternion_matrix, [3.7 * quat], kind), ref) < TOL  # any norm
        assert rel_err(evaluate(quaternion_matrix, [-0.2 * quat], kind), ref) < TOL


def test_quaternion_product(kind, rng, pin):
    for _ in range(5):
        a, b = random_unit_quaternion(rng), random_unit_quaternion(rng)
        ref = (pin.Quaternion(a) * pin.Quaternion(b)).coeffs()
        assert rel_err(evaluate(quaternion_product, [a, b], kind), col(ref)) < TOL


@pytest.mark.parametrize("angle", ANGLES)
def test_exp3(kind, angle, rng, pin):
    w = axis_angle(rng, angle)
    assert rel_err(evaluate(exp3, [w], kind), pin.exp3(w)) < TOL
    assert rel_err(evaluate(exp3_quaternion, [w], kind), col(pin.exp3_quat(w))) < TOL


@pytest.mark.parametrize("angle", ANGLES)
def test_se3_exp(kind, angle, rng, pin):
    nu = np.concatenate([rng.normal(size=3), axis_angle(rng, angle)])[:, None]  # a motion: a column
    M = pin.exp6(pin.Motion(nu[:, 0]))
    got = evaluate(lambda nu: ca.horzcat(*se3_exp(nu)), [nu], kind)
    assert rel_err(got, np.column_stack([M.rotation, M.translation])) < TOL


@pytest.mark.parametrize("angle", ANGLES)
def test_log3_quaternion(kind, angle, rng, pin):
    w = axis_angle(rng, angle)
    quat = pin.Quaternion(pin.exp3(w)).coeffs()
    ref = pin.log3(pin.exp3(w))
    assert rel_err(ref, w) < 1e-8  # the reference itself
    tol = TOL if angle < 3 else 1e-9  # near pi the rotation vector is ill-conditioned
    assert rel_err(evaluate(log3_quaternion, [quat], kind), col(ref)) < tol
    assert rel_err(evaluate(log3_quaternion, [-quat], kind), col(ref)) < tol  # double cover
    assert rel_err(evaluate(log3_quaternion, [2.5 * quat], kind), col(ref)) < tol  # any norm


@pytest.mark.parametrize("angle", ANGLES)
def test_se3_log_translation(kind, angle, rng, pin):
    w, p = axis_angle(rng, angle), rng.normal(size=3)
    ref = pin.log6(pin.SE3(pin.exp3(w), p))
    assert rel_err(ref.angular, w) < 1e-8
    tol = TOL if angle < 3 else 1e-8
    assert rel_err(evaluate(se3_log_translation, [w, p], kind), col(ref.linear)) < tol


# --- derivatives at zero rotation (where the formulas switch to Taylor series) ---------------

E3 = np.eye(3)
DERIVATIVES_AT_ZERO = {
    # d exp3_quaternion / dw at 0 = [I / 2; 0]
    "exp3_quaternion": (exp3_quaternion, np.zeros(3), np.vstack([E3 / 2, np.zeros((1, 3))])),
    # d vec(exp3) / dw_k at 0 = vec(skew(e_k))
    "exp3": (exp3, np.zeros(3), np.column_stack([skew(E3[k]).T.ravel() for k in range(3)])),
    # d translation(se3_exp) / d(v, w) at w = 0, v = (1, 2, 3): [I, -skew(v) / 2]
    "se3_exp translation": (
        lambda nu: se3_exp(nu)[1],
        np.array([1.0, 2, 3, 0, 0, 0]),
        np.hstack([E3, -skew(np.array([1.0, 2, 3])) / 2]),
    ),
    # log3_quaternion(x, y, z, w) = 2 (x, y, z) / w + O(|xyz|^3) near the identity
    "log3_quaternion": (log3_quaternion, np.array([0.0, 0, 0, 1]), np.hstack([2 * E3, np.zeros((3, 1))])),
    # d se3_log_translation / d(w, p) at w = 0, p = (1, 2, 3): [skew(p) / 2, I]
    "se3_log_translation": (
        lambda x: se3_log_translation(x[:3], x[3:]),
        np.array([0, 0, 0, 1.0, 2, 3]),
        np.hstack([skew(np.array([1.0, 2, 3])) / 2, E3]),
    ),
}


@pytest.mark.parametrize("name", list(DERIVATIVES_AT_ZERO))
def test_derivative_at_zero_rotation(name):
    """The exponentials and logarithms switch to Taylor series near zero rotation: their AD
    derivatives there must be finite and right (integrate and difference rely on them)."""
    fn, x0, expected = DERIVATIVES_AT_ZERO[name]
    x = ca.SX.sym("x", x0.size)
    J = np.array(ca.Function("J", [x], [ca.jacobian(ca.vec(fn(x)), x)])(x0))
    assert rel_err(J, expected) < TOL


# --- small dense solves -----------------------------------------------------------------------


@pytest.mark.parametrize("n, k", [(1, 1), (1, 4), (3, 1), (3, 6), (6, 1), (6, 6)])
def test_spd_solve(kind, n, k, rng):
    A = rng.normal(size=(n, n))
    D = A @ A.T + 0.1 * np.eye(n)
    B = rng.normal(size=(n, k))
    assert rel_err(evaluate(spd_solve, [D, B], kind), np.linalg.solve(D, B)) < 1e-10
