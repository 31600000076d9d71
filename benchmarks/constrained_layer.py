"""casrbd's side of benchmarks.constrained: Crocoddyl's trot, jump and walk with hard cones and torque limits built
on ``casrbd.ocp.legged`` (``hard=True``), checked knot by knot against Crocoddyl's (``knot_spec`` and the knots'
cost, next state and cone rows) and solved by fatrop and IPOPT on the compiled Gauss-Newton route, each first solving
the problem's ``start`` (the penalty problem, ``legged``'s default) from Crocoddyl's guess.
"""

import time

import numpy as np

from benchmarks.constrained import (
    QP_EPS,
    REPEAT_BUDGET,
    REPEATS,
    SOLO12_TORQUE,
    WALK,
    defect,
    knot_spec,
    spread,
    violation,
)

# casrbd's side: the solvers' tolerance (their scaled KKT residual; at benchmarks.crocoddyl's 1e-7 both stop at
# a cost above CSQP's on the hard trot, at 1e-9 on it; fatrop stops at legged.HARD_OPTIONS' acceptable point
# where the degenerate active cones and torque limits keep it from 1e-9) and IPOPT's barrier strategy (with its
# default it took 90 to 300 iterations on the hard trot); fatrop's options are the library's (legged.HARD_OPTIONS)
CASRBD_TOL, CASRBD_MAX_ITER = 1e-9, 300
CASRBD_OPTIONS = {"fatrop": {}, "ipopt": {"mu_strategy": "adaptive"}}
CASRBD_VARIANTS = ("penalty", "hard")


def casrbd_problem(name, variant):
    """``name`` in ``variant`` ("penalty", "hard") built on ``casrbd.ocp.legged``, compiled Gauss-Newton stages:
    "hard" takes the cones and the torque limits (``torque_limit``'s) as hard constraints."""
    from casrbd.ocp import legged

    if variant not in CASRBD_VARIANTS:
        raise ValueError(f"variant {variant!r}: casrbd builds {CASRBD_VARIANTS}")
    hard = variant == "hard"
    if name == "walk":
        sizes = dict(zip(("length", "height", "dt", "step_knots", "support_knots"), WALK))
        return legged.biped_problem(hard=hard, compiled=True, name="talos_walk", **sizes)
    tau = SOLO12_TORQUE if hard else None
    return legged.quadruped_problem(name, hard=hard, tau_max=tau, compiled=True, name=f"solo12_{name}")


def _effective_mu(c):
    """A Crocoddyl cone's friction coefficient as its pyramid's facets have it (inner: mu cos(pi / nf))."""
    return c["mu"] * np.cos(np.pi / c["facets"]) if c["inner"] else c["mu"]


def spec_mismatches(spec, problem):
    """Where casrbd's ``problem`` differs from ``knot_spec``'s knots: their number, kind, dt, contact frames, and
    per running knot the hard cones (frame, friction, facets, sole) and the torque bounds."""
    from casrbd.ocp.residuals import FrictionCone, JointTorque, WrenchCone
    from casrbd.ocp.terms import Constraint

    out = []
    if len(spec) != len(problem.knots) + 1:
        return [f"{len(spec) - 1} running knots in Crocoddyl's, {len(problem.knots)} in casrbd's"]
    for k, (c, knot) in enumerate(zip(spec, problem.knots)):
        ours = {
            "impulse": knot.kind == "impulse",
            "dt": knot.dt,
            "contacts": sorted(knot.dynamics.frames),
            "cones": sorted(
                (t.residual.frame, round(t.residual.mu, 12), 4, (t.residual.X, t.residual.Y))
                if isinstance(t.residual, WrenchCone)
                else (t.residual.frame, round(t.residual.mu, 12), t.residual.facets, None)
                for t in knot.terms
                if isinstance(t, Constraint) and isinstance(t.residual, (FrictionCone, WrenchCone))
            ),
        }
        box = [tuple(np.array(h["box"]) / 2) if "box" in h else None for h in c["constraints"]]
        theirs = {
            "impulse": c["impulse"],
            "dt": c["dt"],
            "contacts": sorted(x["frame"] for x in c["contacts"]),
            "cones": sorted(
                (h["frame"], round(_effective_mu(h), 12), h["facets"], b)
                for h, b in zip(c["constraints"], box)
                if "mu" in h
            ),
        }
        out += [
            f"knot {k}: {key} {theirs[key]} (Crocoddyl), {ours[key]} (casrbd)"
            for key in ours
            if ours[key] != theirs[key]
        ]
        torque = [t for t in knot.terms if isinstance(t, Constraint) and isinstance(t.residual, JointTorque)]
        limits = [(h["lb"], h["ub"]) for h in c["constraints"] if h["name"] == "torque"]
        if len(torque) != len(limits):
            out.append(f"knot {k}: {len(limits)} torque constraints (Crocoddyl), {len(torque)} (casrbd)")
        elif torque and np.abs(np.r_[torque[0].bounds(problem.model, limits[0][0].size)] - np.r_[limits[0]]).max() > 0:
            out.append(f"knot {k}: torque bounds differ")
    return out


