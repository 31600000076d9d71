"""Second-order partial derivatives of inverse dynamics as full tensors, by second-order IDSVA.

Singh, Russell & Wensing, "Analytical Second-Order Partial Derivatives of Rigid-Body Inverse
Dynamics" (IROS 2022) and "On Second-Order Derivatives of Rigid-Body Dynamics: Theory &
Implementation" (T-RO 2024): world-frame spatial vector algebra on composite quantities, one
inner product per entry of the tensors. The entries here come from the contracted closed forms of
``adjoint.py`` (derived there) with the multiplier lam = e_p, the unit vector of output dof
p of joint i: the lam-velocities are then w = S_i e_p below i and zero elsewhere, so the lam
composites are closed-form, hC_j = IC_l s_p, WC_j = W(IC_l, s_p), ZC_j = (2 B^C_l)^T s_p with l
the deeper of i and j, for j on the path to i or below it (zero elsewhere), and wp_j = s_p for j
strictly below i. Per output dof, the per-joint sets are formed for the joints related to i and
paired with the joints that support them, as in the paper's triple loop over i, j, k on a path;
with external forces (Pinocchio's ``ComputeRNEASecondOrderDerivatives`` takes none).

Layout, Pinocchio's (q on the tangent space, q (+) delta, as its first-order derivatives):
  d2tau_dqdq[i, j, k] = d/dq_k (dtau_dq[i, j])    (not symmetric in j, k inside multi-dof joints)
  d2tau_dvdv[i, j, k] = d2 tau_i / dv_j dv_k
  d2tau_dqdv[i, j, k] = d/dv_k (dtau_dq[i, j])
  dtau_dadq[i, j, k]  = d/dq_k (M[i, j])
Functions return each as an nv x nv^2 matrix T2 with T2[i, j + nv k] = T[i, j, k] (numpy:
``T2.reshape(nv, nv, nv, order="F")``); the numeric API returns (nv, nv, nv) arrays.
Glossary: p an output dof (joint i, column s_p of S_i); ``adjoint.py``'s otherwise.
"""

import casadi as ca

from ..idsva import Coriolis2
from ..passes.tree import require_constant_subspaces
from . import adjoint


def unit_multiplier(model, kin, i, s_p):
    """The ``Multiplier`` of lam = e_p (column s_p of joint i) in closed form, and the joints it
    does not vanish on (the path to i and the subtree of i)."""
    n = model.njoints
    hC, WC, ZC, wp = ([None] * n for _ in range(4))

    def composites(deeper):
        lw = Coriolis2.of_body(kin.IC[deeper], s_p)  # IC s_p and W(IC, s_p)
        return ca.vertcat(lw.fl, lw.fa), lw.W, kin.BC2[deeper].transpose_times(s_p)

    path = composites(i)  # the joints on the path to i see the subtree of i
    for j in model.supports[i]:
        hC[j], WC[j], ZC[j] = path
    for j in model.subtree[i][1:]:
        hC[j], WC[j], ZC[j] = composites(j)
        wp[j] = s_p
    return adjoint.Multiplier(None, wp, hC, WC, ZC), sorted(set(model.supports[i]) | set(model.subtree[i]))


def rnea_second_order_derivatives(model, q, v, a, f_ext=None):
    """(d2tau_dqdq, d2tau_dvdv, d2tau_dqdv, dtau_dadq), each nv x nv^2 (see the module docstring)."""
    require_constant_subspaces(model, "second-order IDSVA")
    kin = adjoint.kinematics(model, q, v, a, f_ext)
    rows = ([], [], [], [])
    for i in range(model.njoints):
        S = kin.fw.world.S[i]
        for c in range(S.shape[1]):
            mult, related = unit_multiplier(model, kin, i, S[:, c])
            P = adjoint.pairs(model, kin, mult, related)
            blocks = (
                adjoint.mirrored(model, P.D, P.D),
                adjoint.mirrored(model, P.vv, P.vv),
                adjoint.mirrored(model, P.qv, P.vq),
                adjoint.mirrored(model, P.qa, P.aq).T,
            )
            for out, T in zip(rows, blocks):
                out.append(ca.vec(T).T)
    empty = ca.DM(0, model.nv**2)  # the shape without joints (vertcat of nothing is 0 x 1)
    return tuple(ca.vertcat(empty, *r) for r in rows)
