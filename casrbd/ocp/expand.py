"""Keeping casrbd's analytical derivatives when casadi expands an NLP to SX.

casadi's ``expand=True`` (nlpsol, Opti) turns the whole NLP into SX *before* it
takes the constraint Jacobian and the Hessian of the Lagrangian: every call of
a casrbd Function is inlined and differentiated by AD, so the analytical
Jacobian, adjoint and contracted Hessian the Function carries are never used,
and the solve is many times slower and larger than in MX. With
``postpone_expand=True`` (casadi 3.7 and newer) casadi takes those derivatives
in MX first, through the analytical ones, and expands afterwards. Marking the
Functions ``never_inline`` does not help: casadi 3.8 then keeps the calls but
asks them for one forward direction at a time, and 3.7 inlines them regardless
(figures: benchmarks/README.md, expand and keep_analytical).

``keep_analytical(options, problem)`` returns the solver options with
``postpone_expand`` set wherever ``expand`` is on, and warns once per Function
when ``postpone_expand=False`` is asked for explicitly, naming the casrbd
Functions whose analytical derivatives are then dropped.
"""

import warnings

import casadi as ca

from .. import derivative_protocol as protocol

_warned = set()


def keep_analytical(options=None, problem=None):
    """nlpsol/Opti ``options`` under which ``expand=True`` keeps the analytical derivatives.

    ``problem`` (an ``Opti``, an MX expression or list of them, or a Function),
    only read for the warning: the Functions it calls that carry a custom
    Jacobian (``casrbd.function(..., jacobian="analytical")``)."""
    options = dict(options or {})
    if not options.get("expand"):
        return options
    options.setdefault("postpone_expand", True)
    if not options["postpone_expand"] and problem is not None:
        dropped = [name for name in analytical_functions(problem) if name not in _warned]
        if dropped:
            _warned.update(dropped)
            warnings.warn(
                f"expand=True with postpone_expand=False inlines {dropped} into SX and differentiates them by AD: "
                f"their analytical derivatives are not used; pass postpone_expand=True (or leave expand off)",
                stacklevel=2,
            )
    return options


def analytical_functions(problem):
    """Names of the Functions called by ``problem`` (see ``keep_analytical``) whose derivative cache
    holds a Jacobian set before any was asked for: a custom Jacobian. casadi 3.7 does not look inside
    ``map``; 3.8 does."""
    if isinstance(problem, ca.Opti):
        problem = [problem.f, problem.g]
    if not isinstance(problem, ca.Function):
        exprs = problem if isinstance(problem, (list, tuple)) else [problem]
        problem = ca.Function("problem", ca.symvar(ca.veccat(*exprs)), list(exprs))
    return sorted({f.name() for f in problem.find_functions() if protocol.jacobian_name(f.name()) in f.cache()})
