"""Joint models: one class per joint type behind a small interface.

Every joint answers nq, nv, its motion subspace ``S`` (a constant 6 x nv
matrix in the joint's own frame for every type here, so the bias term c_J
and dS/dq vanish as seed 003 section III-C notes), ``transform(q)`` (the
placement X_J of the child frame in the joint frame), ``integrate``,
``difference``, ``neutral`` and ``random``. Configurations follow Pinocchio:
free-flyer q = [x y z qx qy qz qw] with v = [linear; angular] in the local
frame, spherical q = [qx qy qz qw], planar q = [x y cos(th) sin(th)], and a
continuous joint is one unbounded angle (nq = nv = 1).

Quaternion and (cos, sin) joints normalise their configuration inside
``transform``, so the dynamics do not depend on its norm.
"""
import casadi as ca
import numpy as np

from .spatial import (SE3, Inertia, exp3_quaternion, log3_quaternion, quaternion_matrix,
                      quaternion_product, se3_exp, se3_log_translation, skew)


class Joint:
    """A joint and the body it carries.

    ``parent`` is the index of the parent joint in ``model.joints`` (-1 for
    the world), ``placement`` the joint frame in the parent joint's frame at
    q = neutral, ``inertia`` the body's inertia in the joint frame (fixed
    children merged in). ``idx_q`` and ``idx_v`` are set by the model.
    """

    type = None
    nq = nv = 0
    normalized = slice(0, 0)  # the entries of q that transform() normalises

    def __init__(self, name, parent, placement, inertia=None, lower=None, upper=None):
        self.name = name
        self.parent = parent
        self.placement = placement
        self.inertia = inertia if inertia is not None else Inertia.zero()
        self.lower = None if lower is None else np.asarray(lower, dtype=float).reshape(self.nq)
        self.upper = None if upper is None else np.asarray(upper, dtype=float).reshape(self.nq)
        self.idx_q = self.idx_v = None

    def __repr__(self):
        return f"{type(self).__name__}({self.name!r}, parent={self.parent}, nq={self.nq}, nv={self.nv})"

    def integrate(self, q, v):
        return q + v

    def difference(self, q0, q1):
        return q1 - q0

    def tangent_map(self, q):
        """nv x nq derivative of the tangent coordinates delta (q' = q (+) delta) with
        respect to the raw configuration at q; it maps norm-changing directions to zero."""
        return ca.DM.eye(self.nq)

    def neutral(self):
        return np.zeros(self.nq)

    def random(self, rng):
        lo = np.full(self.nq, -np.pi) if self.lower is None else self.lower
        hi = np.full(self.nq, np.pi) if self.upper is None else self.upper
        lo = np.where(np.isfinite(lo), lo, -np.pi)
        hi = np.where(np.isfinite(hi), hi, np.pi)
        return rng.uniform(lo, hi)


class _Axial(Joint):
    """A one-dof joint along a unit ``axis`` of the joint frame; ``angular`` picks rotation or translation."""

    nq = nv = 1
    angular = True

    def __init__(self, name, parent, placement, axis, **kwargs):
        super().__init__(name, parent, placement, **kwargs)
        self.axis = np.asarray(axis, dtype=float).reshape(3)
        parts = [np.zeros(3), self.axis] if self.angular else [self.axis, np.zeros(3)]
        self.S = np.concatenate(parts).reshape(6, 1)


class Revolute(_Axial):
    """Rotation about a unit ``axis`` of the joint frame."""

    type = "revolute"

    def transform(self, q):
        # Rodrigues as cos(q) (I - a a^T) + sin(q) [a]x + a a^T: with numeric coefficients an
        # axis-aligned joint folds to the plain rotation matrix
        aaT = np.outer(self.axis, self.axis)
        K = np.array(skew(self.axis))
        return SE3(ca.cos(q[0]) * (np.eye(3) - aaT) + ca.sin(q[0]) * K + aaT, np.zeros(3))


class Continuous(Revolute):
    """An unbounded revolute joint: one angle, no limits."""

    type = "continuous"


class Prismatic(_Axial):
    """Translation along a unit ``axis`` of the joint frame."""

    type = "prismatic"
    angular = False

    def transform(self, q):
        return SE3(np.eye(3), self.axis * q[0])

    def random(self, rng):
        lo = -1.0 if self.lower is None or not np.isfinite(self.lower[0]) else self.lower[0]
        hi = 1.0 if self.upper is None or not np.isfinite(self.upper[0]) else self.upper[0]
        return rng.uniform([lo], [hi])


def _unit(x):
    return x / ca.norm_2(x)


def _random_quaternion(rng):
    u = rng.normal(size=4)
    return u / np.linalg.norm(u)


