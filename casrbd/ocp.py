"""Small helpers for optimal control with casrbd Functions in casadi Opti.

Only what every example in ``examples/`` would otherwise repeat: the
dynamics Function with analytical or AD Jacobians (optionally compiled to
C), explicit RK4 and implicit-Euler transcriptions of forward dynamics, the
Euler state update on the configuration manifold, IPOPT options and the
solver statistics. The problems themselves stay plain casadi.

The analytical Jacobian of ``casrbd.function(..., jacobian="analytical")``
takes effect where casadi differentiates a *call* of the Function, that is
inside MX graphs (Opti builds MX): build transcription Functions from MX
symbols, since an SX graph inlines the call and differentiates it by AD.
"""

import numbers

import casadi as ca

from . import codegen
from .functions import function

JACOBIANS = ("analytical", "ad")
HESSIANS = ("exact", "limited-memory")
DYNAMICS = ("aba", "rnea")
COMPILE_FLAGS = ("-O1",)


def _choice(arg, value, valid):
    if value not in valid:
        raise ValueError(f"{arg} must be one of {', '.join(map(repr, valid))}, got {value!r}")
    return value


def dynamics(
    model,
    name="aba",
    jacobian="analytical",
    compiled=False,
    f_ext=False,
    hessian="exact",
    flags=COMPILE_FLAGS,
    second_order=None,
    **options,
):
    """The forward (``"aba"``) or inverse (``"rnea"``) dynamics Function for MX graphs.

    ``jacobian="analytical"``: casadi's Jacobian of a call is the analytical
    one (``options``, e.g. ``method="idsva"``, pick it); ``"ad"``: casadi
    differentiates the Function's graph. ``second_order`` (with the
    analytical Jacobian; default "analytical"): casadi's gradient and the exact
    Hessian's forward-over-reverse go through the analytical adjoint and
    contracted Hessian (``casrbd.function``'s ``hessian``); "ad": through AD of
    the dynamics graph.
    ``compiled=True`` exports the dynamics as C through ``casrbd.codegen`` and
    loads it back (the rest of the NLP stays in casadi's VM; to compile the
    whole NLP, pass ``compiled=True`` to ``solver_options`` instead). A
    compiled Function cannot be differentiated by casadi, so the library
    carries the derivatives casadi asks for: the Jacobian ``jac_<name>`` and,
    for ``hessian="exact"``, the analytical adjoint and its Jacobian
    (``adj1_<name>``, ``jac_adj1_<name>``), or with AD second order the
    Jacobian's Jacobian ``jac_jac_<name>`` (AD of AD of the dynamics graph).
    ``flags``: the C compiler's (``COMPILE_FLAGS``: -O1, since second
    derivatives have 1e5 to 1e6 instructions and -O3 takes minutes on them).
    """
    _choice("name", name, DYNAMICS)
    _choice("jacobian", jacobian, JACOBIANS)
    _choice("hessian", hessian, HESSIANS)
    if jacobian == "ad" and (options or second_order == "analytical"):
        raise TypeError(
            f"options {sorted(options)} and second_order='analytical' select analytical derivatives; "
            f"jacobian='ad' takes neither"
        )
    second_order = second_order or ("analytical" if jacobian == "analytical" else "ad")
    _choice("second_order", second_order, JACOBIANS)
    if not compiled:
        return function(model, name, f_ext=f_ext, jacobian=jacobian, second_order=second_order, **options)
    functions = library_functions(model, name, jacobian, f_ext, hessian, second_order, **options)
    lib = codegen.compile_functions(
        functions, name=functions[0].name() + ("_h" if hessian == "exact" else "_j"), flags=flags
    )
    return lib[functions[0].name()]


def library_functions(model, name, jacobian="analytical", f_ext=False, hessian="exact", second_order=None, **options):
    """The Functions ``dynamics`` compiles: f, with jac_f for AD (codegen ships a custom Jacobian and
    a second-order adjoint with f), and for the exact Hessian with AD second order the Jacobian's
    Jacobian jac_jac_f (AD of the dynamics graph in both first-order modes, as casadi takes it in the
    VM)."""
    second_order = second_order or ("analytical" if jacobian == "analytical" else "ad")
    f = function(model, name, f_ext=f_ext, jacobian=jacobian, second_order=second_order, **options)
    jac = f.jacobian()
    functions = [f] + ([jac] if jacobian == "ad" else [])
    if hessian == "exact" and second_order == "ad":
        H = function(model, name, f_ext=f_ext).jacobian().jacobian()
        functions.append(ca.Function("jac_" + jac.name(), H.sx_in(), H.call(H.sx_in()), H.name_in(), H.name_out()))
    return functions


def forward_dynamics_ode(model, fd):
    """(x, u) -> dx/dt = [v; fd(q, v, u)] for x = [q; v]; needs nq == nv (no quaternions),
    since then dq/dt = v. Use ``euler_step`` on a manifold."""
    if model.nq != model.nv:
        raise ValueError(
            f"model {model.name!r} has nq = {model.nq} != nv = {model.nv}: its configuration "
            f"is not a vector space; integrate it with euler_step"
        )
    nq = model.nq
    return lambda x, u: ca.vertcat(x[nq:], fd(x[:nq], x[nq:], u))


def _check_dt(dt):
    if isinstance(dt, numbers.Real) and not dt > 0:
        raise ValueError(f"dt must be positive, got {dt!r}")


def rk4(ode, x, u, dt):
    """One explicit Runge-Kutta-4 step of dx/dt = ode(x, u), u held over the step."""
    _check_dt(dt)
    k1 = ode(x, u)
    k2 = ode(x + dt / 2 * k1, u)
    k3 = ode(x + dt / 2 * k2, u)
    k4 = ode(x + dt * k3, u)
    return x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def implicit_euler_residual(ode, x0, x1, u, dt):
    """x1 - x0 - dt * ode(x1, u): zero exactly when x1 is the implicit-Euler step from x0."""
    _check_dt(dt)
    return x1 - x0 - dt * ode(x1, u)


def euler_step(model, q, v, a, dt):
    """(q (+) v dt, v + a dt): explicit Euler on the configuration manifold, so that the
    quaternions of q stay unit quaternions (``integrate`` normalises and rotates them)."""
    _check_dt(dt)
    return function(model, "integrate")(q, v * dt), v + a * dt


def solver_options(hessian="exact", warm_start=False, verbose=False, compiled=False, flags=COMPILE_FLAGS, **ipopt):
    """Options for ``opti.solver("ipopt", ...)``; ``ipopt`` adds IPOPT options by name.

    ``warm_start``: start from the given primal and dual values (for MPC).
    ``compiled``: casadi generates C for the NLP's functions (objective,
    constraints, their Jacobian, the Hessian of the Lagrangian, with the
    dynamics Functions and their derivatives inside) and compiles them with
    the system C compiler and ``flags`` when the solver is created (casadi's
    ``jit``); the derivatives are the ones the dynamics Functions carry."""
    _choice("hessian", hessian, HESSIANS)
    opts = {
        "record_time": True,
        "print_time": False,
        "ipopt.hessian_approximation": hessian,
        "ipopt.print_level": 5 if verbose else 0,
        "ipopt.sb": "yes",
    }
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
    opts.update({"ipopt." + k: v for k, v in ipopt.items()})
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
    gives the last iterate (as it gives the solution after a success)."""
    try:
        opti.solve_limited()
    except RuntimeError as e:
        if "return_status" not in str(e):  # not IPOPT failing, but building or calling the problem
            raise
    s = opti.stats()
    out = {
        "status": s["return_status"],
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
