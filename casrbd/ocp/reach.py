"""An arm reaching a target: a small optimal control problem built from plain parameters.

The builder of ``casrbd.ocp.many``'s tests and worked example
(``ProblemSpec("casrbd.ocp.reach:build", ...)``): a fixed-base robot without
quaternions (the shipped ``arm7`` by default) starts at rest or at any state
x0 = [q0; v0] and moves its tool frame to a target position, with its torques
within the URDF's effort limits as hard bounds on the controls. Multiple
shooting, one explicit RK4 (or Euler) step of x' = [v; aba(q, v, tau)] per
knot; cost sum dt ((tau / tau_max)^2 + w_v |v|^2) + w_target |p_tool(q_N) -
target|^2 + w_rest |v_N|^2. The NLP is a casadi ``nlpsol`` (IPOPT, or fatrop
with its structure detection) with its variables in stage order (x_0, u_0, x_1,
..., x_N) and x0 and the target as its parameters, so that the solution's
sensitivity to x0 and the feedback gains K_k = du_k/dx_k come from the KKT
system at the solution, without a re-solve (``Reach.sensitivity``).

``reaching_stages`` writes the reaching problem once, as stage Functions
(x, u, p) -> (cost, x_next): ``Reach`` sums its exact stages,
``ocp.mpc.reaching_horizon`` solves its Gauss-Newton stages again and again,
and examples/mpc_arm.py maps them in an Opti problem towards a joint goal.
"""

import time

import casadi as ca
import numpy as np

from ..functions import function
from ..models import load_robot
from ..spec import EXPLICIT_INTEGRATORS as INTEGRATORS
from ..spec import SOLVERS, choice
from .solvers import solver_options, solver_status
from .stages import gauss_newton_stage
from .transcription import dynamics, forward_dynamics_ode, rk4

ACTIVE = 1e-6  # a bound is active where the solution is this close to it (relative to 1 + |bound|)
# arm7 bent away from its upright, singular neutral configuration, and a target of its tool near it [m]
REST = (0.0, 0.6, 0.0, -1.2, 0.0, 0.6, 0.0)
TARGET = (0.8, 0.2, 0.4)
# (w_p, w_v, w_u, w_pN, w_vN) of reaching_stages
WEIGHTS = (100.0, 0.1, 0.01, 1000.0, 10.0)


