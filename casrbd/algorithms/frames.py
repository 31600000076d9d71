"""Body frames chosen for cheap dynamics: joint axes along z, Denavit-Hartenberg placements.

The recursive algorithms give the same joint-space results in any body
frames fixed to the bodies; choosing them well is the classic way to cut
their cost (Featherstone RBDA ch. 10 on efficiency; Khalil and
Kleinfinger's modified Denavit-Hartenberg frames). Each 1-dof joint i
gets the frame G_i (in its joint frame) with z along its axis, so S_i is
a unit column, and, when i is the first 1-dof child of a 1-dof joint p,
the origin and x axis of G_p on the common normal of the two axes, so that
the placement of G_i in G_p is Tx(a) Rx(alpha) Tz(d) Rz(theta0 + q_i): two
rotations about coordinate axes, applied one after the other instead of
one dense rotation. Other joints keep their frames (G_i = identity).
Glossary: G[i] the frame of joint i, K[i] the constant placement of G_i in
G_p with the joint's motion taken out, dh[i] (a, alpha, d, theta0) when
K[i] has that form.
"""
from typing import NamedTuple

import casadi as ca
import numpy as np

from ..joints import Prismatic, Revolute
from ..spatial import SE3, Inertia, SE3Chain

TOL = 1e-12


class Frames(NamedTuple):
    G: list
    S: list
    inertia: list
    K: list
    dh: list


def _snap(x):
    """Entries within rounding of 0 or +-1 made exact, so that casadi folds them."""
    x = np.array(x, dtype=float)
    for v in (0.0, 1.0, -1.0):
        x[np.abs(x - v) < TOL] = v
    return x


def _axial(joint):
    return isinstance(joint, (Revolute, Prismatic))


def _first_axial(joints, children, i):
    return next((c for c in children[i] if _axial(joints[c])), None)


def _perpendicular(a):
    """A unit vector orthogonal to the unit vector a."""
    e = np.eye(3)[np.argmin(np.abs(a))]
    x = np.cross(a, e)
    return x / np.linalg.norm(x)


def _normal(a, b, pb):
    """(t, x): the common normal of the lines {t a} and {pb + s b} starts at t a along x.

    Nearly parallel lines have a far-away common normal, whose long lever arms
    would cost accuracy: they take the normal through the origin instead, and
    the placement between their frames stays a dense one."""
    n = np.cross(a, b)
    if np.linalg.norm(n) > 1e-9:
        n = n / np.linalg.norm(n)
        dist = np.dot(pb, n)
        # t a + dist n lies on the second line: solve t a - s b = pb - dist n
        t = np.linalg.lstsq(np.column_stack([a, -b]), pb - dist * n, rcond=None)[0][0]
        if abs(t) < 1 + 10 * np.linalg.norm(pb):
            return t, (n if dist >= 0 else -n)
    r = pb - np.dot(pb, a) * a
    return 0.0, (r / np.linalg.norm(r) if np.linalg.norm(r) > 1e-9 else _perpendicular(a))


def _frame(z, x, origin):
    """The frame with axis z at ``origin`` and x axis along x made orthogonal to z: a leaf's x, taken
    from its parent's frame, is orthogonal to its axis only when the parent's x is a common normal."""
    x = x - np.dot(x, z) * z
    x = x / np.linalg.norm(x) if np.linalg.norm(x) > 1e-6 else _perpendicular(z)
    return SE3(np.column_stack([x, np.cross(z, x), z]), origin)


def _dh(K):
    """(a, alpha, d, theta0) with K = Tx(a) Rx(alpha) Tz(d) Rz(theta0), or None."""
    R, p = K.R, K.p
    if abs(R[0, 2]) > TOL:   # the factors rebuild K to this accuracy
        return None
    alpha, theta0 = np.arctan2(-R[1, 2], R[2, 2]), np.arctan2(-R[0, 1], R[0, 0])
    d = np.dot(p, R[:, 2])
    if np.linalg.norm(p - np.array([p[0], 0, 0]) - d * R[:, 2]) > TOL:
        return None
    return p[0], alpha, d, theta0


