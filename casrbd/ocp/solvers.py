"""Solver options for IPOPT and fatrop, solving an Opti and its statistics."""

import re

from .. import codegen
from ..spec import choice
from .expand import keep_analytical

SOLVERS = ("ipopt", "fatrop")
HESSIANS = codegen.HESSIANS
# -O1 for this CPU: second derivatives have 1e5 to 1e6 instructions and -O2 or -O3 take minutes on them;
# -march=native's fused multiply-adds make -O1 nearly -O3's speed (solo12's running stage of Crocoddyl's
# trot, 150k instructions: Gauss-Newton Hessian 70 us against 97 us at plain -O1 and 67 us at -O3;
# gcc 25 s against 46 s at -O3 and 150 s at -O2)
COMPILE_FLAGS = ("-O1", "-march=native")


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
    the analytical derivatives are taken first and kept (``casrbd.keep_analytical``)."""
    choice("hessian", hessian, HESSIANS)
    choice("solver", solver, SOLVERS)
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


def solve(opti):
    """Solve and return the solver statistics: status, success, iterations, cost and wall times.

    A failed solve does not raise: its status says so, and ``opti.debug.value``
    gives the last iterate (as it gives the solution after a success). A
    compiled Function without the derivatives the solver asks for raises a
    ``RuntimeError`` that says how to build it."""
    try:
        opti.solve_limited()
    except RuntimeError as e:
        missing = re.search(r"Derivatives cannot be calculated for (\S+)", str(e))
        if missing:
            raise RuntimeError(
                f"the compiled Function {missing.group(1)!r} carries no derivatives for this solver: build it "
                f"with casrbd.compiled(model, name, ...) (its library ships the Jacobian, adjoint and Hessian), "
                f"or hessian='limited-memory' in casrbd.compiled and solver_options when there is no exact "
                f"Hessian\n(casadi: {str(e).splitlines()[-1]})"
            ) from None
        if "return_status" not in str(e):  # not IPOPT failing, but building or calling the problem
            raise
    s = opti.stats()
    status = s["return_status"]
    if not isinstance(status, str):  # fatrop's: a number
        status = f"{'Solve_Succeeded' if s['success'] else 'Solve_Failed'} (return code {status})"
    out = {
        "status": status,
        "success": bool(s["success"]),
        "iterations": int(s["iter_count"]),
        "cost": float(opti.debug.value(opti.f)),
    }
    out.update({k: float(s.get(key, float("nan"))) for k, key in STAT_FIELDS.items()})
    out["t_per_iter"] = out["t_total"] / max(out["iterations"], 1)
    out["cpu_per_iter"] = out["cpu_total"] / max(out["iterations"], 1)
    return out


def format_stats(stats):
    return (
        f"{stats['status']}: {stats['iterations']} iterations, cost {stats['cost']:.10g}, "
        f"total {stats['t_total']:.3f} s ({1e3 * stats['t_per_iter']:.1f} ms/iter), "
        f"jac_g {stats['t_jac_g']:.3f} s, hess_l {stats['t_hess_l']:.3f} s, grad_f {stats['t_grad_f']:.3f} s, "
        f"g {stats['t_g']:.3f} s"
    )
