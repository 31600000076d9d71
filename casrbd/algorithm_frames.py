"""Body frames chosen for cheap dynamics: joint axes along z, Denavit-Hartenberg placements.

The recursive algorithms give the same joint-space results in any body
frames fixed to the bodies; choosing them well is the classic way to cut
their cost (Featherstone, *Rigid Body Dynamics Algorithms*, 2008, ch. 10 on
efficiency; Khalil and Kleinfinger's modified Denavit-Hartenberg frames).
Each one-dof screw joint i (``joint.axis`` set) gets the frame G_i (in its
joint frame) with z along its axis, so its S is a unit column, and, when i
is the first screw child of a screw joint p, the origin and x axis of G_p on
the common normal of the two axes, so that the placement of G_i in G_p is
Tx(a) Rx(alpha) Tz(d) Rz(theta0) X_J(q_i): the screw Tz(d) Rz(theta0) about
the joint's own axis is absorbed into the joint (``Screw.along_z``), and
what remains rotates about x only, applied as its own factor instead of one
dense rotation. Other joints keep their frames (G_i = identity).

``Model`` computes these frames once when it is built; every algorithm runs
in them and converts what it takes or returns in joint frames (external
forces, frame placements, local Jacobians) through G. Glossary: G[i] the
algorithm frame of joint i in its joint frame, joints[i] the joint
expressed in G_i, placements[i] the constant placement of G_i in G_parent
with the joint's motion taken out, chained[i] True when that placement
rotates about x only.
"""

from typing import NamedTuple

import numpy as np

from .spatial import SE3, Inertia, is_numeric

TOL = 1e-12


class AlgorithmFrames(NamedTuple):
    G: tuple
    joints: tuple
    placements: tuple
    chained: tuple
    inertias: tuple
    frames: tuple  # placement of each model frame in its joint's algorithm frame


def _snap(x):
    """Entries within rounding of 0 or +-1 made exact, so that casadi folds them."""
    x = np.array(x, dtype=float)
    for v in (0.0, 1.0, -1.0):
        x[np.abs(x - v) < TOL] = v
    return x


def _axial(joint):
    return joint.axis is not None


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
    if abs(R[0, 2]) > TOL:  # the factors rebuild K to this accuracy
        return None
    alpha, theta0 = np.arctan2(-R[1, 2], R[2, 2]), np.arctan2(-R[0, 1], R[0, 0])
    d = np.dot(p, R[:, 2])
    if np.linalg.norm(p - np.array([p[0], 0, 0]) - d * R[:, 2]) > TOL:
        return None
    return p[0], alpha, d, theta0


def _numbers(*placements):
    return all(is_numeric(X.R, X.p) for X in placements)


def _choose_frames(model):
    joints, placements, children = model.joints, model.placements, model.children
    G = [SE3.identity() for _ in joints]
    for i, joint in enumerate(joints):
        if not _axial(joint):
            continue
        a, p = joint.axis, model.parents[i]
        first = _first_axial(joints, children, i)
        if first is not None and _numbers(placements[first]):  # on the common normal towards that axis
            T = placements[first]
            t, x = _normal(a, T.R @ joints[first].axis, np.asarray(T.p, dtype=float).reshape(3))
            G[i] = _frame(a, x, t * a)
        elif p >= 0 and _axial(joints[p]) and _first_axial(joints, children, p) == i and _numbers(placements[i]):
            # a leaf: the parent's common normal ends on this axis; origin and x there
            Gp, T = G[p], placements[i]
            x = T.R.T @ Gp.R[:, 0]
            origin = T.R.T @ (Gp.p - np.asarray(T.p, dtype=float).reshape(3))
            G[i] = _frame(a, x, np.dot(origin, a) * a)
        else:
            G[i] = _frame(a, _perpendicular(a), np.zeros(3))
    return [SE3(_snap(g.R), _snap(g.p)) for g in G]


def _snapped(X):
    return SE3(_snap(X.R), _snap(X.p)) if _numbers(X) else X


def _snapped_inertia(Y):
    if not is_numeric(Y.mass, Y.h, Y.I):
        return Y
    return Inertia(float(Y.mass), _snap(np.array(Y.h).reshape(3)), _snap(np.array(Y.I)))


def algorithm_frames(model):
    """The ``AlgorithmFrames`` of a model (see the module docstring)."""
    G = _choose_frames(model)
    joints, placements, chained, inertias = [], [], [], []
    for i, joint in enumerate(model.joints):
        p = model.parents[i]
        K = _snapped((G[p] if p >= 0 else SE3.identity()).inverse() * model.placements[i] * G[i])
        dh = _dh(K) if _axial(joint) and p >= 0 and _axial(model.joints[p]) and _numbers(K) else None
        if dh is not None:
            a, alpha, d, theta0 = dh
            ca_, sa = _snap([np.cos(alpha), np.sin(alpha)])
            K = SE3(np.array([[1, 0, 0], [0, ca_, -sa], [0, sa, ca_]]), np.array([a, 0.0, 0.0]))
        elif _axial(joint):
            theta0 = d = 0.0
        joints.append(joint.along_z(theta0, d) if _axial(joint) else joint)
        placements.append(K)
        chained.append(dh is not None)
        inertias.append(_snapped_inertia(G[i].inverse().act_inertia(model.inertias[i])))
    frames = tuple(f.placement if f.joint < 0 else _snapped(G[f.joint].inverse() * f.placement) for f in model.frames)
    return AlgorithmFrames(tuple(G), tuple(joints), tuple(placements), tuple(chained), tuple(inertias), frames)
