"""The contact-type contract (``casrbd/algorithms/contact/types.py``), for every type in ``CONTACT_TYPES``.

References, independent of the answers checked: casadi's AD of a type's own acceleration and position
error along a frame moved by a local twist R exp3(w), p + R v (the first order of its exponential),
and along symbolic velocities and accelerations; numpy's rotation of a spatial force; the duality of
the constrained motion rows and the force they carry (power select(m)^T f = m^T force(f)). A new
type is checked here once registered; its dynamics are checked in ``test_contact.py``.
"""

import casadi as ca
import numpy as np
import pytest

from casrbd.algorithms.contact.types import CONTACT_TYPES, ContactType
from casrbd.spatial import SE3, exp3
from casrbd.testing import rel_err

TYPES = sorted(CONTACT_TYPES)
N = 4  # columns of the Jacobians (dofs) in the synthetic checks


def random_placement(rng):
    R = np.array(exp3(rng.normal(size=3)))
    return SE3(R, rng.normal(size=3))


def anchor_of(t, X):
    """The anchor that holds the contact of type ``t`` at the placement X (4 x 4 or its origin)."""
    M = np.array(X.homogeneous())
    return tuple((M[:3, 3] if t.anchor_shape == (3,) else M).ravel())


def moved(X, twist):
    """X moved by the local twist [v; w], to first order: (R exp3(w), p + R v)."""
    return SE3(ca.mtimes(X.R, exp3(twist[3:])), X.p + ca.mtimes(X.R, twist[:3]))


def evaluate(expr, syms):
    return np.array(ca.Function("f", syms, [expr])(*[ca.DM.zeros(s.shape) for s in syms]))


@pytest.mark.parametrize("name", TYPES)
def test_registry_and_rows(name):
    t = CONTACT_TYPES[name]
    assert isinstance(t, ContactType) and t.name == name
    assert np.array(t.select(ca.DM.eye(6))).shape == (t.rows, 6)
    assert np.array(t.force(ca.DM.zeros(t.rows, 1))).shape == (6, 1)


@pytest.mark.parametrize("name", TYPES)
def test_force_is_the_dual_of_the_constrained_rows(name):
    t, rng = CONTACT_TYPES[name], np.random.default_rng(1)
    m, f = rng.normal(size=(6, 1)), rng.normal(size=(t.rows, 1))
    assert abs(float(ca.dot(t.select(ca.DM(m)), f)) - float(ca.dot(ca.DM(m), t.force(ca.DM(f))))) < 1e-13


@pytest.mark.parametrize("name", TYPES)
def test_acceleration_and_its_derivatives_by_ad(name):
    """gamma is the constrained rows' acceleration: d gamma / d a = select, and the derivatives that the
    contact KKT derivatives use are casadi's AD of gamma through v(x, y), a(x, y)."""
    t, rng = CONTACT_TYPES[name], np.random.default_rng(2)
    x, y = ca.SX.sym("x", N), ca.SX.sym("y", N)
    W = [ca.DM(rng.normal(size=(6, N))) for _ in range(5)]
    x0, y0 = rng.normal(size=N), rng.normal(size=N)
    v = ca.mtimes(W[0], y) + ca.sin(ca.mtimes(W[1], x)) * ca.mtimes(W[2], y)
    a = ca.mtimes(W[3], ca.cos(x)) + ca.sin(ca.mtimes(W[4], y)) * ca.mtimes(W[1], x)
    gamma = t.acceleration(v, a)
    J, dv_dq, da_dq, da_dv = ca.jacobian(v, y), ca.jacobian(v, x), ca.jacobian(a, x), ca.jacobian(a, y)
    got = t.acceleration_derivatives(v, J, dv_dq, da_dq, da_dv)
    f = ca.Function("f", [x, y], [*got, ca.jacobian(gamma, x), ca.jacobian(gamma, y)])
    dq, dv, dq_ad, dv_ad = (np.array(r) for r in f(x0, y0))
    assert rel_err(dq, dq_ad) < 1e-12 and rel_err(dv, dv_ad) < 1e-12
    A = ca.SX.sym("A", 6)
    select = ca.Function("s", [A], [ca.jacobian(t.acceleration(ca.DM(rng.normal(size=6)), A), A)])(0)
    assert rel_err(np.array(select), np.array(t.select(ca.DM.eye(6)))) < 1e-15


@pytest.mark.parametrize("name", TYPES)
def test_position_error_and_its_jacobian_by_ad(name):
    t, rng = CONTACT_TYPES[name], np.random.default_rng(3)
    X, A = random_placement(rng), random_placement(rng)
    assert np.abs(np.array(t.position_error(anchor_of(t, X), X))).max() < 1e-12  # at the anchor
    J, d = ca.DM(rng.normal(size=(6, N))), ca.SX.sym("d", N)
    anchor = anchor_of(t, A)
    ad = evaluate(ca.jacobian(t.position_error(anchor, moved(X, ca.mtimes(J, d))), d), [d])
    assert rel_err(np.array(t.position_error_jacobian(anchor, X, J)), ad) < 1e-10


@pytest.mark.parametrize("name", TYPES)
def test_forces_in_world_axes_and_their_turn(name):
    """to_world rotates the force the rows carry (and R^T undoes it), or refuses with a ValueError;
    world_turn is d(R f)/dq at fixed f for a frame turned by R exp3(J_ang dq), by AD."""
    t, rng = CONTACT_TYPES[name], np.random.default_rng(4)
    X, f = random_placement(rng), ca.DM(rng.normal(size=(t.rows, 1)))
    try:
        fw = t.to_world(X.R, f)
    except ValueError as e:  # rows that are not 3-vectors (a planar contact's) have no world axes
        pytest.skip(f"{name}: {e}")
    F = np.array(t.force(f)).ravel()
    assert rel_err(np.array(t.force(fw)).ravel(), np.r_[X.R @ F[:3], X.R @ F[3:]]) < 1e-14
    assert rel_err(np.array(t.to_world(X.R.T, fw)), np.array(f)) < 1e-14
    J, d = ca.DM(rng.normal(size=(6, N))), ca.SX.sym("d", N)
    ad = evaluate(ca.jacobian(t.to_world(moved(X, ca.mtimes(J, d)).R, f), d), [d])
    assert rel_err(np.array(ca.vertcat(*t.world_turn(fw, X.R, J))), ad) < 1e-12
