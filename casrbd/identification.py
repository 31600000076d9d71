"""Base (identifiable) inertial parameters, computed numerically from the joint-torque regressor.

tau = Y(q, v, a) pi (``casrbd.joint_torque_regressor``) does not determine every entry of pi: some
columns of Y vanish for every motion (a root link's parameters that only load the base) and others
are fixed combinations of the rest (a link's mass acting only through the joint before it). The base
parameters are a minimal set of combinations pi_b = B pi with Y pi = Y_b pi_b for every state, Y_b
the columns of Y for the independent parameters.

Numerical method (after Gautier, "Numerical calculation of the base inertial parameters of robots",
Journal of Robotic Systems, 1991, with a reproducible choice of columns): stack W = [Y(x_1); ...;
Y(x_K)] at random states x_k (random configurations, normal velocities and accelerations; gravity
included), every column scaled to a largest entry of one, and walk its columns in the order of pi:
a column is independent, and kept, when its distance to the span of the columns kept before it
exceeds ``rtol`` times its norm (Gram-Schmidt, orthogonalised twice); the others depend on the kept
ones, W_2 = W_1 beta (least squares). Then Y pi = Y_1 (pi_1 + beta pi_2), so

    pi_b = pi_1 + beta pi_2 = B pi,   B = P_1^T + beta P_2^T,   Y_b = Y[:, independent].

The rule for which parameters are "base": the first independent columns in pi's order (the pivot
columns of W's reduced row echelon form, i.e. the earliest body and, within a body, pi's order
m, mc, I). It is a property of the regressor, not of a factorisation: a column pivoting QR picks
among columns of equal norm by rounding, which differs between machines and LAPACK builds; here a
decision could only change for a column whose relative distance is within rounding of ``rtol``,
whereas a dependent column is at about 1e-15 and an independent one many orders above 1e-9.

The random states make W generic: a dependence that holds at all of them (r x nv rows, several times
the number of columns) holds everywhere but on a set of measure zero. Glossary: W the stacked
regressor, P_1, P_2 the selected and remaining columns, beta (r x (10 n - r)), B (r x 10 n).
"""

from typing import NamedTuple

import casadi as ca
import numpy as np

from .api import random_configuration
from .functions import function
from .parameters import parameter_names

ZERO = 1e-12  # a column whose entries are all below ZERO times the largest entry of W is zero


def first_independent_columns(W, rtol):
    """Indices of the columns of W that are not within ``rtol`` times their norm of the span of the
    columns before them (kept in index order; the basis of W's column space that comes first)."""
    Q, kept = np.zeros((W.shape[0], 0)), []
    for k in range(W.shape[1]):
        c = W[:, k]
        r = c - Q @ (Q.T @ c)
        r -= Q @ (Q.T @ r)  # a second pass: one Gram-Schmidt pass loses orthogonality to rounding
        d = np.linalg.norm(r)
        if d > rtol * np.linalg.norm(c):
            kept.append(k)
            Q = np.column_stack([Q, r / d])
    return kept


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
    """W = [Y(q_1, v_1, a_1); ...]: the joint-torque regressors of several states stacked (numpy), from
    one call of casadi's map over them."""
    columns = [ca.horzcat(*[ca.DM(x) for x in xs]) for xs in (qs, vs, as_)]
    n = columns[0].size2()
    Y = function(model, "joint_torque_regressor").map(n)(*columns).full()  # Y_1, ..., Y_n side by side
    return Y.reshape(Y.shape[0], n, -1).transpose(1, 0, 2).reshape(n * Y.shape[0], -1)


def base_parameters(model, samples=None, seed=0, rtol=1e-9):
    """The base parameters of ``model`` from the regressor at ``samples`` random states (default: enough
    for three times as many rows as parameters): the first independent columns in pi's order (see the
    module docstring), a column counting as dependent within ``rtol`` times its norm after every column
    of W is scaled to a largest entry of one. Deterministic: ``seed`` fixes the states."""
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
    Ws = W / scale
    ind = np.array(first_independent_columns(Ws, rtol), dtype=int)
    dep = np.setdiff1d(np.arange(n), ind)
    r = ind.size
    # W_2 = W_1 beta, in the scaled columns: undo the scaling on both sides
    beta_scaled = np.linalg.lstsq(Ws[:, ind], Ws[:, dep], rcond=None)[0]
    beta = beta_scaled * scale[dep][None, :] / scale[ind][:, None]
    B = np.zeros((r, n))
    B[np.arange(r), ind] = 1.0
    B[:, dep] = beta
    names = parameter_names(model)
    return BaseParameters(tuple(int(i) for i in ind), tuple(int(i) for i in dep), beta, B, tuple(names[i] for i in ind))
