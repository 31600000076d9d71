"""The world pass: every body's placement, motion, inertia and force in its tree's frame.

Frame: a tree's frame is its root body's frame when the root joint is a free flyer, else the world
(the convention of IDSVA, Singh, Russell & Wensing, RA-L 2022): under a free flyer nothing but
gravity then depends on the base's quaternion, which only ``T`` and ``a0`` carry. Velocities and
accelerations are the bodies' absolute ones expressed in that frame (Pinocchio's ``ov``, ``oa``).
The joints' frames are chained as they are (``tree.joint_placements``), which is cheaper than the
algorithm frames when a URDF's axes are coordinate axes. Glossary (tree frame, per body i):
  T[i]     placement of body i's tree frame in the world (the same for a whole tree)
  oMi[i]   placement of joint i's frame in the tree frame     S[i]  S_i there
  v[i]     v_i                    a[i]  a_i, gravity included as a_0 = -a_g when ``gravity``
  a0[r]    a_0 = -a_g of root r in its tree frame (R^T g turns with a free-flyer base)
  I[i]     I_i, f[i]  f_i = I_i a_i + v_i x* I_i v_i - f_ext_i (the dynamics only: a and gravity)
``composites`` sums the inertias and forces over every subtree (``tree.subtree_sums``);
``local_jacobian`` is the Jacobian of a frame's velocity in its own axes, which the frame motion,
the contacts and ``kinematics.frame_jacobian`` read, and ``body_jacobians`` those of the joints'
bodies (d tau / d f_ext)."""

from typing import NamedTuple

import casadi as ca
import numpy as np

from ...spatial import SE3, force_cross, motion_cross
from .memo import shared
from .tree import free_flyer_roots, joint_placements, joint_subspaces, root_gravity, subtree_sums


class WorldPass(NamedTuple):
    T: list
    oMi: list
    a0: dict
    S: list
    v: list  # None without v
    a: list  # None without a
    I: list  # None without the dynamics (a and gravity)
    f: list  # None without the dynamics


@shared
def world_pass(model, q, v=None, a=None, f_ext=None, gravity=True):
    """The ``WorldPass`` at q (v, a optional; a needs v). ``gravity=False`` gives the kinematic
    accelerations (Pinocchio's ``data.a``) and no forces."""
    liMi, S = joint_placements(model, q), joint_subspaces(model, q)
    roots = free_flyer_roots(model)
    dynamics = a is not None and gravity
    T, oMi, oS, ov, oa, I, f, a0 = [], [], [], [], [], [], [], {}
    for i, joint in enumerate(model.joints):
        p = model.parents[i]
        if p >= 0:
            T.append(T[p])
            oMi.append(oMi[p] * liMi[i])
        elif i in roots:
            T.append(liMi[i])
            oMi.append(SE3.identity())
            a0[i] = ca.vertcat(-root_gravity(model, liMi, i), ca.DM.zeros(3, 1))
        else:
            T.append(SE3.identity())
            oMi.append(liMi[i])
            a0[i] = np.vstack([-model.gravity.reshape(3, 1), np.zeros((3, 1))])
        oS.append(oMi[i].act_motion(S[i]))
        if v is None:
            continue
        vJ = ca.mtimes(oS[i], v[model.v_slice(i)])
        ov.append(vJ if p < 0 else ov[p] + vJ)
        if a is None:
            continue
        ai = ca.mtimes(oS[i], a[model.v_slice(i)])
        if p >= 0:
            ai = oa[p] + ai + motion_cross(ov[p], vJ)  # v_i x vJ, as vJ x vJ = 0
        elif gravity:
            ai = a0[i] + ai
        if not joint.constant_subspace:
            ai = ai + oMi[i].act_motion(joint.bias(q[model.q_slice(i)], v[model.v_slice(i)]))
        oa.append(ai)
        if dynamics:
            I.append(oMi[i].act_inertia(model.inertias[i]))
            f.append(I[i].act(ai) + force_cross(ov[i], I[i].act(ov[i])))
            if f_ext is not None:
                f[i] = f[i] - oMi[i].act_force(f_ext[:, i])
    return WorldPass(
        T,
        oMi,
        a0,
        oS,
        ov if v is not None else None,
        oa if a is not None else None,
        I if dynamics else None,
        f if dynamics else None,
    )


class Composites(NamedTuple):
    I: list  # I^C_i, the inertia of the subtree of i (tree frame)
    f: list  # f^C_i, its force


@shared
def composites(model, world):
    """The ``Composites`` of the pass ``world`` (which holds the dynamics)."""
    return Composites(subtree_sums(model, world.I), subtree_sums(model, world.f))


def frame_in_tree(model, world, frame):
    """The placement of ``frame`` (on a body) in its tree's frame."""
    f = model.frames[frame]
    return world.oMi[f.joint] * f.placement


def local_jacobian(model, world, frame, fMT=None):
    """6 x nv Jacobian of ``frame``'s velocity in its own axes: fX S_j in the columns of its supports.
    ``fMT``, the tree frame in the frame's, where the caller holds it (``frame_motion``): moving S by
    it shares the caller's inverse; without it, the frame's placement acts inversely (no inverse)."""
    joint = model.frames[frame].joint
    if joint < 0:
        return ca.DM(6, model.nv)
    move = frame_in_tree(model, world, frame).inv_act_motion if fMT is None else fMT.act_motion
    return _jacobian(model, world, joint, move)


def body_jacobians(model, world):
    """The local Jacobian of every joint's body, in its joint frame."""
    return [_jacobian(model, world, i, X.inv_act_motion) for i, X in enumerate(world.oMi)]


def _jacobian(model, world, joint, move):
    """The Jacobian of body ``joint``'s velocity, its columns S_j moved into the frame by ``move``."""
    support = model.supports[joint]
    return ca.horzcat(
        ca.DM(6, 0), *[move(world.S[j]) if j in support else ca.DM(6, jt.nv) for j, jt in enumerate(model.joints)]
    )
