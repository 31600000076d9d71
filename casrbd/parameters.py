"""Inertial parameters: checks, physical consistency and a smooth physically consistent parametrization.

A body's inertial parameters, in Pinocchio's order (``Inertia.toDynamicParameters``), are
pi = (m, h_x, h_y, h_z, Ixx, Ixy, Iyy, Ixz, Iyz, Izz): the mass, the first moment h = m c and the
rotational inertia about the body's joint frame; a model's pi stacks them in ``model.joints`` order
(10 per body), as the input ``pi`` of ``casrbd.function(model, name, parameters=True)``.

Physical consistency (Wensing, Kim & Slotine, "Linear Matrix Inequalities for Physically Consistent
Inertial Parameter Identification: A Statistical Perspective on the Mass Distribution", RA-L 2018):
pi belongs to a rigid body with a positive mass density exactly when its pseudo-inertia

    J = [[Sigma, h], [h^T, m]],   Sigma = int x x^T dm = tr(I)/2 * 1 - I   (frame of the joint)

is positive definite (``pseudo_inertia``); this implies m > 0 and the triangle inequalities of the
central principal moments, and is stronger. ``pseudo_inertia_pivots`` gives its LDL^T pivots
(m first, then those of the central second moment Sigma - h h^T / m), all positive exactly when
J is positive definite: as constraints ``pivots >= eps`` of an Opti problem.

The log-Cholesky parametrization (Rucker & Wensing, "Smooth Parameterization of Rigid-Body Inertia",
RA-L 2022) maps 10 free numbers theta = (alpha, d1, d2, d3, s12, s23, s13, t1, t2, t3) (Pinocchio's
``LogCholeskyParameters`` order) to J = U U^T with

    U = e^alpha [[e^d1, s12, s13, t1], [0, e^d2, s23, t2], [0, 0, e^d3, t3], [0, 0, 0, 1]],

which is positive definite for every theta, and every positive definite J has exactly one theta:
an unconstrained optimization over theta only meets physically consistent bodies
(``log_cholesky_to_parameters``, ``parameters_to_log_cholesky``).

Numeric range. pi grows as e^(2 alpha) (e^(2 d_k) + s^2 + t^2), which overflows float beyond about
e^709: numeric theta is refused (``ValueError`` naming the body and coordinate) unless it is finite,
with alpha and d_k within +-``LOG_RANGE`` (= 100: e^(+-400) bounds every entry of J, so pi is
finite and a body's mass e^(2 alpha) never rounds to 0) and s, t within +-``OFFSET_RANGE`` (= 1e20).
A physical body is far inside: alpha = log(mass) / 2, d_k the logarithms of ratios of lengths.
Symbolic theta is not checked: bound it in an optimization that could wander that far.

NaN in, NaN out, where no check is possible: ``pseudo_inertia_pivots`` and ``pseudo_inertia``
compute with what they get (a constraint function, not a check: a massless body gives a division by
zero, inf or NaN pivots). The Functions built with ``parameters=True`` that need M^-1 (aba, minverse,
the forward-dynamics derivatives, the contact dynamics) check their numeric calls instead: at a pi
where M(pi) is singular (a massless leaf body) they raise casadi's RuntimeError ("nan detected for
output a") rather than return NaN. Check numeric pi first with ``require_consistent`` (which names
the body), or keep an optimization inside the consistent set with the pivots or the log-Cholesky map.
Glossary: pi (10 k) parameters, theta (10 k) log-Cholesky coordinates, J (4 x 4) pseudo-inertia,
Sigma its 3 x 3 block.
"""

import casadi as ca
import numpy as np

from .spatial import Inertia, is_numeric

NAMES = ("m", "mc_x", "mc_y", "mc_z", "I_xx", "I_xy", "I_yy", "I_xz", "I_yz", "I_zz")
LOG_CHOLESKY_NAMES = ("alpha", "d1", "d2", "d3", "s12", "s23", "s13", "t1", "t2", "t3")
LOG_RANGE = 100.0  # |alpha|, |d_k| (see "Numeric range" above)
OFFSET_RANGE = 1e20  # |s_ij|, |t_k|


def _floats(what, x, expected):
    """x as a flat float array, conversion errors (strings, ragged lists, Python ints beyond float's
    range) raised as ValueError naming ``what`` and what was expected."""
    try:
        return np.asarray(x, dtype=float).reshape(-1)
    except (TypeError, ValueError, OverflowError) as e:
        raise ValueError(f"{what}: expected {expected}, got {type(x).__name__} ({e})") from None


def _symbolic(x):
    return isinstance(x, (ca.SX, ca.MX))


def parameter_names(model):
    """'joint.m', 'joint.mc_x', ... for the 10 njoints entries of a model's pi."""
    return [f"{name}.{p}" for name in model.names for p in NAMES]


