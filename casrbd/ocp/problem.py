"""Problem: knots declared with residual terms, transcribed stage by stage onto ``Stagewise`` and solved.

Each distinct knot type (its dynamics, dt, integrator and the descriptions of its terms) becomes one
stage Function (x, u, p) -> (cost, x_next[, h]) with p the terms' references and weights, so knots that
differ only in them share it: a Gauss-Newton stage (``gauss_newton_stage``: cost, next state and path
constraints h from one linearisation) or, with ``hessian="exact"``, a stage whose cost carries its
exact second order (``sx_second_order``) and whose dynamics and constraints casadi differentiates.
``compiled=True`` compiles the stages to C (``compile_stages``). The path constraints lower <= h <= upper
and control bounds are declared after each stage's control, so fatrop keeps its Riccati structure.
"""

import collections
import functools
import hashlib

import casadi as ca
import numpy as np

from .. import __version__, cache
from ..spec import HESSIAN_MODELS, SOLVERS, choice
from . import knots as _knots
from .compile import compile_stages, load_stages
from .residuals import FramePlacement, JointTorque
from .shooting import solve_problem as solve_riccati
from .solvers import solve as solve_opti
from .solvers import solver_options
from .stages import gauss_newton_stage, sx_second_order
from .stagewise import Stagewise
from .terms import Cost

# the solvers' relaxation of inequality bounds (IPOPT's bound_relax_factor; fatrop's, fixed)
BOUND_RELAX = 1e-8
# a start problem's tolerance: its solution only starts the problem's solve
START_TOL = 1e-4
STAGE_BUILDS = collections.Counter()  # stage Functions built, by name (a warm compiled build builds none)


class Stage:
    """A stage Function and what its calls need, from the knot's description alone (no graph): ``function``
    (x, u, p) -> (cost, x_next[, h]), the bounds of h (``lower``, ``upper``), the control's (``u_bounds``,
    or None), the force slices by contact frame, the terms that make up p; ``transition`` (x, u) ->
    (x_next, forces), built when first asked for."""

    def __init__(self, model, kind, knot, terms, hessian, function):
        self.model, self.kind, self.knot, self.terms, self.hessian = model, kind, knot, terms, hessian
        self.function, self.forces = function, {} if knot is None else knot.dynamics.force_slices()
        nu, lower, upper, self.u_bounds = _knots.control_size(model, kind), [], [], None
        for t in terms:
            if isinstance(t, Cost):
                continue
            if isinstance(t.residual, JointTorque):  # bounds on u: simple bounds
                if kind != "running":
                    raise ValueError(f"a {kind} knot: constraint {t.name!r} bounds a control, and it has none")
                self.u_bounds = t.bounds(model, nu)
            else:
                lb, ub = t.bounds(model, t.residual.size(model))
                lower.append(lb)
                upper.append(ub)
        self.lower, self.upper = (np.concatenate(lower), np.concatenate(upper)) if lower else (np.zeros(0),) * 2

    @functools.cached_property
    def transition(self):
        if self.knot is None:
            return None
        second_order = "ad" if self.hessian == "gauss-newton" else "analytical"
        return _knots.transition(self.model, self.knot.dynamics, self.knot.dt, self.knot.integrator, second_order)

    def parameters(self, model, terms):
        """p of a knot with these ``terms`` (the stage's, by name): each term's reference, then its weight."""
        given = {t.name: t for t in terms}
        p = []
        for t in self.terms:
            term, size = given[t.name], t.residual.reference_size(model)
            p.append(_reference(term, size))
            if isinstance(term, Cost):
                p.append([term.weight])
        return np.concatenate(p) if p else np.zeros(0)


