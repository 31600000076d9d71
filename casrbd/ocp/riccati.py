"""Gauss-Newton real-time iteration of a stagewise problem: one linearisation, one Riccati recursion.

The problem: min sum_k cost_k(x_k, u_k, p_k) + cost_N(x_N, p_N) over x_0..x_N, u_0..u_N-1 subject to
x_k+1 = x_next_k(x_k, u_k, p_k) (multiple shooting: the gaps x_next_k - x_k+1 are closed by the steps,
not at every iterate) and x_0 = x0, the measured state; no path constraints. Its linear-quadratic (LQ)
model at (xs, us): per knot the cost's gradient (q, r) and Hessian [[Q, S], [S^T, R]] in (x, u) as the
stage Function carries it (a Gauss-Newton stage's: J^T (Hessian of the cost) J, ``gauss_newton_stage``),
the dynamics' A = d x_next/dx, B = d x_next/du and the gap f = x_next - x_k+1. All of it comes from one
call per knot of the adjoint's Jacobian (``jac_adj1_``, casadi's derivative protocol) with seeds 1 on the
cost and 0 on x_next: its blocks by (x, u) are the Hessian, by the cost's seed the gradient, by x_next's
seed A^T and B^T; the knots' calls make one MX Function (``RTI.linearisation``), one call per update.

``riccati`` solves the LQ model as DDP's backward pass does with defects (Crocoddyl's FDDP, acados'
RTI; Giftthaler et al., "A family of iterative Gauss-Newton shooting methods", 2018):

    Qxx = Q + A^T P A    Qux = S^T + B^T P A    Quu = R + B^T P B
    qx = q + A^T (p + P f)    qu = r + B^T (p + P f)
    K = -Quu^-1 Qux    k = -Quu^-1 qu    P = Qxx + Qux^T K    p = qx + Qux^T k

from P_N = Q_N, p_N = q_N; the forward pass dx_0 = x0 - x_0, du_k = K_k dx_k + k_k,
dx_k+1 = A dx_k + B du_k + f_k. K_k is the feedback gain of the LQ problem's optimal control law.
A step takes the whole solution (real-time iteration) or, with a line search, the largest fraction of it
that decreases an l1 merit function of the cost and the gaps enough (Nocedal and Wright, section 18.3).
"""

from typing import NamedTuple

import casadi as ca
import numpy as np

from .compile import GAP_OUTPUT, negated

ARMIJO_STEPS = 12  # a line search's halvings at most


class LQ(NamedTuple):
    """The LQ model at (xs, us): per knot ``Q`` (nx x nx, N + 1 of them), ``S`` (nx x nu), ``R`` (nu x nu),
    ``q`` (nx, N + 1), ``r`` (nu), ``A``, ``B``, the gaps ``f`` = x_next_k - x_k+1 (N each) and the
    ``cost`` at (xs, us)."""

    Q: list
    S: list
    R: list
    q: list
    r: list
    A: list
    B: list
    f: list
    cost: float


class Step(NamedTuple):
    """A real-time iteration's result: states ``xs`` (N + 1 x nx), controls ``us`` (N x nu; lists of both
    where the knots' nu differ), the gains ``K`` (N x nu x nx: du = K dx), the ``cost`` and the largest gap
    |x_next_k - x_k+1| at the point it started from (``gap``), the largest entry of the step taken
    (``step``) and its fraction of the LQ model's solution (``alpha``)."""

    xs: np.ndarray
    us: np.ndarray
    K: np.ndarray
    cost: float
    gap: float
    step: float
    alpha: float = 1.0


class Solution(NamedTuple):
    """``riccati``'s: the steps ``dxs``, ``dus``, du_k = ``K``_k dx_k + ``k``_k, and the multipliers ``lam``
    (lam_0 of x_0 = x0, lam_k+1 of the dynamics of knot k: P dx + p)."""

    dxs: list
    dus: list
    K: list
    k: list
    lam: list


