"""Derivatives of inverse dynamics by the chain rule through RNEA.

Seed 003, Algorithms 2 and 3 with the simplifications of section III-C, in
body-local frames: the algorithm frames of ``rnea`` (``frames.py``), where a
joint's motion is the last factor of its placement, as eqs. (13)-(14) need.
Every joint here has a constant motion subspace S, so
dX_J/du, dS/du, dc_J/du and dv_J/dq vanish; what remains is eq. (13) for the
derivative of the placement acting on a motion and eq. (14) on a force.
Derivative sets are 6 x nv matrices with structural zeros outside the
columns of the joints that can move them, so casadi computes only the O(N d)
nonzero columns. Glossary (algorithm frame of body i):
  dv_dq[i], dv_dv[i]     dv_i/dq, dv_i/dqd       (motion sets)
  da_dq[i], da_dv[i]     da_i/dq, da_i/dqd
  da_da[i]               da_i/dqdd (the columns of S_j of the supporting joints)
  df_dq[i], df_dv[i]     df_i/dq, df_i/dqd       (force sets)
Derivatives with respect to q are taken on the tangent space: along
q (+) delta at delta = 0, as Pinocchio's ``computeRNEADerivatives``.
"""
from typing import NamedTuple

import casadi as ca

from ..spatial import force_bar_matrix, force_cross, motion_cross
from .crba import crba
from .rnea import base_acceleration, forward_pass


class ForwardDerivatives(NamedTuple):
    fp: object
    dv_dq: list
    dv_dv: list
    da_dq: list
    da_dv: list
    da_da: list
    df_dq: list
    df_dv: list


def columns(model, i, X):
    """A 6 x nv set holding X in the columns of joint i, structural zeros elsewhere."""
    joint = model.joints[i]
    return ca.horzcat(ca.DM(X.shape[0], joint.idx_v), X, ca.DM(X.shape[0], model.nv - joint.idx_v - joint.nv))


def forward_derivatives(model, q, v, a, f_ext=None, a0=None):
    """Algorithm 2 for u = q and u = qd (and da/dqdd), with the forward pass it differentiates."""
    a0 = base_acceleration(model) if a0 is None else a0
    fp = forward_pass(model, q, v, a, f_ext, a0)
    n = model.njoints
    dv_dq, dv_dv, da_dq, da_dv, da_da, df_dq, df_dv = ([None] * n for _ in range(7))
    no_set, no_motion = ca.DM(6, model.nv), ca.DM.zeros(6, 1)
    for i, joint in enumerate(model.joints):
        p, X, S, I = joint.parent, fp.liMi[i], fp.frames.S[i], fp.frames.inertia[i]
        vJ, vi = fp.vJ[i], fp.v[i]
        v_p, a_p = (no_motion, a0) if p < 0 else (fp.v[p], fp.a[p])

        def from_parent(sets):
            return no_set if p < 0 else X.inv_act_motion(sets[p])

        # line 3; eq. (13): d(iX_p)/dq_i v_p = (iX_p v_p) x S_i; dv_J/dqd_i = S_i
        dv_dq[i] = from_parent(dv_dq) + columns(model, i, motion_cross(X.inv_act_motion(v_p), S))
        dv_dv[i] = from_parent(dv_dv) + columns(model, i, S)
        da_da[i] = from_parent(da_da) + columns(model, i, S)
        # line 5: the same for a_p, then + dv_i/du x v_J + v_i x dv_J/du
        da_dq[i] = from_parent(da_dq) + columns(model, i, motion_cross(X.inv_act_motion(a_p), S)) \
            - motion_cross(vJ, dv_dq[i])
        da_dv[i] = from_parent(da_dv) - motion_cross(vJ, dv_dv[i]) + columns(model, i, motion_cross(vi, S))
        # line 6: df = I da + dv x* h + v x* I dv, with h = I v
        Fh = force_bar_matrix(I.act(vi))
        df_dq[i] = I.act(da_dq[i]) + ca.mtimes(Fh, dv_dq[i]) + force_cross(vi, I.act(dv_dq[i]))
        df_dv[i] = I.act(da_dv[i]) + ca.mtimes(Fh, dv_dv[i]) + force_cross(vi, I.act(dv_dv[i]))
    return ForwardDerivatives(fp, dv_dq, dv_dv, da_dq, da_dv, da_da, df_dq, df_dv)


def rnea_derivatives(model, q, v, a, f_ext=None):
    """(dtau/dq, dtau/dqd, dtau/dqdd = M) by Algorithms 2 and 3."""
    fd = forward_derivatives(model, q, v, a, f_ext)
    f, df_dq, df_dv = list(fd.fp.f), list(fd.df_dq), list(fd.df_dv)
    n = model.njoints
    dtau_dq, dtau_dv = [None] * n, [None] * n
    # Algorithm 3, leaves to root
    for i in reversed(range(n)):
        joint, S = model.joints[i], fd.fp.frames.S[i]
        dtau_dq[i] = ca.mtimes(S.T, df_dq[i])
        dtau_dv[i] = ca.mtimes(S.T, df_dv[i])
        p = joint.parent
        if p >= 0:
            X = fd.fp.liMi[i]
            # line 3; eq. (14): d(pX_i^*)/dq_i f_i = pX_i^* (S_i x* f_i)
            df_dq[p] = df_dq[p] + X.act_force(df_dq[i] + columns(model, i, ca.mtimes(force_bar_matrix(f[i]), S)))
            df_dv[p] = df_dv[p] + X.act_force(df_dv[i])
            f[p] = f[p] + X.act_force(f[i])
    return ca.vertcat(*dtau_dq), ca.vertcat(*dtau_dv), crba(model, q)


def kinematics_derivatives(model, q, v, a, frame):
    """Derivatives of the spatial velocity and acceleration (gravity excluded) of ``frame``,
    in the frame's local axes (seed 003 section III-D): dv/dq, dv/dqd, da/dq, da/dqd, da/dqdd."""
    f = model.frames[frame]
    if f.joint < 0:
        zero = ca.DM(6, model.nv)
        return zero, zero, zero, zero, zero
    fd = forward_derivatives(model, q, v, a, a0=ca.DM.zeros(6, 1))
    i = f.joint
    X = fd.fp.frames.G[i].inverse() * f.placement  # the frame in body i's algorithm frame
    return tuple(X.inv_act_motion(d[i]) for d in (fd.dv_dq, fd.dv_dv, fd.da_dq, fd.da_dv, fd.da_da))
