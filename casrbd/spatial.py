"""Spatial algebra written once over casadi types (numpy, DM, SX, MX).

Conventions (Pinocchio's, pinned by tests/core/test_spatial.py):
- a motion (velocity, acceleration) is the 6-vector [linear; angular],
  a force is [force; torque]; a "set" is a 6 x k matrix of such columns,
  and every operation here acts column-wise on sets;
- ``SE3(R, p)`` is the placement of a frame B in a frame A: a point with
  coordinates x in B has coordinates R x + p in A; ``act_motion`` maps a
  motion expressed in B to A, ``inv_act_motion`` maps A to B (Featherstone's
  ``A_X_B`` and ``B_X_A``);
- an ``Inertia`` is stored as (mass m, first moment h = m c, rotational
  inertia I about the frame origin), so composite inertias add without
  divisions and act on motions with about 30 operations instead of 36
  multiply-adds of a dense 6 x 6 product.

Model constants are numpy arrays; casadi folds their zeros and ones when
they meet symbols, which keeps the graphs small.
"""

import casadi as ca
import numpy as np


def lin(x):
    return x[:3, :]


def ang(x):
    return x[3:, :]


def skew(a):
    """[a]x, the 3 x 3 matrix with [a]x b = a x b."""
    if (a.numel() if isinstance(a, (ca.SX, ca.MX, ca.DM)) else np.size(a)) != 3:
        # a set (3 x k) here would be read entry by entry, silently wrong
        raise ValueError(f"skew: a 3-vector expected, got shape {a.shape}")
    return ca.skew(a)  # one casadi call: the hot path of every cross product while graphs are built


def cross(a, B):
    """a x B for a 3-vector a and each column of the 3 x k matrix B."""
    return ca.mtimes(skew(a), B)


def symmetric(A):
    """The symmetric matrix with A's upper triangle: the lower entries are the same
    expressions, so a product known to be symmetric is computed once per pair."""
    return ca.triu(A) + ca.triu(A, False).T


def motion_cross(v, m):
    """v x m: the motion cross product (Featherstone's crm(v) m)."""
    w = ang(v)
    return ca.vertcat(cross(w, lin(m)) + cross(lin(v), ang(m)), cross(w, ang(m)))


def force_cross(v, f):
    """v x* f: the force cross product (Featherstone's crf(v) f)."""
    w = ang(v)
    return ca.vertcat(cross(w, lin(f)), cross(w, ang(f)) + cross(lin(v), lin(f)))


def motion_cross_matrix(v):
    """The 6 x 6 matrix of v x (.)."""
    w, vl = skew(ang(v)), skew(lin(v))
    return ca.blockcat([[w, vl], [ca.DM(3, 3), w]])


def force_cross_matrix(v):
    """The 6 x 6 matrix of v x* (.) = -(v x)^T."""
    return -motion_cross_matrix(v).T


def force_bar_matrix(f):
    """The 6 x 6 matrix of f x-bar* (.), defined by (f x-bar*) v = v x* f."""
    fl, fa = skew(lin(f)), skew(ang(f))
    return -ca.blockcat([[ca.DM(3, 3), fl], [fl, fa]])


class Frozen:
    """Fields set once by the constructor; assigning an attribute afterwards raises."""

    __slots__ = ()

    def __init__(self, **fields):
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable: cannot set {name!r}")


def constant(x):
    """A numeric array as a read-only float copy; a number or a casadi expression as it is."""
    if isinstance(x, (np.ndarray, list, tuple)):
        a = np.array(x, dtype=float)
        a.flags.writeable = False
        return a
    return x


def is_numeric(*xs):
    return not any(isinstance(x, (ca.SX, ca.MX)) for x in xs)