def riccati(lq, dx0, regularisation=0.0):
    """The LQ model's ``Solution`` from the initial deviation ``dx0``. ``regularisation``: added to Quu's
    diagonal where Quu is not positive definite (0: an error naming the knot instead)."""
    N = len(lq.A)
    P, p = lq.Q[N], lq.q[N]
    Ks, ks, Ps, ps = [None] * N, [None] * N, [None] * N + [P], [None] * N + [p]
    for k in range(N - 1, -1, -1):  # backward pass
        A, B, PA, PB = lq.A[k], lq.B[k], P @ lq.A[k], P @ lq.B[k]
        s = p + P @ lq.f[k]
        Qxx, Qux, Quu = lq.Q[k] + A.T @ PA, lq.S[k].T + B.T @ PA, lq.R[k] + B.T @ PB
        qx, qu = lq.q[k] + A.T @ s, lq.r[k] + B.T @ s
        gains = -np.linalg.solve(_positive_definite(Quu, k, regularisation), np.hstack([Qux, qu[:, None]]))
        Ks[k], ks[k] = gains[:, :-1], gains[:, -1]
        P = Qxx + Qux.T @ Ks[k]
        P, p = 0.5 * (P + P.T), qx + Qux.T @ ks[k]
        Ps[k], ps[k] = P, p
    dxs, dus = [np.asarray(dx0, dtype=float)], []
    for k in range(N):  # forward pass
        dus.append(Ks[k] @ dxs[k] + ks[k])
        dxs.append(lq.A[k] @ dxs[k] + lq.B[k] @ dus[k] + lq.f[k])
    return Solution(dxs, dus, Ks, ks, [P @ dx + p for P, p, dx in zip(Ps, ps, dxs)])


def _positive_definite(Quu, knot, regularisation):
    """Quu, or Quu + regularisation I where Quu is not positive definite (its Cholesky factor fails)."""
    try:
        np.linalg.cholesky(Quu)
        return Quu
    except np.linalg.LinAlgError:
        if regularisation > 0:
            return _positive_definite(Quu + regularisation * np.eye(len(Quu)), knot, 0.0)
        if not np.isfinite(Quu).all():
            raise np.linalg.LinAlgError(f"knot {knot}: the control Hessian R + B^T P B is not finite") from None
        eig = np.linalg.eigvalsh(Quu)
        raise np.linalg.LinAlgError(
            f"knot {knot}: the control Hessian R + B^T P B is not positive definite (eigenvalues from "
            f"{eig[0]:.3g} to {eig[-1]:.3g}); give the controls a cost or pass a regularisation"
        ) from None


def _derivative_source(f):
    """f, or for a stage that ``compile_stages`` loaded (a call of its library's ``<f>_negated``, x_next
    negated back) that library Function through ``negated``, whose derivatives call the library's once
    each, where casadi's AD of the call would call them once per chunk of directions."""
    calls = [f.instruction_MX(i) for i in range(f.n_instructions()) if f.instruction_id(i) == ca.OP_CALL]
    if not f.is_a("MXFunction") or len(calls) != 1:
        return f
    core = calls[0].which_function()
    return negated(core, GAP_OUTPUT, f.name()) if core.name() == f.name() + "_negated" else f


