"""Contracted Hessians of inverse and forward dynamics, the adjoints (gradients) they
differentiate, and the Jacobians of those adjoints, q on the tangent space.

Inverse dynamics: the closed forms of ``adjoint.py`` (the second-order adjoint of Nganga &
Wensing, RA-L 2021, in IDSVA's world frame). Forward dynamics, derived here: a = aba(q, v, tau, f_ext) solves
r(x, a) = rnea(q, v, a, f_ext) - tau = 0 for x = (q, v, tau, f_ext), so with mu = -M^-1 lam the
gradient of lam^T a is a_x^T lam = r_x^T mu, the gradient of mu^T r at fixed a and mu; its
derivative through a(x) and mu(q) (d mu = -M^-1 d(M) mu) is
  Hess(lam^T aba) = Hess_x(mu^T r)|a + K^T a_x + a_x^T K,   K = [d(M mu)/dq, 0, 0, 0],
a_x = (da/dq, da/dv, da/dtau, da/df) = -M^-1 (dtau/dq, dtau/dv, -1, dtau/df) and d(M mu)/dq the
a-q block of Hess(mu^T rnea). With Y = M^-1 d(M mu)/dq (one sparse LTDL solve, ``ltdl.py``):
  qq: H_qq(mu) - Y^T dtau_dq - dtau_dq^T Y,  qv: H_qv(mu) - Y^T dtau_dv,  vv: H_vv(mu),
  q-tau: Y^T,  qf: H_qf(mu) - Y^T dtau_df;  the tau-tau, tau-v, v-f, tau-f, f-f blocks vanish.
Next to the first-order blocks a_x (casadi's Jacobian of the adjoint has them), the products go
through them: Y^T dtau_du = -X^T da_du with the sparse X = d(M mu)/dq (M symmetric).

Tangent space: the Hessian is that of phi(q (+) delta) at delta = 0. The Jacobian of the
tangent gradient along q (+) delta' (``D``, what casadi's derivative cache composes with the map
from raw q) differs from it inside multi-dof joints: (q (+) delta') (+) delta = q (+)
eps(delta', delta) gives D = H + sum_m g_m C_m with C_m = d^2 eps_m / d delta d delta' at 0
(``chart_terms``, from casadi's AD of each joint's own integrate and difference; constant, and
for the Lie-group joints here the antisymmetric 1/2 [e_b, e_a] of the group's bracket, such as
1/2 [g_w]x for a rotation, so that H is the symmetric part of D).
Glossary: lam the multiplier of the outputs, mu = -M^-1 lam, g the gradient (adjoint), D, H.
"""

from typing import NamedTuple

import casadi as ca
import numpy as np

from ...model import per_model
from ...spatial import symmetric
from ...spec import SecondOrderAdjoint
from .. import idsva
from ..aba import aba
from ..aba_derivatives import minv_times
from ..minverse import minv_product
from ..passes import ltdl
from ..passes.articulated import articulated_inertias
from ..passes.tree import assemble, motion_subspaces, placements
from . import adjoint

# ---------------------------------------------------------------- the chart of q (+) delta


@per_model
def chart_terms(model):
    """Per joint, C[m, a, b] = d^2 eps_m / d delta_a d delta'_b at 0 (an nv x nv x nv array), or
    None where it vanishes. From casadi's forward-mode AD of the joint's integrate and difference
    at two configurations, which must agree (it is constant on a Lie group)."""
    out, rng = [], np.random.default_rng(0)
    for i, joint in enumerate(model.joints):
        q, d1, d2 = ca.SX.sym("q", joint.nq), ca.SX.sym("d1", joint.nv), ca.SX.sym("d2", joint.nv)
        eps = joint.difference(q, joint.integrate(joint.integrate(q, d2), d1))
        eye = ca.DM.eye(joint.nv)
        # forward over forward: reverse mode through the exp map's sqrt(|w|^2) gives 0 * inf at 0
        C = [ca.jtimes(ca.jtimes(eps[m], d1, eye).T, d2, eye) for m in range(joint.nv)]
        fun = ca.Function("chart", [q, d1, d2], [ca.vertcat(*C)])
        zero = np.zeros(joint.nv)
        lower, upper = model.lower[model.q_slice(i)], model.upper[model.q_slice(i)]
        values = [np.array(fun(x, zero, zero)) for x in (joint.neutral(), joint.random(rng, lower, upper))]
        if not np.allclose(values[0], values[1], rtol=0, atol=1e-9):
            raise NotImplementedError(
                f"joint {model.names[i]!r} ({joint.type}) of model {model.name!r}: the second-order term "
                f"of its integrate depends on q; Hessians on its tangent space are not supported"
            )
        C = np.round(np.where(np.abs(values[0]) < 1e-12, 0.0, values[0]), 12).reshape((joint.nv,) * 3)
        out.append(C if np.any(C) else None)
    return out


