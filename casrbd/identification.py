"""Base (identifiable) inertial parameters, computed numerically from the joint-torque regressor.

tau = Y(q, v, a) pi (``casrbd.joint_torque_regressor``) does not determine every entry of pi: some
columns of Y vanish for every motion (a root link's parameters that only load the base) and others
are fixed combinations of the rest (a link's mass acting only through the joint before it). The base
parameters are a minimal set of combinations pi_b = B pi with Y pi = Y_b pi_b for every state, Y_b
the columns of Y for the independent parameters.

Numerical method (Gautier, "Numerical calculation of the base inertial parameters of robots",
Journal of Robotic Systems, 1991): stack W = [Y(x_1); ...; Y(x_K)] at random states x_k (random
configurations, normal velocities and accelerations; gravity included) and take its QR
decomposition with column pivoting (Businger & Golub), W P = Q R. The first r pivoted columns,
r the numerical rank (|R_kk| > rtol |R_11|), are independent: pi_1 = P_1^T pi; the others depend on
them linearly, W P_2 = W P_1 beta with beta = R_11^-1 R_12. Then Y pi = Y P_1 (pi_1 + beta pi_2), so

    pi_b = pi_1 + beta pi_2 = B pi,   B = P_1^T + beta P_2^T,   Y_b = Y[:, independent].

The random states make W generic: a dependence that holds at all of them (r x nv rows, several times
the number of columns) holds everywhere but on a set of measure zero. Which parameters are chosen as
the independent ones depends on the pivoting (the largest columns first); the base parameters' count
and the space they span do not. Glossary: W the stacked regressor, P_1, P_2 the selected and remaining
columns, R_11 (r x r), R_12 (r x (10 n - r)), beta (r x (10 n - r)), B (r x 10 n).
"""

from typing import NamedTuple

import numpy as np

from .api import random_configuration
from .functions import function
from .parameters import parameter_names

ZERO = 1e-12  # a column whose entries are all below ZERO times the largest entry of W is zero


def pivoted_qr(W):
    """(R, perm): Householder QR with column pivoting, W[:, perm] = Q R, |R_kk| non-increasing."""
    A = np.array(W, dtype=float)
    m, n = A.shape
    perm = np.arange(n)
    norms = np.sum(A * A, axis=0)
    for k in range(min(m, n)):
        p = k + int(np.argmax(norms[k:]))
        A[:, [k, p]], perm[[k, p]], norms[[k, p]] = A[:, [p, k]], perm[[p, k]], norms[[p, k]]
        x = A[k:, k]
        alpha = -np.copysign(np.linalg.norm(x), x[0])
        u = x.copy()
        u[0] -= alpha
        if np.dot(u, u) > 0:
            u /= np.linalg.norm(u)
            A[k:, k:] -= 2.0 * np.outer(u, u @ A[k:, k:])
        norms[k + 1 :] = np.sum(A[k + 1 :, k + 1 :] ** 2, axis=0)  # recomputed: no cancellation
    return np.triu(A[: min(m, n)]), perm


class BaseParameters(NamedTuple):
    """The base parameters of a model (see the module docstring).

    ``independent``: indices into pi of the r independent parameters (the columns of Y_b);
    ``dependent``: the others; ``beta``: r x (10 n - r) with pi_b = pi[independent] + beta pi[dependent];
    ``B``: r x 10 n with pi_b = B pi; ``names``: the independent parameters' names ('joint.m', ...),
    each base parameter being that one plus its combination of the dependent ones."""

    independent: tuple
    dependent: tuple
    beta: np.ndarray
    B: np.ndarray
    names: tuple

    @property
    def count(self):
        return len(self.independent)

    def of(self, pi):
        """pi_b = B pi (numbers or a casadi column)."""
        return self.B @ pi

    def regressor(self, Y):
        """Y_b: the independent columns of a regressor (or of a stack of them)."""
        return Y[:, list(self.independent)]


def stacked_regressor(model, qs, vs, as_):
    """W = [Y(q_1, v_1, a_1); ...]: the joint-torque regressors of several states stacked (numpy)."""
    Y = function(model, "joint_torque_regressor")
    return np.vstack([Y(q, v, a).full() for q, v, a in zip(qs, vs, as_)])


def base_parameters(model, samples=None, seed=0, rtol=1e-9):
    """The base parameters of ``model`` from the regressor at ``samples`` random states (default: enough
    for three times as many rows as parameters), with rank tolerance ``rtol`` relative to |R_11| after
    scaling every column of W to a largest entry of one."""
    n = 10 * model.njoints
    samples = samples or max(3, -(-3 * n // model.nv))
    rng = np.random.default_rng(seed)
    qs = [random_configuration(model, rng) for _ in range(samples)]
    W = stacked_regressor(model, qs, rng.normal(size=(samples, model.nv)), rng.normal(size=(samples, model.nv)))
    scale = np.max(np.abs(W), axis=0)
    # columns scaled to one, so that the rank does not depend on units; columns of rounding errors
    # only (a parameter that moves nothing, computed through rotations) are zero, not scaled up
    zero = scale <= ZERO * np.max(scale, initial=0.0)
    W[:, zero], scale[zero] = 0.0, 1.0
    R, perm = pivoted_qr(W / scale)
    d = np.abs(np.diag(R))
    r = int(np.sum(d > rtol * d[0])) if d.size and d[0] > 0 else 0
    ind, dep = perm[:r], perm[r:]
    # W_2 = W_1 beta, in the scaled columns: undo the scaling on both sides
    beta_scaled = np.linalg.solve(R[:r, :r], R[:r, r:])
    beta = beta_scaled * scale[dep][None, :] / scale[ind][:, None]
    order = np.argsort(ind)  # base parameters in the order of pi
    ind, beta = ind[order], beta[order]
    B = np.zeros((r, n))
    B[np.arange(r), ind] = 1.0
    B[:, dep] = beta
    names = parameter_names(model)
    return BaseParameters(tuple(int(i) for i in ind), tuple(int(i) for i in dep), beta, B, tuple(names[i] for i in ind))
