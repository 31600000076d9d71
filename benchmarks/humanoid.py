"""Talos' two-step walk (examples/humanoid_walk.py): casrbd's compiled Gauss-Newton stages solved by fatrop,
IPOPT and casrbd's Riccati solver (``Problem.solve(solver="riccati")``), and Crocoddyl's FDDP on the same problem,
side by side.

    OMP_NUM_THREADS=1 .venv-croc/bin/python -m benchmarks.humanoid

Crocoddyl (the ``crocoddyl`` extra: crocoddyl 3.2.1 with pin 4.0.0) builds its own problem,
``SimpleBipedGaitProblem(talos).createWalkingProblem(x0, 0.6, 0.1, 0.03, 15, 4)`` on
example-robot-data's talos (talos_reduced.urdf with the SRDF's rotor inertias) from the half-sitting
state; casrbd's (``casrbd.ocp.legged.biped_problem``) is checked first to give the same cost and next state
at every knot, on the initial guess and on FDDP's solution. The solves as in benchmarks.crocoddyl (one
thread, from Crocoddyl's guess, interleaved, the fastest of each; the stage libraries from CASRBD_CACHE,
compiled there if missing): CPU time, iterations, the cost by Crocoddyl's ``problem.calc``, the largest
dynamics defect and the per-iteration split. Then the problem is built twice in fresh processes, with an
empty and with a filled library cache (``--no-cold``: twice from CASRBD_CACHE). Writes benchmarks/results/humanoid.md.
"""

import argparse
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import casadi as ca  # noqa: E402
import crocoddyl  # noqa: E402
import example_robot_data  # noqa: E402
import numpy as np  # noqa: E402
from crocoddyl.utils.biped import SimpleBipedGaitProblem  # noqa: E402

from benchmarks.crocoddyl import (  # noqa: E402
    HEADER,
    REPEATS,
    blasfeo_line,
    build_line,
    check_same_problem,
    machine_line,
    row,
    run_casadi,
    run_fddp,
)
from casrbd.ocp import legged  # noqa: E402

RESULTS = __import__("pathlib").Path(__file__).resolve().parent / "results"
SIZES = (0.6, 0.1, 0.03, 15, 4)  # step length, step height, dt, step knots, support knots
SOLVERS = ("fatrop", "ipopt", "riccati")


def crocoddyl_problem():
    robot = example_robot_data.load("talos")
    x0 = np.r_[robot.model.referenceConfigurations["half_sitting"], np.zeros(robot.model.nv)]
    problem = SimpleBipedGaitProblem(robot.model, "right_sole_link", "left_sole_link").createWalkingProblem(x0, *SIZES)
    problem.nthreads = 1
    return problem, x0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-cold", action="store_true", help="fresh-process builds from CASRBD_CACHE only")
    parser.add_argument("--solvers", default=",".join(SOLVERS), help=f"casrbd's solvers among {list(SOLVERS)}")
    args = parser.parse_args(argv)
    problem, x0 = crocoddyl_problem()
    np.testing.assert_array_equal(x0, legged.load_talos()[1])
    print(f"talos walk: {problem.T} knots", flush=True)
    header = (
        f"casadi {ca.__version__}, crocoddyl {crocoddyl.__version__}, "
        f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}, {blasfeo_line()}, {machine_line()}; "
        f"talos_reduced (nq 39, nv 38, 32 torques), {problem.T} knots, dt {SIZES[2]} s\n"
    )
    runs = [run_fddp(problem, x0)] + [
        run_casadi(None, "walk", x0, s, "gauss-newton", True) for s in args.solvers.split(",")
    ]
    for _ in range(REPEATS):  # interleaved, the fastest of each (benchmarks.crocoddyl)
        results = [next(run) for run in runs]
    reference = results[0]
    guess = ([x0] * (problem.T + 1), problem.quasiStatic([x0] * problem.T))
    stages = results[1]["stages"]
    checks = [
        check_same_problem(problem, stages, *xs_us, what)
        for xs_us, what in ((guess, "the guess"), ((reference["xs"], reference["us"]), "FDDP's solution"))
    ]
    lines = [
        header,
        "`OMP_NUM_THREADS=1 python -m benchmarks.humanoid` (crocoddyl's venv); build: wall seconds from the "
        "model to the solver, the stage libraries cached; CPU: the solver's own (creating it counts in the build).\n",
        f"Same problem as Crocoddyl's: cost at every knot to {max(c[0] for c in checks):.0e} (relative), "
        f"next state to {max(c[1] for c in checks):.0e}, on its guess and on FDDP's solution.\n",
        HEADER,
        *(row(r, problem, reference) for r in results),
    ]
    lines += ["\n" + build_line("walk", not args.no_cold)]
    text = "\n".join(lines) + "\n"
    print(text)
    (RESULTS / "humanoid.md").write_text(text)


if __name__ == "__main__":
    main()
