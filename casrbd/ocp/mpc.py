"""Receding-horizon control: a multiple-shooting horizon problem solved again at every update.

``Horizon`` is the problem over ``nodes`` intervals, built once from stage
Functions (x, u, p) -> (cost, x_next) (``gauss_newton_stage``, compiled or not
by ``compile_stages``): the measured state x0 and the stage parameters p are
parameters of one casadi ``nlpsol`` (IPOPT, or fatrop); bounds on x and u are
hard bounds of the decision variables, which the interior-point iterates never
leave. After a first solve to convergence, each ``solve`` starts from the last
solution (and, with IPOPT, its multipliers), shifted in time (``shift``), and
stops after ``max_iter`` iterations: a fixed budget, as real-time iteration does.

``MPC`` is a controller for ``casrbd.sim.Plant``: at each update it shifts the
horizon by the time since the last, solves it from the measured state and
answers the plan's first control, held, or a law: that control plus the plan's
first feedback gain (where the horizon gives gains: ``riccati.RTI``), or a joint
PD, on the deviation from the plan's state interpolated over the first interval.
``reaching_horizon`` builds a fixed-base arm's problem: its tool to a target.
"""

from typing import NamedTuple

import casadi as ca
import numpy as np

from .compile import compile_stages
from .reach import WEIGHTS, reaching_stages
from .solvers import solver_options


class Plan(NamedTuple):
    """A horizon's solution: states (nodes + 1 x nx), controls (nodes x nu), the solver's iterations and
    status, and where the solver gives them the feedback gains (nodes x nu x nx: du_k = K_k dx_k)."""

    xs: np.ndarray
    us: np.ndarray
    iterations: int
    status: str
    gains: object = None


