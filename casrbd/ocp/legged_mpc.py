"""Receding-horizon control of a legged robot on a periodic gait, on the problem layer.

A gait is one period of knots, each the set of feet in contact (``trot_gait``). ``GaitHorizon`` declares
one ``Knot`` per distinct contact set (contact dynamics, base velocity and pose tracking, posture and
control regularisation, friction cones as barriers on the stance feet, swing-foot tracking on the others)
and lets ``Problem`` build (and compile, cached) one stage Function per knot type. Every reference (base
velocity, base pose, swing-foot targets, control) and weight is a parameter of its stage, so the gait's
phase and targets change by parameters only. The horizon over ``nodes`` knots at clock c (in knots)
takes the contact sets of the gait from round(c) on: the stage sequence is the period's rotated, and
the NLP of each of the period's rotations is built once (``nlpsol``, the stage Functions shared) at
construction. Each ``solve`` starts from the last plan shifted in time (states and controls interpolated)
and stops after ``max_iter`` iterations: real-time iteration. ``solver="riccati"`` (``riccati.RTI``):
Gauss-Newton steps of a Riccati recursion from one linearisation of all knots (a Function per rotation),
with the recursion's feedback gains in the plan; "fatrop": fatrop through ``nlpsol`` (one NLP per
rotation, expanded; casadi passes fatrop no multipliers, nor exposes its gains). The state x = [q; v]
holds the base's quaternion as 4 numbers, a vector to both solvers: the stages see q / |q| only (their
``integrate`` and rotation matrices normalise it), so its norm is a null direction of the cost, of A and
of the gains, and x_1..x_N come out of ``integrate`` of unit norm. It has ``Horizon``'s
interface, so ``mpc.MPC`` drives it, with the gains (or a joint PD) around the plan as its feedback law.
Another solver of the same problem reads it by name: ``references`` (each knot's {term: (reference,
weight)}), ``heading``, ``guess``, ``keep`` (benchmarks/mpc_crocoddyl.py: Crocoddyl's FDDP).
"""

import casadi as ca
import numpy as np

from ..api import frame_placement
from .knots import Knot, contact_dynamics
from .legged import quasi_static
from .mpc import Plan
from .problem import Problem
from .residuals import Control, FramePlacement, FrameTranslation, FrameVelocity, FrictionCone, JointTorque, State
from .riccati import RTI
from .solvers import solver_options
from .terms import Cost, QuadraticBarrier, WeightedQuadratic

SOLVERS = ("riccati", "fatrop")
COLD_ITER, COLD_TOL = 100, 1e-6  # the Riccati route's first solve: Gauss-Newton steps until the largest is below
# term weights (parameters of the stages: changed without a rebuild)
WEIGHTS = {
    "base_velocity": 500.0, "base_pose": 200.0, "posture": 2.0, "control": 0.05, "cone": 100.0, "swing": 2e3,
    "torque_limit": 1e3,  # where GaitHorizon's torque_limit is given
}  # fmt: skip


def trot_gait(pairs, swing_knots=8, support_knots=1):
    """One period of a trot: all feet, the first pair of ``pairs`` swinging, all feet, the second swinging."""
    feet = tuple(f for pair in pairs for f in pair)
    all_ = [feet] * support_knots
    stance = [tuple(f for f in feet if f not in pair) for pair in pairs]
    return tuple(all_ + [stance[0]] * swing_knots + all_ + [stance[1]] * swing_knots)


def _swing_phases(gait, feet):
    """Per gait knot and foot: (s, knots to touchdown) with s in [0, 1) the swing's progress, or None."""
    period, out = len(gait), []
    for j in range(period):
        row = {}
        for f in feet:
            if f in gait[j]:
                continue
            start = next(i for i in range(period) if f in gait[(j - i - 1) % period])
            end = next(i for i in range(period) if f in gait[(j + i) % period])
            row[f] = (start / (start + end), end)
        out.append(row)
    return out


