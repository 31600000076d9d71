"""Inverse of the joint-space inertia matrix without forming M, and M^-1 B.

The dedicated algorithm cited in seed 003 section IV-C (Carpentier 2018,
Pinocchio's ``computeMinverse``) is ABA with zero velocity and gravity
applied to all unit torques at once: column j of M^-1 is ABA(q, 0, e_j)
with a_g = 0. The same passes applied to the columns of any matrix B give
M^-1 B; seed 004 section IV-E calls that AZA when B = dtau/du. The bias
forces become force sets P[i] (6 x m), nonzero only on the columns that
the subtree of i touches. ``minverse`` runs in the frames of ``frames.py``.
Glossary (local frame of joint i): IA, U, D as in
ABA, UDinv = U D^-1; E the rows of B for joint i; A the acceleration set.
"""
from typing import NamedTuple

import casadi as ca

from ..spatial import spd_solve, symmetric
from .frames import algorithm_frames, placements


class Articulated(NamedTuple):
    liMi: list
    U: list
    D: list
    UDinv: list
    Ia: list    # I^A_i - U_i D_i^-1 U_i^T, what joint i passes to its parent
    S: list     # the motion subspaces, in the frames of liMi


def articulated_inertias(model, liMi, frames=None):
    """Pass 2 of ABA for the inertias alone (they do not depend on v or tau).

    ``frames``: body frames of ``frames.algorithm_frames`` that ``liMi`` relate
    (default: the joint frames)."""
    n = model.njoints
    S = [j.S for j in model.joints] if frames is None else frames.S
    IA = [(j.inertia if frames is None else frames.inertia[i]).matrix() for i, j in enumerate(model.joints)]
    U, D, UDinv, Ia = [None] * n, [None] * n, [None] * n, [None] * n
    for i in reversed(range(n)):
        joint = model.joints[i]
        U[i] = ca.mtimes(IA[i], S[i])
        D[i] = ca.mtimes(S[i].T, U[i])
        rows = _selected_rows(S[i])
        if rows is None:
            UDinv[i] = spd_solve(D[i], U[i].T).T
            if joint.parent >= 0:
                Ia[i] = symmetric(IA[i] - ca.mtimes(UDinv[i], U[i].T))
        else:
            # S selects rows (with signs): S^T U D^-1 = I gives UDinv = S on those rows and
            # Ia = 0 on their rows and columns, exact zeros and ones casadi cannot derive
            free = [k for k in range(6) if k not in rows]
            E, F = _embedding(rows), _embedding(free)
            Uf = U[i][free, :]
            UDinv_f = spd_solve(D[i], Uf.T).T if free else ca.DM(0, joint.nv)
            UDinv[i] = ca.mtimes(E, S[i][rows, :]) + ca.mtimes(F, UDinv_f)
            if joint.parent >= 0:
                Ia_f = symmetric(IA[i][free, free] - ca.mtimes(UDinv_f, Uf.T))
                Ia[i] = ca.mtimes(ca.mtimes(F, Ia_f), F.T)
        if joint.parent >= 0:
            IA[joint.parent] = IA[joint.parent] + liMi[i].act_inertia(Ia[i])
    return Articulated(liMi, U, D, UDinv, Ia, S)


def _selected_rows(S):
    """The rows of S's nonzeros when every column of S is +-1 times a distinct unit vector, else None."""
    rows = []
    for col in S.T:
        nz = [k for k in range(6) if col[k] != 0]
        if len(nz) != 1 or abs(col[nz[0]]) != 1 or nz[0] in rows:
            return None
        rows.append(nz[0])
    return rows


def _embedding(rows):
    """The sparse 6 x len(rows) matrix putting a vector's entries at ``rows``."""
    return ca.DM(ca.Sparsity.triplet(6, len(rows), rows, list(range(len(rows)))), 1.0)


def minv_product(model, art, B, upper=False):
    """M^-1 B for an nv x m matrix B, by passes 2 and 3 of ABA with v = 0, a_g = 0.

    ``upper``: B is the identity, so only the upper triangle is computed
    (rows of joint i on columns idx_v(i) on, since in tree order a subtree
    follows its root) and mirrored."""
    n, m = model.njoints, B.shape[1]
    P = [ca.DM(6, m) for _ in range(n)]
    u = [None] * n
    for i in reversed(range(n)):
        joint = model.joints[i]
        u[i] = B[model.v_slice(i), :] - ca.mtimes(art.S[i].T, P[i])
        if joint.parent >= 0:
            P[joint.parent] = P[joint.parent] + art.liMi[i].act_force(P[i] + ca.mtimes(art.UDinv[i], u[i]))
    A, rows = [None] * n, [None] * n
    first = [j.idx_v if upper else 0 for j in model.joints]
    for i, joint in enumerate(model.joints):
        p = joint.parent
        Ai = ca.DM(6, m - first[i]) if p < 0 else art.liMi[i].inv_act_motion(A[p][:, first[i] - first[p]:])
        rows[i] = spd_solve(art.D[i], u[i][:, first[i]:] - ca.mtimes(art.U[i].T, Ai))
        A[i] = Ai + ca.mtimes(art.S[i], rows[i])
    X = ca.vertcat(*[ca.horzcat(ca.DM(j.nv, first[i]), rows[i]) for i, j in enumerate(model.joints)])
    return symmetric(X) if upper else X


def minverse(model, q):
    F = algorithm_frames(model)
    art = articulated_inertias(model, placements(model, F, q), F)
    return minv_product(model, art, ca.DM.eye(model.nv), upper=True)
