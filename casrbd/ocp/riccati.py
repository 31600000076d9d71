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
``RTI.solve`` iterates such steps to convergence (``Problem.solve(solver="riccati")``, ``shooting``).
"""

import time
from typing import NamedTuple

import casadi as ca
import numpy as np

from .compile import GAP_OUTPUT, negated

ARMIJO_STEPS = 12  # a line search's halvings at most


class _Buffered:
    """A Function evaluated on numpy arrays of its own (``Function.buffer``): no conversion of the inputs and
    outputs per call. Called with the inputs (arrays, read in C order: xs row by row is the Function's
    nx x (N + 1) column by column), returns its output arrays, overwritten by the next call."""

    def __init__(self, f):
        self.function = f
        self._buffer, self._evaluate = f.buffer()
        self.args = [np.zeros(f.nnz_in(i)) for i in range(f.n_in())]
        self.out = [np.zeros(f.nnz_out(i)) for i in range(f.n_out())]
        for i, a in enumerate(self.args):
            self._buffer.set_arg(i, memoryview(a))
        for i, a in enumerate(self.out):
            self._buffer.set_res(i, memoryview(a))

    def __call__(self, *values):
        for a, value in zip(self.args, values):
            a[:] = np.ravel(value)
        self._evaluate()
        if self._buffer.ret():
            raise RuntimeError(f"{self.function.name()}: evaluation failed (code {self._buffer.ret()})")
        return self.out


class LQ(NamedTuple):
    """The LQ model at (xs, us): per knot ``Q`` (nx x nx, N + 1 of them), ``S`` (nx x nu), ``R`` (nu x nu),
    ``q`` (nx, N + 1), ``r`` (nu), ``A``, ``B``, the gaps ``f`` = x_next_k - x_k+1 (N each) and the
    ``cost`` at (xs, us); per knot stacked in (x, u): ``H`` = [[Q, S, q], [S^T, R, r]] and
    ``F`` = [A, B, f] (the others are views of these; None: stacked by ``riccati``)."""

    Q: list
    S: list
    R: list
    q: list
    r: list
    A: list
    B: list
    f: list
    cost: float
    H: list = None
    F: list = None


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


class Result(NamedTuple):
    """``RTI.solve``'s: the last iterate's states ``xs`` (N + 1 x nx), controls ``us`` (a list, one per
    knot), ``cost``, ``gaps`` (x_next_k - x_k+1, concatenated), reduced ``gradient`` (sum_k |qu_k|^2), the
    steps taken (``iterations``), whether it converged (``success``) and the CPU seconds (``cpu``) in the
    linearisations, the Riccati recursions and the rest (line searches)."""

    xs: np.ndarray
    us: list
    cost: float
    gaps: np.ndarray
    gradient: float
    iterations: int
    success: bool
    cpu: dict


class Solution(NamedTuple):
    """``riccati``'s: the steps ``dxs``, ``dus``, du_k = ``K``_k dx_k + ``k``_k, the multipliers ``lam``
    (lam_0 of x_0 = x0, lam_k+1 of the dynamics of knot k: P dx + p) and ``gradient``, sum_k |qu_k|^2 (the
    reduced gradient: Crocoddyl's stopping measure)."""

    dxs: list
    dus: list
    K: list
    k: list
    lam: list
    gradient: float = 0.0


def riccati(lq, dx0, regularisation=0.0):
    """The LQ model's ``Solution`` from the initial deviation ``dx0``. ``regularisation``: added to Quu's
    diagonal where Quu is not positive definite (0: an error naming the knot instead)."""
    if lq.H is None:
        H = [np.block([[Q, S, q[:, None]], [S.T, R, r[:, None]]]) for Q, S, R, q, r in zip(*lq[:5])]
        H.append(np.c_[lq.Q[-1], lq.q[-1]])
        F = [np.c_[A, B, f] for A, B, f in zip(lq.A, lq.B, lq.f)]
    else:
        H, F = lq.H, lq.F
    return _riccati(H, F, np.asarray(dx0, dtype=float).ravel(), regularisation)


def _riccati(H, F, dx0, regularisation):
    """``riccati`` on the stacked blocks H_k = [[Q, S, q], [S^T, R, r]] and F_k = [A, B, f]: per knot the
    (x, u) block of the cost-to-go's Hessian in one product with [A, B], the gains from Quu's inverse."""
    N, nx = len(F), dx0.size
    P, p = H[N][:, :nx], H[N][:, nx]
    Ps, ps, Ks, ks, gradient = [None] * N + [P], [None] * N + [p], [None] * N, [None] * N, 0.0
    for k in range(N - 1, -1, -1):  # backward pass
        AB = F[k][:, :-1]
        W = AB.T @ (P @ AB)
        W += H[k][:, :-1].T  # [[Qxx, Qxu], [Qux, Quu]], symmetric
        h = H[k][:, -1] + AB.T @ (p + P @ F[k][:, -1])  # [qx; qu]
        Wxu, qu = W[:nx, nx:], h[nx:]
        gradient += qu @ qu
        inverse = np.linalg.inv(_positive_definite(W[nx:, nx:], k, regularisation))
        Ks[k], ks[k] = K, kk = -(inverse @ Wxu.T), -(inverse @ qu)
        P = W[:nx, :nx] + Wxu @ K
        Ps[k], ps[k] = P, p = 0.5 * (P + P.T), h[:nx] + Wxu @ kk
    dxs, dus, one = [dx0], [], np.ones(1)
    for k in range(N):  # forward pass
        dus.append(Ks[k] @ dxs[k] + ks[k])
        dxs.append(F[k] @ np.concatenate((dxs[k], dus[k], one)))
    return Solution(dxs, dus, Ks, ks, [P @ dx + p for P, p, dx in zip(Ps, ps, dxs)], gradient)


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
        self.linearisation, self.nominal, self._layout, self._gap_rows = self._build(name)
        self._linearised, self._evaluated = _Buffered(self.linearisation), _Buffered(self.nominal)

    def _build(self, name):
        nx, N = self.nx, self.N
        X, U, P = ca.MX.sym("xs", nx, N + 1), ca.MX.sym("us", sum(self.nus)), ca.MX.sym("p", sum(self.n_p))
        hessians, costs, gaps, outputs, layout, gap_rows, at_u, at_p = {}, [], [], [], [], [], 0, 0
        at = 1  # after the cost
        for k, f in enumerate([*self.stages, self.terminal]):
            nu = f.numel_in(1)
            x, u, p = X[:, k], U[at_u : at_u + nu], P[at_p : at_p + f.numel_in(2)]
            at_u, at_p = at_u + nu, at_p + f.numel_in(2)
            if f.name() not in hessians:
                hessians[f.name()] = _derivative_source(f).reverse(1).jacobian()
            cost, x_next = f(x, u, p)[:2]
            costs.append(cost)
            seeds = {"adj_cost": 1, "adj_x_next": ca.MX.zeros(f.sparsity_out(1))}
            d = hessians[f.name()].call({"x": x, "u": u, "p": p, "out_cost": cost, "out_x_next": x_next} | seeds)
            Q, q = d["jac_adj_x_x"], d["jac_adj_x_adj_cost"]
            blocks = [("H", ca.horzcat(Q, q), (nx, nx + 1), "F")]
            if k < N:
                gaps.append(x_next - X[:, k + 1])
                S, R, r = d["jac_adj_x_u"], d["jac_adj_u_u"], d["jac_adj_u_adj_cost"]
                blocks = [("H", ca.blockcat([[Q, S, q], [d["jac_adj_u_x"], R, r]]), (nx + nu, nx + nu + 1), "F")]
                # F = [A, B, x_next] row by row: its transpose's columns, as the adjoint's Jacobian gives them
                Ft = ca.vertcat(d["jac_adj_x_adj_x_next"], d["jac_adj_u_adj_x_next"], x_next.T)
                blocks.append(("F", Ft, (nx, nx + nu + 1), "C"))
            entry = {}
            for key, value, shape, order in blocks:
                size = int(np.prod(shape))
                outputs.append(ca.vec(ca.densify(value)))
                entry[key], at = (slice(at, at + size), shape, order), at + size
            if k < N:  # F's last column: x_next, the gap once x_k+1 is subtracted
                gap_rows.append(np.arange(at - size + nx + nu, at, nx + nu + 1))
            layout.append(entry)
        total = ca.sum1(ca.vertcat(*costs))
        F = ca.Function(name + "_linearisation", [X, U, P], [ca.vertcat(total, *outputs)], ["xs", "us", "p"], ["lq"])
        G = ca.Function(name + "_nominal", [X, U, P], [total, ca.vertcat(*gaps)], ["xs", "us", "p"], ["cost", "gaps"])
        return F, G, layout, np.concatenate(gap_rows)

    def _stacked(self, xs, us, p, copy=True):
        """The stacked blocks H_k, F_k (``_riccati``'s), the gaps (one vector) and the cost at (xs, us);
        without ``copy``, views of the linearisation's output, which its next evaluation overwrites."""
        v = self._linearised(xs, us, p)[0]
        v = v.copy() if copy else v
        v[self._gap_rows] -= xs[1:].ravel()

        def block(entry, key):
            s, shape, order = entry[key]
            return v[s].reshape(shape, order=order)

        H = [block(e, "H") for e in self._layout]
        F = [block(e, "F") for e in self._layout[:-1]]
        return H, F, v[self._gap_rows], float(v[0])

    def linearise(self, xs, us, p):
        """The LQ model at the states ``xs`` (N + 1 x nx), controls ``us`` (N rows, or their concatenation)
        and parameters ``p`` (every knot's, concatenated)."""
        xs, us, p = self._check(xs, us, p)
        H, F, _, cost = self._stacked(xs, us, p)
        nx = self.nx
        Q, q = [h[:nx, :nx] for h in H], [h[:nx, -1] for h in H]
        S, R, r = [h[:nx, nx:-1] for h in H[:-1]], [h[nx:, nx:-1] for h in H[:-1]], [h[nx:, -1] for h in H[:-1]]
        A, B, f = [m[:, :nx] for m in F], [m[:, nx:-1] for m in F], [m[:, -1] for m in F]
        return LQ(Q, S, R, q, r, A, B, f, cost, H, F)

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
        x0 = self._x0(x0)
        xs, us, p = self._check(xs, us, p)
        H, F, gaps, cost = self._stacked(xs, us, p, copy=False)
        sol = _riccati(H, F, x0 - xs[0], regularisation)
        dxs, dus = np.array(sol.dxs), np.concatenate(sol.dus)
        alpha = self._line_search(x0, xs, us, p, cost, H, gaps, sol, dxs, dus)[0] if line_search else 1.0
        largest = alpha * max(np.abs(dxs).max(), np.abs(dus).max(initial=0.0))
        K = np.array(sol.K) if len(set(self.nus)) == 1 else sol.K
        new_us = np.split(us + alpha * dus, np.cumsum(self.nus)[:-1])
        gap = np.abs(gaps).max(initial=0.0)
        return Step(
            xs + alpha * dxs, np.array(new_us) if len(set(self.nus)) == 1 else new_us, K, cost, gap, largest, alpha
        )

    def _x0(self, x0):
        x0 = np.asarray(x0, dtype=float).ravel()
        if x0.size != self.nx:
            raise ValueError(f"x0: expected {self.nx} numbers, got {x0.size}")
        return x0

    def _line_search(self, x0, xs, us, p, cost, H, gaps, sol, dxs, dus, accepted=()):
        """The largest 2^-i, i < ARMIJO_STEPS, that decreases the l1 merit enough (``step``) or, given the
        (cost, infeasibility) pairs of the iterates ``accepted`` so far (a filter), is not dominated by any
        of them (a step that the merit rejects for the gaps' second order: the Maratos effect), else the last.
        Returns it and the trial's (cost, infeasibility)."""
        nx, alpha = self.nx, 1.0
        mu = 1.0 + 2.0 * max(np.abs(lam).max() for lam in sol.lam)
        infeasibility = np.abs(xs[0] - x0).sum() + np.abs(gaps).sum()
        slope = sum(h[:nx, -1] @ dx + h[nx:, -1] @ du for h, dx, du in zip(H, sol.dxs, [*sol.dus, ()]))
        slope -= mu * infeasibility
        for _ in range(ARMIJO_STEPS):
            trial_cost, trial_gaps = self._evaluated(xs + alpha * dxs, us + alpha * dus, p)
            trial = trial_cost[0], np.abs((1 - alpha) * (xs[0] - x0)).sum() + np.abs(trial_gaps).sum()
            if trial[0] + mu * trial[1] <= cost + mu * infeasibility + 1e-4 * alpha * slope:
                break
            if accepted and all(trial[0] < c or trial[1] < t for c, t in accepted):
                break
            alpha /= 2
        return alpha, trial

    def solve(self, x0, xs, us, p, tol=1e-9, gap_tol=1e-9, max_iter=100, regularisation=0.0, verbose=False):
        """Gauss-Newton iterations (``step``'s, with the line search) from (``xs``, ``us``) until sum_k |qu_k|^2
        <= ``tol`` (the reduced gradient at the iterate, gaps' effect included: Crocoddyl's stopping test) and
        the largest gap, |x_0 - x0| included, <= ``gap_tol``, or ``max_iter`` steps. Returns a ``Result``."""
        x0 = self._x0(x0)
        xs, us, p = self._check(xs, us, p)
        cpu, success, clock = dict.fromkeys(("linearisation", "riccati", "rest"), 0.0), False, time.process_time
        accepted = []  # the iterates' (cost, infeasibility): the line search's filter
        for iteration in range(max_iter + 1):
            start = clock()
            H, F, gaps, cost = self._stacked(xs, us, p, copy=False)
            linearised = clock()
            sol = _riccati(H, F, x0 - xs[0], regularisation)
            solved = clock()
            gap = max(np.abs(x0 - xs[0]).max(), np.abs(gaps).max(initial=0.0))
            cpu["linearisation"] += linearised - start
            cpu["riccati"] += solved - linearised
            if sol.gradient <= tol and gap <= gap_tol:
                success = True
                break
            if iteration == max_iter:
                break
            dxs, dus = np.array(sol.dxs), np.concatenate(sol.dus)
            accepted.append((cost, np.abs(x0 - xs[0]).sum() + np.abs(gaps).sum()))
            alpha = self._line_search(x0, xs, us, p, cost, H, gaps, sol, dxs, dus, accepted)[0]
            xs, us = xs + alpha * dxs, us + alpha * dus
            cpu["rest"] += clock() - solved
            if verbose:
                print(
                    f"riccati {iteration:3d}: cost {cost:.10g}, |qu|^2 {sol.gradient:.2e}, gap {gap:.2e}, step {alpha}"
                )
        return Result(xs, np.split(us, np.cumsum(self.nus)[:-1]), cost, gaps, sol.gradient, iteration, success, cpu)