def algorithm_frames(model):
    """The frames G, motion subspaces S, inertias and constant placements K of the module docstring."""
    joints = model.joints
    children = [[] for _ in joints]
    for i, j in enumerate(joints):
        if j.parent >= 0:
            children[j.parent].append(i)
    G = [SE3.identity() for _ in joints]
    for i, joint in enumerate(joints):
        if not _axial(joint):
            continue
        a = joint.axis
        first = _first_axial(joints, children, i)
        if first is not None:   # on the common normal towards the first 1-dof child's axis
            T = joints[first].placement
            t, x = _normal(a, T.R @ joints[first].axis, np.asarray(T.p, dtype=float).reshape(3))
            G[i] = _frame(a, x, t * a)
        elif joint.parent >= 0 and _axial(joints[joint.parent]) and _first_axial(joints, children, joint.parent) == i:
            # a leaf: the parent's common normal ends on this axis; origin and x there
            Gp, T = G[joint.parent], joint.placement
            x = T.R.T @ Gp.R[:, 0]
            origin = T.R.T @ (Gp.p - np.asarray(T.p, dtype=float).reshape(3))
            G[i] = _frame(a, x, np.dot(origin, a) * a)
        else:
            G[i] = _frame(a, _perpendicular(a), np.zeros(3))
    G = [SE3(_snap(g.R), _snap(g.p)) for g in G]
    S, inertia, K, dh = [], [], [], []
    for i, joint in enumerate(joints):
        Gi, Gp = G[i], (G[joint.parent] if joint.parent >= 0 else SE3.identity())
        Ginv = Gi.inverse()
        S.append(_snap(np.vstack([Ginv.R @ joint.S[:3], Ginv.R @ joint.S[3:]])) if _axial(joint) else joint.S)
        Y = Ginv.act_inertia(joint.inertia)
        inertia.append(Inertia(Y.mass, _snap(np.array(Y.h).reshape(3)), _snap(np.array(Y.I))))
        Ki = Gp.inverse() * joint.placement * Gi
        K.append(SE3(_snap(Ki.R), _snap(Ki.p)))
        dh.append(_dh(K[i]) if _axial(joint) and joint.parent >= 0 and _axial(joints[joint.parent]) else None)
    return Frames(G, S, inertia, K, dh)


def _rotation_z(c, s):
    return ca.vertcat(ca.horzcat(c, -s, 0), ca.horzcat(s, c, 0), ca.horzcat(0, 0, 1))


def placements(model, frames, q):
    """Placement of G_i in G_parent for every joint, as an SE3 or a chain of two."""
    X = []
    for i, joint in enumerate(model.joints):
        qi, K = q[model.q_slice(i)], frames.K[i]
        if not _axial(joint):
            X.append(K * joint.transform(qi))
            continue
        a, alpha, d, theta0 = frames.dh[i] if frames.dh[i] is not None else (0.0, 0.0, 0.0, 0.0)
        ct, st = _snap([np.cos(theta0), np.sin(theta0)])
        if isinstance(joint, Revolute):
            c, s = ca.cos(qi[0]), ca.sin(qi[0])
            J = SE3(_rotation_z(c * ct - s * st, s * ct + c * st), np.array([0.0, 0.0, d]))
        else:
            J = SE3(_rotation_z(ct, st), ca.vertcat(0, 0, d + qi[0]))
        if frames.dh[i] is None:
            X.append(K * J)
        else:
            ca_, sa = _snap([np.cos(alpha), np.sin(alpha)])
            X.append(SE3Chain([SE3(np.array([[1, 0, 0], [0, ca_, -sa], [0, sa, ca_]]), np.array([a, 0.0, 0.0])), J]))
    return X


def forces_to_frames(frames, f_ext):
    """External forces (joint frames) in the algorithm frames."""
    return None if f_ext is None else [G.inv_act_force(f) for G, f in zip(frames.G, f_ext)]