def _yaw(x):
    qx, qy, qz, qw = x[3:7]
    return np.arctan2(2 * (qw * qz + qx * qy), 1 - 2 * (qy * qy + qz * qz))


class GaitHorizon:
    """The horizon of ``nodes`` knots of ``dt`` of ``model`` (free-flyer base frame ``base``) walking the
    periodic ``gait`` (contact sets of ``feet``, one per knot) at ``velocity`` (vx, vy in the base's
    heading, m/s) and ``yaw_rate`` (rad/s), from the standing configuration ``q_standing`` (feet on the
    ground: their frames at ``foot_height``), lifting each swing foot to ``height``. ``weights``: the
    terms' (``WEIGHTS``); ``mu``, ``kd``: friction and Baumgarte gain of the contacts; ``compiled``,
    ``flags``, ``name``: ``Problem``'s; ``solver``: ``SOLVERS``; ``max_iter``: the iterations of a warm
    solve; ``torque_limit``: a fraction of the model's effort limits that a quadratic barrier on the controls
    keeps them within (the Riccati route takes no hard bounds; None: no such term); ``options``: fatrop's own
    (``solver_options``), or the Riccati recursion's ``regularisation``."""

    def __init__(
        self,
        model,
        q_standing,
        gait,
        feet,
        base="base_link",
        nodes=16,
        dt=0.02,
        velocity=(0.3, 0.0),
        yaw_rate=0.0,
        height=0.05,
        foot_height=0.0,
        weights=None,
        mu=0.7,
        kd=50.0,
        compiled=False,
        flags=None,
        name="legged_mpc",
        max_iter=1,
        solver="riccati",
        torque_limit=None,
        **options,
    ):
        if solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
        unknown = sorted({f for s in gait for f in s} - set(feet))
        if unknown:
            raise ValueError(f"gait: feet {unknown} are not among feet {list(feet)}")
        self.model, self.gait, self.feet, self.base = model, tuple(gait), tuple(feet), base
        self.nodes, self.dt = nodes, dt
        self.velocity, self.yaw_rate, self.height, self.foot_height = np.r_[velocity], yaw_rate, height, foot_height
        self.weights = WEIGHTS | (weights or {})
        nq, nv = model.nq, model.nv
        self.nx, self.nu = nq + nv, nv - 6
        self.q_standing = np.asarray(q_standing, dtype=float)
        x_stand = np.r_[self.q_standing, np.zeros(nv)]
        self.z_base = self.q_standing[2]
        M = frame_placement(model, self.q_standing, base)
        self.offsets = {f: M[:3, :3].T @ (frame_placement(model, self.q_standing, f)[:3, 3] - M[:3, 3]) for f in feet}
        posture = State(x_stand)
        w_velocity = [1, 1, 1, 0.1, 0.1, 1]
        w_posture = np.r_[[0.0] * 6, [1.0] * self.nu, [0.0] * 6, [0.1] * self.nu]
        self.types = list(dict.fromkeys(self.gait))

        def common():
            return [
                Cost(FrameVelocity(base, "local"), 1.0, WeightedQuadratic(w_velocity), name="base_velocity"),
                Cost(FramePlacement(base), 1.0, WeightedQuadratic([0.1, 0.1, 1, 1, 1, 0.5]), name="base_pose"),
                Cost(posture, 1.0, WeightedQuadratic(w_posture), name="posture"),
            ]

        knots = []
        for stance in self.types:
            terms = common() + [Cost(Control(), 1.0, name="control")]
            terms += [Cost(FrictionCone(f, mu), 1.0, QuadraticBarrier(), name=f"cone_{f}") for f in stance]
            terms += [
                Cost(FrameTranslation(f), 1.0, WeightedQuadratic([0.2, 0.2, 1]), name=f"swing_{f}")
                for f in feet
                if f not in stance
            ]
            if torque_limit is not None:
                limit = torque_limit * JointTorque().bounds(model)[1]
                terms.append(Cost(JointTorque(), 1.0, QuadraticBarrier(-limit, limit), name="torque_limit"))
            guess = quasi_static(model, self.q_standing, stance)
            knots.append(Knot(contact_dynamics([(f, "3d") for f in stance], kd), dt, terms, guess=guess))
        problem = Problem(model, x_stand, knots, common(), compiled=compiled, flags=flags, name=name)
        self.stages = {s: (st, k) for s, st, k in zip(self.types, problem.stages, knots)}
        self.terminal = problem.stages[-1]
        self.u_ref = {s: np.asarray(k.guess, dtype=float) for s, k in zip(self.types, knots)}
        self.phases = _swing_phases(self.gait, feet)
        self._offsets = {id(st): self._slices(st) for st, _ in self.stages.values()}
        self._offsets[id(self.terminal)] = self._slices(self.terminal)
        self.solver, self.max_iter, self._templates = solver, max_iter, {}
        rotations = range(len(self.gait))
        if solver == "riccati":
            self.regularisation = options.pop("regularisation", 0.0)
            self.line_search = options.pop("line_search", False)
            if options:
                raise ValueError(
                    f"solver 'riccati' takes the options regularisation and line_search only, got {sorted(options)}"
                )
            functions = [[s.function for s in self.sequence(r)] for r in rotations]
            self._rti = [RTI(f, self.terminal.function, f"{name}_{r}") for f, r in zip(functions, rotations)]
        else:
            self._solvers = [self._nlpsol(r, bool(compiled), max_iter, options) for r in rotations]
        self.clock, self.yaw_ref, self._last = 0.0, None, None

    @staticmethod
    def _slices(stage):
        """{term name: (reference slice, weight index)} in the stage's p (``Stage.parameters``' layout)."""
        out, at = {}, 0
        for t in stage.terms:
            size = t.residual.reference_size(stage.model)
            out[t.name] = (slice(at, at + size), at + size)
            at += size + 1
        return out

    def sequence(self, rotation):
        """The running stages of the horizon at the gait's ``rotation`` (its knot k: gait knot rotation + k)."""
        return [self.stages[self.gait[(rotation + k) % len(self.gait)]][0] for k in range(self.nodes)]

    def _nlpsol(self, rotation, expand, max_iter, options):
        stages = self.sequence(rotation) + [self.terminal]
        xs = [ca.MX.sym(f"x{k}", self.nx) for k in range(self.nodes + 1)]
        us = [ca.MX.sym(f"u{k}", self.nu) for k in range(self.nodes)]
        ps = [ca.MX.sym(f"p{k}", s.function.numel_in(2)) for k, s in enumerate(stages)]
        x0 = ca.MX.sym("x0", self.nx)
        cost, gaps = stages[-1].function(xs[-1], ca.MX(0, 1), ps[-1])[0], [xs[0] - x0]
        for k in range(self.nodes):
            c, x_next = stages[k].function(xs[k], us[k], ps[k])[:2]
            cost, gaps = cost + c, gaps + [xs[k + 1] - x_next]
        w = ca.vertcat(*[v for k in range(self.nodes) for v in (xs[k], us[k])], xs[-1])
        nlp = {"x": w, "p": ca.vertcat(x0, *ps), "f": cost, "g": ca.vertcat(*gaps)}
        cold = solver_options(solver="fatrop", expand=expand, **options) | {"equality": [True] * nlp["g"].numel()}
        warm = cold | {"fatrop.max_iter": max_iter, "fatrop.mu_init": 1e-6}
        return tuple(ca.nlpsol(f"gait_{rotation}", "fatrop", nlp, o) for o in (cold, warm))

    def parameters(self, x0):
        """The stages' p at the clock now from the measured state ``x0``: per knot k (at time k dt from now),
        the base pose on the reference heading (yaw_ref + yaw_rate k dt) at the standing height, moving at
        ``velocity``; the swing feet at a sine of height over their progress towards their touchdown point
        (their standing offset under the base then, plus half a stance's travel)."""
        rotation = int(np.floor(self.clock + 0.5)) % len(self.gait)
        p, pose, swing = self._template(rotation)
        p = p.copy()
        v, n, dt = np.r_[self.velocity, 0.0], self.nodes, self.dt
        yaws = (_yaw(x0) if self.yaw_ref is None else self.yaw_ref) + dt * self.yaw_rate * np.arange(n + 1)
        c, s = np.cos(yaws), np.sin(yaws)
        steps = dt * np.c_[c * v[0] - s * v[1], s * v[0] + c * v[1], np.zeros(n + 1)]
        positions = np.r_[x0[0], x0[1], self.z_base] + np.r_[np.zeros((1, 3)), np.cumsum(steps[:-1], axis=0)]
        zero, one = np.zeros(n + 1), np.ones(n + 1)
        p[pose] = np.c_[positions, c, s, zero, -s, c, zero, zero, zero, one]  # [p; vec(Rz(yaw))]
        if swing is not None:
            index, kt, offsets, heights = swing
            stance_time = dt * sum(1 for st in self.gait if self.feet[0] in st) / 2
            local = offsets + stance_time / 2 * v
            ck, sk = c[kt], s[kt]
            p[index[:, 0]] = positions[kt, 0] + ck * local[:, 0] - sk * local[:, 1]
            p[index[:, 1]] = positions[kt, 1] + sk * local[:, 0] + ck * local[:, 1]
            p[index[:, 2]] = heights
        return rotation, p

    def _template(self, rotation):
        """The p of a rotation without the base poses and swing targets (references and weights that the
        clock does not move), the base poses' indices in it (nodes + 1 x 12) and the swing targets' (indices
        (m x 3), knot of touchdown, standing offsets, heights), cached by the weights and velocities."""
        key = (
            rotation,
            tuple(self.weights.items()),
            tuple(self.velocity),
            self.yaw_rate,
            self.height,
            self.foot_height,
        )
        if key in self._templates:
            return self._templates[key]
        stages = self.sequence(rotation) + [self.terminal]
        w, p, pose, swing, at_p = self.weights, [], [], [], 0
        for k, stage in enumerate(stages):
            gait_k = (rotation + k) % len(self.gait)
            at, pk = self._offsets[id(stage)], np.zeros(stage.function.numel_in(2))
            pk[at["base_velocity"][0]] = np.r_[self.velocity, 0, 0, 0, self.yaw_rate]
            pose.append(at_p + np.arange(pk.size)[at["base_pose"][0]])
            for name in ("base_velocity", "base_pose", "posture"):
                pk[at[name][1]] = w[name]
            if k < self.nodes:
                stance = self.gait[gait_k]
                pk[at["control"][0]], pk[at["control"][1]] = self.u_ref[stance], w["control"]
                for f in stance:
                    pk[at[f"cone_{f}"][1]] = w["cone"]
                if "torque_limit" in at:
                    pk[at["torque_limit"][1]] = w["torque_limit"]
                for f, (s, to_go) in self.phases[gait_k].items():
                    pk[at[f"swing_{f}"][1]] = w["swing"]
                    height = self.foot_height + self.height * np.sin(np.pi * s)
                    index = at_p + np.arange(pk.size)[at[f"swing_{f}"][0]]
                    swing.append((index, min(k + to_go, self.nodes), self.offsets[f], height))
            p.append(pk)
            at_p += pk.size
        swing = [np.array(column) for column in zip(*swing)] if swing else None
        self._templates[key] = np.concatenate(p), np.array(pose), swing
        return self._templates[key]

    def references(self, x0):
        """``parameters(x0)`` by term: the rotation and per knot (the terminal last) {term name: (reference,
        weight)}, the reference an empty array for terms without one."""
        rotation, p = self.parameters(x0)
        knots, at = [], 0
        for stage in self.sequence(rotation) + [self.terminal]:
            pk = p[at : at + stage.function.numel_in(2)]
            knots.append({name: (pk[where], pk[weight]) for name, (where, weight) in self._offsets[id(stage)].items()})
            at += pk.size
        return rotation, knots

    def heading(self, x0):
        """The reference heading (yaw, rad) now: the yaw of ``x0`` at the first solve after construction or
        ``reset``, then turning at ``yaw_rate`` with the clock."""
        if self.yaw_ref is None:
            self.yaw_ref = _yaw(x0)
        return self.yaw_ref

    @property
    def cold(self):
        """Whether the next solve is cold: no plan kept since construction or ``reset``."""
        return self._last is None

    def keep(self, xs, us):
        """Keeps the plan ``xs``, ``us`` at the clock now as the last one: ``guess`` shifts it."""
        self._last = (np.asarray(xs, dtype=float), np.asarray(us, dtype=float), self.clock)

    def guess(self, x0):
        """The last plan moved to the clock now (interpolated in time, the ends held), or x0 held."""
        if self._last is None:
            return np.tile(x0, (self.nodes + 1, 1)), np.array([self.u_ref[self.gait[0]]] * self.nodes)
        xs, us, clock = self._last
        k = np.arange(self.nodes + 1) + self.clock - clock

        def at(rows, times):
            times = np.clip(times, 0, len(rows) - 1)
            i = np.minimum(np.floor(times).astype(int), len(rows) - 2)
            s = (times - i)[:, None]
            return (1 - s) * rows[i] + s * rows[i + 1]

        return at(xs, k), at(us, np.minimum(k[:-1], self.nodes - 1))

    def solve(self, x0):
        """The plan from the state ``x0`` at the clock now: the first solve cold and to convergence."""
        x0 = np.asarray(x0, dtype=float).ravel()
        if x0.size != self.nx:
            raise ValueError(f"x0: expected {self.nx} numbers, got {x0.size}")
        self.heading(x0)
        rotation, p = self.parameters(x0)
        xs, us = self.guess(x0)
        cold = self.cold
        if self.solver == "riccati":
            rti, budget = self._rti[rotation], COLD_ITER if cold else self.max_iter
            iterations = 0
            while iterations < budget:
                step = rti.step(x0, xs, us, p, self.regularisation, line_search=cold or self.line_search)
                iterations += 1
                xs, us = step.xs, step.us
                if step.step < COLD_TOL:
                    break
            status = "converged" if step.step < COLD_TOL else "iteration budget"
            plan = Plan(xs, us, iterations, status, step.K)
        else:
            solver = self._solvers[rotation][not cold]
            w0 = np.r_[np.c_[xs[:-1], us].ravel(), xs[-1]]
            w = np.asarray(solver(x0=w0, p=np.r_[x0, p], lbg=0.0, ubg=0.0)["x"]).ravel()
            n = self.nx + self.nu
            rows = w[: n * self.nodes].reshape(self.nodes, n)
            stats = solver.stats()
            plan = Plan(
                np.vstack([rows[:, : self.nx], w[n * self.nodes :]]),
                rows[:, self.nx :],
                stats["iter_count"],
                stats["return_status"],
            )
        self.keep(plan.xs, plan.us)
        return plan

    def shift(self, fraction):
        """Advances the clock (the gait's phase and the references) by ``fraction`` of a knot."""
        if fraction < 0:
            raise ValueError(f"fraction must be non-negative, got {fraction}")
        if self.yaw_ref is not None:
            self.yaw_ref += fraction * self.dt * self.yaw_rate
        self.clock += fraction

    def reset(self):
        """Forgets the last plan and the clock: the next solve is cold, at the gait's start."""
        self.clock, self.yaw_ref, self._last = 0.0, None, None
