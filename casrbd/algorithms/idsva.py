"""Derivatives of inverse dynamics by IDSVA.

Singh, Russell & Wensing, "Efficient Analytical Derivatives of Rigid-Body
Dynamics using Spatial Vector Algebra" (RA-L 2022), Algorithm 1, from the
closed forms (30)-(32); valid for multi-dof joints with a constant motion
subspace. Frame: each tree's frame, the world or a free-flyer root's (below),
as the world pass (``passes.world``) gives it. Glossary (code -> paper):
  oS        S_i (world)             Sd     S-dot_i = v_i x S_i
  Psid      Psi-dot_i = v_p x S_i   Psidd  Psi-ddot_i = a_p x S_i + v_p x Psi-dot_i
  IC, BC2   I^C_i and 2 B^C_i, composite inertia and twice the body-level Coriolis matrix (28),
            stored by its structure (``Coriolis2``)
  fC        f^C_i composite force (external forces included, which rotate with their body)
  t1 .. t4  the lines 13-16 temporaries, kept per joint for the subtree products;
            t1 also gives dtau/dqdd = M (M_ki = t1_k^T S_i), so no separate CRBA
dtau/dq is taken on the tangent space (q (+) delta), as Pinocchio's.

A tree under a free-flyer root is worked in that root body's frame instead
of the world's: tau does not change when the whole tree moves, except
through gravity, which the base sees as g_b = R^T g. There S of the root is
the identity (its pair terms with every joint become selections), and its
dtau/dq columns are closed-form: zero along translations and, as g_b acts
as the base's linear acceleration a_b - g_b, -M[:, 0:3] [g_b]x along
rotations (R -> R exp(dth) gives g_b -> g_b + [g_b]x dth).
"""

from typing import NamedTuple

import casadi as ca

from ..spatial import ang, cross, force_bar_matrix, lin, motion_cross, skew, symmetric
from .passes import world
from .passes.memo import shared
from .passes.tree import assemble, free_flyer_roots, require_constant_subspaces, subtree_sums
from .passes.world import WorldPass, world_pass


class Coriolis2(NamedTuple):
    """2 B = [[0, -2 [fl]x], [0, W - [fa]x]] with W symmetric (world frame, [linear; angular]).

    For one body, 2 B = (v x*) I - I (v x) + (I v) x-bar* (eq. 28) with I v = [fl; fa]:
    its lower-left block cancels to zero and its upper-right one to -2 [fl]x,
    so 12 numbers (fl, fa and W's 6) replace 36, sums stay in this form, and
    the products with S read only the blocks that are there."""

    fl: object
    fa: object
    W: object

    @staticmethod
    def of_body(I, v):
        vl, w = lin(v), ang(v)
        f = I.act(v)
        P = ca.mtimes(skew(w), I.I)  # [w]x Ibar; Ibar [w]x = -P^T
        hv = ca.mtimes(I.h, vl.T)  # [vl]x [h]x + [h]x [vl]x = h vl^T + vl h^T - 2 (vl.h) E
        W = symmetric(P + P.T - hv - hv.T + 2 * ca.dot(vl, I.h) * ca.DM.eye(3))
        return Coriolis2(lin(f), ang(f), W)

    def __add__(self, other):
        return Coriolis2(self.fl + other.fl, self.fa + other.fa, self.W + other.W)

    def times(self, S):
        """2 B S."""
        Sa = ang(S)
        return ca.vertcat(-2 * cross(self.fl, Sa), ca.mtimes(self.W, Sa) - cross(self.fa, Sa))

    def transpose_times(self, S):
        """The angular rows of 2 B^T S (its linear rows are zero)."""
        Sa = ang(S)
        return 2 * cross(self.fl, lin(S)) + ca.mtimes(self.W, Sa) + cross(self.fa, Sa)