def reaching_stages(
    model, dt, frame=None, weights=WEIGHTS, gravity=True, integrator="rk4", fd=None, gauss_newton=False
):
    """The stages (x, u, p) -> (cost, x_next) of a fixed-base arm (nq = nv) reaching the goal p: ``frame``'s
    position (p: 3 numbers), or with ``frame`` None the configuration (p: nq numbers). State [q; v], control
    the joint torques tau; one RK4 (or Euler: ``integrator``) step of ``dt`` of the forward dynamics ``fd``
    (q, v, tau) -> a (default ``aba`` with its analytical Jacobian). With y(q) the frame's position or q,
    ``weights`` = (w_p, w_v, w_u, w_pN, w_vN): the stage's cost (w_p |y - p|^2 + w_v |v|^2 + w_u |(tau -
    g(q)) / effort|^2) dt, the terminal stage's (x_N, no u, p) w_pN |y - p|^2 + w_vN |v|^2; g(q) the gravity
    torques with ``gravity`` (holding the arm still then costs nothing), else 0; effort the model's
    effort limits (1 where it has none). ``gauss_newton``: Gauss-Newton stages (``gauss_newton_stage``),
    else exact ones."""
    if model.nq != model.nv:
        raise ValueError(f"model {model.name!r}: reaching takes a fixed-base arm (nq = nv), got nq {model.nq}")
    choice("integrator", integrator, INTEGRATORS)
    if len(weights) != 5:
        raise ValueError(f"weights must be (w_p, w_v, w_u, w_pN, w_vN), got {weights!r}")
    n = model.nv
    effort = np.where(np.isfinite(model.effort_limit) & (model.effort_limit > 0), model.effort_limit, 1.0)
    w_p, w_v, w_u, w_pN, w_vN = weights
    ode = forward_dynamics_ode(model, function(model, "aba", jacobian="analytical") if fd is None else fd)
    X, U = ca.MX.sym("x", 2 * n), ca.MX.sym("u", n)  # MX: the step's Jacobian through fd's own
    goal = X[:n] if frame is None else function(model, "frame_placement", frame=frame)(X[:n])[:3, 3]
    g = function(model, "generalized_gravity")(X[:n]) if gravity else ca.MX(0, 1)
    step = rk4(ode, X, U, dt) if integrator == "rk4" else X + dt * ode(X, U)
    inner = ca.Function("reach_inner", [X, U], [step, ca.vertcat(goal, g)])
    inner_end = ca.Function("reach_end_inner", [X, ca.MX.sym("u", 0)], [X, goal])
    ny = goal.numel()
    x, u, p, y = ca.SX.sym("x", 2 * n), ca.SX.sym("u", n), ca.SX.sym("p", ny), ca.SX.sym("y", ny + g.numel())
    tau = u - y[ny:] if gravity else u
    running = (w_p * ca.sumsqr(y[:ny] - p) + w_v * ca.sumsqr(x[n:]) + w_u * ca.sumsqr(tau / effort)) * dt
    cost = ca.Function("reach_cost", [x, u, p, y], [running])
    y_end = ca.SX.sym("y", ny)
    end = w_pN * ca.sumsqr(y_end - p) + w_vN * ca.sumsqr(x[n:])
    cost_end = ca.Function("reach_end_cost", [x, ca.SX(0, 1), p, y_end], [end])
    stage = gauss_newton_stage if gauss_newton else _exact_stage
    return stage("reach", cost, inner), stage("reach_end", cost_end, inner_end)


def _exact_stage(name, cost, inner):
    """(x, u, p) -> (cost(x, u, p, y), x_next), with (x_next, y) = inner(x, u)."""
    x, u = ca.MX.sym("x", inner.sparsity_in(0)), ca.MX.sym("u", inner.sparsity_in(1))
    p = ca.MX.sym("p", cost.sparsity_in(2))
    x_next, y = inner(x, u)
    return ca.Function(name, [x, u, p], [cost(x, u, p, y), x_next], ["x", "u", "p"], ["cost", "x_next"])


def build(
    robot="arm7",
    frame="tool",
    nodes=10,
    duration=1.0,
    integrator="rk4",
    w_v=0.01,
    w_target=100.0,
    w_rest=1.0,
    rest=REST,
    solver=None,
):
    """The reaching problem (``Reach``); ``rest``: the configuration of the default x0 (at rest);
    ``solver``: {"name": "ipopt" | "fatrop", then the solver's own options by name, e.g. "tol" or
    "max_wall_time"} (default IPOPT with its defaults)."""
    return Reach(robot, frame, nodes, duration, integrator, w_v, w_target, w_rest, rest, solver or {})


