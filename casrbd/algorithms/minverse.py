"""Inverse of the joint-space inertia matrix without forming M, and M^-1 B.

The dedicated algorithm of Carpentier & Mansard, "Analytical Derivatives of
Rigid Body Dynamics Algorithms" (RSS 2018), section IV-C (Pinocchio's
``computeMinverse``) is ABA with zero velocity and gravity applied to all
unit torques at once: column j of M^-1 is ABA(q, 0, e_j) with a_g = 0. The
same passes applied to the columns of any matrix B give M^-1 B; Singh,
Russell & Wensing, "Efficient Analytical Derivatives of Rigid-Body Dynamics
using Spatial Vector Algebra" (RA-L 2022), section IV-E, call that AZA when
B = dtau/du. The bias forces become force sets P[i] (6 x m), nonzero only on
the columns that the subtree of i touches. Glossary (local frame of joint i):
U, D, UDinv as in ``passes/articulated.py``; E the rows of B for joint i; A the
acceleration set.
"""

import casadi as ca

from ..spatial import spd_solve, symmetric
from ..spec import Out, Spec, configuration
from .passes.articulated import articulated_inertias
from .passes.tree import motion_subspaces, placements


def minv_product(model, art, B, upper=False):
    """M^-1 B for an nv x m matrix B, by passes 2 and 3 of ABA with v = 0, a_g = 0.

    ``upper``: B is the identity, so only the upper triangle is computed
    (rows of joint i on columns idx_v(i) on, since in tree order a subtree
    follows its root) and mirrored."""
    n, m = model.njoints, B.shape[1]
    if not n:  # no joint: M^-1 B is 0 x m (vertcat of no rows would be 1 x 0)
        return B[:0, :]
    P = [ca.DM(6, m) for _ in range(n)]
    u = [None] * n
    for i in reversed(range(n)):
        p = model.parents[i]
        u[i] = B[model.v_slice(i), :] - ca.mtimes(art.S[i].T, P[i])
        if p >= 0:
            P[p] = P[p] + art.liMi[i].act_force(P[i] + ca.mtimes(art.UDinv[i], u[i]))
    A, rows = [None] * n, [None] * n
    first = [model.idx_v[i] if upper else 0 for i in range(n)]
    for i in range(n):
        p = model.parents[i]
        Ai = ca.DM(6, m - first[i]) if p < 0 else art.liMi[i].inv_act_motion(A[p][:, first[i] - first[p] :])
        rows[i] = spd_solve(art.D[i], u[i][:, first[i] :] - ca.mtimes(art.U[i].T, Ai))
        A[i] = Ai + ca.mtimes(art.S[i], rows[i])
    X = ca.vertcat(*[ca.horzcat(ca.DM(j.nv, first[i]), rows[i]) for i, j in enumerate(model.joints)])
    return symmetric(X) if upper else X


def minverse(model, q):
    art = articulated_inertias(model, placements(model, q), motion_subspaces(model, q))
    return minv_product(model, art, ca.DM.eye(model.nv), upper=True)


SPECS = (Spec("minverse", minverse, (configuration(),), (Out("Minv"),), regular_mass=True),)
