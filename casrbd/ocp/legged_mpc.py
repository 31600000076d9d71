"""Receding-horizon control of a legged robot on a periodic gait, on the problem layer.

A gait is one period of knots, each the set of feet in contact (``trot_gait``). ``GaitHorizon`` declares
one ``Knot`` per distinct contact set (contact dynamics, base velocity and pose tracking, posture and
control regularisation, friction cones as barriers on the stance feet, swing-foot tracking on the others)
and lets ``Problem`` build (and compile, cached) one stage Function per knot type. Every reference (base
velocity, base pose, swing-foot targets, control) and weight is a parameter of its stage, so the gait's
phase and targets change by parameters only. The horizon over ``nodes`` knots at clock c (in knots)
takes the contact sets of the gait from round(c) on: the stage sequence is the period's rotated, and
the NLP of each of the period's rotations is built once (``nlpsol``, the stage Functions shared) at
construction. Each ``solve`` starts from the last plan shifted in time (states and controls interpolated;
fatrop takes no multipliers through casadi, nor exposes its Riccati gains) and stops after ``max_iter``
iterations: real-time iteration. It has ``Horizon``'s interface, so ``mpc.MPC`` drives it, with a joint PD
around the plan as its feedback law.
"""

import casadi as ca
import numpy as np

from ..api import frame_placement
from .knots import Knot, contact_dynamics
from .legged import quasi_static
from .mpc import Plan
from .problem import Problem
from .residuals import Control, FramePlacement, FrameTranslation, FrameVelocity, FrictionCone, State
from .solvers import solver_options
from .terms import Cost, QuadraticBarrier, WeightedQuadratic

# term weights (parameters of the stages: changed without a rebuild)
WEIGHTS = {"base_velocity": 500.0, "base_pose": 200.0, "posture": 2.0, "control": 0.05, "cone": 100.0, "swing": 2e3}


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


def _rz(yaw):
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


class GaitHorizon:
    """The horizon of ``nodes`` knots of ``dt`` of ``model`` (free-flyer base frame ``base``) walking the
    periodic ``gait`` (contact sets of ``feet``, one per knot) at ``velocity`` (vx, vy in the base's
    heading, m/s) and ``yaw_rate`` (rad/s), from the standing configuration ``q_standing`` (feet on the
    ground: their frames at ``foot_height``), lifting each swing foot to ``height``. ``weights``: the
    terms' (``WEIGHTS``); ``mu``, ``kd``: friction and Baumgarte gain of the contacts; ``compiled``,
    ``flags``, ``name``: ``Problem``'s; ``max_iter``: fatrop's budget of a warm solve; ``options``: fatrop's
    own (``solver_options``)."""

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
        **options,
    ):
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
            guess = quasi_static(model, self.q_standing, stance)
            knots.append(Knot(contact_dynamics([(f, "3d") for f in stance], kd), dt, terms, guess=guess))
        problem = Problem(model, x_stand, knots, common(), compiled=compiled, flags=flags, name=name)
        self.stages = {s: (st, k) for s, st, k in zip(self.types, problem.stages, knots)}
        self.terminal = problem.stages[-1]
        self.u_ref = {s: np.asarray(k.guess, dtype=float) for s, k in zip(self.types, knots)}
        self.phases = _swing_phases(self.gait, feet)
        self._offsets = {id(st): self._slices(st) for st, _ in self.stages.values()}
        self._offsets[id(self.terminal)] = self._slices(self.terminal)
        expand = bool(compiled)
        self._solvers = [self._nlpsol(r, expand, max_iter, options) for r in range(len(self.gait))]
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

    def _sequence(self, rotation):
        return [self.stages[self.gait[(rotation + k) % len(self.gait)]][0] for k in range(self.nodes)]

    def _nlpsol(self, rotation, expand, max_iter, options):
        stages = self._sequence(rotation) + [self.terminal]
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
        stages = self._sequence(rotation) + [self.terminal]
        w, v, position = self.weights, np.r_[self.velocity, 0.0], np.r_[x0[:2], self.z_base]
        stance_time = self.dt * sum(1 for s in self.gait if self.feet[0] in s) / 2
        p, yaw, positions, yaws = [], self.yaw_ref, [], []
        for _ in range(self.nodes + 1):
            positions.append(position.copy()), yaws.append(yaw)
            position = position + self.dt * (_rz(yaw) @ v)
            yaw += self.dt * self.yaw_rate
        for k, stage in enumerate(stages):
            gait_k = (rotation + k) % len(self.gait)
            at, pk = self._offsets[id(stage)], np.zeros(stage.function.numel_in(2))
            pk[at["base_velocity"][0]] = np.r_[self.velocity, 0, 0, 0, self.yaw_rate]
            pk[at["base_pose"][0]] = np.r_[positions[k], _rz(yaws[k]).ravel(order="F")]
            for name in ("base_velocity", "base_pose", "posture"):
                pk[at[name][1]] = w[name]
            if k < self.nodes:
                stance = self.gait[gait_k]
                pk[at["control"][0]], pk[at["control"][1]] = self.u_ref[stance], w["control"]
                for f in stance:
                    pk[at[f"cone_{f}"][1]] = w["cone"]
                for f, (s, to_go) in self.phases[gait_k].items():
                    kt = min(k + to_go, self.nodes)
                    touchdown = positions[kt] + _rz(yaws[kt]) @ (self.offsets[f] + stance_time / 2 * v)
                    target = np.r_[touchdown[:2], self.foot_height + self.height * np.sin(np.pi * s)]
                    pk[at[f"swing_{f}"][0]], pk[at[f"swing_{f}"][1]] = target, w["swing"]
            p.append(pk)
        return rotation, np.concatenate(p)

    def _guess(self, x0):
        """The last plan moved to the clock now (interpolated in time, the ends held), or x0 held."""
        if self._last is None:
            return np.tile(x0, (self.nodes + 1, 1)), np.array([self.u_ref[self.gait[0]]] * self.nodes)
        xs, us, clock = self._last
        k = np.arange(self.nodes + 1) + self.clock - clock

        def at(rows, times):
            return np.array([np.interp(times, np.arange(len(rows)), col) for col in rows.T]).T

        return at(xs, k), at(us, np.minimum(k[:-1], self.nodes - 1))

    def solve(self, x0):
        """The plan from the state ``x0`` at the clock now: the first solve cold and to convergence."""
        x0 = np.asarray(x0, dtype=float).ravel()
        if x0.size != self.nx:
            raise ValueError(f"x0: expected {self.nx} numbers, got {x0.size}")
        if self.yaw_ref is None:
            qx, qy, qz, qw = x0[3:7]
            self.yaw_ref = np.arctan2(2 * (qw * qz + qx * qy), 1 - 2 * (qy * qy + qz * qz))
        rotation, p = self.parameters(x0)
        xs, us = self._guess(x0)
        solver = self._solvers[rotation][self._last is not None]
        w0 = np.r_[np.c_[xs[:-1], us].ravel(), xs[-1]]
        result = solver(x0=w0, p=np.r_[x0, p], lbg=0.0, ubg=0.0)
        w = np.asarray(result["x"]).ravel()
        n = self.nx + self.nu
        rows = w[: n * self.nodes].reshape(self.nodes, n)
        xs, us = np.vstack([rows[:, : self.nx], w[n * self.nodes :]]), rows[:, self.nx :]
        self._last = (xs, us, self.clock)
        stats = solver.stats()
        return Plan(xs, us, stats["iter_count"], stats["return_status"])

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