class Reach:
    """The reaching NLP, built once and solved for any x0 and target (``solve``)."""

    def __init__(self, robot, frame, nodes, duration, integrator, w_v, w_target, w_rest, rest, solver):
        choice("integrator", integrator, INTEGRATORS)
        if int(nodes) != nodes or nodes < 1:
            raise ValueError(f"nodes must be a positive integer, got {nodes!r}")
        if not duration > 0:
            raise ValueError(f"duration must be positive, got {duration!r}")
        solver = dict(solver)
        name = solver.pop("name", "ipopt")
        choice("solver name", name, SOLVERS)
        model = load_robot(robot)
        n, dt = model.nv, duration / nodes
        self.rest = np.asarray(rest, float)
        if self.rest.shape != (model.nq,):
            raise ValueError(
                f"rest must have shape ({model.nq},) (a configuration of {model.name}), got {self.rest.shape}"
            )
        self.model, self.nodes, self.nx, self.nu = model, int(nodes), 2 * n, n
        weights = (0.0, w_v, 1.0, w_target, w_rest)  # no pull on the way, the torques against their limits
        stage, terminal = reaching_stages(model, dt, frame, weights, False, integrator, dynamics(model, "aba"))
        self._gravity = function(model, "generalized_gravity")

        # variables in stage order (x_0, u_0, ..., x_N); each gap constraint right after its stage
        x0, target = ca.MX.sym("x0", 2 * n), ca.MX.sym("target", 3)
        X = [ca.MX.sym(f"x_{k}", 2 * n) for k in range(self.nodes + 1)]
        U = [ca.MX.sym(f"u_{k}", n) for k in range(self.nodes)]
        steps = [stage(X[k], U[k], target) for k in range(self.nodes)]
        cost = sum(c for c, _ in steps) + terminal(X[-1], ca.MX(0, 1), target)[0]
        gaps = [X[0] - x0] + [X[k + 1] - x_next for k, (_, x_next) in enumerate(steps)]
        w = ca.vertcat(*[v for k in range(self.nodes) for v in (X[k], U[k])], X[-1])
        nlp = {"x": w, "p": ca.vertcat(x0, target), "f": cost, "g": ca.vertcat(*gaps)}
        options = solver_options(solver=name, expand=True, **solver)
        if name == "fatrop":  # its structure detection asks which constraints are equalities: all the gaps
            options["equality"] = [True] * nlp["g"].numel()
        self.solver = ca.nlpsol("reach", name, nlp, options)
        # torque bounds on the controls, none on the states
        effort = np.tile(np.r_[np.full(2 * n, np.inf), model.effort_limit], self.nodes)
        self.ubx = np.r_[effort, np.full(2 * n, np.inf)]
        self.lbx, self.ng = -self.ubx, nlp["g"].numel()
        self._x_rows = np.array([k * (3 * n) + i for k in range(self.nodes + 1) for i in range(2 * n)])
        self._u_rows = np.array([k * (3 * n) + 2 * n + i for k in range(self.nodes) for i in range(n)])
        # the KKT system's blocks: Hessian of the Lagrangian, gap Jacobian, their derivatives in x0
        lam = ca.MX.sym("lam_g", self.ng)
        grad = ca.gradient(cost + ca.dot(lam, nlp["g"]), w)
        blocks = [ca.jacobian(grad, w), ca.jacobian(nlp["g"], w), ca.jacobian(grad, x0), ca.jacobian(nlp["g"], x0)]
        self._kkt = ca.Function("kkt", [w, nlp["p"], lam], blocks)

    def solve(self, x0=None, target=TARGET, gains=False, guess=None):
        """Solve from x0 (default at rest at ``rest``) to the target; returns a dict of
        arrays: ``states`` (nodes + 1, nx), ``controls`` (nodes, nu), ``cost``, ``constraint_violation``
        (max over gaps and bounds), ``status`` (IPOPT's word, ``solver_status``), ``success``,
        ``iterations``, ``cpu_time`` (the solver's process time, s), and with ``gains`` ``dx_dx0``
        (nodes + 1, nx, nx), ``du_dx0`` (nodes, nu, nx) and ``gains`` (nodes, nu, nx). ``guess``: the
        initial guess of the NLP's variables (default x0 held, gravity's torques at q0)."""
        x0 = np.r_[self.rest, np.zeros(self.nu)] if x0 is None else np.asarray(x0, float)
        target = np.asarray(target, float)
        if x0.shape != (self.nx,):
            raise ValueError(f"x0 must have shape ({self.nx},) (q and v of {self.model.name}), got {x0.shape}")
        if target.shape != (3,):
            raise ValueError(f"target must have shape (3,) (a position), got {target.shape}")
        p = np.r_[x0, target]
        if guess is None:
            guess = np.zeros(self.lbx.size)
            guess[self._x_rows] = np.tile(x0, self.nodes + 1)
            guess[self._u_rows] = np.tile(np.asarray(self._gravity(x0[: self.nu])).ravel(), self.nodes)
        elif np.shape(guess) != self.lbx.shape:
            raise ValueError(f"guess must have shape {self.lbx.shape} (x_0, u_0, ..., x_N), got {np.shape(guess)}")
        args = {"x0": guess, "p": p, "lbx": self.lbx, "ubx": self.ubx, "lbg": 0, "ubg": 0}
        start = time.process_time()
        out = self.solver(**args)
        cpu = time.process_time() - start
        stats = self.solver.stats()
        w, g = np.asarray(out["x"]).ravel(), np.asarray(out["g"]).ravel()
        bounds = np.maximum(np.maximum(self.lbx - w, w - self.ubx), 0.0)
        result = {
            "states": w[self._x_rows].reshape(self.nodes + 1, self.nx),
            "controls": w[self._u_rows].reshape(self.nodes, self.nu),
            "cost": float(out["f"]),
            "constraint_violation": float(max(np.abs(g).max(initial=0.0), bounds.max(initial=0.0))),
            "status": solver_status(stats)[1],
            "success": bool(stats["success"]),
            "iterations": int(stats["iter_count"]),
            "cpu_time": cpu,
        }
        if gains:
            result.update(self.sensitivity(w, p, np.asarray(out["lam_g"]).ravel()))
        return result

    def sensitivity(self, w, p, lam_g):
        """dx/dx0, du/dx0 and the feedback gains at a solution (variables ``w``, parameters ``p`` =
        [x0; target], gap multipliers ``lam_g``), from the KKT system linearised there with the bounds
        the solution is at held active. By Bellman's principle the solution's tail from stage k solves the
        problem from x_k, with the same multipliers, so K_k = du_k/dx_k solves the tail's KKT system for a
        change of x_k (Riccati's gains, without the recursion); du_k/dx0 = K_k dx_k/dx0.
        (Not nlpsol's forward derivative: it takes an equality constraint whose multiplier is zero, such as
        a gap of the wrist's joint when the tool lies on its axis, for inactive, and finds its KKT singular.)"""
        H, J, Hp, Jp = (np.asarray(m) for m in self._kkt(w, p, lam_g))
        free = ~(
            (np.isfinite(self.lbx) & (w - self.lbx <= ACTIVE * (1 + np.abs(self.lbx))))
            | (np.isfinite(self.ubx) & (self.ubx - w <= ACTIVE * (1 + np.abs(self.ubx))))
        )
        nx, stage = self.nx, self.nx + self.nu
        dw = np.zeros((w.size, nx))
        dw[free] = _kkt_solve(H, J, free, Hp[free], Jp)
        K = []
        for k in range(self.nodes):
            xk = np.arange(k * stage, k * stage + nx)
            tail = free & (np.arange(w.size) >= k * stage + nx)  # u_k, x_{k+1}, ..., x_N
            gaps = slice((k + 1) * nx, None)
            dtail = _kkt_solve(H, J[gaps], tail, H[np.ix_(tail, xk)], J[gaps][:, xk])
            du = np.zeros((w.size, nx))
            du[tail] = dtail
            K.append(du[k * stage + nx : (k + 1) * stage])
        dx = dw[self._x_rows].reshape(self.nodes + 1, nx, nx)
        du = dw[self._u_rows].reshape(self.nodes, self.nu, nx)
        return {"dx_dx0": dx, "du_dx0": du, "gains": np.stack(K)}


def _kkt_solve(H, J, free, Hb, Jb):
    """The primal part of the solution of [H J^T; J 0] [dw; dlam] = -[Hb; Jb] over the variables ``free``."""
    H, J = H[np.ix_(free, free)], J[:, free]
    kkt = np.block([[H, J.T], [J, np.zeros((J.shape[0], J.shape[0]))]])
    return np.linalg.solve(kkt, -np.vstack([Hb, Jb]))[: H.shape[0]]
