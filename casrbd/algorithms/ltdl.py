"""M^-1 B through the sparse factorization M = L^T D L.

Featherstone, RBDA section 6.5 (Table 6.3, LTDL): with the velocity
coordinates in tree order, the factor L of the joint-space inertia matrix
has nonzeros only at (i, j) with j an ancestor of dof i (``model.dof_parents``),
so factorizing costs the sum over dofs of their depth squared and each
back-substitution the sum of depths; the structural zeros of a right-hand
side (the columns of dtau/du touch only the dofs on one branch) are skipped
by casadi. Glossary: ``L[i, j]`` for j an ancestor of i, ``Dinv[i]`` = 1 / D_ii.
"""
import casadi as ca


def ancestors(model, i):
    j = model.dof_parents[i]
    while j >= 0:
        yield j
        j = model.dof_parents[j]


def factorize(model, M):
    """(L, Dinv): the strictly lower entries of L on the ancestors, and 1 / diag(D)."""
    H = {(i, j): M[i, j] for i in range(model.nv) for j in (i, *ancestors(model, i))}
    for k in reversed(range(model.nv)):
        for i in ancestors(model, k):
            a = H[k, i] / H[k, k]
            for j in (i, *ancestors(model, i)):
                H[i, j] = H[i, j] - a * H[k, j]
            H[k, i] = a
    L = {key: value for key, value in H.items() if key[0] != key[1]}
    return L, [1 / H[i, i] for i in range(model.nv)]


def solve(model, factors, B):
    """M^-1 B = L^-1 D^-1 L^-T B for an nv x m matrix B, row by row."""
    L, Dinv = factors
    X = [B[i, :] for i in range(model.nv)]
    for i in reversed(range(model.nv)):      # L^T y = b, leaves to root
        for j in ancestors(model, i):
            X[j] = X[j] - L[i, j] * X[i]
    X = [Dinv[i] * X[i] for i in range(model.nv)]
    for i in range(model.nv):                # L x = z, root to leaves
        for j in ancestors(model, i):
            X[i] = X[i] - L[i, j] * X[j]
    return ca.vertcat(*X)