class Forward(NamedTuple):
    """Lines 1-11: the world pass and IDSVA's sets of every body, in its tree's frame."""

    world: WorldPass  # oMi, a0, S, v, a, I and f (external forces included)
    Sd: list
    Psid: list
    Psidd: list
    BC2: list  # the bodies' 2 B


@shared
def forward(model, q, v, a, f_ext=None):
    """The ``Forward`` quantities of lines 1-11."""
    require_constant_subspaces(model, "IDSVA")
    w = world_pass(model, q, v, a, f_ext)
    Sd, Psid, Psidd, BC2 = [], [], [], []
    zero = ca.DM.zeros(6, 1)
    for i, S in enumerate(w.S):
        p = model.parents[i]
        v_p, a_p = (zero, w.a0[i]) if p < 0 else (w.v[p], w.a[p])
        Psid.append(motion_cross(v_p, S))
        # v_i x S_i = v_p x S_i + qd_i S_i x S_i, and S x S = 0 for one column
        Sd.append(Psid[i] if model.joints[i].nv == 1 else motion_cross(w.v[i], S))
        Psidd.append(motion_cross(a_p, S) + motion_cross(v_p, Psid[i]))
        BC2.append(Coriolis2.of_body(w.I[i], w.v[i]))  # line 9
    return Forward(w, Sd, Psid, Psidd, BC2)


@shared
def composites(model, fw):
    """(IC, BC2, fC): the bodies' inertias, 2 B and forces of ``forward`` summed over their subtrees."""
    cs = world.composites(model, fw.world)
    return cs.I, subtree_sums(model, fw.BC2), cs.f


@shared
def idsva(model, q, v, a, f_ext=None):
    """(dtau/dq, dtau/dqd, dtau/dqdd = M)."""
    fw = forward(model, q, v, a, f_ext)
    n = model.njoints
    IC, BC2, fC = composites(model, fw)  # lines 21-24, ahead: row i needs only its own subtree's
    t1, t2, t3, t4 = ([None] * n for _ in range(4))
    dq, dv, M = {}, {}, {}
    # backward pass, lines 12-25
    for i in reversed(range(n)):
        S, B2, Psid = fw.world.S[i], BC2[i], fw.Psid[i]
        t1[i] = IC[i].act(S)
        t2[i] = B2.times(S) + IC[i].act(fw.Sd[i] + Psid)
        t3[i] = B2.times(Psid) + IC[i].act(fw.Psidd[i]) + ca.mtimes(force_bar_matrix(fC[i]), S)
        t4[i] = B2.transpose_times(S)  # angular rows only
        for k in model.subtree[i]:
            if k != i:  # lines 17-18: row i, columns of the strict subtree
                dq[i, k] = ca.mtimes(S.T, t3[k])
                dv[i, k] = ca.mtimes(S.T, t2[k])
            # lines 19-20: rows of the subtree, column i
            dq[k, i] = ca.mtimes(t4[k].T, ang(Psid)) + ca.mtimes(t1[k].T, fw.Psidd[i])
            dv[k, i] = ca.mtimes(t4[k].T, ang(S)) + ca.mtimes(t1[k].T, fw.Sd[i] + Psid)
            # and the joint-space inertia matrix, as the CRBA in world frame: M_ki = (I^C_k S_k)^T S_i
            M[k, i] = ca.mtimes(t1[k].T, S)
            M[i, k] = M[k, i].T
    for r in free_flyer_roots(model):
        minus_gx = skew(lin(fw.world.a0[r]))  # -[g_b]x
        for k in model.subtree[r]:
            dq[k, r] = ca.horzcat(ca.DM(model.joints[k].nv, 3), ca.mtimes(M[k, r][:, :3], minus_gx))
    # the rotors' inertia, after the base columns: gravity accelerates the bodies, not the rotors
    for i in range(n):
        armature = model.joint_armature(i)
        if armature is not None:
            M[i, i] = M[i, i] + ca.diag(armature)
    return assemble(model, dq), assemble(model, dv), assemble(model, M)