class RTI:
    """Real-time iterations of the problem of ``stages`` (Functions (x, u, p) -> (cost, x_next), one per
    knot, the same Function at many knots) and ``terminal`` ((x, u[0], p) -> (cost, ...)), the parameters
    p of every knot concatenated, knot by knot. Builds ``linearisation`` (xs, us, p) -> the LQ model's
    numbers, one MX Function of calls of each stage and its adjoint's Jacobian."""

    def __init__(self, stages, terminal, name="rti"):
        stages = list(stages)
        if not stages:
            raise ValueError("RTI needs at least one stage")
        self.nx = nx = terminal.numel_in(0)
        for k, f in enumerate([*stages, terminal]):
            what = "terminal" if k == len(stages) else f"stage {k}"
            if f.n_in() != 3 or f.n_out() < 2 or f.name_out()[:2] != ["cost", "x_next"] or f.numel_out(0) != 1:
                raise ValueError(f"{what} Function {f.name()!r}: expected (x, u, p) -> (cost, x_next)")
            if f.n_out() > 2:
                raise ValueError(
                    f"{what} Function {f.name()!r} has path constraints {f.name_out()[2:]}: RTI takes none"
                )
            if f.numel_in(0) != nx or (k < len(stages) and f.numel_out(1) != nx):
                raise ValueError(f"{what} Function {f.name()!r}: x and x_next must have nx = {nx} entries")
        if terminal.numel_in(1):
            raise ValueError(f"terminal Function {terminal.name()!r} takes a control ({terminal.numel_in(1)})")
        self.stages, self.terminal, self.N = stages, terminal, len(stages)
        self.nus = [f.numel_in(1) for f in stages]
        self.n_p = [f.numel_in(2) for f in [*stages, terminal]]
        self.linearisation, self.nominal, self._layout = self._build(name)
        # evaluated on numpy buffers of its own: no conversion of the inputs and outputs per call
        self._buffer, self._evaluate = self.linearisation.buffer()
        self._args = [np.zeros(self.linearisation.nnz_in(i)) for i in range(3)]
        self._out = np.zeros(self.linearisation.nnz_out(0))
        for i, a in enumerate(self._args):
            self._buffer.set_arg(i, memoryview(a))
        self._buffer.set_res(0, memoryview(self._out))

    def _build(self, name):
        nx, N = self.nx, self.N
        X, U, P = ca.MX.sym("xs", nx, N + 1), ca.MX.sym("us", sum(self.nus)), ca.MX.sym("p", sum(self.n_p))
        hessians, outputs, nominal, layout, at_u, at_p, at = {}, [], [], [], 0, 0, 0
        for k, f in enumerate([*self.stages, self.terminal]):
            nu = f.numel_in(1)
            x, u, p = X[:, k], U[at_u : at_u + nu], P[at_p : at_p + f.numel_in(2)]
            at_u, at_p = at_u + nu, at_p + f.numel_in(2)
            if f.name() not in hessians:
                hessians[f.name()] = _derivative_source(f).reverse(1).jacobian()
            cost, x_next = f(x, u, p)[:2]
            nominal += [cost, x_next - X[:, k + 1]] if k < N else [cost]
            seeds = {"adj_cost": 1, "adj_x_next": ca.MX.zeros(f.sparsity_out(1))}
            d = hessians[f.name()].call({"x": x, "u": u, "p": p, "out_cost": cost, "out_x_next": x_next} | seeds)
            blocks = [("cost", cost, (1,)), ("Q", d["jac_adj_x_x"], (nx, nx)), ("q", d["jac_adj_x_adj_cost"], (nx,))]
            if k < N:
                blocks += [
                    ("x_next", x_next, (nx,)),
                    ("S", d["jac_adj_x_u"], (nx, nu)),
                    ("R", d["jac_adj_u_u"], (nu, nu)),
                    ("r", d["jac_adj_u_adj_cost"], (nu,)),
                    ("A", d["jac_adj_x_adj_x_next"].T, (nx, nx)),
                    ("B", d["jac_adj_u_adj_x_next"].T, (nx, nu)),
                ]
            entry = {}
            for key, value, shape in blocks:
                size = int(np.prod(shape))
                outputs.append(ca.vec(ca.densify(value)))
                entry[key], at = (slice(at, at + size), shape), at + size
            layout.append(entry)
        F = ca.Function(name + "_linearisation", [X, U, P], [ca.vertcat(*outputs)], ["xs", "us", "p"], ["lq"])
        costs = ca.vertcat(*nominal[::2])
        G = ca.Function(
            name + "_nominal",
            [X, U, P],
            [ca.sum1(costs), ca.vertcat(*nominal[1::2])],
            ["xs", "us", "p"],
            ["cost", "gaps"],
        )
        return F, G, layout

    def linearise(self, xs, us, p):
        """The LQ model at the states ``xs`` (N + 1 x nx), controls ``us`` (N rows, or their concatenation)
        and parameters ``p`` (every knot's, concatenated)."""
        xs, us, p = self._check(xs, us, p)
        for a, value in zip(self._args, (xs, us, p)):
            a[:] = value.ravel()  # xs row by row: the Function's nx x (N + 1) column by column
        self._evaluate()
        if self._buffer.ret():
            raise RuntimeError(f"{self.linearisation.name()}: evaluation failed (code {self._buffer.ret()})")
        v = self._out.copy()

        def block(entry, key):
            s, shape = entry[key]
            return v[s].reshape(shape, order="F")

        running = self._layout[:-1]
        Q = [block(e, "Q") for e in self._layout]
        q = [block(e, "q") for e in self._layout]
        S, R, r, A, B = ([block(e, key) for e in running] for key in "SRrAB")
        f = [block(e, "x_next") - xs[k + 1] for k, e in enumerate(running)]
        cost = float(sum(v[e["cost"][0]][0] for e in self._layout))
        return LQ(Q, S, R, q, r, A, B, f, cost)

    def _check(self, xs, us, p):
        xs = np.asarray(xs, dtype=float)
        if xs.shape != (self.N + 1, self.nx):
            raise ValueError(f"xs: expected shape ({self.N + 1}, {self.nx}), got {xs.shape}")
        us = np.concatenate([np.ravel(u) for u in us]) if len(us) else np.zeros(0)
        if us.size != sum(self.nus):
            raise ValueError(f"us: expected {sum(self.nus)} numbers in all (per knot {self.nus}), got {us.size}")
        p = np.asarray(p, dtype=float).ravel()
        if p.size != sum(self.n_p):
            raise ValueError(f"p: expected {sum(self.n_p)} numbers (every knot's parameters), got {p.size}")
        return xs, us, p

    def step(self, x0, xs, us, p, regularisation=0.0, line_search=False):
        """One Gauss-Newton step from (``xs``, ``us``) towards x_0 = ``x0``: the LQ model's solution, whole
        (real-time iteration), or with ``line_search`` its largest fraction 2^-i that decreases the l1
        merit cost + mu (|x_0 - x0| + sum |x_next_k - x_k+1|) enough (Armijo; mu above the multipliers),
        which a problem whose full steps cycle needs. ``regularisation``: ``riccati``'s."""
        x0 = np.asarray(x0, dtype=float).ravel()
        if x0.size != self.nx:
            raise ValueError(f"x0: expected {self.nx} numbers, got {x0.size}")
        lq = self.linearise(xs, us, p)
        xs, us = np.asarray(xs, dtype=float), np.concatenate([np.ravel(u) for u in us]) if len(us) else np.zeros(0)
        sol = riccati(lq, x0 - xs[0], regularisation)
        dxs, dus = np.array(sol.dxs), np.concatenate(sol.dus)
        gap = max((np.abs(f).max() for f in lq.f if f.size), default=0.0)
        alpha = 1.0
        if line_search:
            mu = 1.0 + 2.0 * max(np.abs(lam).max() for lam in sol.lam)
            infeasibility = np.abs(xs[0] - x0).sum() + sum(np.abs(f).sum() for f in lq.f)
            slope = sum(q @ dx for q, dx in zip(lq.q, dxs)) + sum(r @ du for r, du in zip(lq.r, sol.dus))
            slope -= mu * infeasibility
            for _ in range(ARMIJO_STEPS):
                cost, gaps = self.nominal((xs + alpha * dxs).T, us + alpha * dus, p)
                merit = float(cost) + mu * (np.abs((1 - alpha) * (xs[0] - x0)).sum() + np.abs(gaps.full()).sum())
                if merit <= lq.cost + mu * infeasibility + 1e-4 * alpha * slope:
                    break
                alpha /= 2
        largest = alpha * max(np.abs(dxs).max(), np.abs(dus).max(initial=0.0))
        K = np.array(sol.K) if len(set(self.nus)) == 1 else sol.K
        new_us = np.split(us + alpha * dus, np.cumsum(self.nus)[:-1])
        return Step(
            xs + alpha * dxs, np.array(new_us) if len(set(self.nus)) == 1 else new_us, K, lq.cost, gap, largest, alpha
        )
