"""Crocoddyl's solo12 trot and jump, solved by Crocoddyl's FDDP and by casadi with casrbd, side by side.

    OMP_NUM_THREADS=1 .venv-croc/bin/python -m benchmarks.crocoddyl

Needs the ``crocoddyl`` extra (crocoddyl 3.2.1 with pin/libpinocchio 4.0.0:
with pin 4.1 it fails building a problem). Crocoddyl's problems come from its
own ``SimpleQuadrupedalGaitProblem`` (``createTrottingProblem(x0, 0.06, 0.03,
1e-2, 25, 2)``, ``createJumpingProblem(x0, 0.15, [0, 0.3, 0], 1e-2, 10, 20)``
from the ``standing`` state); the casadi ones from casrbd.ocp.legged (examples/quadruped_gait.py),
checked first to give the same cost and next state at every knot on the
initial guess and on FDDP's solution. Both start from Crocoddyl's guess (the
standing state, quasi-static torques) on one thread (``problem.nthreads = 1``).
Reported per solver: CPU time of the solve (Crocoddyl: ``time.process_time``
around ``solve``; casadi: the solver's own ``t_proc_total``; the fastest of up
to three solves from the same guess, scaled by 1 + 1e-13 r for the r-th repeat so
that no knot point repeats one whose linearisation the compiled stages keep from
an earlier solve (``codegen.memoize``); building, and creating the casadi
solver, separately), iterations, the cost of the solution
evaluated by Crocoddyl's ``problem.calc``, the largest dynamics defect, and
per iteration the time in derivatives (casadi: Jacobian and Hessian
evaluations; Crocoddyl: ``calcDiff`` over the knots), in the linear algebra
(fatrop's search direction, the SQP's QPs, riccati's recursions; FDDP: its backward pass) and the
rest. Then the compiled Gauss-Newton problem is built twice in fresh
processes, with an empty and with a filled library cache (``--no-cold``:
twice from CASRBD_CACHE). Writes benchmarks/results/crocoddyl.md and crocoddyl_<problem>.png.
"""

import argparse
import functools
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import casadi as ca  # noqa: E402
import crocoddyl  # noqa: E402
import example_robot_data  # noqa: E402
import numpy as np  # noqa: E402
from crocoddyl.utils.quadruped import SimpleQuadrupedalGaitProblem  # noqa: E402

from casrbd import ocp  # noqa: E402
from casrbd.models import load_robot  # noqa: E402
from casrbd.ocp import blasfeo, legged  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PROBLEMS = {
    "trot": lambda gait, x0: gait.createTrottingProblem(x0, 0.06, 0.03, 1e-2, 25, 2),
    "jump": lambda gait, x0: gait.createJumpingProblem(x0, 0.15, [0.0, 0.3, 0.0], 1e-2, 10, 20),
}


def transcribe(model, name, hessian, library=None):
    """Crocoddyl's ``name`` ("trot", "jump": solo12 ``model``; "walk": talos, loaded here) as ``casrbd.ocp.legged``
    builds it (``library``: the compiled stages' name, None: in casadi's VM): (Stagewise, [(stage Function, p)
    per knot])."""
    options = {"hessian": hessian, "compiled": bool(library), "name": library or "vm"}
    build = legged.biped_problem if name == "walk" else functools.partial(legged.quadruped_problem, name, model)
    problem = build(**options)
    return problem.stagewise, [(s.function, p) for s, p in zip(problem.stages, problem.parameters)]