def same_knots(croc, problem, xs, us):
    """The largest relative difference of casrbd's stage Functions from Crocoddyl's ``croc`` at (xs, us) over the
    knots: (cost, next state, hard cone rows with their bounds, sorted: the two order the feet apart)."""
    croc.calc(list(xs), list(us))
    datas = [*croc.runningDatas, croc.terminalData]
    models = [*croc.runningModels, croc.terminalModel]
    worst = np.zeros(3)
    for k, (stage, p, m, d, x) in enumerate(zip(problem.stages, problem.parameters, models, datas, xs)):
        out = stage.function(x, us[k] if k < len(us) else np.zeros(0), p)
        cost = float(out[0])
        worst[0] = max(worst[0], abs(cost - d.cost) / max(1.0, abs(d.cost)))
        if k < len(us):
            worst[1] = max(worst[1], np.abs(out[1].full().ravel() - d.xnext).max())
        cm = getattr(getattr(m, "differential", None), "constraints", None)
        if cm is None or len(out) < 3:
            continue
        items = d.differential.constraints.constraints.todict()
        rows = [
            np.c_[items[n].residual.r, it.constraint.lb, it.constraint.ub]
            for n, it in cm.constraints.todict().items()
            if n != "torque"
        ]
        theirs, ours = np.vstack(rows), np.c_[out[2].full().ravel(), stage.lower, stage.upper]
        theirs[np.abs(theirs) >= np.finfo(float).max] *= np.inf  # Crocoddyl's unbounded rows: +-DBL_MAX
        if theirs.shape != ours.shape:
            raise ValueError(f"knot {k}: {len(theirs)} cone rows in Crocoddyl's, {len(ours)} in casrbd's")
        theirs, ours = (a[np.lexsort(a.T[::-1])] for a in (theirs, ours))
        finite = np.isfinite(theirs)
        if (finite != np.isfinite(ours)).any():
            raise ValueError(f"knot {k}: the cone rows' bounds differ")
        worst[2] = max(worst[2], (np.abs(theirs[finite] - ours[finite]) / np.maximum(1, np.abs(theirs[finite]))).max())
    return worst


def solve_layer(problem_name, variant, solver="fatrop", guess=None):
    """casrbd's solve of ``problem_name`` in ``variant`` ("penalty", "hard") with fatrop or IPOPT on the compiled
    Gauss-Newton route from ``guess`` ((xs, us): Crocoddyl's): the fastest of up to REPEATS solves (the solver's
    CPU time, ``t_proc_total``) within REPEAT_BUDGET, each from the guess scaled by 1 + 1e-13 r so that no knot
    point repeats one whose linearisation the compiled stages keep (``codegen.memoize``); the build (wall, the
    problem and creating the solver) and per iteration the derivatives' and the linear algebra's CPU time. The
    hard problems' ``start`` (the penalty problem, solved first from the guess) counts in the CPU time and the
    iterations (``start_iterations``)."""
    start = time.perf_counter()
    problem = casrbd_problem(problem_name, variant)
    build = time.perf_counter() - start
    xs0, us0 = guess
    best, cpus = None, []
    for r in range(REPEATS):
        scaled = {"xs": [x * (1 + 1e-13 * r) for x in xs0], "us": [u * (1 + 1e-13 * r) for u in us0]}
        start = time.perf_counter()
        options = {"tol": CASRBD_TOL, "max_iter": CASRBD_MAX_ITER, **CASRBD_OPTIONS[solver]}
        sol = problem.solve(solver, guess=scaled, **options)
        raw = problem.opti.stats()
        first = sol.stats.get("start", {"cpu_total": 0.0, "t_total": 0.0, "iterations": 0})
        if r == 0:  # creating the solvers (the NLPs' sparsity patterns) is part of the build
            build += time.perf_counter() - start - raw["t_wall_total"] - first["t_total"]
        cpus.append(raw["t_proc_total"] + first["cpu_total"])
        if best is None or cpus[-1] < best[2]:
            best = sol, raw, cpus[-1]
        if sum(cpus) > REPEAT_BUDGET:
            break
    sol, raw, cpu = best
    first = sol.stats.get("start", {"iterations": 0})
    iters = max(sol.stats["iterations"], 1)
    calls = {k: raw.get(f"n_call_nlp_{k}", 0) for k in ("jac_g", "grad_f", "hess_l", "jac_fg")}
    linear_algebra = raw.get("fatrop", {}).get("compute_sd_time") if solver == "fatrop" else None
    return {
        "solver": f"casrbd + {solver}",
        "converged": sol.stats["success"],
        "cpu": cpu,
        "cpus": cpus,
        "build": build,
        "iterations": sol.stats["iterations"],
        "start_iterations": first["iterations"],
        "status": sol.stats["solver_status"],
        "stop": float("nan"),
        "qp_iterations": None,
        "xs": sol.xs,
        "us": sol.us,
        "derivatives": sum(raw.get(f"t_proc_nlp_{k}", 0.0) / n for k, n in calls.items() if n),
        "linear_algebra": float("nan") if linear_algebra is None else linear_algebra / iters,
        "problem": problem,
    }