class Spherical(Joint):
    """Ball joint: q a quaternion [x y z w], v the local angular velocity."""

    type = "spherical"
    nq, nv = 4, 3
    normalized = slice(0, 4)
    S = np.vstack([np.zeros((3, 3)), np.eye(3)])

    def transform(self, q):
        return SE3(quaternion_matrix(q), np.zeros(3))

    def integrate(self, q, v):
        return quaternion_product(_unit(q), exp3_quaternion(v))

    def difference(self, q0, q1):
        return log3_quaternion(quaternion_product(_conjugate(_unit(q0)), _unit(q1)))

    def tangent_map(self, q):
        return _quaternion_tangent_map(q)

    def neutral(self):
        return np.array([0.0, 0, 0, 1])

    def random(self, rng):
        return _random_quaternion(rng)


def _conjugate(quat):
    return ca.vertcat(-quat[:3], quat[3])


def _quaternion_tangent_map(quat):
    """d delta / d quat where R(quat / |quat|) exp(delta) is the perturbed rotation:
    delta = 2 Im(u* (x) du) with u = quat / |quat|, which is (2 / |quat|^2) [w I - [v]x, -v] dquat."""
    v, w = quat[:3], quat[3]
    return 2 / ca.sumsqr(quat) * ca.horzcat(w * ca.DM.eye(3) - skew(v), -v)


class FreeFlyer(Joint):
    """Six-dof joint: q = [x y z qx qy qz qw], v = [linear; angular] in the local frame."""

    type = "floating"
    nq, nv = 7, 6
    normalized = slice(3, 7)
    S = np.eye(6)

    def transform(self, q):
        return SE3(quaternion_matrix(q[3:7]), q[:3])

    def integrate(self, q, v):
        quat = _unit(q[3:7])
        _, dp = se3_exp(v)
        p = q[:3] + ca.mtimes(quaternion_matrix(quat), dp)
        return ca.vertcat(p, quaternion_product(quat, exp3_quaternion(v[3:])))

    def difference(self, q0, q1):
        quat0 = _unit(q0[3:7])
        w = log3_quaternion(quaternion_product(_conjugate(quat0), _unit(q1[3:7])))
        p = ca.mtimes(quaternion_matrix(quat0).T, q1[:3] - q0[:3])
        return ca.vertcat(se3_log_translation(w, p), w)

    def tangent_map(self, q):
        R = quaternion_matrix(q[3:7])
        return ca.blockcat([[R.T, ca.DM(3, 4)], [ca.DM(3, 3), _quaternion_tangent_map(q[3:7])]])

    def neutral(self):
        return np.array([0.0, 0, 0, 0, 0, 0, 1])

    def random(self, rng):
        return np.concatenate([rng.uniform(-1, 1, 3), _random_quaternion(rng)])


class Planar(Joint):
    """Motion in the joint frame's xy plane: q = [x y cos(th) sin(th)], v = [vx vy wz] local."""

    type = "planar"
    nq, nv = 4, 3
    normalized = slice(2, 4)
    S = np.zeros((6, 3))
    S[0, 0] = S[1, 1] = S[5, 2] = 1.0

    def transform(self, q):
        c, s = _cos_sin(q)
        return SE3(ca.vertcat(ca.horzcat(c, -s, 0), ca.horzcat(s, c, 0), ca.horzcat(0, 0, 1)),
                   ca.vertcat(q[0], q[1], 0))

    def integrate(self, q, v):
        c, s = _cos_sin(q)
        R, dp = se3_exp(ca.vertcat(v[0], v[1], 0, 0, 0, v[2]))
        return ca.vertcat(q[0] + c * dp[0] - s * dp[1], q[1] + s * dp[0] + c * dp[1],
                          c * ca.cos(v[2]) - s * ca.sin(v[2]), s * ca.cos(v[2]) + c * ca.sin(v[2]))

    def difference(self, q0, q1):
        c0, s0 = _cos_sin(q0)
        c1, s1 = _cos_sin(q1)
        th = ca.atan2(c0 * s1 - s0 * c1, c0 * c1 + s0 * s1)
        dx, dy = q1[0] - q0[0], q1[1] - q0[1]
        p = ca.vertcat(c0 * dx + s0 * dy, -s0 * dx + c0 * dy, 0)
        w = ca.vertcat(0, 0, th)
        t = se3_log_translation(w, p)
        return ca.vertcat(t[0], t[1], th)

    def tangent_map(self, q):
        c, s = _cos_sin(q)
        r2 = q[2] * q[2] + q[3] * q[3]
        return ca.vertcat(ca.horzcat(c, s, 0, 0), ca.horzcat(-s, c, 0, 0), ca.horzcat(0, 0, -q[3] / r2, q[2] / r2))

    def neutral(self):
        return np.array([0.0, 0, 1, 0])

    def random(self, rng):
        th = rng.uniform(-np.pi, np.pi)
        return np.array([*rng.uniform(-1, 1, 2), np.cos(th), np.sin(th)])


def _cos_sin(q):
    r = ca.sqrt(q[2] * q[2] + q[3] * q[3])
    return q[2] / r, q[3] / r


JOINT_TYPES = {cls.type: cls for cls in (Revolute, Continuous, Prismatic, Spherical, FreeFlyer, Planar)}