def chart_term(model, g_q):
    """sum_m g_m C_m, block-diagonal over the joints: D - chart_term(g_q) is the chart Hessian."""
    blocks = {}
    for i, C in enumerate(chart_terms(model)):
        if C is not None:
            g = g_q[model.v_slice(i)]
            blocks[i, i] = sum((g[m] * ca.DM(C[m]) for m in range(C.shape[0])), ca.DM(C.shape[1], C.shape[2]))
    return assemble(model, blocks)


def _no_forces(model, f_ext):
    """The H_qf output without f_ext: empty (nv x 0), as there is no such input."""
    return ca.DM(model.nv, 0) if f_ext is None else None


# ---------------------------------------------------------------- inverse dynamics


def rnea_adjoint(model, q, v, a, lam, f_ext=None):
    """The gradient of lam^T rnea(q, v, a, f_ext) in O(n): (g_q on the tangent space, g_v,
    g_a = M lam, g_f the 6 x njoints gradient by f_ext, or None without f_ext)."""
    kin = adjoint.kinematics(model, q, v, a, f_ext)
    g_q, g_v, g_a, g_f = adjoint.gradient(model, kin, adjoint.lam_composites(model, kin, lam), lam)
    return g_q, g_v, g_a, (None if f_ext is None else g_f)


def rnea_adjoint_jacobian(model, q, v, a, lam, f_ext=None):
    """Every block of the Jacobian of ``rnea_adjoint`` (f_ext vectorised column by column):
    {(gradient part, input): block} with parts and inputs "q" (tangent; along q (+) delta' for the
    input: D), "v", "a", "f_ext" (with f_ext) and "lam"; missing blocks are zero. The lam blocks
    are the first-order Jacobian transposed (dtau_dq^T, dtau_dv^T, M, dtau_df^T)."""
    kin = adjoint.kinematics(model, q, v, a, f_ext)
    blocks = adjoint.adjoint_jacobian_blocks(model, kin, adjoint.lam_composites(model, kin, lam), f_ext)
    dtau_dq, dtau_dv, M = idsva.idsva(model, q, v, a, f_ext)
    blocks.update({("q", "lam"): dtau_dq.T, ("v", "lam"): dtau_dv.T, ("a", "lam"): M})
    if f_ext is not None:
        blocks["f_ext", "lam"] = adjoint.force_jacobian(model, kin).T
    return blocks


def rnea_hessian(model, q, v, a, lam, f_ext=None):
    """(H_qq, H_qv, H_vv, H_qa, H_qf) of lam^T rnea(q, v, a, f_ext), q on the tangent space;
    H_qf is nv x 6 njoints (f_ext vectorised column by column), nv x 0 without f_ext."""
    kin = adjoint.kinematics(model, q, v, a, f_ext)
    mult = adjoint.lam_composites(model, kin, lam)
    g_q = adjoint.gradient(model, kin, mult, lam)[0]
    B = adjoint.adjoint_jacobian_blocks(model, kin, mult, f_ext)
    H_qq = symmetric(B["q", "q"] - chart_term(model, g_q))
    H_qf = _no_forces(model, f_ext)
    return H_qq, B["q", "v"], symmetric(B["v", "v"]), B["q", "a"], B["q", "f_ext"] if H_qf is None else H_qf


# ---------------------------------------------------------------- forward dynamics


def aba_adjoint(model, q, v, tau, lam, f_ext=None, a=None):
    """The gradient of lam^T aba(q, v, tau, f_ext) in O(n): (g_q, g_v, g_tau = M^-1 lam, g_f or None),
    the gradient of mu^T rnea at a = aba(...) (given, or computed), mu = -M^-1 lam by ABA's
    articulated inertias."""
    a = aba(model, q, v, tau, f_ext) if a is None else a
    art = articulated_inertias(model, placements(model, q), motion_subspaces(model, q))
    mu = -minv_product(model, art, ca.reshape(lam, model.nv, 1))
    g_q, g_v, _, g_f = rnea_adjoint(model, q, v, a, mu, f_ext)
    return g_q, g_v, -mu, g_f


class AbaPoint(NamedTuple):
    """What the forward-dynamics blocks share: IDSVA's (dtau_dq, dtau_dv, M) at a = aba(...), the LTDL
    factors of M, the kinematics, mu and its composites, the blocks of mu^T rnea's adjoint Jacobian,
    Y, dtau_dv, dtau_df."""

    id_derivatives: tuple
    factors: ltdl.Factors
    kin: object
    mu: object
    mult: object
    B: dict
    Y: object
    dtau_dv: object
    dtau_df: object


def aba_point(model, q, v, tau, lam, f_ext=None, a=None):
    a = aba(model, q, v, tau, f_ext) if a is None else a
    id_derivatives = idsva.idsva(model, q, v, a, f_ext)
    _, dtau_dv, M = id_derivatives
    factors = ltdl.factorize(model, M)
    mu = -ltdl.solve(model, factors, ca.reshape(lam, model.nv, 1))
    kin = adjoint.kinematics(model, q, v, a, f_ext)
    mult = adjoint.lam_composites(model, kin, mu)
    B = adjoint.adjoint_jacobian_blocks(model, kin, mult, f_ext)
    Y = ltdl.solve(model, factors, B["a", "q"])  # M^-1 d(M mu)/dq
    dtau_df = None if f_ext is None else adjoint.force_jacobian(model, kin)
    return AbaPoint(id_derivatives, factors, kin, mu, mult, B, Y, dtau_dv, dtau_df)


