"""Talos' two-step walk (examples/humanoid_walk.py): building, compiling and solving it, and Crocoddyl's FDDP
on the same problem.

    OMP_NUM_THREADS=1 .venv-croc/bin/python -m benchmarks.humanoid

Crocoddyl (the ``crocoddyl`` extra: crocoddyl 3.2.1 with pin 4.0.0) builds its own problem,
``SimpleBipedGaitProblem(talos).createWalkingProblem(x0, 0.6, 0.1, 0.03, 15, 4)`` on
example-robot-data's talos (talos_reduced.urdf with the SRDF's rotor inertias) from the half-sitting
state; the casadi one is checked first to give the same cost and next state at every knot, on the
initial guess and on FDDP's solution. Per casadi variant (IPOPT, and fatrop on the compiled stages;
the Gauss-Newton stage Hessian): the build (the stage Functions, the NLP and the solver; for compiled
stages with an empty library cache, the cold build with gcc at ocp.stage_flags, then again from the
cache: a warm build), the solver's CPU time of the solve (its ``t_proc_total``), iterations, the cost
by Crocoddyl's ``problem.calc`` and the largest dynamics defect. Every build starts from a fresh model
(no Function memoised in the process).
Writes benchmarks/results/humanoid.md.
"""

import os
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import casadi as ca  # noqa: E402
import crocoddyl  # noqa: E402
import example_robot_data  # noqa: E402
import numpy as np  # noqa: E402
from crocoddyl.utils.biped import SimpleBipedGaitProblem  # noqa: E402

from benchmarks.crocoddyl import REPEATS, blasfeo_line, check_same_problem, defect, knot_costs, run_fddp  # noqa: E402
from casrbd import ocp  # noqa: E402
from casrbd.ocp import legged  # noqa: E402

RESULTS = __import__("pathlib").Path(__file__).resolve().parent / "results"
SIZES = (0.6, 0.1, 0.03, 15, 4)  # step length, step height, dt, step knots, support knots


def crocoddyl_problem():
    robot = example_robot_data.load("talos")
    x0 = np.r_[robot.model.referenceConfigurations["half_sitting"], np.zeros(robot.model.nv)]
    problem = SimpleBipedGaitProblem(robot.model, "right_sole_link", "left_sole_link").createWalkingProblem(x0, *SIZES)
    problem.nthreads = 1
    return problem, x0


def run_casadi(compiled, solver="ipopt"):
    """Build (timed: wall clock, gcc runs as a child process) and solve (CPU time) the walk."""
    start = time.perf_counter()
    model, x0 = legged.load_talos()
    sizes = dict(zip(("length", "height", "dt", "step_knots", "support_knots"), SIZES))
    problem = legged.biped_problem(model, x0, compiled=compiled, name="talos_walk", **sizes)
    st, stages = problem.stagewise, [(s.function, p) for s, p in zip(problem.stages, problem.parameters)]
    st.solver(solver, ocp.solver_options(solver=solver, expand=compiled, tol=1e-7, max_iter=300))
    build = time.perf_counter() - start
    start = time.process_time()
    stats = ocp.solve(st.opti)
    cpu = st.opti.stats()["t_proc_total"]  # the solver's own CPU time; creating it is part of the build
    build += time.process_time() - start - cpu
    value = st.opti.debug.value
    return {
        "solver": f"casadi {solver}, Gauss-Newton stages, " + ("compiled" if compiled else "VM"),
        "iterations": stats["iterations"],
        "cpu": cpu,
        "build": build,
        "xs": np.array([np.ravel(value(x)) for x in st.x]),
        "us": [np.ravel(value(u)) if u.numel() else np.zeros(0) for u in st.u],
        "stages": stages,
        "success": stats["success"],
    }


def main():
    problem, x0 = crocoddyl_problem()
    np.testing.assert_array_equal(x0, legged.load_talos()[1])
    print(f"talos walk: {problem.T} knots", flush=True)
    fddp = run_fddp(problem, x0)
    for _ in range(REPEATS):  # the fastest of REPEATS solves
        reference = next(fddp)
    vm = run_casadi(compiled=False)
    guess = ([x0] * (problem.T + 1), problem.quasiStatic([x0] * problem.T))
    checks = [
        check_same_problem(problem, vm["stages"], *xs_us, what)
        for xs_us, what in ((guess, "the guess"), ((reference["xs"], reference["us"]), "FDDP's solution"))
    ]
    with tempfile.TemporaryDirectory() as cache:
        os.environ["CASRBD_CACHE"] = cache
        cold = run_casadi(compiled=True)
        warm = run_casadi(compiled=True)
        fatrop = run_casadi(compiled=True, solver="fatrop")
    cold["solver"] += " (cold build: gcc)"
    for r in (warm, fatrop):
        r["solver"] += " (warm build: cached library)"
    lines = [
        f"casadi {ca.__version__}, crocoddyl {crocoddyl.__version__}, "
        f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}, {blasfeo_line()}, "
        f"talos_reduced (nq 39, nv 38, 32 torques), {problem.T} knots, dt {SIZES[2]} s\n",
        "`OMP_NUM_THREADS=1 PYTHONPATH=$PWD python -m benchmarks.humanoid` (crocoddyl's venv); build: wall clock "
        "from a fresh model to the solver (cold: gcc at `ocp.stage_flags` by each library's size, "
        f"{' '.join(ocp.codegen.DEFAULT_FLAGS)} up to {ocp.STAGE_O3_MAX} instructions, else "
        f"{' '.join(ocp.STAGE_FLAGS)}, into an empty cache), "
        "solve: the solver's CPU time (creating it counts in the build).\n",
        f"Same problem as Crocoddyl's: cost at every knot to {max(c[0] for c in checks):.0e} (relative), "
        f"next state to {max(c[1] for c in checks):.0e}, on its guess and on FDDP's solution.\n",
        "| solver (one thread) | iterations | CPU of the solve [s] | cost (Crocoddyl's calc) | / FDDP's - 1 "
        "| defect | build [s] |",
        "|---|---|---|---|---|---|---|",
    ]
    ref_cost = knot_costs(problem, reference["xs"], reference["us"])[0].sum()
    for r in (reference, vm, cold, warm, fatrop):
        cost = knot_costs(problem, r["xs"], r["us"])[0].sum()
        build = "-" if r["build"] is None else f"{r['build']:.1f}"
        lines.append(
            f"| {r['solver']} | {r['iterations']} | {r['cpu']:.2f} | {cost:.10g} | {cost / ref_cost - 1:+.0e} "
            f"| {defect(problem, r['xs'], r['us']):.1e} | {build} |"
        )
    lines.append(
        f"\nThe C compile (code generation and gcc: the cold build less the warm one) took "
        f"{cold['build'] - warm['build']:.0f} s; the warm build is the stage Functions' graphs, their "
        "serialization (the library cache's key) and loading the library."
    )
    text = "\n".join(lines) + "\n"
    print(text)
    (RESULTS / "humanoid.md").write_text(text)


if __name__ == "__main__":
    main()