def _reference(term, size):
    """A term's reference as its slice of p: zero where none; a placement's [p; vec(R)] from a 4 x 4
    placement, or a position (the identity rotation)."""
    ref = term.reference
    if ref is None:
        return np.zeros(size)
    ref = np.asarray(ref, dtype=float)
    if isinstance(term.residual, FramePlacement):
        if ref.shape == (4, 4):
            return np.r_[ref[:3, 3], ref[:3, :3].ravel(order="F")]
        if ref.shape == (3,):
            return np.r_[ref, np.eye(3).ravel()]
    if ref.size != size:
        raise ValueError(f"term {term.name!r}: its reference has {ref.size} entries, expected {size}")
    return ref.ravel()


def describe(kind, knot, terms):
    """What makes a stage Function: the knot's kind, dynamics, dt, integrator and the terms' descriptions."""
    if knot is None:
        return (kind, None, 0.0, None, tuple(t.key() for t in terms))
    return (kind, knot.dynamics.key(), knot.dt, knot.integrator, tuple(t.key() for t in terms))


def stage_name(description):
    """A C identifier unique to a stage description."""
    return f"{description[0]}_{hashlib.sha256(repr(description).encode()).hexdigest()[:10]}"


def stage_function(model, kind, knot, terms, hessian):
    """The stage Function of a knot (None: the terminal ``terms``) of ``kind`` "running", "impulse" or
    "terminal" (``STAGE_BUILDS`` counts the calls)."""
    choice("hessian", hessian, HESSIAN_MODELS)
    name = stage_name(describe(kind, knot, terms))
    STAGE_BUILDS[name] += 1
    nq, nv, nu = model.nq, model.nv, _knots.control_size(model, kind)
    X, U = ca.MX.sym("x", nq + nv), ca.MX.sym("u", nu)
    if knot is None:
        slices, (x_next, lam) = {}, (X, ca.MX(0, 1))
    else:
        second_order = "ad" if hessian == "gauss-newton" else "analytical"
        transition = _knots.transition(model, knot.dynamics, knot.dt, knot.integrator, second_order)
        slices, (x_next, lam) = knot.dynamics.force_slices(), transition(X, U)
    # the features of every term, one SX graph of (q, v, forces)
    q, v, forces = ca.SX.sym("q", nq), ca.SX.sym("v", nv), ca.SX.sym("forces", lam.numel())

    def force(term):
        def of(frame):
            if frame not in slices:
                raise ValueError(
                    f"stage {name} ({kind}): term {term.name!r} reads the force of {frame!r}, "
                    f"not a contact there (contacts: {sorted(slices)})"
                )
            return forces[slices[frame]]

        return of

    features = [ca.SX(t.residual.features(model, q, v, force(t))) for t in terms]
    Y = ca.Function("features_" + name, [q, v, forces], [ca.vertcat(*features)])(X[:nq], X[nq:], lam)
    inner = ca.Function("inner_" + name, [X, U], [x_next, Y], ["x", "u"], ["x_next", "y"])
    # cost and constraints, SX of (x, u, p, y)
    x, u, y = ca.SX.sym("x", nq + nv), ca.SX.sym("u", nu), ca.SX.sym("y", Y.numel())
    sizes = [t.residual.reference_size(model) + isinstance(t, Cost) for t in terms]
    p = ca.SX.sym("p", sum(sizes))
    cost, h, p_at, y_at = 0, [], 0, 0
    for t, size, feature in zip(terms, sizes, features):
        ref_size = t.residual.reference_size(model)
        ref, y_t = p[p_at : p_at + ref_size], y[y_at : y_at + feature.numel()]
        r = t.residual.value(model, x, u, y_t, ref)
        if r.numel() != t.residual.size(model):
            raise ValueError(
                f"stage {name}: term {t.name!r} has {r.numel()} rows, its size() says {t.residual.size(model)}"
            )
        if isinstance(t, Cost):
            cost += p[p_at + ref_size] * t.activation(r, t.residual.bounds(model) or (None, None))
        elif not isinstance(t.residual, JointTorque):  # torque limits: bounds on u (Stage)
            h.append(r)
        p_at, y_at = p_at + size, y_at + feature.numel()
    if kind == "running":
        cost = knot.dt * cost
    args, names = [x, u, p, y], ["x", "u", "p", "y"]
    cost_f = ca.Function("cost_" + name, args, [cost], names, ["cost"])
    h_f = ca.Function("h_" + name, args, [ca.vertcat(*h)], names, ["h"]) if h else None
    if hessian == "gauss-newton":
        return gauss_newton_stage(name, cost_f, inner, constraint=h_f)
    P = ca.MX.sym("p", p.numel())
    outs = [sx_second_order(cost_f)(X, U, P, Y), x_next] + ([h_f(X, U, P, Y)] if h else [])
    return ca.Function(name, [X, U, P], outs, ["x", "u", "p"], ["cost", "x_next"] + (["h"] if h else []))


