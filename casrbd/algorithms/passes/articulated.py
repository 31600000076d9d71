"""The articulated-body inertias: pass 2 of the articulated-body algorithm without bias forces.

Featherstone, *Rigid Body Dynamics Algorithms* (2008), Table 7.1. They do not
depend on v or tau, and serve ``aba``, ``minverse`` and the check that finds
joints whose mass matrix block is singular (``singular_joints``). Glossary
(local frame of joint i): IA I^A_i, U_i = I^A_i S_i, D_i = S_i^T U_i,
UDinv = U_i D_i^-1, Ia = I^A_i - U_i D_i^-1 U_i^T, what i passes to its parent.
"""

from typing import NamedTuple

import casadi as ca
import numpy as np

from ...model import per_model
from ...spatial import spd_solve, symmetric
from ..configuration import integrate, neutral
from .memo import shared
from .tree import motion_subspaces, placements


class Articulated(NamedTuple):
    liMi: list
    S: list
    IA: list
    U: list
    D: list
    UDinv: list
    Ia: list


@shared
def articulated_inertias(model, liMi, S, solve=spd_solve):
    """I^A_i, U_i, D_i, U_i D_i^-1 and I^a_i for every body; ``solve(D, B)`` = D^-1 B."""
    n = model.njoints
    IA = [Y.matrix() for Y in model.algorithm_frames.inertias]
    U, D, UDinv, Ia = [None] * n, [None] * n, [None] * n, [None] * n
    for i in reversed(range(n)):
        p = model.parents[i]
        U[i] = ca.mtimes(IA[i], S[i])
        D[i] = ca.mtimes(S[i].T, U[i])
        armature = model.joint_armature(i)
        if armature is not None:  # the rotors' inertia, on the joint's own motion
            D[i] = D[i] + ca.diag(armature)
        rows = None if armature is not None else _selected_rows(S[i])
        if rows is None:
            UDinv[i] = solve(D[i], U[i].T).T
            if p >= 0:
                Ia[i] = symmetric(IA[i] - ca.mtimes(UDinv[i], U[i].T))
        else:
            # S selects rows (with signs): S^T U D^-1 = I gives UDinv = S on those rows and
            # Ia = 0 on their rows and columns, exact zeros and ones casadi cannot derive
            free = [k for k in range(6) if k not in rows]
            E, F = _embedding(rows), _embedding(free)
            Uf = U[i][free, :]
            UDinv_f = solve(D[i], Uf.T).T if free else ca.DM(0, S[i].shape[1])
            UDinv[i] = ca.mtimes(E, S[i][rows, :]) + ca.mtimes(F, UDinv_f)
            if p >= 0:
                Ia_f = symmetric(IA[i][free, free] - ca.mtimes(UDinv_f, Uf.T))
                Ia[i] = ca.mtimes(ca.mtimes(F, Ia_f), F.T)
        if p >= 0:
            IA[p] = IA[p] + liMi[i].act_inertia(Ia[i])
    return Articulated(liMi, S, IA, U, D, UDinv, Ia)


def _selected_rows(S):
    """The rows of S's nonzeros when every column of S is +-1 times a distinct unit vector, else None."""
    if not isinstance(S, np.ndarray):
        return None
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


def _pseudo_solve(D, B):
    return ca.DM(np.linalg.pinv(np.array(D), hermitian=True)) @ B


@per_model
def singular_joints(model):
    """Names of the joints whose D_i is singular, in tree order: M is singular exactly when one
    is (det M is the product of the det D_i), e.g. a joint whose subtree has no mass, or one whose
    motion the joints below it can undo without moving mass (a massless free-flyer root over a
    revolute joint). The pass runs on numbers at a generic configuration (fixed seed), with
    pseudo-inverses so that a singular D_i does not spoil its ancestors'; singular there means
    singular almost everywhere. Models with symbolic inertias or placements are not checked (empty result)."""
    constants = [x for Y in model.inertias for x in (Y.mass, Y.h, Y.I)] + [
        x for X in model.placements for x in (X.R, X.p)
    ]
    if any(isinstance(x, (ca.SX, ca.MX)) for x in constants):
        return ()
    dv = ca.DM(np.random.default_rng(0).uniform(-1, 1, model.nv))
    q = integrate(model, ca.DM(neutral(model)), dv)
    art = articulated_inertias(model, placements(model, q), motion_subspaces(model, q), _pseudo_solve)
    idle = []
    for i in range(model.njoints):
        D, IA = np.array(art.D[i]), np.array(art.IA[i])
        if np.linalg.eigvalsh(D)[0] <= 1e-12 + 1e-11 * np.abs(IA).max():  # kg, kg m^2; rounding
            idle.append(model.names[i])
    return tuple(idle)