def model_parameters(model):
    """The model's own pi (10 per body, ``model.joints`` order): numpy, or a casadi column if symbolic."""
    parts = [Y.dynamic_parameters() for Y in model.inertias]
    if any(_symbolic(p) for p in parts):
        return ca.vertcat(*parts)
    return np.concatenate(parts)


def body_parameters(model, pi, what="pi"):
    """pi split per body: a list of njoints 10-vectors (numpy, or casadi columns if symbolic).

    ``pi``: 10 njoints numbers (or a casadi column), or njoints groups of 10. Errors name the body
    whose parameters are missing, extra, or not finite."""
    n = model.njoints
    if _symbolic(pi):
        if pi.shape != (10 * n, 1):
            raise ValueError(
                f"{what}: model {model.name!r} takes 10 parameters per body, a column of {10 * n} "
                f"for its {n} bodies; got shape {pi.shape}"
            )
        return [pi[10 * j : 10 * j + 10] for j in range(n)]
    expected = f"10 numbers per body of model {model.name!r} ({10 * n} numbers, or {n} groups of 10)"
    if isinstance(pi, (list, tuple)) and len(pi) == n and all(np.ndim(p) >= 1 for p in pi):
        parts = [_floats(f"{what}: body {model.names[j]!r}", p, "10 numbers") for j, p in enumerate(pi)]
        for j, p in enumerate(parts):
            if p.size != 10:
                raise ValueError(f"{what}: body {model.names[j]!r} has {p.size} parameters, expected 10")
    else:
        x = _floats(what, pi, expected)
        if x.size != 10 * n:
            j = min(x.size // 10, n - 1)
            detail = (
                f"body {model.names[j]!r} (number {j}) gets {x.size - 10 * j} of its 10"
                if x.size < 10 * n
                else f"{x.size - 10 * n} entries are left after the last body {model.names[-1]!r}"
            )
            raise ValueError(
                f"{what}: model {model.name!r} takes 10 parameters per body ({10 * n} for {n} bodies, "
                f"model.joints order); got {x.size}: {detail}"
            )
        parts = [x[10 * j : 10 * j + 10] for j in range(n)]
    for j, p in enumerate(parts):
        if not np.all(np.isfinite(p)):
            bad = [NAMES[k] for k in np.flatnonzero(~np.isfinite(p))]
            raise ValueError(f"{what}: body {model.names[j]!r} has non-finite parameters {bad}")
    return parts


def _pseudo_inertia(p):
    I = ca.vertcat(ca.horzcat(p[4], p[5], p[7]), ca.horzcat(p[5], p[6], p[8]), ca.horzcat(p[7], p[8], p[9]))
    Sigma = ca.trace(I) / 2 * ca.DM.eye(3) - I
    return ca.blockcat([[Sigma, p[1:4]], [p[1:4].T, p[0]]])


def pseudo_inertia(pi):
    """J (4 x 4) of one body's 10 parameters: numpy for numbers, else a casadi matrix."""
    if is_numeric(pi):
        x = _floats("pseudo_inertia", pi, "the 10 parameters of one body")
        if x.size != 10:
            raise ValueError(f"pseudo_inertia: expected the 10 parameters of one body, got {x.size} numbers")
        return _pseudo_inertia(ca.DM(x)).full()
    return _pseudo_inertia(pi)


def parameters_from_pseudo_inertia(J):
    """The 10 parameters of a pseudo-inertia J: m = J_44, h = J[:3, 3], I = tr(Sigma) 1 - Sigma."""
    Sigma = J[:3, :3]
    I = ca.trace(Sigma) * ca.DM.eye(3) - Sigma
    return ca.vertcat(J[3, 3], J[0, 3], J[1, 3], J[2, 3], I[0, 0], I[0, 1], I[1, 1], I[0, 2], I[1, 2], I[2, 2])


def pseudo_inertia_pivots(pi):
    """4 pivots per body (a column of 4 k for 10 k parameters), all > 0 exactly when every body's J is
    positive definite: m, then the LDL^T pivots of the central second moment C = Sigma - h h^T / m.

    Use as constraints ``opti.subject_to(pseudo_inertia_pivots(pi) >= eps)`` (eps > 0 keeps a margin;
    the pivots have the units of m and of Sigma, kg and kg m^2). Numbers are not checked: NaN in,
    NaN out, and a massless body divides by zero."""
    numeric = is_numeric(pi)
    x = ca.DM(_floats("pseudo_inertia_pivots", pi, "10 parameters per body")) if numeric else pi
    out = []
    for j in range(x.numel() // 10):
        J = _pseudo_inertia(x[10 * j : 10 * j + 10])
        m, h = J[3, 3], J[:3, 3]
        C = J[:3, :3] - ca.mtimes(h, h.T) / m
        d1 = C[0, 0]
        l21, l31 = C[1, 0] / d1, C[2, 0] / d1
        d2 = C[1, 1] - l21 * l21 * d1
        l32 = (C[2, 1] - l31 * l21 * d1) / d2
        d3 = C[2, 2] - l31 * l31 * d1 - l32 * l32 * d2
        out += [m, d1, d2, d3]
    pivots = ca.vertcat(*out)
    return np.asarray(pivots.full()).reshape(-1) if numeric else pivots


def _log_cholesky_factor(theta):
    """U of one body's theta (see the module docstring)."""
    a, d1, d2, d3, s12, s23, s13, t1, t2, t3 = (theta[k] for k in range(10))
    U = ca.vertcat(
        ca.horzcat(ca.exp(d1), s12, s13, t1),
        ca.horzcat(0, ca.exp(d2), s23, t2),
        ca.horzcat(0, 0, ca.exp(d3), t3),
        ca.horzcat(0, 0, 0, 1),
    )
    return ca.exp(a) * U


def log_cholesky_to_parameters(theta):
    """pi (10 k) of log-Cholesky coordinates theta (10 k real numbers): J = U U^T per body.

    Numbers give numpy, within the numeric range of the module docstring (else a ValueError naming
    the body and coordinate); casadi symbols a casadi column (smooth: exponentials and products)."""
    numeric = is_numeric(theta)
    if numeric:
        theta = _floats("log_cholesky_to_parameters", theta, "10 log-Cholesky coordinates per body")
        _check_log_cholesky(theta)
    x = ca.DM(theta) if numeric else theta
    if x.numel() % 10:
        raise ValueError(f"log-Cholesky coordinates come in groups of 10 per body; got {x.numel()} numbers")
    pi = []
    for j in range(x.numel() // 10):
        U = _log_cholesky_factor(x[10 * j : 10 * j + 10])
        pi.append(parameters_from_pseudo_inertia(ca.mtimes(U, U.T)))
    pi = ca.vertcat(*pi)
    return np.asarray(pi.full()).reshape(-1) if numeric else pi


def _check_log_cholesky(theta, what="log_cholesky_to_parameters"):
    for k, x in enumerate(theta[: theta.size - theta.size % 10]):
        name, bound = LOG_CHOLESKY_NAMES[k % 10], LOG_RANGE if k % 10 < 4 else OFFSET_RANGE
        if not abs(x) <= bound:  # NaN fails too
            raise ValueError(
                f"{what}: body {k // 10} has {name} = {float(x)!r} (entry {k}); expected a finite "
                f"number within +-{bound:g}, beyond which the parameters overflow (casrbd.parameters, numeric range)"
            )


def inconsistent_bodies(model, pi, tol=0.0):
    """[(body name, smallest eigenvalue of J)] of the bodies whose J has an eigenvalue <= tol."""
    out = []
    for name, p in zip(model.names, body_parameters(model, pi)):
        e = float(np.linalg.eigvalsh(pseudo_inertia(p)).min())
        if not e > tol:
            out.append((name, e))
    return out


def require_consistent(model, pi, what="pi", tol=0.0):
    """Raise ValueError naming the first body of ``pi`` that is not physically consistent."""
    bad = inconsistent_bodies(model, pi, tol)
    if bad:
        name, e = bad[0]
        p = body_parameters(model, pi)[model.joint_index(name)]
        raise ValueError(
            f"{what}: body {name!r} of model {model.name!r} is not physically consistent: its pseudo-inertia "
            f"has the eigenvalue {e:.3g} <= {tol:g} (mass {p[0]:.6g}; a negative mass or moments that violate "
            f"the triangle inequalities do this)" + (f"; also {[b for b, _ in bad[1:]]}" if len(bad) > 1 else "")
        )


def parameters_to_log_cholesky(model, pi):
    """theta (10 njoints) of a model's numeric pi, every body physically consistent and theta within
    the numeric range of the module docstring (else a ValueError naming the body): U is the
    upper-triangular factor of J = U U^T (Cholesky of J reversed)."""
    require_consistent(model, pi, "parameters_to_log_cholesky")
    out = []
    flip = np.eye(4)[::-1]
    for p in body_parameters(model, pi):
        L = np.linalg.cholesky(flip @ pseudo_inertia(p) @ flip)
        U = flip @ L @ flip
        e = U[3, 3]
        out.append([np.log(e), *np.log(np.diag(U)[:3] / e), U[0, 1] / e, U[1, 2] / e, U[0, 2] / e, *(U[:3, 3] / e)])
    theta = np.concatenate(out)
    _check_log_cholesky(theta, "parameters_to_log_cholesky")  # pi beyond the range the inverse map covers
    return theta


def with_parameters(model, pi, consistent=True):
    """The model with the bodies of ``pi`` (10 per body, numbers or casadi symbols).

    ``consistent``: refuse (ValueError naming the body) numeric parameters that are not physically
    consistent, which aba and M^-1 need; a massless body (J = 0) is not, so models with massless links
    need ``consistent=False``."""
    parts = body_parameters(model, pi, "with_parameters")
    if consistent and not _symbolic(pi):
        require_consistent(model, pi, "with_parameters")
    return model.with_inertias([Inertia.from_dynamic_parameters(p) for p in parts])
