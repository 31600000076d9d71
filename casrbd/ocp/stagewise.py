"""Stagewise: an Opti problem declared stage by stage, in the order fatrop's structure detection needs."""

import numbers
import warnings
import weakref

import casadi as ca
import numpy as np

from .diagnostics import Names, check_guess, overfull_error, share_libraries, uncompiled_calls

MAX_GRADIENT = 100.0  # IPOPT's nlp_scaling_max_gradient, which Stagewise applies for fatrop
# the largest divisor of the objective: IPOPT's nlp_scaling_min_value (1e-8) as a divisor; a gradient of
# 1e300 at the guess would otherwise scale the objective to nothing and let fatrop stop anywhere
MAX_SCALE = 1e8
# more stages than this, solved by fatrop with stage Functions in casadi's VM, warn that compiling is faster
WARN_STAGES = 10
# Opti -> what its Stagewise recorded (constraints, variables; nothing that refers to the Opti), for the
# names in ocp.solve's reports
_RECORDS = weakref.WeakKeyDictionary()


class UncompiledStagesWarning(UserWarning):
    """A stage-wise problem of many stages is solved by fatrop with its stage Functions uncompiled."""


class Stagewise:
    """Opti with the variables and constraints of an optimal control problem declared stage by stage.

    ``state(n)`` declares x_0; then per stage ``control(n)`` declares u_k,
    ``subject_to`` collects the stage's path constraints (on x_k and u_k) and
    ``step(x_next)`` declares x_{k+1}, the gap-closing constraint
    x_{k+1} == x_next, and then the collected path constraints; ``solver``
    declares the constraints of the last stage (on x_N) and picks the solver.
    In that order the NLP's variables are (x_0, u_0, x_1, u_1, ..., x_N) and
    each stage's path constraints follow its gap-closing constraint: the
    structure fatrop (``structure_detection="auto"``) recognises and solves by a
    Riccati recursion (a path constraint on x_k declared before u_k breaks it).
    IPOPT takes the same problem. Only the order is prescribed: costs,
    constraints and dynamics are casadi expressions, and the Opti is
    ``self.opti``. Each variable and constraint is recorded with its stage and
    kind (``name`` labels path constraints), so that ``ocp.solve`` and the checks
    at the guess name them (``names``)."""

    def __init__(self, opti=None):
        self.opti = ca.Opti() if opti is None else opti
        self.x, self.u, self._path = [], [], []
        self._rows, self._variables, self._warned = {}, {}, False
        _RECORDS[self.opti] = self._rows, self._variables

    @property
    def names(self):
        """The ``Names`` of rows of ``opti.g`` and entries of ``opti.x``: ``names.row(i)``, ``names.column(j)``."""
        return names_of(self.opti)

    def state(self, n):
        """x_0: the first stage's state (the next ones come from ``step``)."""
        _check_size("state", n, 1)
        if self.x:
            raise RuntimeError("state() declares x_0 only; the next states come from step()")
        self.x.append(self._variable(n, "x_0"))
        return self.x[-1]

    def control(self, n):
        """u_k of the current stage (n = 0: a stage without control, an impulse), before ``step``."""
        _check_size("control", n, 0)
        if len(self.u) != len(self.x) - 1 or not self.x:
            raise RuntimeError("control() comes once per stage, after state() or step()")
        k = len(self.u)
        self.u.append(self._variable(n, f"u_{k}") if n else ca.MX(0, 1))
        return self.u[-1]

    def subject_to(self, *constraints, name=None):
        """Path constraints of the current stage, declared by the next ``step`` (or ``solver``);
        ``name`` labels them in reports."""
        self._path.extend((c, name) for c in constraints)

    def step(self, x_next):
        """x_{k+1}, declared with the gap-closing constraint x_{k+1} == x_next (an expression of x_k, u_k),
        then the stage's path constraints."""
        if len(self.u) != len(self.x):
            raise RuntimeError("step() closes a stage: declare its control first (control(0) for none)")
        k = len(self.u) - 1
        x = self._variable(x_next.shape, f"x_{k + 1}")
        self._constrain(x == x_next, f"stage {k}, gap-closing x_{k + 1} == x_next")
        self.x.append(x)
        self._declare_path(k)
        return x

    def solver(self, name, options=None, max_gradient=MAX_GRADIENT):
        """The last stage's path constraints, then ``opti.solver(name, options)``.

        The guess (``opti.set_initial``) is checked first: a non-finite value of the
        guess, the parameters, the cost, its gradient, a constraint or its Jacobian
        raises a ``ValueError`` naming the variable or constraint and its stage
        (fatrop would iterate on NaN). With fatrop, a stage with more equality constraints than state and
        control entries raises a ``SolveError`` naming it and the counts. With fatrop and more than ``WARN_STAGES``
        stages whose Functions casadi's VM evaluates (not compiled, no ``jit``),
        an ``UncompiledStagesWarning`` says how to compile them, once per problem. With ``jit``
        (``solver_options(compiled=True)``) the compiled Functions' libraries are made visible to the
        jitted NLP, or a ``RuntimeError`` names those that cannot be.

        For fatrop, the objective is first scaled as IPOPT scales it by default (its gradient-based
        scaling): the solver sees it divided by max(1, |grad f|_inf / ``max_gradient``) at the initial
        guess, at most ``MAX_SCALE`` (IPOPT's nlp_scaling_min_value) (Opti's ``linear_scale``:
        ``opti.f`` and the cost reported stay unscaled). fatrop does not
        scale, and with Crocoddyl's weights (1e6, a gradient of 1e5 at the guess) its Riccati recursion
        asks for a Hessian regularisation of 1e-2 at every iteration, ten times the controls' own
        curvature, and then converges linearly (benchmarks/README.md, Crocoddyl's legged problems).
        As with IPOPT, the tolerance then holds for the scaled problem. ``max_gradient=None`` keeps the
        objective as declared."""
        self._declare_path(len(self.u))
        options = options or {}
        opti = self.opti
        gradient = check_guess(opti, self.names, "Stagewise.solver")
        overfull = name == "fatrop" and overfull_error(opti, self.names)
        if overfull:  # casadi 3.8's fatrop stops at its dimension check, casadi 3.7's solves on: refused for both
            raise overfull
        if name == "fatrop" and max_gradient is not None:
            scale = min(MAX_SCALE, max(1.0, float(np.abs(gradient).max(initial=0.0)) / max_gradient))
            opti.minimize(opti.f, scale)
        if name == "fatrop" and len(self.u) > WARN_STAGES and not options.get("jit") and not self._warned:
            slow = uncompiled_calls(opti)
            if slow:
                self._warned = True
                warnings.warn(
                    f"fatrop solves {len(self.u)} stages with the stage Functions {slow} evaluated by casadi's "
                    f"VM: compile them (stages = ocp.compile_stages([...stage Functions], 'name'), then build "
                    f"the problem from calls of the compiled ones and solve with ocp.solver_options("
                    f"solver='fatrop', expand=True)), or compile the whole NLP with "
                    f"ocp.solver_options(solver='fatrop', compiled=True)",
                    UncompiledStagesWarning,
                    stacklevel=2,
                )
        if options.get("jit"):
            hidden = share_libraries(opti)
            if hidden:
                raise RuntimeError(
                    f"Stagewise.solver: the compiled Functions {hidden} cannot be called from a jitted NLP "
                    f"(their libraries are not found among the loaded ones): solve without jit (compiled=False "
                    f"in ocp.solver_options; the NLP in casadi's VM calls the libraries)"
                )
        opti.solver(name, options)

    def _variable(self, shape, label):
        v = self.opti.variable(*shape) if isinstance(shape, tuple) else self.opti.variable(shape)
        self._variables[v.name()] = (label, v.numel())
        return v

    def _constrain(self, constraint, label):
        self.opti.subject_to(constraint)
        self._rows[hash(constraint)] = label, constraint  # hash: the node, as opti.debug.g_lookup returns it

    def _declare_path(self, k):
        last = " (last)" if k == len(self.u) and self.x else ""
        for j, (c, name) in enumerate(self._path):
            self._constrain(c, f"stage {k}{last}, path constraint {repr(name) if name else j}")
        self._path = []


def names_of(opti):
    """The ``Names`` of an Opti declared by ``Stagewise``, else casadi's descriptions."""
    return Names(opti, *_RECORDS.get(opti, ({}, {})))


def _check_size(what, n, least):
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < least:
        raise ValueError(f"Stagewise.{what}(n): n must be an integer >= {least} (the {what}'s size), got {n!r}")