def crocoddyl_problem(name):
    robot = example_robot_data.load("solo12")
    x0 = np.r_[robot.model.referenceConfigurations["standing"], np.zeros(robot.model.nv)]
    gait = SimpleQuadrupedalGaitProblem(robot.model, "FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
    problem = PROBLEMS[name](gait, x0)
    problem.nthreads = 1
    return problem, x0


def knot_costs(problem, xs, us):
    """Crocoddyl's cost of every knot (running ones, then the terminal one) and its next states."""
    problem.calc(list(xs), list(us))
    costs = [d.cost for d in problem.runningDatas] + [problem.terminalData.cost]
    return np.array(costs), np.array([d.xnext for d in problem.runningDatas])


def casadi_knots(stages, xs, us):
    """The casadi stage Functions' cost and next state at every knot."""
    out = [f(x, u, p) for (f, p), x, u in zip(stages, xs, list(us) + [np.zeros(0)])]
    return np.array([float(c) for c, _ in out]), np.array([x.full().ravel() for _, x in out[:-1]])


def check_same_problem(problem, stages, xs, us, what):
    """Largest |cost difference| / max(1, |cost|) and |next-state difference| over the knots."""
    c_croc, x_croc = knot_costs(problem, xs, us)
    c_cas, x_cas = casadi_knots(stages, xs, us)
    dc = np.max(np.abs(c_croc - c_cas) / np.maximum(1, np.abs(c_croc)))
    dx = np.max(np.abs(x_croc - x_cas))
    print(f"  same problem on {what}: cost {dc:.1e}, next state {dx:.1e} (largest over the knots)")
    return dc, dx


def defect(problem, xs, us):
    """The largest |x_{k+1} (-) f(x_k, u_k)| over the knots (Crocoddyl's dynamics and state difference)."""
    problem.calc(list(xs), list(us))
    state = problem.runningModels[0].state
    return max(np.abs(state.diff(d.xnext, x)).max() for d, x in zip(problem.runningDatas, xs[1:]))


def per_call(call, rounds=4, minimum=0.05):
    """CPU seconds of one call(): the fastest round's mean, each round repeating it for ``minimum`` s."""
    best = np.inf
    for _ in range(rounds):
        n, start = 0, time.process_time()
        while time.process_time() - start < minimum or n < 3:
            call()
            n += 1
        best = min(best, (time.process_time() - start) / n)
    return best


def run_fddp(problem, x0):
    """Generator: each step solves once more with FDDP from the guess and yields the result, with the
    fastest solve and the fastest per-iteration split so far."""
    xs0 = [x0] * (problem.T + 1)
    us0 = problem.quasiStatic(xs0[:-1])
    best = {"solver": "Crocoddyl FDDP", "success": True, "build": None, "cpus": []}
    while True:
        solver = crocoddyl.SolverFDDP(problem)
        start = time.process_time()
        solver.solve(xs0, us0, 100, False)
        cpu = time.process_time() - start
        best["cpus"].append(cpu)
        xs, us = np.array(solver.xs), list(solver.us)
        # per iteration: calcDiff over the knots, the backward pass (Riccati), and the rest (forward passes)
        split = {"cpu": cpu, "derivatives": per_call(functools.partial(problem.calcDiff, list(xs), us))}
        problem.calcDiff(list(xs), us)
        split["linear_algebra"] = per_call(solver.backwardPass)
        best.update({k: min(v, best.get(k, np.inf)) for k, v in split.items()})
        best.update(iterations=solver.iter, xs=xs, us=us)
        yield best


def run_casadi(model, name, x0, solver, hessian, compiled):
    """Generator: the first step builds and solves, each further step solves again from the guess scaled
    by 1 + 1e-13 r (while the solves so far took under REPEAT_BUDGET); each yields the result of the
    fastest solve."""
    library = (("talos_" if name == "walk" else "solo12_") + name) if compiled else None
    if solver == "riccati":
        yield from run_riccati(model, name, library)
    start = time.perf_counter()
    st, stages = transcribe(model, name, hessian, library)
    if solver == "sqpmethod":  # casadi's SQP; its QP by qrqp (sparse QR): hpipm returns no dynamics multipliers
        st.solver(
            solver,
            {
                "qpsol": "qrqp",
                "qpsol_options": {"print_iter": False, "print_header": False},
                "print_header": False,
                "print_iteration": False,
                "print_time": False,
                "record_time": True,
                "tol_pr": TOL,
                "tol_du": TOL,
                "max_iter": MAX_ITER,
            },
        )
    else:
        st.solver(solver, ocp.solver_options(solver=solver, expand=compiled, tol=TOL, max_iter=MAX_ITER))
    build = time.perf_counter() - start
    initial = st.opti.initial()
    guess = [(v, st.opti.debug.value(v, initial)) for v in st.x + st.u if v.numel()]
    start = time.process_time()
    stats, raw = ocp.solve(st.opti), st.opti.stats()
    # the solver's own CPU time; creating it (the NLP's sparsity patterns, done once per problem) is setup
    setup = time.process_time() - start - raw["t_proc_total"]
    cpus = [raw["t_proc_total"]]
    repeat = 0
    while True:
        iters = max(stats["iterations"], 1)
        value = st.opti.debug.value
        calls = {k: raw.get(f"n_call_nlp_{k}", 0) for k in ("jac_g", "grad_f", "hess_l", "jac_fg")}
        linear_algebra = {"fatrop": raw.get("fatrop", {}).get("compute_sd_time"), "sqpmethod": raw.get("t_proc_QP")}
        yield {
            "solver": f"casadi {solver}, {hessian} Hessian" + (", compiled stages" if compiled else ", VM"),
            "iterations": stats["iterations"],
            "cpu": raw["t_proc_total"],
            "cpus": list(cpus),
            "xs": np.array([np.ravel(value(x)) for x in st.x]),
            "us": [np.ravel(value(u)) if u.numel() else np.zeros(0) for u in st.u],
            # one evaluation of each derivative: what an iteration needs
            "derivatives": sum(raw.get(f"t_proc_nlp_{k}", 0.0) / n for k, n in calls.items() if n),
            "linear_algebra": (linear_algebra.get(solver) or float("nan")) / iters,
            "success": stats["success"],
            "build": build + setup,
            "stages": stages,
        }
        if sum(cpus) < REPEAT_BUDGET or len(cpus) < 2:
            # the guess scaled by 1 + 1e-13 r: the stage libraries keep each knot point's linearisation
            # (codegen.memoize), and a solve from the same bits would find every one of them computed
            repeat += 1
            for v, value0 in guess:
                st.opti.set_initial(v, np.asarray(value0) * (1 + 1e-13 * repeat))
            again, again_raw = ocp.solve(st.opti), st.opti.stats()
            cpus.append(again_raw["t_proc_total"])
            if again_raw["t_proc_total"] < raw["t_proc_total"]:
                stats, raw = again, again_raw


def run_riccati(model, name, library):
    """``run_casadi`` for ``Problem.solve(solver="riccati")`` (Gauss-Newton stages, Crocoddyl's stopping test
    sum |Qu|^2 < 1e-9 as FDDP's default): derivatives are its linearisations, linear algebra its Riccati
    recursions, the rest its line searches."""
    start = time.perf_counter()
    options = {"hessian": "gauss-newton", "compiled": bool(library), "name": library or "vm"}
    build = legged.biped_problem if name == "walk" else functools.partial(legged.quadruped_problem, name, model)
    problem = build(**options)
    guess = problem.guess()
    solution = problem.solve("riccati", guess=guess)  # the first builds the RTI's Functions: setup
    build = time.perf_counter() - start - solution.stats["cpu_total"]
    stages = [(s.function, p) for s, p in zip(problem.stages, problem.parameters)]
    best, cpus = solution, [solution.stats["cpu_total"]]
    while True:
        s = best.stats
        iters = max(s["iterations"], 1)
        yield {
            "solver": "casrbd riccati (Gauss-Newton, numpy)" + (", compiled stages" if library else ", VM"),
            "iterations": s["iterations"],
            "cpu": s["cpu_total"],
            "cpus": list(cpus),
            "xs": best.xs,
            "us": best.us,
            "derivatives": s["cpu_linearisation"] / iters,
            "linear_algebra": s["cpu_riccati"] / iters,
            "success": s["success"],
            "build": build,
            "stages": stages,
        }
        if sum(cpus) < REPEAT_BUDGET or len(cpus) < 2:  # from the guess scaled, as run_casadi
            scale = 1 + 1e-13 * len(cpus)
            again = problem.solve(
                "riccati", guess={"xs": [x * scale for x in guess["xs"]], "us": [u * scale for u in guess["us"]]}
            )
            cpus.append(again.stats["cpu_total"])
            if again.stats["cpu_total"] < best.stats["cpu_total"]:
                best = again


BUILD = """
import sys, time
start = time.perf_counter()
sys.path.insert(0, {root!r})
from benchmarks.crocoddyl import transcribe
from casrbd.models import load_robot
from casrbd.ocp.problem import STAGE_BUILDS
imported = time.perf_counter()
transcribe(None if {name!r} == "walk" else load_robot("solo12"), {name!r}, "gauss-newton", {library!r})
end = time.perf_counter()
print(end - imported, end - start, sum(STAGE_BUILDS.values()))
"""


def fresh_build(name, cache):
    """Building the compiled Gauss-Newton ``name`` ("trot", "jump", "walk") in a fresh process with the library
    cache ``cache``: (wall seconds from loading the model to the problem, the same from the process' start,
    the stage Functions built)."""
    library = ("talos_" if name == "walk" else "solo12_") + name
    run = [sys.executable, "-c", BUILD.format(root=str(ROOT), name=name, library=library)]
    out = subprocess.run(run, env={**os.environ, "CASRBD_CACHE": cache}, capture_output=True, text=True, check=True)
    return tuple(float(v) for v in out.stdout.split()[-3:])


def build_line(name, cold=True):
    """The builds of ``name`` in fresh processes as a sentence: with an empty cache (generating and compiling the
    stages) and again with the libraries cached (``cold``), or twice with CASRBD_CACHE's libraries."""
    with tempfile.TemporaryDirectory() as empty:
        cache = empty if cold else os.environ.get("CASRBD_CACHE", str(Path.home() / ".cache" / "casrbd"))
        (first, first_all, built), (warm, warm_all, stages) = fresh_build(name, cache), fresh_build(name, cache)
    what = "cold" if cold else "warm"
    line = (
        f"Building the compiled Gauss-Newton {name} in a fresh process (wall, from loading the model; from the "
        f"process' start in brackets): {what} {first:.1f} s ({first_all:.1f}; {built:.0f} stage Functions built), "
        f"warm {warm:.1f} s ({warm_all:.1f}; {stages:.0f} stage Functions built)."
    )
    print(line, flush=True)
    return line


# this machine's speed drifts by tens of percent within minutes (a shared VM): each solver's fastest of
# REPEATS solves, interleaved with the others' (casadi's within REPEAT_BUDGET CPU seconds), is reported
REPEATS, REPEAT_BUDGET = 5, 10.0
TOL, MAX_ITER = 1e-7, 300  # the solvers' tolerance (their KKT residual): the cost to 1e-10 of FDDP's
VARIANTS = {  # name -> (solver, Hessian, compiled stages)
    "ipopt-gn-compiled": ("ipopt", "gauss-newton", True),
    "fatrop-gn-compiled": ("fatrop", "gauss-newton", True),
    "sqp-gn-compiled": ("sqpmethod", "gauss-newton", True),
    "riccati-gn-compiled": ("riccati", "gauss-newton", True),
    "fatrop-gn": ("fatrop", "gauss-newton", False),
    "ipopt-gn": ("ipopt", "gauss-newton", False),
    "fatrop-exact": ("fatrop", "exact", False),
    "ipopt-exact": ("ipopt", "exact", False),
}


def row(r, problem, reference):
    cost = knot_costs(problem, r["xs"], r["us"])[0].sum()
    per_iter = r["cpu"] / max(r["iterations"], 1)
    la = r["linear_algebra"]
    rest = per_iter - r["derivatives"] - (0 if np.isnan(la) else la)
    build = "-" if r["build"] is None else f"{r['build']:.1f}"
    return (
        f"| {r['solver']} | {r['iterations']} | {r['cpu']:.3f} ({max(r['cpus']):.3f}, {len(r['cpus'])}) "
        f"| {r['cpu'] / reference['cpu']:.2f}x | {cost:.10g} "
        f"| {cost / knot_costs(problem, reference['xs'], reference['us'])[0].sum() - 1:+.0e} "
        f"| {defect(problem, r['xs'], r['us']):.1e} | {1e3 * per_iter:.2f} | {1e3 * r['derivatives']:.2f} "
        f"| {'-' if np.isnan(la) else f'{1e3 * la:.2f}'} | {1e3 * rest:.2f} | {build} |"
    )


HEADER = (
    "| solver (one thread) | iterations | CPU of the solve [s] (slowest, solves) | vs FDDP | cost (Crocoddyl's calc) "
    "| / FDDP's - 1 | defect | ms / iteration | derivatives | linear algebra | rest | build [s] |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def plot(name, results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axs = plt.subplots(3, 1, figsize=(8, 7.5), sharex=True)
    for r, style, color in zip(results, ("-", "--"), ("C0", "C1")):
        t = 1e-2 * np.arange(len(r["xs"]))
        axs[0].plot(t, r["xs"][:, :3], style, color=color)
        axs[1].plot(
            t[:-1], [np.linalg.norm(u) if len(u) else np.nan for u in r["us"]], style, color=color, label=r["solver"]
        )
        axs[2].plot(t, r["xs"][:, 19:22], style, color=color)
    axs[0].set_ylabel("base x, y, z [m]")
    axs[1].set_ylabel("|u| [Nm]")
    axs[2].set_ylabel("base velocity [m/s]")
    axs[2].set_xlabel("t [s] (impulse knots take no time; drawn at 0.01 s)")
    axs[1].legend(fontsize=7)
    axs[0].set_title(f"solo12 {name}: Crocoddyl FDDP and casadi + casrbd")
    for ax in axs:
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def blasfeo_line():
    """What the blasfeo behind fatrop was built for (``casrbd blasfeo``): it sets fatrop's linear algebra."""
    _, built, _, wheel = blasfeo.status()
    origin = "casadi's wheel" if wheel else "casrbd blasfeo --install"
    return f"fatrop's blasfeo built for {' '.join(sorted(built)) or 'any x86-64'} ({origin})"


def machine_line():
    """The CPU and the load average: the machine is shared."""
    lines = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("model name")), "?")
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    return f"{cpu}, {os.cpu_count()} cores, load average (1, 5, 15 min) at the start {load}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default="trot,jump")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"casadi variants among {list(VARIANTS)}")
    parser.add_argument("--no-cold", action="store_true", help="fresh-process builds from CASRBD_CACHE only")
    args = parser.parse_args(argv)
    model = load_robot("solo12")
    threads = os.environ["OMP_NUM_THREADS"]
    lines = [
        f"casadi {ca.__version__}, crocoddyl {crocoddyl.__version__}, OMP_NUM_THREADS={threads}, {blasfeo_line()}, "
        f"{machine_line()}\n"
    ]
    variants = args.variants.split(",")
    for name in args.problems.split(","):
        problem, x0 = crocoddyl_problem(name)
        print(f"{name}: {problem.T} knots", flush=True)
        runs = [run_fddp(problem, x0)] + [run_casadi(model, name, x0, *VARIANTS[v]) for v in variants]
        # the solvers' solves interleaved, round by round, the fastest of each counting: a slow spell of
        # this machine (it drifts by tens of percent within minutes) then does not decide a ratio
        for _ in range(REPEATS):
            results = [next(run) for run in runs]
        reference = results[0]
        for variant, r in zip(variants, results[1:]):
            print(f"  {variant}: {r['iterations']} iterations, {r['cpu']:.3f} s", flush=True)
        dc, dx = check_same_problem(problem, results[1]["stages"], reference["xs"], reference["us"], "FDDP's solution")
        lines += [
            f"\n## {name} ({problem.T} knots; same cost at every knot to {dc:.0e}, same next state to {dx:.0e})\n",
            HEADER,
        ]
        lines += [row(r, problem, reference) for r in results]
        plot(name, results[:2], RESULTS / f"crocoddyl_{name}.png")
    # the builds after every solve: FDDP's solves measured 1.6x slower right after gcc's gigabytes
    lines += ["\n" + build_line(name, not args.no_cold) for name in args.problems.split(",")]
    text = "\n".join(lines) + "\n"
    print(text)
    (RESULTS / "crocoddyl.md").write_text(text)


if __name__ == "__main__":
    main()
