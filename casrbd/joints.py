"""Joint models: one class per joint type behind one small interface, and their registry.

A joint is the kinematics of one joint alone; where it sits in the tree, its
name, limits and the body it carries belong to the model. Every joint
answers this protocol, and algorithms ask the joint, never its type:

  nq, nv              sizes of its configuration and its velocity
  type                its name in ``JOINT_TYPES``
  normalized          the entries of q that ``transform`` normalises (a quaternion, a
                      (cos, sin) pair), so that the dynamics do not depend on their norm
  constant_subspace   True when S does not depend on q, so that dS/dq and c_J vanish
                      (Carpentier & Mansard 2018, section III-C); the analytical
                      derivative algorithms require it
  axis                the unit axis of a one-dof screw joint (rotation about and/or
                      translation along one fixed line through the joint origin), else
                      None; the algorithm frames put their z axis along it (``along_z``)
  full_motion         True when S is the 6 x 6 identity (a free flyer): a tree under such
                      a root can be worked in the root body's frame
  transform(q)        X_J(q), the placement of the child frame in the joint frame
  motion_subspace(q)  S(q), 6 x nv, in the child frame (q unused when constant)
  bias(q, v)          c_J = dS/dt v, the velocity-product acceleration of the joint alone
  integrate(q, v), difference(q0, q1), tangent_map(q), neutral(), random(rng, lower, upper)
  sample(rng)         (class method) a joint of this type with random parameters, for synthetic trees

Configurations follow Pinocchio: free flyer q = [x y z qx qy qz qw] with v =
[linear; angular] in the local frame, spherical q = [qx qy qz qw], planar q =
[x y cos(th) sin(th)], universal q = [q1 q2] (rotation about axis1, then about
axis2 of the rotated frame); a revolute joint is one angle, bounded or not.

``JOINT_TYPES`` maps casrbd's names to the classes, and ``FORMAT_TYPES`` maps
the joint names of file formats to casrbd's (None: a fixed joint). Adding a
joint type means writing its class here, its registry entry, and its case in
the joint-contract tests (``tests/core/test_joints.py``).
"""

from typing import Optional

import casadi as ca
import numpy as np

from .spatial import (
    SE3,
    Frozen,
    constant,
    exp3_quaternion,
    log3_quaternion,
    quaternion_matrix,
    quaternion_product,
    se3_exp,
    se3_log_translation,
    skew,
)


class Joint(Frozen):
    """Defaults of the protocol for a joint whose q is a vector (q + v integrates)."""

    __slots__ = ()
    type: Optional[str] = None
    nq = nv = 0
    normalized = slice(0, 0)
    constant_subspace = True
    axis = None
    full_motion = False
    S = None  # the constant motion subspace, for constant_subspace joints

    def __repr__(self):
        fields = ", ".join(f"{k}={np.asarray(getattr(self, k)).tolist()}" for k in self.__slots__)
        return f"{type(self).__name__}({fields})"

    def motion_subspace(self, q=None):
        return self.S

    def bias(self, q, v):
        return ca.DM.zeros(6, 1)

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

    def random(self, rng, lower, upper):
        """Uniform within finite limits, else within [-pi, pi]."""
        return rng.uniform(np.where(np.isfinite(lower), lower, -np.pi), np.where(np.isfinite(upper), upper, np.pi))

    @classmethod
    def sample(cls, rng):
        return cls()


def random_axis(rng):
    a = rng.normal(size=3)
    return a / np.linalg.norm(a)


def rotation_about(axis, c, s):
    """Rodrigues' rotation about a unit axis by the angle of cosine c and sine s, written as
    c (I - a a^T) + s [a]x + a a^T: with a numeric axis along z it folds to the plain matrix."""
    aaT = np.outer(axis, axis)
    return c * (np.eye(3) - aaT) + s * np.array(skew(axis)) + aaT


