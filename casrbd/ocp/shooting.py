"""``Problem.solve(solver="riccati")``: Gauss-Newton multiple shooting of a problem without path
constraints by ``riccati.RTI.solve``, its result as ``Problem.solve`` returns a solver's."""

import time

import numpy as np

from .riccati import RTI


def solve_problem(problem, start, tol=1e-9, gap_tol=1e-9, max_iter=100, regularisation=0.0, verbose=False):
    """``Problem.solve(solver="riccati")``: ``RTI.solve`` on ``problem``'s stages from ``start`` ({"xs", "us"}
    or a Solution), as (xs, us, forces, cost, violation, stats, lam_g = None) for its ``Solution``; the
    ``RTI`` is built at the first such solve and kept on the problem. A problem with path constraints or
    control bounds raises a ``ValueError``."""
    for k, stage in enumerate(problem.stages):
        what = "the terminal knot" if k == len(problem.knots) else f"knot {k}"
        if stage.function.n_out() > 2 or stage.u_bounds is not None:
            raise ValueError(
                f"solver 'riccati' takes no path constraints or control bounds; {what} has "
                f"{stage.function.name_out()[2:] or 'control bounds'} (hard constraints): solve with solver='fatrop'"
            )
    if getattr(problem, "_rti", None) is None:
        problem._rti = RTI([s.function for s in problem.stages[:-1]], problem.stages[-1].function, "riccati")
    xs, us = (start.xs, start.us) if hasattr(start, "xs") else (start["xs"], start["us"])
    wall = time.perf_counter()
    r = problem._rti.solve(
        problem.x0,
        np.array(xs),
        us,
        np.concatenate(problem.parameters),
        tol,
        gap_tol,
        max_iter,
        regularisation,
        verbose,
    )
    wall = time.perf_counter() - wall
    gaps = np.abs(np.r_[problem.x0 - r.xs[0], r.gaps])
    worst = int(np.argmax(gaps)) if gaps.size else 0
    nx, iterations = problem._rti.nx, max(r.iterations, 1)
    at = "x_0 = x0" if worst < nx else f"knot {worst // nx - 1}'s dynamics (x_next - x_k+1), entry {worst % nx}"
    stats = {
        "status": "Solve_Succeeded" if r.success else "Maximum_Iterations_Exceeded",
        "success": r.success,
        "iterations": r.iterations,
        "cost": r.cost,
        "gradient": float(r.gradient),
        "t_total": wall,
        "cpu_total": sum(r.cpu.values()),
        **{f"cpu_{k}": v for k, v in r.cpu.items()},
        "solver_status": "riccati",
        "violation": float(gaps.max(initial=0.0)),
        "violation_at": at,
        "hint": None,
        "message": "",
    }
    stats["t_per_iter"], stats["cpu_per_iter"] = wall / iterations, stats["cpu_total"] / iterations
    if not r.success:
        stats["hint"] = "iteration limit"
        stats["message"] = (
            f"the solve failed: Maximum_Iterations_Exceeded (riccati) after {r.iterations} iterations: sum |qu|^2 "
            f"{r.gradient:.3g} (tol {tol:g}), largest gap {stats['violation']:.3g} at {at} (gap_tol {gap_tol:g})"
        )
    return r.xs, r.us, problem.forces(r.xs, r.us), r.cost, stats["violation"], stats, None