class SE3(Frozen):
    """A placement (R, p); see the module docstring for its meaning."""

    __slots__ = ("R", "p")

    def __init__(self, R, p):
        super().__init__(R=constant(R), p=constant(p))

    @staticmethod
    def identity():
        return SE3(np.eye(3), np.zeros(3))

    def __mul__(self, other):
        return SE3(self.R @ other.R, self.p + _col(self.R @ other.p))

    def inverse(self):
        Rt = self.R.T
        return SE3(Rt, -_col(Rt @ self.p))

    def act_motion(self, m):
        w = ca.mtimes(self.R, ang(m))
        return ca.vertcat(ca.mtimes(self.R, lin(m)) + cross(self.p, w), w)

    def inv_act_motion(self, m):
        Rt = self.R.T
        return ca.vertcat(ca.mtimes(Rt, lin(m) - cross(self.p, ang(m))), ca.mtimes(Rt, ang(m)))

    def act_force(self, f):
        fl = ca.mtimes(self.R, lin(f))
        return ca.vertcat(fl, ca.mtimes(self.R, ang(f)) + cross(self.p, fl))

    def inv_act_force(self, f):
        Rt = self.R.T
        return ca.vertcat(ca.mtimes(Rt, lin(f)), ca.mtimes(Rt, ang(f) - cross(self.p, lin(f))))

    def act_inertia(self, Y):
        """An inertia of frame B (an ``Inertia`` or a 6 x 6 matrix) expressed in A."""
        if isinstance(Y, Inertia):
            h = ca.mtimes(self.R, Y.h)
            p = self.p if isinstance(self.p, (ca.SX, ca.MX, ca.DM)) else ca.DM(self.p)
            # parallel axis: [p]x[h]x + [h]x[p]x + m [p]x[p]x = u p^T + p u^T - 2 (p.u) E, u = h + m p / 2
            u = h + Y.mass / 2 * p
            up = ca.mtimes(u, p.T)
            I = ca.mtimes(ca.mtimes(self.R, Y.I), self.R.T) - up - up.T + 2 * ca.dot(p, u) * ca.DM.eye(3)
            return Inertia(Y.mass, h + Y.mass * _col(self.p), symmetric(I))
        return self._act_symmetric(Y)

    def _act_symmetric(self, Y):
        """X* Y X*^T for a symmetric 6 x 6 Y = [[A, B], [B^T, C]], block by block.

        X* = [[I, 0], [P, I]] diag(R, R) with P = [p]x: rotate the blocks, then
        shift; only upper triangles of the symmetric blocks are computed, about
        a third of the operations of two dense force transforms."""
        R, P = self.R, skew(self.p)
        A, B, C = Y[:3, :3], Y[:3, 3:], Y[3:, 3:]
        A = symmetric(ca.mtimes(ca.mtimes(R, A), R.T))
        B = ca.mtimes(ca.mtimes(R, B), R.T)
        C = ca.mtimes(ca.mtimes(R, C), R.T)
        # [[A, B - A P], [., C + P B - B^T P - P A P]], with P^T = -P
        B_A = B - ca.mtimes(A, P)
        C_A = symmetric(C + ca.mtimes(P, B_A) + ca.mtimes(P, B).T)
        return ca.blockcat([[A, B_A], [B_A.T, C_A]])

    def homogeneous(self):
        return ca.vertcat(ca.horzcat(self.R, self.p), ca.DM([[0, 0, 0, 1]]))


class SE3Chain(Frozen):
    """The placement X_1 X_2 ... X_k kept as its factors and applied one after the other:
    factors that rotate about a coordinate axis cost less, one at a time, than their dense product."""

    __slots__ = ("factors",)

    def __init__(self, factors):
        object.__setattr__(self, "factors", tuple(factors))

    def _apply(self, method, x, order):
        for X in order:
            x = getattr(X, method)(x)
        return x

    def act_motion(self, m):
        return self._apply("act_motion", m, reversed(self.factors))

    def inv_act_motion(self, m):
        return self._apply("inv_act_motion", m, self.factors)

    def act_force(self, f):
        return self._apply("act_force", f, reversed(self.factors))

    def inv_act_force(self, f):
        return self._apply("inv_act_force", f, self.factors)

    def act_inertia(self, Y):
        return self._apply("act_inertia", Y, reversed(self.factors))

    def se3(self):
        """The product as one SE3."""
        X = self.factors[0]
        for Y in self.factors[1:]:
            X = X * Y
        return X


