"""Joint-space inertia matrix by the composite-rigid-body algorithm.

Featherstone RBDA Table 6.2, in body-local frames: the algorithm frames of
``frames.py`` (as rnea's), which leave M unchanged. Glossary:
  Ic[i]  I^c_i, composite inertia of the subtree of i (local i)
  F      force set I^c_i S_i carried towards the root (local j)
Returns the full symmetric matrix (both triangles).
"""
import casadi as ca

from .frames import algorithm_frames, placements


def composite_inertias(model, liMi, inertia):
    """I^c_i for every body, each in the body's frame, from the bodies' ``inertia``."""
    Ic = list(inertia)
    for i in reversed(range(model.njoints)):
        p = model.joints[i].parent
        if p >= 0:
            Ic[p] = Ic[p] + liMi[i].act_inertia(Ic[i])
    return Ic


def crba(model, q):
    frames = algorithm_frames(model)
    S, liMi = frames.S, placements(model, frames, q)
    Ic = composite_inertias(model, liMi, frames.inertia)
    blocks = {}
    for i in range(model.njoints):
        F = Ic[i].act(S[i])
        blocks[i, i] = ca.mtimes(S[i].T, F)
        j = i
        while model.joints[j].parent >= 0:
            F = liMi[j].act_force(F)
            j = model.joints[j].parent
            blocks[j, i] = ca.mtimes(S[j].T, F)
            blocks[i, j] = blocks[j, i].T
    return assemble(model, blocks)


def assemble(model, blocks):
    """nv x nv matrix from a dict of joint blocks; missing blocks are structural zeros."""
    return ca.blockcat([[blocks.get((i, k), ca.DM(ji.nv, jk.nv)) for k, jk in enumerate(model.joints)]
                        for i, ji in enumerate(model.joints)])