def description_key(model, description, hessian):
    """What a compiled stage's cache entry is keyed by (``compile_stages``' ``keys``): the model's
    digest, the stage's description and Hessian model, casrbd's version and source (the code that writes
    the stage) and casadi's version."""
    return repr((_digest(model), description, hessian, __version__, cache.source_digest().hex(), ca.__version__))


def _digest(value):
    """A digest of a model's contents (numbers, names, arrays and the slots of its joints, placements and
    inertias): what its stage Functions are made of."""
    h = hashlib.sha256()

    def walk(v):
        if isinstance(v, np.ndarray):
            h.update(f"array{v.shape}".encode() + np.ascontiguousarray(v, dtype=float).tobytes())
        elif isinstance(v, (list, tuple)):
            h.update(f"{type(v).__name__}{len(v)}(".encode())
            for item in v:
                walk(item)
            h.update(b")")
        elif isinstance(v, (str, int, float, bool, type(None))):
            h.update(repr(v).encode())
        else:
            h.update(type(v).__name__.encode())
            for slot in (s for c in type(v).__mro__ for s in getattr(c, "__slots__", ())):
                walk(getattr(v, slot))

    m = value
    walk([m.name, m.names, m.parents, m.joints, m.placements, m.inertias, [tuple(f) for f in m.frames]])
    walk([m.gravity, m.lower, m.upper, m.velocity_limit, m.effort_limit, m.armature])
    return h.hexdigest()


def _declare_bounds(st, lower, e, upper):
    """lower <= e <= upper stage-wise: equalities where they are equal, rows without bounds left out, the
    inequalities' bounds moved inwards by BOUND_RELAX of their magnitude (at least BOUND_RELAX): IPOPT
    (bound_relax_factor) and fatrop relax them that much, so that a solution holds the bounds given."""
    eq = np.flatnonzero(lower == upper)
    rows = np.flatnonzero((lower != upper) & (np.isfinite(lower) | np.isfinite(upper)))
    if eq.size:
        st.subject_to(e[eq.tolist()] == ca.DM(lower[eq]))
    if rows.size:
        lo, up = lower[rows], upper[rows]
        with np.errstate(invalid="ignore"):  # an infinite bound stays as it is
            lo, up = (
                np.where(np.isfinite(b), b + sign * BOUND_RELAX * np.maximum(1.0, np.abs(b)), b)
                for b, sign in ((lo, 1), (up, -1))
            )
        lo, up = np.where(lo < up, lo, lower[rows]), np.where(lo < up, up, upper[rows])  # closer than that: as given
        st.subject_to(st.opti.bounded(ca.DM(lo), e[rows.tolist()], ca.DM(up)))


class Solution:
    """A solution: states ``xs`` (knots + 1 rows), controls ``us`` (one per knot, empty at impulses),
    ``forces`` (per knot, {contact frame: force or impulse}), ``cost``, ``violation`` (the largest
    constraint violation), the solver's ``stats`` and the constraints' multipliers ``lam_g``."""

    def __init__(self, xs, us, forces, cost, violation, stats, lam_g):
        self.xs, self.us, self.forces, self.cost = xs, us, forces, cost
        self.violation, self.stats, self.lam_g = violation, stats, lam_g


