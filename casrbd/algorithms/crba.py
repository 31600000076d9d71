"""Joint-space inertia matrix by the composite-rigid-body algorithm.

Featherstone, *Rigid Body Dynamics Algorithms* (2008), Table 6.2, in the
algorithm frames (as rnea), which leave M unchanged. Glossary:
  Ic[i]  I^c_i, composite inertia of the subtree of i (local i)
  F      force set I^c_i S_i carried towards the root (local j)
Returns the full symmetric matrix (both triangles).
"""

import casadi as ca

from ..spec import Out, Spec, configuration
from .passes.memo import shared
from .passes.tree import assemble, motion_subspaces, placements, subtree_sums


def composite_inertias(model, liMi, inertias):
    """I^c_i for every body, each in the body's frame, from the bodies' ``inertias``."""
    return subtree_sums(model, inertias, lambda i, Ic: liMi[i].act_inertia(Ic))


@shared
def crba(model, q):
    S, liMi = motion_subspaces(model, q), placements(model, q)
    Ic = composite_inertias(model, liMi, model.algorithm_frames.inertias)
    blocks = {}
    for i in range(model.njoints):
        F = Ic[i].act(S[i])
        blocks[i, i] = ca.mtimes(S[i].T, F)
        armature = model.joint_armature(i)
        if armature is not None:
            blocks[i, i] = blocks[i, i] + ca.diag(armature)
        j = i
        while model.parents[j] >= 0:
            F = liMi[j].act_force(F)
            j = model.parents[j]
            blocks[j, i] = ca.mtimes(S[j].T, F)
            blocks[i, j] = blocks[j, i].T
    return assemble(model, blocks)


SPECS = (Spec("crba", crba, (configuration(),), (Out("M"),)),)
