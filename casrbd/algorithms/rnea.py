"""Inverse dynamics by the recursive Newton-Euler algorithm.

Seed 003, Algorithm 1 (Featherstone, RBDA p. 96), in body-local frames as
Pinocchio's ``rnea``, but the algorithm frames of ``frames.py`` (axes along
z, DH placements), which leave tau unchanged. Glossary (code -> paper, frame):
  liMi[i]  ^{lambda(i)}X_i, placement of body i in its parent    (parent)
  vJ       v_J = S_i qd_i                                        (local i)
  v[i]     v_i, a[i] a_i (gravity included), f[i] f_i            (local i)
  a0       a_0 = -a_g: gravity enters as a fictitious base acceleration
  f_ext[i] f_i^ext, [force; torque] given in joint i's frame (Pinocchio's convention)
"""
from typing import NamedTuple

import casadi as ca
import numpy as np

from ..spatial import force_cross, motion_cross
from .frames import algorithm_frames, forces_to_frames, placements


class ForwardPass(NamedTuple):
    frames: object  # the algorithm frames (``frames.py``) of everything below
    liMi: list
    vJ: list
    v: list
    a: list
    f: list


def base_acceleration(model):
    """a_0 = -a_g as a spatial motion."""
    return np.concatenate([-model.gravity, np.zeros(3)]).reshape(6, 1)


def forward_pass(model, q, v, a, f_ext=None, a0=None):
    """Lines 1-12 of Algorithm 1: body velocities, accelerations and forces, in the algorithm frames.

    ``a0`` defaults to -a_g; kinematics pass zero to get accelerations without gravity."""
    F = algorithm_frames(model)
    liMi = placements(model, F, q)
    f_ext = forces_to_frames(F, f_ext)
    a0 = base_acceleration(model) if a0 is None else a0
    vJs, vs, as_, fs = [], [], [], []
    for i, joint in enumerate(model.joints):
        p, X, Si, I = joint.parent, liMi[i], F.S[i], F.inertia[i]
        vJ = ca.mtimes(Si, v[model.v_slice(i)])
        vi = vJ if p < 0 else X.inv_act_motion(vs[p]) + vJ
        ai = X.inv_act_motion(a0 if p < 0 else as_[p]) + ca.mtimes(Si, a[model.v_slice(i)]) \
            + motion_cross(vi, vJ)
        fi = I.act(ai) + force_cross(vi, I.act(vi))
        if f_ext is not None:
            fi = fi - f_ext[i]
        vJs.append(vJ)
        vs.append(vi)
        as_.append(ai)
        fs.append(fi)
    return ForwardPass(F, liMi, vJs, vs, as_, fs)


def rnea(model, q, v, a, f_ext=None):
    """Joint torques tau = M(q) a + C(q, v) v + g(q) - sum J_i^T f_ext_i."""
    fp = forward_pass(model, q, v, a, f_ext)
    S, f = fp.frames.S, list(fp.f)
    tau = [None] * model.njoints
    # backward pass: tau_i = S_i^T f_i, f_lambda(i) += lambda(i)X_i^* f_i
    for i in reversed(range(model.njoints)):
        joint = model.joints[i]
        tau[i] = ca.mtimes(S[i].T, f[i])
        if joint.parent >= 0:
            f[joint.parent] = f[joint.parent] + fp.liMi[i].act_force(f[i])
    return ca.vertcat(*tau)


def nonlinear_effects(model, q, v):
    """C(q, v) v + g(q) = rnea(q, v, 0)."""
    return rnea(model, q, v, ca.DM.zeros(model.nv))


def generalized_gravity(model, q):
    """g(q) = rnea(q, 0, 0)."""
    zero = ca.DM.zeros(model.nv)
    return rnea(model, q, zero, zero)