class Horizon:
    """min sum_k stage(x_k, u_k, p)[cost] + terminal(x_N, [], p)[cost] over x_0..x_N, u_0..u_N-1 s.t.
    x_0 = x0, x_k+1 = stage(x_k, u_k, p)[x_next], ``x_bounds`` (lower, upper) on x_1..x_N and ``u_bounds``
    on every u_k. ``parameters``: the p of every stage (an attribute: change it between solves).
    ``max_iter``: the iteration budget of a warm-started solve; ``expand``: the NLP as SX (``solver_options``:
    quicker solves of compiled stages, a slower build); ``solver``: "ipopt" (warm-started from the last
    solution and its multipliers) or "fatrop" (from the last solution only: casadi passes fatrop no
    multipliers; it takes the stage structure); ``options``: the solver's own, for both solves."""

    def __init__(
        self,
        stage,
        terminal,
        nodes,
        x_bounds,
        u_bounds,
        parameters,
        max_iter=1,
        expand=False,
        solver="ipopt",
        **options,
    ):
        if nodes < 1:
            raise ValueError(f"nodes must be at least 1, got {nodes}")
        for f, name in ((stage, "stage"), (terminal, "terminal")):
            if f.n_in() != 3 or f.n_out() != 2:
                raise ValueError(f"{name} Function {f.name()!r}: expected (x, u, p) -> (cost, x_next)")
        nx, nu, n_p = stage.numel_in(0), stage.numel_in(1), stage.numel_in(2)
        if terminal.numel_in(0) != nx or terminal.numel_in(1) != 0 or terminal.numel_in(2) != n_p:
            raise ValueError(f"terminal Function {terminal.name()!r}: expected inputs x ({nx}), u (0), p ({n_p})")
        self.nodes, self.nx, self.nu, self.parameters = nodes, nx, nu, np.asarray(parameters, dtype=float)
        if self.parameters.shape != (n_p,):
            raise ValueError(f"parameters: expected shape ({n_p},), got {self.parameters.shape}")
        xs = [ca.MX.sym(f"x{k}", nx) for k in range(nodes + 1)]
        us = [ca.MX.sym(f"u{k}", nu) for k in range(nodes)]
        x0, p = ca.MX.sym("x0", nx), ca.MX.sym("p", n_p)
        cost, gaps = terminal(xs[-1], ca.MX(0, 1), p)[0], [xs[0] - x0]
        for k in range(nodes):
            c, x_next = stage(xs[k], us[k], p)
            cost, gaps = cost + c, gaps + [xs[k + 1] - x_next]
        w = ca.vertcat(*[v for k in range(nodes) for v in (xs[k], us[k])], xs[-1])
        nlp = {"x": w, "p": ca.vertcat(x0, p), "f": cost, "g": ca.vertcat(*gaps)}
        if solver == "ipopt":
            options.setdefault("bound_relax_factor", 0.0)  # IPOPT's default relaxes the bounds by 1e-8
            cold = solver_options(expand=expand, **options)
            warm = solver_options(expand=expand, warm_start=True, **options, max_iter=max_iter)
        elif solver == "fatrop":  # the stages' structure: every g an equality
            cold = solver_options(solver="fatrop", expand=expand, **options) | {"equality": [True] * nlp["g"].numel()}
            warm = cold | {"fatrop.max_iter": max_iter, "fatrop.mu_init": 1e-6}
        else:
            raise ValueError(f"solver must be 'ipopt' or 'fatrop', got {solver!r}")
        self.solver = solver
        self._cold, self._warm = (ca.nlpsol("horizon", solver, nlp, o) for o in (cold, warm))
        lower, upper = (
            self._nodes_to_vector(np.broadcast_to(b, (self.nodes + 1, nx + nu))) for b in self._rows(x_bounds, u_bounds)
        )
        lower[:nx], upper[:nx] = -np.inf, np.inf  # x_0 is the measured state, in bounds or not
        self._bounds = {"lbx": lower, "ubx": upper, "lbg": 0.0, "ubg": 0.0}
        self._last = None

    def _rows(self, x_bounds, u_bounds):
        """[lower_x lower_u], [upper_x upper_u] of (lower, upper) pairs of numbers or nx, nu each."""
        out = []
        for name, bounds, n in (("x_bounds", x_bounds, self.nx), ("u_bounds", u_bounds, self.nu)):
            try:
                out.append(np.broadcast_to(np.asarray(bounds, dtype=float), (2, n)))
            except ValueError:
                raise ValueError(f"{name}: expected (lower, upper) of {n} numbers each, got {bounds!r}") from None
        return np.c_[out[0], out[1]]

    def _nodes_to_vector(self, rows):
        """[x_0 u_0 ... x_N-1 u_N-1 x_N] from nodes + 1 rows [x_k u_k] (the last row's u dropped)."""
        return np.r_[rows[:-1].ravel(), rows[-1, : self.nx]]

    def _vector_to_nodes(self, w):
        """nodes + 1 rows [x_k u_k] from [x_0 u_0 ... x_N]: the last row repeats u_N-1."""
        n = self.nx + self.nu
        rows = np.asarray(w, dtype=float).ravel()[: n * self.nodes].reshape(self.nodes, n)
        return np.vstack([rows, np.r_[np.asarray(w).ravel()[n * self.nodes :], rows[-1, self.nx :]]])

    def solve(self, x0):
        """The plan from the state x0: the first solve (or the first after ``reset``) cold and to
        convergence, from x0 held and zero controls; the next ones from the shifted last solution and
        multipliers, ``max_iter`` iterations at most."""
        x0 = np.asarray(x0, dtype=float).ravel()
        if x0.size != self.nx:
            raise ValueError(f"x0: expected {self.nx} numbers, got {x0.size}")
        if self._last is None:
            solver, start = (
                self._cold,
                {"x0": self._nodes_to_vector(np.tile(np.r_[x0, np.zeros(self.nu)], (self.nodes + 1, 1)))},
            )
        else:
            solver, start = (
                self._warm,
                {"x0": self._last["x"], "lam_x0": self._last["lam_x"], "lam_g0": self._last["lam_g"]},
            )
        result = solver(p=np.r_[x0, self.parameters], **start, **self._bounds)
        self._last = {k: np.asarray(result[k]).ravel() for k in ("x", "lam_x", "lam_g")}
        rows = self._vector_to_nodes(self._last["x"])
        stats = solver.stats()
        return Plan(rows[:, : self.nx], rows[:-1, self.nx :], stats["iter_count"], stats["return_status"])

    def shift(self, fraction):
        """Moves the stored solution and multipliers ``fraction`` (0 to 1) of an interval forward in
        time: each node's values interpolated towards the next node's, the last node's kept."""
        if self._last is None:
            return
        if not 0 <= fraction <= 1:
            raise ValueError(f"fraction must be between 0 and 1, got {fraction}")

        def moved(rows):
            return (1 - fraction) * rows + fraction * np.vstack([rows[1:], rows[-1:]])

        self._last["x"] = self._nodes_to_vector(moved(self._vector_to_nodes(self._last["x"])))
        self._last["lam_x"] = self._nodes_to_vector(moved(self._vector_to_nodes(self._last["lam_x"])))
        self._last["lam_g"] = moved(self._last["lam_g"].reshape(self.nodes + 1, self.nx)).ravel()

    def reset(self):
        """Forgets the last solution: the next solve is cold."""
        self._last = None


