"""Second-order derivatives of inverse dynamics contracted with a multiplier lam: the gradient of
phi = lam^T rnea(q, v, a, f_ext) in O(n) (the adjoint), the Jacobian of that gradient, and the
Hessian of phi, with q on the tangent space (q (+) delta).

The route is the second-order adjoint of Nganga & Wensing, "Accelerating Second-Order
Differential Dynamic Programming for Rigid-Body Systems" (RA-L 2021): phi is written as
sum_i w_i^T f_i, w_i the velocity that the joint rates lam give body i (spatial_v2_extended's
``modID``), its gradient is accumulated in reverse, and that accumulation is differentiated
forward. Here both steps are taken in closed form in the world frame of IDSVA (Singh, Russell &
Wensing, "Efficient Analytical Derivatives of Rigid-Body Dynamics using Spatial Vector Algebra",
RA-L 2022; ``idsva.forward`` on ``passes.world``), as their second-order IDSVA does for the full tensors ("On
Second-Order Derivatives of Rigid-Body Dynamics: Theory & Implementation", T-RO 2024). The
closed forms below are derived here, not transcribed. The derivation in short: moving joint k
rotates its subtree rigidly, so a scalar made of the subtree's world quantities changes only
through what does not rotate with it: its boundary, the velocity, acceleration and lam-velocity
of the parent (vp, ap, wp). That makes the gradient
  g_q[j] = -S_j^T (vp x* F_v + ap x* hC + wp x* FC),  g_v[j] = S_j^T (F_v - v_j x* hC),
  g_a[j] = S_j^T hC (+ armature lam_j),               F_v = Z - vp x* hC,
with F_v, hC, FC the derivatives of the subtree's phi by vp, ap, wp; and for every joint k on
the path from the root to j (k = j included) the derivative of g[j] along joint k is a few inner
products of per-j force sets with per-k motion sets (``pairs``), O(1) per pair of dofs. Blocks
between joints on different branches vanish; the other triangle follows by symmetry.
Under a free-flyer root the tree is worked in the base frame (see ``idsva.py``): the base is an
ordinary joint with S = 1, vp = wp = 0 and ap = -g_b, and its rotations turn gravity.

The q-q block here is D, the Jacobian of the tangent gradient along q (+) delta'; the chart
Hessian differs from it inside multi-dof joints (``hessians.chart_terms``).
Blocks d2/da2 and d2/dadv vanish (tau is affine in a and does not mix a with v).

Glossary (world frame, or the free-flyer base's; lists indexed by joint):
  S[j], s, sigma  S_j and its columns (j the deeper joint of a pair, k the shallower)
  vp, ap, wp      v, a (gravity included) and w of the parent; 0, -a_g, 0 at a root
  w[i]            w_i = sum over the supports of S lam, the lam-velocity of body i
  IC, BC2, FC     composite inertia, 2 B^C (``Coriolis2``) and force of the subtree
  hC, WC, ZC      sum I_i w_i, sum W(I_i, w_i) (the W of ``Coriolis2.of_body``), angular rows of
                  sum 2 B_i^T w_i; Psi' x = [0; 2 x_l x hl + x_a x ha - WC x_a] (hC = [hl; ha])
                  is d F_v / d vp + (.) x* hC
  u, alpha, om, nu  per column sigma of S_k: sigma x vp, sigma x ap + vp x u, sigma x wp,
                  sigma x (v_k + vp)
  e_u, c_al, c_om, b_u, b_om, t1  per column s of S_j: the sets they pair with
"""

from typing import NamedTuple

import casadi as ca

from ...spatial import ang, cross, force_cross, lin, motion_cross
from .. import idsva
from ..idsva import Coriolis2
from ..passes.memo import shared
from ..passes.tree import assemble, columns, subtree_sums
from ..passes.world import body_jacobians


class Kinematics(NamedTuple):
    """What does not depend on lam: IDSVA's forward pass, the parents' motion, the composites."""

    fw: idsva.Forward
    vp: list
    ap: list
    IC: list
    BC2: list
    FC: list
    u: list  # the sets of u, alpha, nu of each joint's columns
    alpha: list
    nu: list


class Multiplier(NamedTuple):
    """The lam-velocities and their composites (``lam_composites``); None for a joint where they vanish."""

    w: list
    wp: list
    hC: list
    WC: list
    ZC: list


def cross_sets(x, S):
    """S x x: each column of S crossed with the motion x (-(x x S))."""
    return -motion_cross(x, S)


@shared
def kinematics(model, q, v, a, f_ext=None):
    """The ``Kinematics`` at (q, v, a, f_ext)."""
    fw = idsva.forward(model, q, v, a, f_ext)
    n, zero = model.njoints, ca.DM.zeros(6, 1)
    vp, ap = [None] * n, [None] * n
    u, alpha, nu = [None] * n, [None] * n, [None] * n
    # --- the parents' motion and the sets each joint's columns pair with
    for k in range(n):
        p = model.parents[k]
        vp[k], ap[k] = (zero, fw.world.a0[k]) if p < 0 else (fw.world.v[p], fw.world.a[p])
        u[k] = cross_sets(vp[k], fw.world.S[k])
        alpha[k] = cross_sets(ap[k], fw.world.S[k]) + motion_cross(vp[k], u[k])
        nu[k] = cross_sets(fw.world.v[k] + vp[k], fw.world.S[k])
    IC, BC2, FC = idsva.composites(model, fw)  # IDSVA's, shared
    return Kinematics(fw, vp, ap, IC, BC2, FC, u, alpha, nu)


