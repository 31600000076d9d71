"""Derivatives of body velocities and accelerations, and of a frame's.

Algorithm 2 of Carpentier & Mansard, "Analytical Derivatives of Rigid Body
Dynamics Algorithms" (RSS 2018), its motion part, with the simplifications of
section III-C, in the algorithm frames of ``rnea``, where a joint's motion is
the last factor of its placement, as eq. (13) needs. Joints have a constant
motion subspace S, so dX_J/du, dS/du, dc_J/du and dv_J/dq vanish. Derivative
sets are 6 x nv with structural zeros outside the columns of the joints that
can move them, so casadi computes only the O(N d) nonzero columns. Derivatives
with respect to q are on the tangent space: along q (+) delta at delta = 0, as
Pinocchio's. ``reference`` expresses a frame's derivatives as ``frame_velocity`` and
``frame_acceleration`` do: ``local`` (the paper's), ``world`` (oXf applied, plus the motion of
oXf itself: d(oXf m)/dq = oXf (dm/dq - m x J)) or ``local_world_aligned`` (R applied, plus
R's motion: d(R m)/dq = R (dm/dq - [m]x J_ang) per 3-block). These are the true partial
derivatives of the quantities in that reference; Pinocchio's LOCAL_WORLD_ALIGNED
q-derivatives instead hold the frame's origin fixed, and differ by [[w]x J_lin; 0] (velocity)
and [[alpha]x J_lin; 0] (acceleration), w and alpha the frame's angular velocity and
acceleration in world axes. Glossary (algorithm frame of body i):
  dv_dq[i], dv_dv[i]     dv_i/dq, dv_i/dqd       (motion sets)
  da_dq[i], da_dv[i]     da_i/dq, da_i/dqd
  da_da[i]               da_i/dqdd (the columns of S_j of the supporting joints)
"""

from typing import NamedTuple

import casadi as ca

from ..spatial import ang, cross, lin, motion_cross
from ..spec import FRAME, Option, Out, Spec, configuration, tangent
from .kinematics import REFERENCES
from .passes.local import local_pass
from .passes.tree import base_acceleration, columns, require_constant_subspaces, world_placements


class MotionDerivatives(NamedTuple):
    fp: object  # the rnea forward pass they differentiate
    dv_dq: list
    dv_dv: list
    da_dq: list
    da_dv: list
    da_da: list


def motion_derivatives(model, q, v, a, f_ext=None, a0=None):
    """Lines 2-5 of Algorithm 2 for u = q, qd (and da/dqdd), with the forward pass."""
    require_constant_subspaces(model, "the chain-rule derivatives")
    a0 = base_acceleration(model) if a0 is None else a0
    fp = local_pass(model, q, v, a, f_ext, a0)
    n = model.njoints
    dv_dq, dv_dv, da_dq, da_dv, da_da = ([None] * n for _ in range(5))
    no_set, no_motion = ca.DM(6, model.nv), ca.DM.zeros(6, 1)
    for i in range(n):
        p, X, S = model.parents[i], fp.liMi[i], fp.S[i]
        v_p, a_p = (no_motion, a0) if p < 0 else (fp.v[p], fp.a[p])
        # the parent's sets in body i's frame
        dv_dq_p, dv_dv_p, da_dq_p, da_dv_p, da_da_p = (
            no_set if p < 0 else X.inv_act_motion(sets[p]) for sets in (dv_dq, dv_dv, da_dq, da_dv, da_da)
        )
        # line 3; eq. (13): d(iX_p)/dq_i v_p = (iX_p v_p) x S_i; dv_J/dqd_i = S_i
        dv_dq[i] = dv_dq_p + columns(model, i, motion_cross(X.inv_act_motion(v_p), S))
        dv_dv[i] = dv_dv_p + columns(model, i, S)
        da_da[i] = da_da_p + columns(model, i, S)
        # line 5: the same for a_p, then + dv_i/du x v_J + v_i x dv_J/du
        da_dq[i] = (
            da_dq_p + columns(model, i, motion_cross(X.inv_act_motion(a_p), S)) - motion_cross(fp.vJ[i], dv_dq[i])
        )
        da_dv[i] = da_dv_p - motion_cross(fp.vJ[i], dv_dv[i]) + columns(model, i, motion_cross(fp.v[i], S))
    return MotionDerivatives(fp, dv_dq, dv_dv, da_dq, da_dv, da_da)


def kinematics_derivatives(model, q, v, a, frame, reference="local"):
    """Derivatives of the spatial velocity and acceleration (gravity excluded) of ``frame`` in
    ``reference`` (local axes: section III-D of the paper): dv/dq, dv/dqd, da/dq, da/dqd, da/dqdd."""
    f = model.frames[frame]
    if f.joint < 0:
        zero = ca.DM(6, model.nv)
        return zero, zero, zero, zero, zero
    md = motion_derivatives(model, q, v, a, a0=ca.DM.zeros(6, 1))
    X = model.algorithm_frames.frames[frame]  # the frame in its body's algorithm frame
    dv_dq, J, da_dq, da_dv = (X.inv_act_motion(d[f.joint]) for d in (md.dv_dq, md.dv_dv, md.da_dq, md.da_dv))
    if reference == "local":
        return dv_dq, J, da_dq, da_dv, J
    vel, acc = X.inv_act_motion(md.fp.v[f.joint]), X.inv_act_motion(md.fp.a[f.joint])
    oMf = world_placements(model, md.fp.liMi)[f.joint] * X
    if reference == "world":
        dv_dq, da_dq = dv_dq - motion_cross(vel, J), da_dq - motion_cross(acc, J)
        return tuple(oMf.act_motion(d) for d in (dv_dq, J, da_dq, da_dv, J))
    Ja = ang(J)
    dv_dq, da_dq = (d - ca.vertcat(cross(lin(m), Ja), cross(ang(m), Ja)) for d, m in ((dv_dq, vel), (da_dq, acc)))
    return tuple(ca.vertcat(ca.mtimes(oMf.R, lin(d)), ca.mtimes(oMf.R, ang(d))) for d in (dv_dq, J, da_dq, da_dv, J))


SPECS = (
    Spec(
        "kinematics_derivatives",
        kinematics_derivatives,
        (configuration(), tangent("v"), tangent("a")),
        tuple(Out(n) for n in ("dv_dq", "dv_dv", "da_dq", "da_dv", "da_da")),
        options={"frame": FRAME, "reference": Option("local", REFERENCES)},
    ),
)