class Inertia(Frozen):
    """A rigid-body spatial inertia (m, h = m c, I about the frame origin), numeric or symbolic."""

    __slots__ = ("mass", "h", "I")

    def __init__(self, mass, h, I):
        super().__init__(mass=mass, h=constant(h), I=constant(I))

    @staticmethod
    def from_com(mass, com, I_com):
        """From the mass, centre of mass and rotational inertia about the centre of mass."""
        if is_numeric(mass, com, I_com):
            com = np.asarray(com, dtype=float).reshape(3)
            C = np.array(skew(com))
            return Inertia(mass, mass * com, np.asarray(I_com, dtype=float) - mass * C @ C)
        C = skew(com)
        return Inertia(mass, mass * ca.reshape(com, 3, 1), I_com - mass * ca.mtimes(C, C))

    @staticmethod
    def from_dynamic_parameters(pi):
        """From the 10 dynamic parameters in Pinocchio's order (``Inertia.toDynamicParameters``):
        m, m c (3), then the rotational inertia about the frame origin Ixx, Ixy, Iyy, Ixz, Iyz, Izz."""
        xx, xy, yy, xz, yz, zz = (pi[k] for k in range(4, 10))
        if is_numeric(pi):
            pi = np.asarray(pi, dtype=float).reshape(10)
            I = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]], dtype=float)
            return Inertia(pi[0], pi[1:4], I)
        I = ca.vertcat(ca.horzcat(xx, xy, xz), ca.horzcat(xy, yy, yz), ca.horzcat(xz, yz, zz))
        return Inertia(pi[0], pi[1:4], I)

    def dynamic_parameters(self):
        """The 10 dynamic parameters (see ``from_dynamic_parameters``) as a column (numpy (10,) if numeric)."""
        I, h = self.I, self.h
        entries = [self.mass, h[0], h[1], h[2], I[0, 0], I[0, 1], I[1, 1], I[0, 2], I[1, 2], I[2, 2]]
        if is_numeric(self.mass, h, I):
            return np.array([float(x) for x in entries])
        return ca.vertcat(*entries)

    @staticmethod
    def zero():
        return Inertia(0.0, np.zeros(3), np.zeros((3, 3)))

    def __add__(self, other):
        return Inertia(self.mass + other.mass, self.h + other.h, self.I + other.I)

    @property
    def com(self):
        return self.h / self.mass

    @property
    def inertia_com(self):
        """Rotational inertia about the centre of mass (numeric inertias only)."""
        C = np.array(skew(self.com))
        return self.I + self.mass * C @ C

    def act(self, m):
        """I m: the momentum (force) of the motion (set) m."""
        v, w = lin(m), ang(m)
        return ca.vertcat(self.mass * v - cross(self.h, w), ca.mtimes(self.I, w) + cross(self.h, v))

    def matrix(self):
        H = skew(self.h)
        return ca.blockcat([[self.mass * ca.DM.eye(3), -H], [H, self.I]])


def _col(x):
    """A 3-vector as numpy (3,) when numeric, else as a casadi column."""
    return x.reshape(3) if isinstance(x, np.ndarray) else x


def quaternion_matrix(quat):
    """Rotation matrix of the quaternion [x, y, z, w], of any nonzero norm.

    Dividing by the squared norm makes R(q) = R(q / |q|) without a square
    root, so the dynamics do not depend on the quaternion's norm."""
    x, y, z, w = quat[0], quat[1], quat[2], quat[3]
    s = 2 / (x * x + y * y + z * z + w * w)
    return ca.vertcat(
        ca.horzcat(1 - s * (y * y + z * z), s * (x * y - z * w), s * (x * z + y * w)),
        ca.horzcat(s * (x * y + z * w), 1 - s * (x * x + z * z), s * (y * z - x * w)),
        ca.horzcat(s * (x * z - y * w), s * (y * z + x * w), 1 - s * (x * x + y * y)),
    )


def quaternion_product(a, b):
    """Hamilton product a * b of quaternions [x, y, z, w]."""
    av, bv = a[:3], b[:3]
    return ca.vertcat(a[3] * bv + b[3] * av + cross(av, bv), a[3] * b[3] - ca.dot(av, bv))


def _small(t, exact, series, tol=1e-4):
    """exact(t) away from t = 0, its Taylor series below tol (t is a squared angle).

    The exact branch is evaluated at max(t, tol): casadi's if_else multiplies the branch it does
    not take by zero, and reverse-mode derivatives would meet 0 * inf there at t = 0."""
    return ca.if_else(t < tol, series, exact(ca.fmax(t, tol)))


def exp3_quaternion(w):
    """Unit quaternion of the rotation vector w."""
    t = ca.sumsqr(w)
    s = _small(t, lambda t: ca.sin(ca.sqrt(t) / 2) / ca.sqrt(t), 0.5 - t / 48 + t * t / 3840)
    # the series also for cos: d sqrt(t)/dt is infinite at t = 0
    return ca.vertcat(s * w, _small(t, lambda t: ca.cos(ca.sqrt(t) / 2), 1 - t / 8 + t * t / 384))