def lam_composites(model, kin, lam):
    """The ``Multiplier`` of lam: lam-velocities root to leaves, their composites leaves to root."""
    n, fw = model.njoints, kin.fw
    w, wp = [None] * n, [None] * n
    # --- lam-velocities, root to leaves
    for i in range(n):
        p = model.parents[i]
        wJ = ca.mtimes(fw.world.S[i], lam[model.v_slice(i)])
        wp[i], w[i] = (None, wJ) if p < 0 else (w[p], w[p] + wJ)
    # --- their composites, leaves to root
    lw = [Coriolis2.of_body(fw.world.I[i], w[i]) for i in range(n)]  # I_i w_i and W(I_i, w_i)
    hC = subtree_sums(model, [ca.vertcat(x.fl, x.fa) for x in lw])
    WC = subtree_sums(model, [x.W for x in lw])
    ZC = subtree_sums(model, [fw.BC2[i].transpose_times(w[i]) for i in range(n)])
    return Multiplier(w, wp, hC, WC, ZC)


def _angular(x):
    """The 6-row force whose linear rows vanish and angular rows are x."""
    return ca.vertcat(ca.DM(3, x.shape[1]), x)


def psi_prime(mult, j, X):
    """The angular rows of Psi' X for the motion set X (its linear rows vanish)."""
    hl, ha = lin(mult.hC[j]), ang(mult.hC[j])
    return 2 * cross(-hl, lin(X)) + cross(-ha, ang(X)) - ca.mtimes(mult.WC[j], ang(X))


def force_sets(f, S):
    """S x* f for each column of S (a 6 x nv_j set)."""
    return ca.horzcat(*[force_cross(S[:, c], f) for c in range(S.shape[1])])


# ---------------------------------------------------------------- the adjoint: gradient of lam^T tau


def gradient(model, kin, mult, lam):
    """(g_q, g_v, g_a, g_f): g_f the 6 x njoints gradient by the external forces (joint frames)."""
    fw, gq, gv, ga, gf = kin.fw, [], [], [], []
    for j in range(model.njoints):
        S, hC = fw.world.S[j], mult.hC[j]
        F_v = _angular(mult.ZC[j]) - force_cross(kin.vp[j], hC)
        gq.append(-ca.mtimes(S.T, force_cross(kin.vp[j], F_v) + force_cross(kin.ap[j], hC)))
        if mult.wp[j] is not None:
            gq[-1] = gq[-1] - ca.mtimes(S.T, force_cross(mult.wp[j], kin.FC[j]))
        gv.append(ca.mtimes(S.T, F_v - force_cross(fw.world.v[j], hC)))
        ga.append(ca.mtimes(S.T, hC))
        armature = model.joint_armature(j)
        if armature is not None:
            ga[-1] = ga[-1] + armature * lam[model.v_slice(j)]
        gf.append(-fw.world.oMi[j].inv_act_motion(mult.w[j]))
    return ca.vertcat(*gq), ca.vertcat(*gv), ca.vertcat(*ga), ca.horzcat(*gf)


# ---------------------------------------------------------------- pairs: derivatives of g[j] along joint k


class Pairs(NamedTuple):
    """Joint blocks (j, k) of the gradient's Jacobian for k on the path from the root to j:
    D = d g_q[j] / d q_k, qv = d g_q[j] / d v_k, vq = d g_v[j] / d q_k, vv = d g_v[j] / d v_k,
    qa = d g_q[j] / d a_k, aq = d g_a[j] / d q_k."""

    D: dict
    qv: dict
    vq: dict
    vv: dict
    qa: dict
    aq: dict


