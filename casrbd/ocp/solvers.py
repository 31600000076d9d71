"""Solver options for IPOPT and fatrop, solving an Opti and its statistics."""

import re

from .. import codegen
from ..codegen.flags import COMPILE_FLAGS
from ..spec import HESSIANS, SOLVERS, choice
from .diagnostics import FATROP_FLAGS, SolveError, diagnose, missing_derivatives, overfull_error, share_libraries
from .expand import keep_analytical
from .stagewise import names_of


def solver_options(
    hessian="exact",
    warm_start=False,
    verbose=False,
    compiled=False,
    flags=COMPILE_FLAGS,
    solver="ipopt",
    expand=False,
    **extra,
):
    """Options for ``opti.solver(solver, ...)``, ``solver`` "ipopt" or "fatrop" (``SOLVERS``);
    ``extra`` adds the solver's own options by name.

    fatrop takes the structure of a problem declared with ``Stagewise``
    (``structure_detection="auto"``) and exact Hessians only; without that
    structure use IPOPT.
    ``warm_start`` (IPOPT): start from the given primal and dual values (for MPC).
    ``compiled``: casadi generates C for the NLP's functions (objective,
    constraints, their Jacobian, the Hessian of the Lagrangian, with the
    dynamics Functions and their derivatives inside) and compiles them with
    the system C compiler and ``flags`` when the solver is created (casadi's
    ``jit``); the derivatives are the ones the dynamics Functions carry.
    ``expand``: casadi turns the NLP into SX, with ``postpone_expand`` so that
    the analytical derivatives are taken first and kept (``casrbd.keep_analytical``).
    ``extra``'s names are the solver's own (``tol``, ``max_iter``); one with the solver's prefix
    (``**{"fatrop.tol": 1e-6}``) is taken without it, one with another solver's prefix raises a
    ``ValueError``. A name the solver does not know raises a ``ValueError`` naming it when the solver
    is created (``solve``)."""
    choice("hessian", hessian, HESSIANS)
    choice("solver", solver, SOLVERS)
    extra = {_own_option(solver, k): v for k, v in extra.items()}
    opts = keep_analytical({"record_time": True, "print_time": False, "expand": expand})
    if solver == "fatrop":
        if hessian != "exact" or warm_start:
            raise ValueError("fatrop takes hessian='exact' and no warm_start; use solver='ipopt' for those")
        opts.update({"structure_detection": "auto", "fatrop.print_level": 10 if verbose else 0})
    else:
        opts.update(
            {"ipopt.hessian_approximation": hessian, "ipopt.print_level": 5 if verbose else 0, "ipopt.sb": "yes"}
        )
    if compiled:
        opts.update(
            {
                "jit": True,
                "compiler": "shell",
                "jit_options": {"compiler": codegen.find_compiler(), "flags": list(flags), "verbose": verbose},
            }
        )
    if warm_start:
        # small pushes off the bounds keep the warm start where the last solution was
        opts.update(
            {
                "ipopt.warm_start_init_point": "yes",
                "ipopt.mu_init": 1e-6,
                "ipopt.warm_start_bound_push": 1e-9,
                "ipopt.warm_start_bound_frac": 1e-9,
                "ipopt.warm_start_slack_bound_push": 1e-9,
                "ipopt.warm_start_slack_bound_frac": 1e-9,
                "ipopt.warm_start_mult_bound_push": 1e-9,
            }
        )
    opts.update({f"{solver}.{k}": v for k, v in extra.items()})
    return opts


def _own_option(solver, name):
    prefix, dot, rest = name.partition(".")
    if not dot:
        return name
    if prefix == solver:
        return rest
    other = f"{prefix}'s" if prefix in SOLVERS else f"not {solver}'s"
    raise ValueError(
        f"solver_options: option {name!r} is {other} (solver={solver!r}): give {solver}'s own options by "
        f"their names (tol=1e-6), with or without the prefix {solver + '.'!r}"
    )


STAT_FIELDS = {  # name -> key of casadi's nlpsol stats: wall times (t_) and the process's CPU times (cpu_), in s
    "t_total": "t_wall_total",
    "t_f": "t_wall_nlp_f",
    "t_g": "t_wall_nlp_g",
    "t_grad_f": "t_wall_nlp_grad_f",
    "t_jac_g": "t_wall_nlp_jac_g",
    "t_hess_l": "t_wall_nlp_hess_l",
    "cpu_total": "t_proc_total",
    "cpu_jac_g": "t_proc_nlp_jac_g",
    "cpu_hess_l": "t_proc_nlp_hess_l",
}