def aba_adjoint_jacobian(model, q, v, tau, lam, f_ext=None, a=None):
    """Every block of the Jacobian of ``aba_adjoint``, as ``rnea_adjoint_jacobian``'s, with "tau"
    for "a"; the lam blocks are the first-order Jacobian transposed (da_dq^T, da_dv^T, M^-1, da_df^T).
    ``a``: aba(q, v, tau, f_ext) where the caller has it."""
    pt = aba_point(model, q, v, tau, lam, f_ext, a)
    B, Y, Xt = pt.B, pt.Y, pt.B["a", "q"].T
    da_dq, da_dv, Minv = minv_times(model, q, pt.id_derivatives, "ltdl")
    Zq = -ca.mtimes(Xt, da_dq)  # Y^T dtau_dq
    qv = B["q", "v"] + ca.mtimes(Xt, da_dv)
    blocks = {
        ("q", "q"): B["q", "q"] - Zq - Zq.T,
        ("q", "v"): qv,
        ("v", "q"): qv.T,
        ("v", "v"): B["v", "v"],
        ("q", "tau"): Y.T,
        ("tau", "q"): Y,
        ("q", "lam"): da_dq.T,
        ("v", "lam"): da_dv.T,
        ("tau", "lam"): Minv,
    }
    if f_ext is not None:
        da_df = -ltdl.solve(model, pt.factors, pt.dtau_df)
        qf = B["q", "f_ext"] + ca.mtimes(Xt, da_df)
        blocks.update({("q", "f_ext"): qf, ("f_ext", "q"): qf.T, ("f_ext", "lam"): da_df.T})
    return blocks


def aba_hessian(model, q, v, tau, lam, f_ext=None):
    """(H_qq, H_qv, H_vv, H_qtau, H_qf) of lam^T aba(q, v, tau, f_ext), q on the tangent space;
    H_qf is nv x 6 njoints (f_ext vectorised column by column), nv x 0 without f_ext."""
    pt = aba_point(model, q, v, tau, lam, f_ext)
    B, Y = pt.B, pt.Y
    g_q = adjoint.gradient(model, pt.kin, pt.mult, pt.mu)[0]
    Zq = ca.mtimes(Y.T, pt.id_derivatives[0])
    H_qq = symmetric(B["q", "q"] - chart_term(model, g_q) - Zq - Zq.T)
    H_qv = B["q", "v"] - ca.mtimes(Y.T, pt.dtau_dv)
    H_qf = _no_forces(model, f_ext)
    if H_qf is None:
        H_qf = B["q", "f_ext"] - ca.mtimes(Y.T, pt.dtau_df)
    return H_qq, H_qv, symmetric(B["v", "v"]), Y.T, H_qf


# ---------------------------------------------------------------- for casadi's derivative cache


def _second_order_adjoint(g, jacobian, names, f_ext):
    gradient = dict(zip(names, g[:3]))
    if f_ext is not None:
        gradient["f_ext"] = g[3]
    return gradient, jacobian


def rnea_second_order_adjoint(model, q, v, a, lam, f_ext=None, out=None):
    """(gradient, jacobian) of lam^T rnea as ``spec.SecondOrderAdjoint`` defines them: the dicts of
    ``rnea_adjoint`` ({"q", "v", "a", "f_ext"}) and ``rnea_adjoint_jacobian``."""
    g = rnea_adjoint(model, q, v, a, lam, f_ext)
    return _second_order_adjoint(g, rnea_adjoint_jacobian(model, q, v, a, lam, f_ext), ("q", "v", "a"), f_ext)


def aba_second_order_adjoint(model, q, v, tau, lam, f_ext=None, out=None):
    """(gradient, jacobian) of lam^T aba as ``spec.SecondOrderAdjoint`` defines them: the dicts of
    ``aba_adjoint`` ({"q", "v", "tau", "f_ext"}) and ``aba_adjoint_jacobian``, at the Function's
    nominal output a = out["a"] where casadi hands it (else aba is run)."""
    a = None if out is None else out["a"]
    g = aba_adjoint(model, q, v, tau, lam, f_ext, a)
    jacobian = aba_adjoint_jacobian(model, q, v, tau, lam, f_ext, a)
    return _second_order_adjoint(g, jacobian, ("q", "v", "tau"), f_ext)


def _jacobian_options_dropped(adjoint):
    """The second-order adjoint is analytical whatever the Jacobian's method: drop its options."""

    def impl(model, q, v, x, lam, f_ext=None, out=None, **_):
        return adjoint(model, q, v, x, lam, f_ext, out)

    return impl


SECOND_ORDER = (
    SecondOrderAdjoint("rnea", _jacobian_options_dropped(rnea_second_order_adjoint)),
    SecondOrderAdjoint("aba", _jacobian_options_dropped(aba_second_order_adjoint)),
)