class FeedbackLaw(NamedTuple):
    """u + kp (q_ref(t) - q)[iq] + kd (v_ref(t) - v)[iv] + K ([q; v] - x_ref(t)), x_ref = [q_ref; v_ref]
    going from ``x_from`` at ``t0`` to ``x_to`` at ``t0 + dt`` (then held): the first interval of a plan,
    with PD gains around it on the actuated joints (``iq``, ``iv``: their coordinates and velocities, of
    one dof each; default all; None: no PD) and/or the state feedback gain ``K`` (nu x nx; None: none)."""

    t0: float
    dt: float
    u: np.ndarray
    x_from: np.ndarray
    x_to: np.ndarray
    kp: object = None
    kd: object = None
    iq: object = slice(None)
    iv: object = slice(None)
    K: object = None

    def __call__(self, t, q, v):
        s = min(max((t - self.t0) / self.dt, 0.0), 1.0)
        x_ref = (1 - s) * self.x_from + s * self.x_to
        q_ref, v_ref = x_ref[: len(q)], x_ref[len(q) :]
        u = self.u if self.kp is None else self.u + self.kp * (q_ref - q)[self.iq] + self.kd * (v_ref - v)[self.iv]
        return u if self.K is None else u + self.K @ (np.r_[q, v] - x_ref)


class MPC:
    """A receding-horizon controller ``mpc(t, q, v)`` of a ``Horizon`` (or any object with ``solve(x0)``
    returning a ``Plan``, ``shift(fraction)`` and ``reset()``) whose state is [q; v] and intervals ``dt``
    long. Answers a ``FeedbackLaw``: with ``gains`` and a plan that has them, its first gain around the
    plan (u_0 + K_0 (x - x_ref(t))); else with joint gains ``kp``, ``kd`` (numbers or one per joint) on
    the ``joints`` (q indices, v indices) of the controls (default all); without either, the plan's first
    control (held). Keeps every ``Plan`` in ``plans``."""

    def __init__(self, horizon, dt, kp=None, kd=None, joints=(slice(None), slice(None)), gains=True):
        if not dt > 0:
            raise ValueError(f"dt must be positive, got {dt!r}")
        if (kp is None) != (kd is None):
            raise ValueError("give both kp and kd, or neither")
        self.horizon, self.dt, self.kp, self.kd, self.joints = horizon, dt, kp, kd, joints
        self.gains, self.plans, self._t = gains, [], None

    def __call__(self, t, q, v):
        if self._t is not None:
            self.horizon.shift(min((t - self._t) / self.dt, 1.0))
        self._t = t
        x = np.r_[q, v]
        plan = self.horizon.solve(x)
        self.plans.append(plan)
        if self.gains and plan.gains is not None:
            return FeedbackLaw(t, self.dt, plan.us[0], x, plan.xs[1], K=plan.gains[0])
        if self.kp is None:
            return plan.us[0]
        return FeedbackLaw(t, self.dt, plan.us[0], x, plan.xs[1], self.kp, self.kd, *self.joints)


def reaching_horizon(model, tool, target, nodes=10, dt=0.03, weights=WEIGHTS, compiled=None, flags=None, **options):
    """The ``Horizon`` of a fixed-base arm (nq = nv) bringing the frame ``tool`` to ``target`` (3 numbers,
    the stages' parameter): ``reaching_stages`` (RK4 steps of ``dt`` of the forward dynamics, state [q; v],
    control the joint torques; running cost (w_p |p_tool - target|^2 + w_v |v|^2 + w_u |(tau - g(q)) /
    effort|^2) dt, terminal cost w_pN |p_tool - target|^2 + w_vN |v|^2, ``weights`` = (w_p, w_v, w_u, w_pN,
    w_vN); g(q) the gravity torques, so holding the arm still costs nothing) as Gauss-Newton stages;
    ``compiled``: a library name, to compile them (``compile_stages`` with ``flags``) and solve the NLP as SX
    (``expand``; uncompiled, the NLP stays MX, which builds in a second). Hard bounds: the
    model's position, velocity and effort limits (infinite where it has none). ``options``: ``Horizon``'s."""
    if model.nq != model.nv:
        raise ValueError(f"model {model.name!r}: reaching_horizon takes a fixed-base arm (nq = nv)")
    model.frame_index(tool)
    stages = reaching_stages(model, dt, tool, weights, gauss_newton=True)
    if compiled:
        stages = compile_stages(stages, compiled, flags)
        options.setdefault("expand", True)
    x_bounds = [np.r_[model.lower, -model.velocity_limit], np.r_[model.upper, model.velocity_limit]]
    return Horizon(*stages, nodes, x_bounds, [-model.effort_limit, model.effort_limit], target, **options)
