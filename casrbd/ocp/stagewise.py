"""Stagewise: an Opti problem declared stage by stage, in the order fatrop's structure detection needs."""

import casadi as ca
import numpy as np

MAX_GRADIENT = 100.0  # IPOPT's nlp_scaling_max_gradient, which Stagewise applies for fatrop


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
    ``self.opti``."""

    def __init__(self, opti=None):
        self.opti = ca.Opti() if opti is None else opti
        self.x, self.u, self._path = [], [], []

    def state(self, n):
        """x_0: the first stage's state (the next ones come from ``step``)."""
        if self.x:
            raise RuntimeError("state() declares x_0 only; the next states come from step()")
        self.x.append(self.opti.variable(n))
        return self.x[-1]

    def control(self, n):
        """u_k of the current stage (n = 0: a stage without control, an impulse), before ``step``."""
        if len(self.u) != len(self.x) - 1 or not self.x:
            raise RuntimeError("control() comes once per stage, after state() or step()")
        self.u.append(self.opti.variable(n) if n else ca.MX(0, 1))
        return self.u[-1]

    def subject_to(self, *constraints):
        """Path constraints of the current stage, declared by the next ``step`` (or ``solver``)."""
        self._path.extend(constraints)

    def step(self, x_next):
        """x_{k+1}, declared with the gap-closing constraint x_{k+1} == x_next (an expression of x_k, u_k),
        then the stage's path constraints."""
        if len(self.u) != len(self.x):
            raise RuntimeError("step() closes a stage: declare its control first (control(0) for none)")
        x = self.opti.variable(*x_next.shape)
        self.opti.subject_to(x == x_next)
        self.x.append(x)
        self._declare_path()
        return x

    def solver(self, name, options=None, max_gradient=MAX_GRADIENT):
        """The last stage's path constraints, then ``opti.solver(name, options)``.

        For fatrop, the objective is first scaled as IPOPT scales it by default (its gradient-based
        scaling): the solver sees it divided by max(1, |grad f|_inf / ``max_gradient``) at the initial
        guess (Opti's ``linear_scale``: ``opti.f`` and the cost reported stay unscaled). fatrop does not
        scale, and with Crocoddyl's weights (1e6, a gradient of 1e5 at the guess) its Riccati recursion
        asks for a Hessian regularisation of 1e-2 at every iteration, ten times the controls' own
        curvature, and then converges linearly (the solo12 jump: 103 iterations unscaled, 19 scaled).
        As with IPOPT, the tolerance then holds for the scaled problem. ``max_gradient=None`` keeps the
        objective as declared."""
        self._declare_path()
        if name == "fatrop" and max_gradient is not None:
            opti = self.opti
            guess = opti.initial() + opti.value_parameters()
            gradient = np.abs(np.asarray(opti.debug.value(ca.gradient(opti.f, opti.x), guess)))
            opti.minimize(opti.f, max(1.0, float(gradient.max(initial=0.0)) / max_gradient))
        self.opti.solver(name, options or {})

    def _declare_path(self):
        for c in self._path:
            self.opti.subject_to(c)
        self._path = []
