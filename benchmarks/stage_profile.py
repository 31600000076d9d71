"""Where an iteration's derivatives go: the compiled Gauss-Newton stages of Crocoddyl's solo12 trot and
jump and talos' walk (``casrbd.ocp.legged``: ``ocp.gauss_newton_stage`` compiled by ``ocp.compile_stages``),
each derivative an NLP solver asks of a knot timed on its own.

    OMP_NUM_THREADS=1 python -m benchmarks.stage_profile    # -> results/stage_profile.md
    OMP_NUM_THREADS=1 python -m benchmarks.stage_profile --problems walk

Per knot type, the CPU time of one call (the fastest of 9 rounds of 200 knot points near the standing
state, evaluated by casadi's serial map of the library's Function) of the stage itself (cost and next
state), of its Jacobian (``jac_``), its adjoint (``adj1_``) and its Gauss-Newton Hessian
(``jac_adj1_``). Each derivative starts from the stage's linearisation (the dynamics' and residuals'
Jacobians), which the library keeps per knot point (``codegen.memoize``): the first call at a new point
pays for it, the others read it. So the linearisation is the Jacobian's time at new points less its
time at a point already seen, and one iteration's derivatives at a knot are the linearisation plus
the three products (the calls at a point already seen). Summed over the problem's knots, that is
the "derivatives" column of ``benchmarks.crocoddyl`` without the NLP's assembly around the calls.
"""

import argparse
import collections
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import casadi as ca  # noqa: E402
import numpy as np  # noqa: E402

from casrbd import ocp  # noqa: E402
from casrbd.codegen.flags import DEFAULT_FLAGS  # noqa: E402
from casrbd.models import load_robot  # noqa: E402
from casrbd.ocp import legged  # noqa: E402

RESULTS = __import__("pathlib").Path(__file__).resolve().parent / "results"
POINTS, ROUNDS = 200, 9


def per_call(g, point, hit):
    """CPU seconds of one call of g over POINTS knot points (new ones each round, or one point repeated
    after a first call: ``hit``), the fastest of ROUNDS rounds."""
    mapped, best = g.map(POINTS), np.inf
    # timed without Python's conversions: the inputs converted beforehand, the outputs of the POINTS calls
    # left in casadi's work memory (an MX Function returning one nonzero of each); both conversions
    # took longer than the calls themselves (the Hessian has about 4000 nonzeros per call)
    ins = mapped.mx_in()
    outs = mapped.call(ins)
    mapped = ca.Function("probe", ins, [o.nz[0] if o.nnz() else ca.MX(0) for o in outs])
    for r in range(ROUNDS + 1):
        args = [v * (1 + 1e-9 * r) for v in point]  # new bits each round: the memo has not seen them
        args = [ca.DM(np.tile(v[:, :1], POINTS) if hit else v) for v in args]
        if hit:
            mapped(*args)
        start = time.process_time()
        mapped(*args)
        if r:  # the first round warms the code
            best = min(best, time.process_time() - start)
    return best / POINTS


def knot_points(g, x, u, p, rng):
    """g's inputs at POINTS knot points: x and u near the given ones, p as given, adjoint seeds of one,
    the nominal outputs zero (the derivatives do not read them)."""
    values = {"x": x, "u": u, "p": p}
    out = []
    for i, name in enumerate(g.name_in()):
        n = g.numel_in(i)
        if name in values:
            v = np.tile(np.reshape(values[name], (-1, 1)), POINTS)
            noise = 1e-3 if name == "x" else 0.1 if name == "u" else 0.0
            out.append(v + noise * rng.standard_normal(v.shape))
        else:
            out.append(np.full((n, POINTS), 1.0 if name.startswith("adj_") else 0.0))
    return out


def library_function(f):
    """The library's Function that the stage f calls (``ocp.compile_stages`` wraps it to negate its next
    state back): its derivatives are the library's own ``jac_``, ``adj1_`` and ``jac_adj1_``, where
    the wrapper's derivatives are MX graphs around them (the wrapper's Hessian evaluates the stage, its
    adjoint and its Hessian twice each)."""
    calls = [f.instruction_MX(k) for k in range(f.n_instructions()) if f.instruction_id(k) == ca.OP_CALL]
    if len(calls) != 1:
        raise ValueError(f"{f.name()}: expected one call of a compiled stage library, found {len(calls)}")
    return calls[0].which_function()


def profile(name):
    if name == "walk":
        model, x0 = legged.load_talos()
        problem = legged.biped_problem(model, x0, compiled=True, name="talos_walk")
    else:
        model = load_robot("solo12")
        x0 = np.r_[legged.SOLO_STANDING, np.zeros(model.nv)]
        problem = legged.quadruped_problem(name, model, compiled=True, name=f"solo12_{name}")
    stages = [(s.function, p) for s, p in zip(problem.stages, problem.parameters)]
    count = collections.Counter(f.name() for f, _ in stages)
    rng = np.random.default_rng(0)
    rows, total = [], collections.Counter()
    for f, p in {f.name(): (f, p) for f, p in stages}.values():
        u = np.zeros(f.numel_in(1))
        core = library_function(f)
        calls = {"stage": core, "jac": core.jacobian(), "adj": core.reverse(1), "hessian": core.reverse(1).jacobian()}
        t = {}
        for key, g in calls.items():
            point = knot_points(g, x0, u, p, rng)
            t[key] = per_call(g, point, hit=key != "stage")
            if key == "jac":
                t["linearisation"] = max(per_call(g, point, hit=False) - t["jac"], 0.0)
        t["derivatives"] = t["linearisation"] + t["jac"] + t["adj"] + t["hessian"]
        rows.append((f.name(), count[f.name()], t))
        total.update({k: count[f.name()] * v for k, v in t.items()})
    return len(stages), rows, total


COLUMNS = ("stage", "linearisation", "jac", "adj", "hessian", "derivatives")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default="trot,jump", help="among trot, jump (solo12) and walk (talos)")
    args = parser.parse_args(argv)
    lines = [
        f"casadi {ca.__version__}, OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}, gcc at `ocp.stage_flags` "
        f"({' '.join(DEFAULT_FLAGS)} up to {ocp.STAGE_O3_MAX} instructions, else "
        f"{' '.join(ocp.STAGE_FLAGS)}); `python -m benchmarks.stage_profile` (see its docstring)\n"
    ]
    header = (
        "| knot type | knots | stage (cost, next state) | linearisation | Jacobian products | adjoint products "
        "| Gauss-Newton Hessian products | one iteration's derivatives |\n|---|---|---|---|---|---|---|---|"
    )
    for name in args.problems.split(","):
        n, rows, total = profile(name)
        lines += [f"\n## {name} ({n} stage calls: the knots and the terminal cost): µs per call\n", header]
        for stage, k, t in rows:
            lines.append(f"| {stage} | {k} | " + " | ".join(f"{1e6 * t[c]:.1f}" for c in COLUMNS) + " |")
        lines.append("| **all knots [ms]** | | " + " | ".join(f"**{1e3 * total[c]:.2f}**" for c in COLUMNS) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    (RESULTS / "stage_profile.md").write_text(text)


if __name__ == "__main__":
    main()
