"""Derivatives of inverse dynamics by IDSVA.

Seed 004 (Singh, Russell & Wensing), Algorithm 1, from the closed forms
(30)-(32); valid for multi-dof joints. All quantities are in the world
frame. Glossary (code -> paper):
  oS        S_i (world)             Sd     S-dot_i = v_i x S_i
  Psid      Psi-dot_i = v_p x S_i   Psidd  Psi-ddot_i = a_p x S_i + v_p x Psi-dot_i
  IC, BC2   I^C_i and 2 B^C_i, composite inertia and twice the body-level Coriolis matrix (28)
  fC        f^C_i composite force (external forces included, which rotate with their body)
  t1 .. t4  the lines 13-16 temporaries, kept per joint for the subtree products;
            t1 also gives dtau/dqdd = M (M_ki = t1_k^T S_i), so no separate CRBA
As in seed 003, dtau/dq is taken on the tangent space (q (+) delta).
"""
import casadi as ca

from ..spatial import force_bar_matrix, force_cross, motion_cross
from .crba import assemble
from .kinematics import joint_placements
from .rnea import base_acceleration


def idsva(model, q, v, a, f_ext=None):
    """(dtau/dq, dtau/dqd, dtau/dqdd = M)."""
    _, oMi = joint_placements(model, q)
    n = model.njoints
    oS, Sd, Psid, Psidd, IC, BC2, fC = ([None] * n for _ in range(7))
    ov, oa = [None] * n, [None] * n
    a0, zero = base_acceleration(model), ca.DM.zeros(6, 1)
    # forward pass, lines 1-11
    for i, joint in enumerate(model.joints):
        p = joint.parent
        v_p, a_p = (zero, a0) if p < 0 else (ov[p], oa[p])
        oS[i] = oMi[i].act_motion(joint.S)
        vJ = ca.mtimes(oS[i], v[model.v_slice(i)])
        ov[i] = v_p + vJ
        oa[i] = a_p + ca.mtimes(oS[i], a[model.v_slice(i)]) + motion_cross(ov[i], vJ)
        Sd[i] = motion_cross(ov[i], oS[i])
        Psid[i] = motion_cross(v_p, oS[i])
        Psidd[i] = motion_cross(a_p, oS[i]) + motion_cross(v_p, Psid[i])
        I = oMi[i].act_inertia(joint.inertia)
        IC[i] = I
        h = I.act(ov[i])
        # line 9, 2 B = (v x*) I - I (v x) + (I v) x-bar*, where -I (v x) = ((v x*) I)^T
        A = force_cross(ov[i], I.matrix())
        BC2[i] = A + A.T + force_bar_matrix(h)
        fC[i] = I.act(oa[i]) + force_cross(ov[i], h)
        if f_ext is not None:
            fC[i] = fC[i] - oMi[i].act_force(f_ext[i])
    # backward pass, lines 12-25
    t1, t2, t3, t4 = ([None] * n for _ in range(4))
    dq, dv, M = {}, {}, {}
    for i in reversed(range(n)):
        S, B2 = oS[i], BC2[i]
        t1[i] = IC[i].act(S)
        t2[i] = ca.mtimes(B2, S) + IC[i].act(Sd[i] + Psid[i])
        t3[i] = ca.mtimes(B2, Psid[i]) + IC[i].act(Psidd[i]) + ca.mtimes(force_bar_matrix(fC[i]), S)
        t4[i] = ca.mtimes(B2.T, S)
        for k in model.subtree[i]:
            if k != i:  # lines 17-18: row i, columns of the strict subtree
                dq[i, k] = ca.mtimes(S.T, t3[k])
                dv[i, k] = ca.mtimes(S.T, t2[k])
            # lines 19-20: rows of the subtree, column i
            dq[k, i] = ca.mtimes(t4[k].T, Psid[i]) + ca.mtimes(t1[k].T, Psidd[i])
            dv[k, i] = ca.mtimes(t4[k].T, S) + ca.mtimes(t1[k].T, Sd[i] + Psid[i])
            # and the joint-space inertia matrix, as the CRBA in world frame: M_ki = (I^C_k S_k)^T S_i
            M[k, i] = ca.mtimes(t1[k].T, S)
            M[i, k] = M[k, i].T
        p = model.joints[i].parent
        if p >= 0:  # lines 21-24
            IC[p] = IC[p] + IC[i]
            BC2[p] = BC2[p] + BC2[i]
            fC[p] = fC[p] + fC[i]
    return assemble(model, dq), assemble(model, dv), assemble(model, M)