def pairs(model, kin, mult, rows=None):
    """The ``Pairs`` of the joints ``rows`` (default all; for the others g vanishes with their
    composites) with every joint that supports them."""
    fw, n = kin.fw, model.njoints
    om = [None if mult.wp[k] is None else cross_sets(mult.wp[k], fw.world.S[k]) for k in range(n)]
    out = Pairs({}, {}, {}, {}, {}, {})
    for j in range(n) if rows is None else rows:
        S, hC, IC, BC2 = fw.world.S[j], mult.hC[j], kin.IC[j], kin.BC2[j]
        # per column s of S_j, the sets the columns of the supporting joints pair with
        e_u = cross(mult.ZC[j], ang(S)) + psi_prime(mult, j, kin.u[j])
        c_al = -force_sets(hC, S)
        if om[j] is not None:
            e_u = e_u + BC2.transpose_times(om[j])
            c_al = c_al + IC.act(om[j])
        c_om = -force_sets(kin.FC[j], S) + IC.act(kin.alpha[j]) + BC2.times(kin.u[j])
        b_u = psi_prime(mult, j, S)
        b_om = BC2.times(S) - IC.act(kin.nu[j])
        t1 = IC.act(S)
        for k in model.supports[j]:
            sigma, u = fw.world.S[k], kin.u[k]
            out.D[j, k] = ca.mtimes(e_u.T, ang(u)) + ca.mtimes(c_al.T, kin.alpha[k])
            out.qv[j, k] = ca.mtimes(c_al.T, kin.nu[k]) - ca.mtimes(e_u.T, ang(sigma))
            out.vq[j, k] = -ca.mtimes(b_u.T, ang(u))
            out.vv[j, k] = ca.mtimes(b_u.T, ang(sigma))
            if k != j:
                out.qa[j, k] = -ca.mtimes(c_al.T, sigma)
            elif om[j] is not None:  # moving qdd_j moves no boundary: -(IC sigma) . (s x wp)
                out.qa[j, j] = -ca.mtimes(om[j].T, t1)
            if om[k] is not None:
                out.D[j, k] = out.D[j, k] + ca.mtimes(c_om.T, om[k])
                out.vq[j, k] = out.vq[j, k] - ca.mtimes(b_om.T, om[k])
                out.aq[j, k] = -ca.mtimes(t1.T, om[k])
        if S.shape[1] > 1:
            _same_joint(kin, mult, j, out)
    return out


def _same_joint(kin, mult, j, out):
    """A multi-dof joint's own velocity and acceleration blocks: moving qd_j or qdd_j changes the
    subtree's relative motion, not only its boundary, which adds (for columns s, sigma)
    (sigma x s) . hC to d g_v / d v (and to d g_q / d a, taken in ``pairs`` as it stands) and
    hC . ((sigma x s) x vp - s x (sigma x vJ)) + F_v . (s x sigma) to d g_q / d v; each vanishes
    for one column."""
    S, hC, vp = kin.fw.world.S[j], mult.hC[j], kin.vp[j]
    vJ = kin.fw.world.v[j] - vp
    F_v = _angular(mult.ZC[j]) - force_cross(vp, hC)
    qv, vv = [], []
    for a in range(S.shape[1]):
        s = S[:, a]
        sxS = motion_cross(s, S)  # s x sigma for every column sigma
        vv.append(ca.mtimes(hC.T, sxS))
        qv.append(ca.mtimes(F_v.T, sxS) - ca.mtimes(hC.T, cross_sets(vp, sxS) + motion_cross(s, cross_sets(vJ, S))))
    out.vv[j, j] = out.vv[j, j] + ca.vertcat(*vv)
    out.qv[j, j] = out.qv[j, j] + ca.vertcat(*qv)


# ---------------------------------------------------------------- assembled blocks


def mirrored(model, lower, upper):
    """The nv x nv matrix with blocks ``lower[j, k]`` for k supporting j and ``upper[j, k]^T`` at
    (k, j) for k strictly supporting j."""
    blocks = dict(lower)
    for (j, k), block in upper.items():
        if j != k:
            blocks[k, j] = block.T
    return assemble(model, blocks)


def external_force_blocks(model, kin, mult):
    """d g_f / d q: row 6 i + c (f_ext vectorised column by column), column of q_k:
    oMi^-1 (sigma x wp_k) for k supporting i (the lam-velocity seen by body i turns)."""
    rows, w = [], kin.fw.world
    for i in range(model.njoints):
        block = ca.DM(6, model.nv)
        for k in model.supports[i]:
            if mult.wp[k] is not None:
                block = block + columns(model, k, w.oMi[i].inv_act_motion(cross_sets(mult.wp[k], w.S[k])))
        rows.append(block)
    return ca.vertcat(*rows)


def force_jacobian(model, kin):
    """d tau / d f_ext = -[J_1^T ... J_n^T] (nv x 6 njoints), J_i the local Jacobian of body i."""
    return -ca.horzcat(*[J.T for J in body_jacobians(model, kin.fw.world)])


def adjoint_jacobian_blocks(model, kin, mult, f_ext=None):
    """{(gradient part, input): block} of d g / d (q, v, a, f_ext), q along q (+) delta' (``D``);
    the derivatives by lam are the first-order Jacobian's transpose and are not included."""
    P = pairs(model, kin, mult)
    qv = mirrored(model, P.qv, P.vq)
    qa = mirrored(model, P.qa, P.aq)
    blocks = {
        ("q", "q"): mirrored(model, P.D, P.D),
        ("q", "v"): qv,
        ("v", "q"): qv.T,
        ("v", "v"): mirrored(model, P.vv, P.vv),
        ("q", "a"): qa,
        ("a", "q"): qa.T,
    }
    if f_ext is not None:
        fq = external_force_blocks(model, kin, mult)
        blocks["f_ext", "q"], blocks["q", "f_ext"] = fq, fq.T
    return blocks
