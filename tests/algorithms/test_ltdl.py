"""The sparse products through M = L^T D L (``passes/ltdl.py``) against numpy's dense algebra."""

import casadi as ca
import numpy as np

from casrbd.algorithms.configuration import integrate, neutral
from casrbd.algorithms.crba import crba
from casrbd.algorithms.passes import ltdl
from casrbd.models import random_tree


def test_sandwich_and_g_times_match_dense_products():
    """G P G^T for P = D^-1 - R^T E R with R on the dofs of two branches (both ways of ``sandwich``: through
    P and as M^-1 - U V^T), and G B for a B with structural zeros, equal numpy's with G = inv(L)."""
    m = random_tree(12, branching=None, seed=13)
    q = ca.SX.sym("q", m.nq)
    f = ltdl.factorize(m, crba(m, q))
    dofs = [k for j in (0, 1, 3, 5, 10) for k in range(m.v_slice(j).start, m.v_slice(j).stop)]
    r = 4
    Rs, Bs = ca.SX.sym("R", r, len(dofs)), ca.SX.sym("B", 3, 2)
    R = ca.SX(r, m.nv)
    R[:, dofs] = Rs
    e = ca.SX.sym("e", r)
    C = ca.mtimes(R.T, ca.mtimes(ca.diag(e), R))
    P = ca.diag(ca.vertcat(*f.Dinv)) - C
    G = ltdl.g_times(m, f, ca.SX.eye(m.nv))
    U = ltdl.g_times(m, f, ca.mtimes(R.T, ca.diag(e)))
    V = ltdl.g_times(m, f, R.T)
    B = ca.SX(m.nv, 2)
    B[dofs[:3], :] = Bs
    L = ca.SX.eye(m.nv)
    for (i, j), x in f.L.items():
        L[i, j] = x
    outs = [ltdl.sandwich(m, f, P), ltdl.sandwich(m, f, P, (U, V)), ltdl.g_times(m, f, B), L, ca.vertcat(*f.Dinv)]
    outs += [crba(m, q), G]
    fun = ca.Function("f", [q, Rs, e, Bs], outs)
    rng = np.random.default_rng(0)
    qn = integrate(m, ca.DM(neutral(m)), ca.DM(rng.uniform(-1, 1, m.nv)))
    Rn, en, Bn = rng.normal(size=(r, len(dofs))), rng.uniform(0.5, 2, r), rng.normal(size=(3, 2))
    plain, low_rank, GB, Ln, Dinv, M, Gn = (np.array(x) for x in fun(qn, Rn, en, Bn))
    assert np.allclose(Ln.T @ np.diag(1 / Dinv.ravel()) @ Ln, M, rtol=1e-12, atol=1e-12)
    Ginv = np.linalg.inv(Ln)
    assert np.allclose(Gn, Ginv, atol=1e-12)
    Rfull = np.zeros((r, m.nv))
    Rfull[:, dofs] = Rn
    Pn = np.diag(Dinv.ravel()) - Rfull.T @ np.diag(en) @ Rfull
    expected = Ginv @ Pn @ Ginv.T
    scale = np.abs(expected).max()
    assert np.abs(plain - expected).max() < 1e-12 * scale
    assert np.abs(low_rank - expected).max() < 1e-12 * scale
    Bfull = np.zeros((m.nv, 2))
    Bfull[dofs[:3], :] = Bn
    assert np.allclose(GB, Ginv @ Bfull, atol=1e-12)
