"""Joint-space inertia matrix by the composite-rigid-body algorithm.

Featherstone RBDA Table 6.2, in joint-local frames. Glossary:
  Ic[i]  I^c_i, composite inertia of the subtree of i (local i)
  F      force set I^c_i S_i carried towards the root (local j)
Returns the full symmetric matrix (both triangles).
"""
import casadi as ca

from .kinematics import joint_placements


def composite_inertias(model, liMi):
    """I^c_i for every joint, each in its joint's frame."""
    Ic = [j.inertia for j in model.joints]
    for i in reversed(range(model.njoints)):
        p = model.joints[i].parent
        if p >= 0:
            Ic[p] = Ic[p] + liMi[i].act_inertia(Ic[i])
    return Ic


def crba(model, q):
    liMi, _ = joint_placements(model, q)
    Ic = composite_inertias(model, liMi)
    blocks = {}
    for i, joint in enumerate(model.joints):
        F = Ic[i].act(joint.S)
        blocks[i, i] = ca.mtimes(joint.S.T, F)
        j = i
        while model.joints[j].parent >= 0:
            F = liMi[j].act_force(F)
            j = model.joints[j].parent
            blocks[j, i] = ca.mtimes(model.joints[j].S.T, F)
            blocks[i, j] = blocks[j, i].T
    return assemble(model, blocks)


def assemble(model, blocks):
    """nv x nv matrix from a dict of joint blocks; missing blocks are structural zeros."""
    return ca.blockcat([[blocks.get((i, k), ca.DM(ji.nv, jk.nv)) for k, jk in enumerate(model.joints)]
                        for i, ji in enumerate(model.joints)])
