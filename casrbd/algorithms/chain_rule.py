"""Derivatives of inverse dynamics by the chain rule through RNEA.

Carpentier & Mansard, "Analytical Derivatives of Rigid Body Dynamics
Algorithms" (RSS 2018), Algorithms 2 and 3 with the simplifications of section
III-C: the motion derivatives of ``kinematics_derivatives``, line 6 of
Algorithm 2 for the forces, then Algorithm 3, where eq. (14) differentiates
the placement acting on a force. Glossary (algorithm frame of body i):
  df_dq[i], df_dv[i]     df_i/dq, df_i/dqd       (force sets)
"""

import casadi as ca

from ..spatial import force_bar_matrix, force_cross
from .crba import crba
from .kinematics_derivatives import motion_derivatives
from .passes.tree import columns


def rnea_derivatives(model, q, v, a, f_ext=None):
    """(dtau/dq, dtau/dqd, dtau/dqdd = M) by Algorithms 2 and 3."""
    md = motion_derivatives(model, q, v, a, f_ext)
    fp, n = md.fp, model.njoints
    df_dq, df_dv = [None] * n, [None] * n
    # Algorithm 2, line 6: df = I da + dv x* h + v x* I dv, with h = I v
    for i, I in enumerate(model.algorithm_frames.inertias):
        Fh = force_bar_matrix(I.act(fp.v[i]))
        df_dq[i] = I.act(md.da_dq[i]) + ca.mtimes(Fh, md.dv_dq[i]) + force_cross(fp.v[i], I.act(md.dv_dq[i]))
        df_dv[i] = I.act(md.da_dv[i]) + ca.mtimes(Fh, md.dv_dv[i]) + force_cross(fp.v[i], I.act(md.dv_dv[i]))
    f = list(fp.f)
    dtau_dq, dtau_dv = [None] * n, [None] * n
    # Algorithm 3, leaves to root
    for i in reversed(range(n)):
        S, p = fp.S[i], model.parents[i]
        dtau_dq[i] = ca.mtimes(S.T, df_dq[i])
        dtau_dv[i] = ca.mtimes(S.T, df_dv[i])
        if p >= 0:
            X = fp.liMi[i]
            # line 3; eq. (14): d(pX_i^*)/dq_i f_i = pX_i^* (S_i x* f_i)
            df_dq[p] = df_dq[p] + X.act_force(df_dq[i] + columns(model, i, ca.mtimes(force_bar_matrix(f[i]), S)))
            df_dv[p] = df_dv[p] + X.act_force(df_dv[i])
            f[p] = f[p] + X.act_force(f[i])
    empty = ca.DM(0, model.nv)  # the shape without joints (vertcat of nothing is 0 x 1)
    return ca.vertcat(empty, *dtau_dq), ca.vertcat(empty, *dtau_dv), crba(model, q)