def solve(opti, raise_on_failure=False):
    """Solve and return the solver statistics: status, success, iterations, cost and wall times.

    ``status``: IPOPT's ``return_status``, and for fatrop, whose status is a number, IPOPT's word
    for the same outcome; ``solver_status``: the solver's own (fatrop's ``StopAtAcceptablePoint (return
    flag 2)``); ``success``: solved, to the tolerance or (as casadi counts IPOPT's) to the acceptable
    one. A failed solve does not raise (unless ``raise_on_failure``: a ``SolveError`` with the
    message): ``violation`` is then the largest constraint violation at the last iterate,
    ``violation_at`` the constraint (for a ``Stagewise`` problem its stage and kind, gap-closing or path
    constraint, and entry), ``hint`` the causes recognised (None when none is): iteration limit,
    stall at tolerance, local infeasibility and an infeasible start, a zero or rank-deficient equality
    constraint Jacobian naming the dependent constraints, NaN at the last iterate; ``message`` says
    all that in a sentence ("" after a success, where ``violation``, ``violation_at`` and ``hint``
    are None). ``opti.debug.value`` gives the last iterate (as it gives the solution after a success).
    The compiled Functions the NLP calls are made visible to a jitted NLP
    (``solver_options(compiled=True)``), which links against their symbols. A compiled Function
    without the derivatives the solver asks for raises a ``RuntimeError`` that says how to build it;
    an option the solver does not know, a ``ValueError`` naming it."""
    share_libraries(opti)
    try:
        opti.solve_limited()
    except RuntimeError as e:
        _explain(e, opti)
    s = opti.stats()
    solver, status = solver_status(s)
    out = {
        "status": status,
        "success": bool(s["success"]) or status == "Solved_To_Acceptable_Level",  # as casadi has it for IPOPT
        "iterations": int(s["iter_count"]),
        "cost": float(opti.debug.value(opti.f)),
    }
    out.update({k: float(s.get(key, float("nan"))) for k, key in STAT_FIELDS.items()})
    out["t_per_iter"] = out["t_total"] / max(out["iterations"], 1)
    out["cpu_per_iter"] = out["cpu_total"] / max(out["iterations"], 1)
    out["solver_status"] = solver
    out.update(violation=None, violation_at=None, hint=None, message="")
    if not out["success"]:
        out.update(diagnose(opti, names_of(opti), s, status))
        out["message"] = (
            f"the solve failed: {status}{f' ({solver})' * (solver != status)} after {out['iterations']} "
            f"iterations; largest constraint "
            f"violation {out['violation']:.3g} at {out['violation_at']}"
            + (f"; cause: {out['hint']}" if out["hint"] else "")
        )
        if raise_on_failure:
            raise SolveError(out["message"], out)
    return out


def solver_status(s):
    """(the solver's own status, IPOPT's word for it) from a solver's statistics ``s`` (Opti's or
    nlpsol's ``stats()``): fatrop's and any solver's that reports a number only in words."""
    flag = (s.get("fatrop") or {}).get("return_flag")
    if flag is not None:
        own, word = FATROP_FLAGS[flag] if 0 <= flag < len(FATROP_FLAGS) else FATROP_FLAGS[-1]
        return f"fatrop: {own} (return flag {flag})", word
    status = s["return_status"]
    if not isinstance(status, str):  # a solver that reports a number only
        word = "Solve_Succeeded" if s["success"] else "Solve_Failed"
        return f"return code {status}", f"{word} (return code {status})"
    return status, status


def _explain(e, opti):
    """Re-raise casadi's error of a solve with its cause named, or return if the solver ran and failed."""
    text = str(e)
    missing = missing_derivatives(e)
    if missing:
        raise missing from None
    unknown = re.search(r"(No such IPOPT option|Fatrop option not supported): (\S+)", text)
    if unknown:
        solver = "ipopt" if "IPOPT" in unknown.group(1) else "fatrop"
        raise ValueError(
            f"{solver} has no option {unknown.group(2)!r} (given to ocp.solver_options or opti.solver as "
            f"{solver + '.' + unknown.group(2)!r}); see {solver}'s documentation for its option names"
        ) from None
    if "number_of_eq_constraints" in text:  # a problem not declared with Stagewise, which refuses it before
        raise overfull_error(opti, names_of(opti), text) from None
    if "specified structure of A does not correspond" in text:
        detail = next(line.strip() for line in text.splitlines() if "specified structure of A" in line)
        raise SolveError(
            "fatrop's structure detection failed: a constraint couples variables of different stages other "
            "than a gap-closing one, or is declared out of the stage order (declare the problem with "
            f"ocp.Stagewise: path constraints of stage k on x_k and u_k only), or solve it with IPOPT\n({detail})"
        ) from None
    if "return_status" not in text:  # not the solver failing, but building or calling the problem
        raise e


def format_stats(stats):
    return (
        f"{stats['status']}: {stats['iterations']} iterations, cost {stats['cost']:.10g}, "
        f"total {stats['t_total']:.3f} s ({1e3 * stats['t_per_iter']:.1f} ms/iter), "
        f"jac_g {stats['t_jac_g']:.3f} s, hess_l {stats['t_hess_l']:.3f} s, grad_f {stats['t_grad_f']:.3f} s, "
        f"g {stats['t_g']:.3f} s"
    )
