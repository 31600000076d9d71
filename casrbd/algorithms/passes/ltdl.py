"""M^-1 and M^-1 B through the sparse factorization M = L^T D L.

Featherstone, *Rigid Body Dynamics Algorithms* (2008), section 6.5 (Table 6.3, LTDL): with the velocity
coordinates in tree order, the unit lower factor L of the joint-space
inertia matrix has nonzeros only at (i, j) with j an ancestor of dof i
(``model.dof_parents``), and so has its inverse G = L^-1. Then
M^-1 = G D^-1 G^T: entry (i, j) sums over the common ancestors of i and j,
and M^-1 B = G D^-1 (L^-T B), where L^-T B is a back-substitution from the
leaves and the product with G skips the structural zeros that the columns
of dtau/du keep (each touches only the dofs on one branch).
Glossary: ``L[i, j]``, ``G[i, j]`` for j an ancestor of i; ``Dinv[i]`` = 1 / D_ii.
"""

from typing import NamedTuple

import casadi as ca

from ...spatial import symmetric
from .memo import shared
from .tree import dof_ancestors as ancestors


class Factors(NamedTuple):
    L: dict
    G: dict
    Dinv: list


@shared
def factorize(model, M):
    H = {(i, j): M[i, j] for i in range(model.nv) for j in (i, *ancestors(model, i))}
    for k in reversed(range(model.nv)):
        for i in ancestors(model, k):
            a = H[k, i] / H[k, k]
            for j in (i, *ancestors(model, i)):
                H[i, j] = H[i, j] - a * H[k, j]
            H[k, i] = a
    G = {}
    for i in range(model.nv):  # L G = I, row i: G_ik = -L_ik - sum of L_ij G_jk over j between k and i
        up = list(ancestors(model, i))
        for n, k in enumerate(up):
            G[i, k] = -H[i, k] - sum((H[i, j] * G[j, k] for j in up[:n]), 0)
    L = {key: value for key, value in H.items() if key[0] != key[1]}
    return Factors(L, G, [1 / H[i, i] for i in range(model.nv)])


def inverse(model, f):
    """M^-1 = G D^-1 G^T."""
    return sandwich(model, f, ca.diag(ca.vertcat(*f.Dinv)))


def sandwich(model, f, P, low_rank=None):
    """G P G^T for a symmetric nv x nv P whose structural zeros follow the tree (D^-1, or D^-1 - C with
    C a block on the dofs that support the contacts), the upper triangle computed and mirrored: entry
    (i, j) sums over the ancestors l of j where (G P)_il is nonzero, so that dofs on different branches
    meet only in their common ancestors and the contact block. ``low_rank`` = (U, V) with G C G^T =
    U V^T (nv x r each, C of rank r, r products per entry): a row whose sums, with those of (G P)_i
    and of the entries of C it is the first to need, are longer than its entries' common ancestors
    plus r each is computed as M^-1_ij - U_i V_j^T instead (many contact rows on few branches)."""
    if not model.nv:  # no joints: casadi cannot assemble the empty rows
        return ca.DM(0, 0)
    GP = g_times(model, f, P)
    if low_rank is None:  # one sparse product: casadi's sums run over exactly those ancestors
        return symmetric(ca.mtimes(GP, g_matrix(model, f).T))
    gp, p = GP.sparsity(), P.sparsity()
    G = [{i: 1, **{k: f.G[i, k] for k in ancestors(model, i)}} for i in range(model.nv)]  # rows of G
    upper, paid = [], set()  # the rows of P that rows before used
    for i in range(model.nv):
        js = range(i, model.nv)
        through_p = [[l for l in G[j] if gp.has_nz(i, l)] for j in js]
        common = [[k for k in G[i] if k in G[j]] for j in js]
        r = low_rank[0].shape[1]
        nnz = {k: p.colind()[k + 1] - p.colind()[k] for k in G[i]}
        cost_p = sum(nnz.values()) + sum(map(len, through_p)) + r * sum(nnz[k] - 1 for k in G[i] if k not in paid) // 2
        if cost_p <= sum(len(ks) + r for ks in common):
            row = [sum((GP[i, l] * G[j][l] for l in ls), 0) for j, ls in zip(js, through_p)]
            paid.update(G[i])
        else:
            U, V = low_rank
            GD = {k: g * f.Dinv[k] for k, g in G[i].items()}  # row i of G D^-1
            row = [sum((GD[k] * G[j][k] for k in ks), 0) - ca.mtimes(U[i, :], V[j, :].T) for j, ks in zip(js, common)]
        upper.append([0] * i + row)
    return symmetric(ca.blockcat(upper))


def g_matrix(model, f):
    """G as a sparse casadi matrix: ones on the diagonal, G[i, k] for k an ancestor of i."""
    entries = [(i, i, 1) for i in range(model.nv)] + [(i, k, g) for (i, k), g in f.G.items()]
    entries.sort(key=lambda e: (e[1], e[0]))
    rows, cols, values = zip(*entries)
    values = ca.vertcat(*values)  # numbers, SX or MX: its nonzeros in column-major order
    return type(values)(ca.Sparsity.triplet(model.nv, model.nv, list(rows), list(cols)), values)


def g_times(model, f, B):
    """G B = L^-1 B for an nv x m matrix B: one sparse product, row i summing over the ancestors of i
    through the explicit G, so that the rows where B is structurally zero (the dofs off the branches
    that a column moves) cost nothing, where a forward substitution would fill them in first."""
    if not model.nv:
        return B
    return ca.mtimes(g_matrix(model, f), B)


def lt_solve(model, f, B):
    """L^-T B: back-substitution from the leaves (rows of B on the dofs); a column's nonzeros spread
    only to the ancestors of its rows."""
    Y = [B[i, :] for i in range(model.nv)]
    for i in reversed(range(model.nv)):
        for j in ancestors(model, i):
            Y[j] = Y[j] - f.L[i, j] * Y[i]
    return ca.vertcat(*Y)


def scaled(f, Y):
    """D^-1 Y."""
    return ca.vertcat(*[d * Y[i, :] for i, d in enumerate(f.Dinv)])


def solve(model, f, B):
    """M^-1 B = G D^-1 L^-T B for an nv x m matrix B."""
    if not model.nv:  # no joint: B is 0 x m, and so is M^-1 B (vertcat of no rows would be 0 x 1)
        return B
    return g_times(model, f, scaled(f, lt_solve(model, f, B)))