class Screw(Joint):
    """One dof about and along a fixed unit axis: X_J(q) is the rotation by angle0 + rotation q
    about the axis and the translation shift0 + translation q along it.

    ``offset`` = (angle0, shift0) is the screw displacement at q = 0 (nonzero for joints
    in the algorithm frames, which absorb part of their placement into it)."""

    __slots__ = ("axis", "offset")
    nq = nv = 1
    rotation = translation = 0.0  # per unit of q

    def __init__(self, axis, offset=(0.0, 0.0)):
        axis = np.asarray(axis, dtype=float).reshape(3)
        norm = np.linalg.norm(axis)
        if not abs(norm - 1) < 1e-9:
            raise ValueError(f"{type(self).__name__} joint: axis {axis.tolist()} is not a unit vector")
        super().__init__(axis=constant(axis), offset=tuple(float(x) for x in offset))

    @property
    def S(self):
        return np.concatenate([self.translation * self.axis, self.rotation * self.axis]).reshape(6, 1)

    def transform(self, q):
        angle0, shift0 = self.offset
        c0, s0 = (round(x) if abs(x - round(x)) < 1e-12 else x for x in (np.cos(angle0), np.sin(angle0)))
        if not self.rotation:
            c, s = c0, s0
        elif c0 in (0, 1, -1):  # a quarter turn: the angle sum folds to sign changes
            c1, s1 = ca.cos(self.rotation * q[0]), ca.sin(self.rotation * q[0])
            c, s = c1 * c0 - s1 * s0, s1 * c0 + c1 * s0
        else:
            angle = self.rotation * q[0] + angle0
            c, s = ca.cos(angle), ca.sin(angle)
        shift = self.translation * q[0] + shift0 if self.translation else shift0
        return SE3(rotation_about(self.axis, c, s), self.axis * shift)

    def along_z(self, angle, shift):
        """This joint in a frame with z along its axis and origin on it, after a screw
        displacement (angle, shift) about z."""
        return self._with(np.array([0.0, 0, 1]), (self.offset[0] + angle, self.offset[1] + shift))

    def _with(self, axis, offset):
        return type(self)(axis, offset)

    @classmethod
    def sample(cls, rng):
        return cls(random_axis(rng))


class Revolute(Screw):
    """Rotation about a unit axis of the joint frame (URDF revolute and continuous)."""

    __slots__ = ()
    type = "revolute"
    rotation = 1.0


class Prismatic(Screw):
    """Translation along a unit axis of the joint frame."""

    __slots__ = ()
    type = "prismatic"
    translation = 1.0

    def random(self, rng, lower, upper):
        """Uniform within finite limits, else within [-1, 1]."""
        return rng.uniform(np.where(np.isfinite(lower), lower, -1.0), np.where(np.isfinite(upper), upper, 1.0))


class Helical(Screw):
    """Rotation about a unit axis with translation ``pitch`` q along it (Pinocchio's helical joint)."""

    __slots__ = ("pitch",)
    type = "helical"
    rotation = 1.0

    def __init__(self, axis, pitch, offset=(0.0, 0.0)):
        object.__setattr__(self, "pitch", float(pitch))
        super().__init__(axis, offset)

    @property
    def translation(self):
        return self.pitch

    def _with(self, axis, offset):
        return Helical(axis, self.pitch, offset)

    @classmethod
    def sample(cls, rng):
        return cls(random_axis(rng), rng.uniform(-0.2, 0.2))


def _unit(x):
    return x / ca.norm_2(x)


def _random_quaternion(rng):
    u = rng.normal(size=4)
    return u / np.linalg.norm(u)


def _conjugate(quat):
    return ca.vertcat(-quat[:3], quat[3])


def _quaternion_tangent_map(quat):
    """d delta / d quat where R(quat / |quat|) exp(delta) is the perturbed rotation:
    delta = 2 Im(u* (x) du) with u = quat / |quat|, which is (2 / |quat|^2) [w I - [v]x, -v] dquat."""
    v, w = quat[:3], quat[3]
    return 2 / ca.sumsqr(quat) * ca.horzcat(w * ca.DM.eye(3) - skew(v), -v)


class Spherical(Joint):
    """Ball joint: q a quaternion [x y z w], v the local angular velocity."""

    __slots__ = ()
    type = "spherical"
    nq, nv = 4, 3
    normalized = slice(0, 4)
    S = constant(np.vstack([np.zeros((3, 3)), np.eye(3)]))

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

    def random(self, rng, lower, upper):
        return _random_quaternion(rng)


class FreeFlyer(Joint):
    """Six-dof joint: q = [x y z qx qy qz qw], v = [linear; angular] in the local frame."""

    __slots__ = ()
    type = "floating"
    nq, nv = 7, 6
    normalized = slice(3, 7)
    full_motion = True
    S = constant(np.eye(6))

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

    def random(self, rng, lower, upper):
        """Position uniform within finite limits, else within [-1, 1]; a uniformly random rotation."""
        lo, hi = lower[:3], upper[:3]
        p = rng.uniform(np.where(np.isfinite(lo), lo, -1.0), np.where(np.isfinite(hi), hi, 1.0))
        return np.concatenate([p, _random_quaternion(rng)])


def _cos_sin(q):
    r = ca.sqrt(q[2] * q[2] + q[3] * q[3])
    return q[2] / r, q[3] / r


