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

Then the identification itself: an exciting trajectory (``fourier_trajectory``) and the fit of all
parameters, physically consistent, from a prior (``consistent_fit``).
"""

from typing import NamedTuple

import casadi as ca
import numpy as np

from .api import random_configuration
from .functions import function
from .parameters import log_cholesky_to_parameters, parameter_names, pseudo_inertia

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


# ---- exciting trajectories and a physically consistent fit (examples/identification.py) ----
def fourier_trajectory(model, t, rng, harmonics=5, period=10.0, margin=0.8):
    """(q, v, a), each len(t) x nv, of a fixed-base model (nq = nv): a random finite Fourier series per joint
    (Swevers et al., IEEE T-RA 1997), q_i = q0_i + sum_l a_il sin(l w t) + b_il cos(l w t), w = 2 pi / period,
    scaled so that |q - q0| and |v| stay within ``margin`` of the half range and the velocity limit."""
    if model.nq != model.nv:
        raise ValueError(f"model {model.name!r}: fourier_trajectory takes a fixed-base model (nq = nv)")
    lo, hi = model.lower, model.upper
    n, w = lo.size, 2 * np.pi / period
    l = np.arange(1, harmonics + 1)
    A, B = rng.normal(size=(2, n, harmonics)) / l
    arg = w * np.outer(t, l)  # len(t) x harmonics
    s, c = np.sin(arg), np.cos(arg)
    dq = s @ A.T + c @ B.T
    v = w * ((c * l) @ A.T - (s * l) @ B.T)
    a = -(w**2) * ((s * l**2) @ A.T + (c * l**2) @ B.T)
    scale = margin * np.minimum((hi - lo) / 2 / np.abs(dq).max(0), model.velocity_limit / np.abs(v).max(0))
    return (lo + hi) / 2 + dq * scale, v * scale, a * scale


def log_cholesky_perturbation(theta, error, rng):
    """A random change of log-Cholesky coordinates ``theta`` (10 per body) that changes masses and rotational
    inertias by about ``error`` (relative) and centres of mass by about ``error`` / 10 m (a CAD model's errors)."""
    scale = np.empty_like(theta)
    for j in range(0, theta.size, 10):
        d = np.exp(theta[j + 1 : j + 4])
        scale[j : j + 4] = error / 2  # alpha, d: relative changes of sqrt(m) and of U's diagonal
        scale[j + 4 : j + 7] = error / 2 * np.sqrt(d[[0, 1, 0]] * d[[1, 2, 2]])  # s12, s23, s13
        scale[j + 7 : j + 10] = error / 10  # t = c, in m
    return scale * rng.normal(size=theta.size)


def entropic_divergence(theta, J0):
    """D(J || J0) = tr(J0^-1 J) - log det J + log det J0 - 4 >= 0 for J = J(theta), one body's pseudo-inertia in
    log-Cholesky coordinates theta; log det J = 2 (4 alpha + d1 + d2 + d3)."""
    J = pseudo_inertia(log_cholesky_to_parameters(theta))
    logdet = 2 * (4 * theta[0] + theta[1] + theta[2] + theta[3])
    return ca.trace(ca.mtimes(ca.DM(np.linalg.inv(J0)), J)) - logdet + np.linalg.slogdet(J0)[1] - 4


def consistent_fit(model, base, pi_b, information, theta_prior, gamma):
    """All 10 n parameters, physically consistent: (pi, IPOPT's stats) minimising over the log-Cholesky
    coordinates theta of every body (Rucker & Wensing, RA-L 2022) (B pi - pi_b)^T F (B pi - pi_b) / 2 plus
    ``gamma`` times each body's ``entropic_divergence`` from the prior ``theta_prior`` (Lee, Wensing & Park,
    IEEE T-RO 2020); pi_b the least-squares base parameters, F = W_b^T W_b / sigma^2 their ``information``
    matrix, B ``base.B``. The data term is |W pi - tau|^2 / (2 sigma^2) up to a constant (W pi = W_b B pi),
    without the long residual vector."""
    from .ocp.opti import solve_ipopt

    n = model.njoints
    opti = ca.Opti()
    theta = opti.variable(10 * n)
    e = ca.mtimes(ca.DM(base.B), log_cholesky_to_parameters(theta)) - pi_b
    J0 = [pseudo_inertia(log_cholesky_to_parameters(theta_prior[10 * j : 10 * j + 10])) for j in range(n)]
    prior = sum(entropic_divergence(theta[10 * j : 10 * j + 10], J0[j]) for j in range(n))
    opti.minimize(ca.bilin(ca.DM(information), e, e) / 2 + gamma * prior)
    opti.set_initial(theta, theta_prior)
    stats, value = solve_ipopt(opti, tol=1e-10)
    return log_cholesky_to_parameters(value(theta)), stats


def exciting_regressor(model, base, t, rng, candidates=10, period=10.0):
    """(condition number, W): the stacked regressor W over the times ``t`` of the ``fourier_trajectory`` (of
    ``period``) whose base regressor (``base``) is the best conditioned of ``candidates`` random ones."""
    best = None
    for _ in range(candidates):
        W = stacked_regressor(model, *fourier_trajectory(model, t, rng, period=period))
        cond = np.linalg.cond(base.regressor(W))
        if best is None or cond < best[0]:
            best = (cond, W)
    return best