CASRBD_HEADER = (
    "| problem | variant | solver | converged (status) | iterations (start + hard) | CPU of the solve [s] "
    "| / CSQP's (QP eps 1e-4, 1e-6) "
    "| build [s] | cost (Crocoddyl's calc) | / CSQP's - 1 | cone violation | torque violation | defect "
    "| ms / iteration | derivatives | linear algebra | rest |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def casrbd_rows(name, problem, x0, csqp, solvers):
    """casrbd's solves of the hard ``name`` (Crocoddyl's ``problem``) from Crocoddyl's guess, checked knot by
    knot against it first: table rows and the check's line. ``csqp``: CSQP's results by QP eps."""
    xs0 = [x0] * (problem.T + 1)
    guess = (xs0, [np.array(u) for u in problem.quasiStatic(xs0[:-1])])
    rows, check = [], None
    for solver in solvers:
        r = solve_layer(name, "hard", solver, guess)
        if check is None:
            mismatches = spec_mismatches(knot_spec(problem), r["problem"])
            if mismatches:
                raise ValueError(f"{name}: casrbd's hard problem is not Crocoddyl's: " + "; ".join(mismatches[:5]))
            reference = csqp[QP_EPS[1]]
            on = [same_knots(problem, r["problem"], *g) for g in (guess, (reference["xs"], reference["us"]))]
            worst = np.max(on, axis=0)
            check = (
                f"{name}: casrbd's hard problem against Crocoddyl's, knot by knot (knot_spec: kind, dt, contacts, "
                f"cones, torque bounds) the same; on Crocoddyl's guess and on CSQP's solution the largest relative "
                f"difference of the cost {worst[0]:.0e}, next state {worst[1]:.0e}, cone rows {worst[2]:.0e}."
            )
            print(check, flush=True)
        cost = problem.calc(list(r["xs"]), list(r["us"]))
        ratios = ", ".join(f"{r['cpu'] / csqp[e]['cpu']:.2f}x" for e in QP_EPS[::-1])
        viol = " | ".join(f"{v:.1e}" for v in violation(problem, r["xs"], r["us"]).values())
        per_iter = r["cpu"] / max(r["iterations"] + r["start_iterations"], 1)
        la = r["linear_algebra"]
        rest = per_iter - r["derivatives"] - (0 if np.isnan(la) else la)
        ref_cost = problem.calc(list(csqp[QP_EPS[1]]["xs"]), list(csqp[QP_EPS[1]]["us"]))
        rows.append(
            f"| {name} | hard | {r['solver']} | {r['converged']} ({r['status']}) "
            f"| {r['start_iterations']} + {r['iterations']} | {spread(r)} | {ratios} "
            f"| {r['build']:.1f} | {cost:.10g} | {cost / ref_cost - 1:+.1e} | {viol} "
            f"| {defect(problem, r['xs'], r['us']):.1e} | {1e3 * per_iter:.2f} | {1e3 * r['derivatives']:.2f} "
            f"| {'-' if np.isnan(la) else f'{1e3 * la:.2f}'} | {1e3 * rest:.2f} |"
        )
        print(rows[-1], flush=True)
    return rows, check