class Planar(Joint):
    """Motion in the joint frame's xy plane: q = [x y cos(th) sin(th)], v = [vx vy wz] local."""

    __slots__ = ()
    type = "planar"
    nq, nv = 4, 3
    normalized = slice(2, 4)
    S = constant([[1.0, 0, 0], [0, 1, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 1]])

    def transform(self, q):
        c, s = _cos_sin(q)
        return SE3(rotation_about(np.array([0.0, 0, 1]), c, s), ca.vertcat(q[0], q[1], 0))

    def integrate(self, q, v):
        c, s = _cos_sin(q)
        _, dp = se3_exp(ca.vertcat(v[0], v[1], 0, 0, 0, v[2]))
        return ca.vertcat(
            q[0] + c * dp[0] - s * dp[1],
            q[1] + s * dp[0] + c * dp[1],
            c * ca.cos(v[2]) - s * ca.sin(v[2]),
            s * ca.cos(v[2]) + c * ca.sin(v[2]),
        )

    def difference(self, q0, q1):
        c0, s0 = _cos_sin(q0)
        c1, s1 = _cos_sin(q1)
        th = ca.atan2(c0 * s1 - s0 * c1, c0 * c1 + s0 * s1)
        dx, dy = q1[0] - q0[0], q1[1] - q0[1]
        p = ca.vertcat(c0 * dx + s0 * dy, -s0 * dx + c0 * dy, 0)
        t = se3_log_translation(ca.vertcat(0, 0, th), p)
        return ca.vertcat(t[0], t[1], th)

    def tangent_map(self, q):
        c, s = _cos_sin(q)
        r2 = q[2] * q[2] + q[3] * q[3]
        return ca.vertcat(ca.horzcat(c, s, 0, 0), ca.horzcat(-s, c, 0, 0), ca.horzcat(0, 0, -q[3] / r2, q[2] / r2))

    def neutral(self):
        return np.array([0.0, 0, 1, 0])

    def random(self, rng, lower, upper):
        """Position uniform within finite limits, else within [-1, 1]; a uniformly random angle."""
        lo, hi = lower[:2], upper[:2]
        p = rng.uniform(np.where(np.isfinite(lo), lo, -1.0), np.where(np.isfinite(hi), hi, 1.0))
        th = rng.uniform(-np.pi, np.pi)
        return np.array([*p, np.cos(th), np.sin(th)])


class Universal(Joint):
    """Two rotations: by q1 about ``axis1``, then by q2 about ``axis2`` of the rotated frame
    (Pinocchio's universal joint; the axes are orthogonal unit vectors). Its S depends on q:
    S(q) = [0; R2(q2)^T axis1, axis2]."""

    __slots__ = ("axis1", "axis2")
    type = "universal"
    nq = nv = 2
    constant_subspace = False

    def __init__(self, axis1, axis2):
        a1, a2 = (np.asarray(a, dtype=float).reshape(3) for a in (axis1, axis2))
        if not (abs(np.linalg.norm(a1) - 1) < 1e-9 and abs(np.linalg.norm(a2) - 1) < 1e-9 and abs(a1 @ a2) < 1e-9):
            raise ValueError(f"universal joint: axes {a1.tolist()} and {a2.tolist()} are not orthogonal unit vectors")
        super().__init__(axis1=constant(a1), axis2=constant(a2))

    @classmethod
    def sample(cls, rng):
        a1 = random_axis(rng)
        a2 = np.cross(a1, random_axis(rng))
        return cls(a1, a2 / np.linalg.norm(a2))

    def _rotation2(self, q):
        return rotation_about(self.axis2, ca.cos(q[1]), ca.sin(q[1]))

    def transform(self, q):
        R1 = rotation_about(self.axis1, ca.cos(q[0]), ca.sin(q[0]))
        return SE3(ca.mtimes(R1, self._rotation2(q)), np.zeros(3))

    def motion_subspace(self, q=None):
        w1 = ca.mtimes(self._rotation2(q).T, self.axis1)
        return ca.vertcat(ca.DM(3, 2), ca.horzcat(w1, self.axis2))

    def bias(self, q, v):
        # dS/dt v = d(R2^T a1)/dt qd1 = (R2^T a1) x a2 qd2 qd1, as dR2^T/dt = -[a2 qd2]x R2^T
        w1 = ca.mtimes(self._rotation2(q).T, self.axis1)
        return ca.vertcat(ca.DM(3, 1), ca.cross(w1, ca.DM(self.axis2)) * v[0] * v[1])


JOINT_TYPES = {cls.type: cls for cls in (Revolute, Prismatic, Helical, Spherical, FreeFlyer, Planar, Universal)}

# file format -> {the format's joint type: casrbd's, None for a fixed joint}
FORMAT_TYPES = {
    "urdf": {
        "revolute": "revolute",
        "continuous": "revolute",
        "prismatic": "prismatic",
        "fixed": None,
        "floating": "floating",
        "planar": "planar",
    },
    "mjcf": {"hinge": "revolute", "slide": "prismatic", "ball": "spherical", "free": "floating"},
}
