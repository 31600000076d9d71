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
    """M^-1 = G D^-1 G^T, the upper triangle computed and mirrored."""
    rows = [{i: 1, **{k: f.G[i, k] for k in ancestors(model, i)}} for i in range(model.nv)]
    scaled = [{k: g * f.Dinv[k] for k, g in row.items()} for row in rows]
    upper = [
        [
            sum((w * rows[j][k] for k, w in scaled[i].items() if k in rows[j]), 0) if j >= i else 0
            for j in range(model.nv)
        ]
        for i in range(model.nv)
    ]
    return symmetric(ca.blockcat(upper))


def solve(model, f, B):
    """M^-1 B for an nv x m matrix B, row by row."""
    if not model.nv:  # no joint: B is 0 x m, and so is M^-1 B (vertcat of no rows would be 0 x 1)
        return B
    Y = [B[i, :] for i in range(model.nv)]
    for i in reversed(range(model.nv)):  # L^T y = b, leaves to root
        for j in ancestors(model, i):
            Y[j] = Y[j] - f.L[i, j] * Y[i]
    Z = [f.Dinv[i] * Y[i] for i in range(model.nv)]
    return ca.vertcat(*[Z[i] + sum((f.G[i, k] * Z[k] for k in ancestors(model, i)), 0) for i in range(model.nv)])