def _rodrigues_coefficients(t):
    a = _small(t, lambda t: ca.sin(ca.sqrt(t)) / ca.sqrt(t), 1 - t / 6 + t * t / 120)
    b = _small(t, lambda t: 2 * ca.sin(ca.sqrt(t) / 2) ** 2 / t, 0.5 - t / 24 + t * t / 720)
    return a, b


def exp3(w):
    """Rotation matrix of the rotation vector w (Rodrigues)."""
    a, b = _rodrigues_coefficients(ca.sumsqr(w))
    W = skew(w)
    return ca.DM.eye(3) + a * W + b * ca.mtimes(W, W)


def log3_quaternion(quat):
    """Rotation vector of the quaternion [x, y, z, w], with angle in [0, pi]."""
    v, w = quat[:3], quat[3]
    sign = ca.if_else(w < 0, -1, 1)
    aw = sign * w
    s2 = ca.sumsqr(v)
    k = _small(s2, lambda s2: 2 * ca.atan2(ca.sqrt(s2), aw) / ca.sqrt(s2), 2 / aw - 2 * s2 / (3 * aw**3), tol=1e-12)
    return sign * k * v


def se3_exp(nu):
    """exp of the twist nu = [v; w]: (R, p) of the placement reached after unit time."""
    v, w = lin(nu), ang(nu)
    t = ca.sumsqr(w)
    _, b = _rodrigues_coefficients(t)
    c = _small(t, lambda t: (ca.sqrt(t) - ca.sin(ca.sqrt(t))) / (t * ca.sqrt(t)), 1.0 / 6 - t / 120 + t * t / 5040)
    W = skew(w)
    return exp3(w), ca.mtimes(ca.DM.eye(3) + b * W + c * ca.mtimes(W, W), v)


def se3_log_translation(w, p):
    """Linear part of log6 for rotation vector w and translation p: V(w)^-1 p."""
    t = ca.sumsqr(w)

    def exact(t):
        th = ca.sqrt(t)
        return (1 - th * ca.sin(th) / (4 * ca.sin(th / 2) ** 2)) / t

    d = _small(t, exact, 1.0 / 12 + t / 720 + t * t / 30240)
    W = skew(w)
    return p - 0.5 * ca.mtimes(W, p) + d * ca.mtimes(W, ca.mtimes(W, p))


def log3(R):
    """The rotation vector of R, for angles below pi."""
    w = ca.vertcat(R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1])
    s2 = ca.sumsqr(w) / 4  # sin^2
    c = (R[0, 0] + R[1, 1] + R[2, 2] - 1) / 2
    s = ca.sqrt(s2)
    # theta / (2 sin theta) in sin^2 near theta = 0 (not near pi, where c < 0)
    k = ca.if_else(ca.logic_and(s2 < 1e-6, c > 0), 0.5 + s2 / 12 + 3 * s2 * s2 / 80, ca.atan2(s, c) / (2 * s))
    return k * w


def log6(X):
    """The spatial motion [v; w] with exp6 = X, for rotation angles below pi."""
    w = log3(X.R)
    return ca.vertcat(se3_log_translation(w, X.p), w)


def spd_solve(D, B):
    """D^-1 B for a small symmetric positive definite D, by LDL^T on its entries.

    Written on entries so that SX, MX and DM expand alike (casadi's own
    linear solvers differ per type), and 1-dof joints get a plain division."""
    D, B = ca.DM(D) if isinstance(D, np.ndarray) else D, ca.DM(B) if isinstance(B, np.ndarray) else B
    n = D.shape[0]
    if n == 1:
        return B / D[0, 0]
    L, d = {}, []
    for j in range(n):
        d.append(D[j, j] - sum(L[j, k] * L[j, k] * d[k] for k in range(j)))
        for i in range(j + 1, n):
            L[i, j] = (D[i, j] - sum(L[i, k] * L[j, k] * d[k] for k in range(j))) / d[j]
    y = []
    for i in range(n):
        y.append(B[i, :] - sum(L[i, k] * y[k] for k in range(i)))
    x = [None] * n
    for i in reversed(range(n)):
        x[i] = y[i] / d[i] - sum(L[k, i] * x[k] for k in range(i + 1, n))
    return ca.vertcat(*x)