class Problem:
    """An optimal control problem of ``knots`` from the state ``x0``, with the ``terminal`` terms on the last
    state (costs and constraints without control or forces).

    ``hessian``: "gauss-newton" (Crocoddyl's model: the cost's curvature through the residuals' Jacobians)
    or "exact"; ``compiled``: the stage Functions as C (Gauss-Newton only), cached on disk, ``flags`` the
    compiler's (default: by each library's size), ``name`` the libraries' prefix. ``start``: a problem
    of the same states and controls (the hard constraints as penalties, say) that ``solve`` solves first,
    to ``START_TOL``, its solution starting this one's; ``options``: ``solve``'s default solver options,
    by solver ({"fatrop": {"mu_init": 1e-4}}). The transcription is
    plain casadi: ``self.stagewise`` (``Stagewise``), ``self.opti``, the states ``self.x``, controls
    ``self.u``, ``add_cost(expression)``; extra constraints go through ``self.opti``."""

    def __init__(
        self,
        model,
        x0,
        knots,
        terminal=(),
        hessian="gauss-newton",
        compiled=False,
        name="problem",
        flags=None,
        verbose=None,
        start=None,
        options=None,
    ):
        choice("hessian", hessian, HESSIAN_MODELS)
        if compiled and hessian != "gauss-newton":
            raise ValueError(
                "compiled=True takes hessian='gauss-newton' (AD's second order of contact dynamics is "
                "too large to compile)"
            )
        if not knots:
            raise ValueError("a problem needs at least one knot")
        self.model, self.knots, self.terminal = model, list(knots), tuple(terminal)
        self.start, self.options = start, dict(options or {})
        if start is not None and [u.numel() for u in start.u] != [_knots.control_size(model, k.kind) for k in knots]:
            raise ValueError("start: its knots' controls differ from this problem's (it must have the same knots)")
        self.x0 = np.asarray(x0, dtype=float).ravel()
        if self.x0.size != model.nq + model.nv:
            raise ValueError(f"x0 has {self.x0.size} entries, model {model.name!r} nq + nv = {model.nq + model.nv}")
        entries = [(k.kind, k, k.terms) for k in self.knots] + [("terminal", None, self.terminal)]
        descriptions = [describe(*e) for e in entries]
        distinct = dict(zip(descriptions, entries))
        functions = dict.fromkeys(distinct)
        if compiled:  # the libraries cached for these descriptions, loaded without building the stages
            keys = {stage_name(d): description_key(model, d, hessian) for d in distinct}
            functions = dict(zip(distinct, load_stages(list(keys), name, keys, flags)))
        missing = [d for d, f in functions.items() if f is None]
        built = [stage_function(model, *distinct[d], hessian) for d in missing]
        if compiled and built:
            built = compile_stages(built, name, flags=flags, verbose=verbose, keys=keys)
        functions.update(zip(missing, built))
        stages = {d: Stage(model, *e, hessian, functions[d]) for d, e in distinct.items()}
        self.stages = [stages[d] for d in descriptions]
        self.parameters = [s.parameters(model, e[2]) for s, e in zip(self.stages, entries)]
        self.compiled = bool(compiled)
        self._transcribe()

    def _transcribe(self):
        st = self.stagewise = Stagewise()
        opti, x = st.opti, st.state(self.x0.size)
        self.opti, self.cost = opti, 0
        st.subject_to(x == self.x0)
        for stage, p, knot in zip(self.stages, self.parameters, [*self.knots, None]):
            u = st.control(stage.function.numel_in(1)) if knot is not None else ca.MX(0, 1)
            out = stage.function(x, u, p)
            self.cost += out[0]
            if stage.lower.size:
                _declare_bounds(st, stage.lower, out[2], stage.upper)
            if stage.u_bounds is not None:
                _declare_bounds(st, *stage.u_bounds[:1], u, stage.u_bounds[1])
            if knot is not None:
                x = st.step(out[1])
        self.x, self.u = st.x, st.u
        opti.minimize(self.cost)
        self._set_initial(self.guess())

    def add_cost(self, expression):
        """Adds an expression of the problem's variables to the objective."""
        self.cost = self.cost + expression
        self.opti.minimize(self.cost)

    def _set_initial(self, start):
        xs, us = (start.xs, start.us) if isinstance(start, Solution) else (start["xs"], start["us"])
        for var, value in [*zip(self.x, xs), *zip(self.u, us)]:
            if var.numel():
                self.opti.set_initial(var, value)

    def guess(self):
        """The default initial guess: x0 at every knot, each knot's control guess (zero where none)."""
        us = [
            np.zeros(u.numel()) if k.guess is None or not u.numel() else np.asarray(k.guess, dtype=float)
            for k, u in zip(self.knots, self.u)
        ]
        return {"xs": [self.x0] * len(self.x), "us": us}

    def solve(self, solver="fatrop", guess=None, warm_start=None, verbose=False, start=True, **options):
        """Solve with ``solver`` ("fatrop", "ipopt", "riccati") from ``guess`` (a ``Solution`` or {"xs", "us"};
        default ``self.guess()``); ``warm_start``: a ``Solution`` whose states, controls and (IPOPT)
        multipliers start the solve. With a ``start`` problem (and ``start`` true, no ``warm_start``),
        that problem is solved first from ``guess`` and its solution starts this solve; its statistics
        are ``stats["start"]``. ``options``: the solver's own, by name, over ``self.options[solver]``.
        "riccati": Gauss-Newton multiple shooting of a problem without path constraints, in numpy
        (``shooting.solve_problem``: options tol, gap_tol, max_iter, regularisation; lam_g None).
        Returns a ``Solution``."""
        choice("solver", solver, (*SOLVERS, "riccati"))
        if solver == "riccati":
            return Solution(*solve_riccati(self, warm_start or guess or self.guess(), verbose=verbose, **options))
        opti, first = self.opti, None
        if start and self.start is not None and warm_start is None:
            first = self.start.solve(solver, guess=guess, verbose=verbose, tol=START_TOL)
            guess = first
        options = {**self.options.get(solver, {}), **options}
        self._set_initial(warm_start or guess or self.guess())
        warm = warm_start is not None and solver == "ipopt"
        if warm:
            opti.set_initial(opti.lam_g, warm_start.lam_g)
        opti.minimize(self.cost)  # unscaled: Stagewise.solver scales it for fatrop
        opts = solver_options(solver=solver, verbose=verbose, expand=self.compiled, warm_start=warm, **options)
        self.stagewise.solver(solver, opts)
        stats = solve_opti(opti)
        value = opti.debug.value
        xs = np.array([np.atleast_1d(value(x)) for x in self.x])
        us = [np.atleast_1d(value(u)) if u.numel() else np.zeros(0) for u in self.u]
        g = np.atleast_1d(value(opti.g))
        lbg, ubg = np.atleast_1d(value(opti.lbg)), np.atleast_1d(value(opti.ubg))
        inequality = lbg < ubg  # against the bounds as given: _declare_bounds moved them inwards
        lower = np.where(inequality, lbg - BOUND_RELAX * np.maximum(1.0, np.abs(lbg)), lbg)
        upper = np.where(inequality, ubg + BOUND_RELAX * np.maximum(1.0, np.abs(ubg)), ubg)
        violation = float(np.max(np.r_[lower - g, g - upper, 0.0]))
        forces = self.forces(xs, us)
        if first is not None:
            stats["start"] = first.stats
        return Solution(xs, us, forces, stats["cost"], violation, stats, np.atleast_1d(value(opti.lam_g)))

    def forces(self, xs, us):
        """The contact forces at the states ``xs`` and controls ``us``: per knot {contact frame: force}."""
        out = []
        for stage, x, u in zip(self.stages, xs, us):
            lam = stage.transition(x, u)[1].full().ravel()
            out.append({frame: lam[s] for frame, s in stage.forces.items()})
        return out
