"""Optimal-control benchmark: every example with analytical and AD Jacobians, interpreted and compiled.

python -m benchmarks.ocp [--quick] [--repeat N]

Runs examples/swingup.py, arm_p2p.py (exact Hessian, interpreted and
compiled; limited-memory Hessian, interpreted), legged.py and mpc_arm.py
(exact Hessian, interpreted and compiled), each with jacobian="analytical"
and "ad" from the same initial guess, and writes benchmarks/results/ocp.md
(the tables), ocp.png (time per iteration and the ratios analytical/AD) and
the examples' own plots (ocp_<example>*.png).

Times come from IPOPT's statistics (casadi's ``record_time``): the wall time
of the solve, and the process's CPU time in total, in the constraint
Jacobian and in the Hessian, which other jobs on a shared machine disturb
far less; the ratios use CPU times. Each exact-Hessian configuration runs
``--repeat`` times and the run with the least CPU time is kept. A full run
compiles the libraries in a fresh cache, so that their compile times are
measured; ``--quick`` runs the sizes of tests/test_ocp.py with the usual
cache and only prints the table.
"""

import argparse
import importlib.util
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import casadi as ca
import numpy as np

import casrbd
from casrbd import ocp

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
EXAMPLES = ("swingup", "arm_p2p", "legged", "mpc_arm")
FULL = {
    "swingup": {"nodes": 60},
    "arm_p2p": {"nodes": 40},
    "legged": {"nodes": 40},
    "mpc_arm": {"steps": 40, "nodes": 10},
}
QUICK = {
    "swingup": {"nodes": 60},
    "arm_p2p": {"nodes": 24},
    "legged": {"nodes": 12},
    "mpc_arm": {"steps": 5, "nodes": 5},
}
# (compiled, hessian) per example; no limited-memory Hessian for the jump (it does not converge there:
# `python examples/legged.py --hessian limited-memory`) nor for MPC (thousands of iterations per solve)
SETTINGS = {
    name: [(False, "exact"), (True, "exact")] + ([(False, "limited-memory")] if name in ("swingup", "arm_p2p") else [])
    for name in EXAMPLES
}


def load(name):
    sys.path.insert(0, str(ROOT / "examples"))
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def dynamics_model(mods, name):
    """(model, dynamics name, f_ext) of an example, to build its compiled library ahead of timing."""
    if name == "swingup":
        return mods[name].load_model(), "aba", False
    if name in ("arm_p2p", "mpc_arm"):
        return mods["arm_p2p"].load_arm()[0], "aba", False
    return casrbd.models.load_robot("solo12"), "rnea", True


def aggregate(solves):
    """One MPC closed loop as one row: iterations and times summed over the solves, the first
    (cold) solve's cost, success if every solve succeeded."""
    out = {k: sum(s[k] for s in solves) for k in ("iterations", *ocp.STAT_FIELDS)}
    out.update(
        cost=solves[0]["cost"],
        success=all(s["success"] for s in solves),
        status=f"{sum(s['success'] for s in solves)}/{len(solves)} solved",
    )
    out["t_per_iter"] = out["t_total"] / max(out["iterations"], 1)
    out["cpu_per_iter"] = out["cpu_total"] / max(out["iterations"], 1)
    return out


def run(mod, name, size, jacobian, compiled, hessian):
    start = time.perf_counter()
    if name == "mpc_arm":
        result = mod.run(**size, jacobian=jacobian, compiled=compiled, hessian=hessian)
        stats = aggregate(result["solves"])
    else:
        result = mod.solve(**size, jacobian=jacobian, compiled=compiled, hessian=hessian)
        stats = dict(result["stats"])
    stats["wall"] = time.perf_counter() - start
    return result, stats


def library_sizes(model, name, f_ext):
    """n_instructions of the dynamics, its Jacobian and the Jacobian's Jacobian, per mode."""
    out = {}
    for mode in ocp.JACOBIANS:
        f, *rest = ocp.library_functions(model, name, mode, f_ext)
        jac, jac_jac = (f.jacobian(), *rest) if mode == "analytical" else rest
        out[mode] = (f.n_instructions(), jac.n_instructions(), jac_jac.n_instructions())
    return out


def per_call(model, name, f_ext, calls=200):
    """Milliseconds per call, in casadi's VM, of what an NLP needs from one dynamics call inside an MX
    graph: the Jacobian J, the gradient of lambda^T f and its Hessian, per Jacobian mode."""
    rng = np.random.default_rng(0)
    args = [ca.MX.sym("q", model.nq), ca.MX.sym("v", model.nv), ca.MX.sym("u", model.nv)]
    args += [ca.MX.sym("f_ext", 6, model.njoints)] if f_ext else []
    values = [casrbd.random_configuration(model, rng), rng.normal(size=model.nv), rng.normal(size=model.nv)]
    values += [rng.normal(size=(6, model.njoints))] if f_ext else []
    lam = ca.MX.sym("lam", model.nv)
    x = ca.vertcat(*[ca.vec(a) for a in args])
    out = {}
    for mode in ocp.JACOBIANS:
        y = casrbd.function(model, name, jacobian=mode, f_ext=f_ext)(*args)
        funs = [
            ca.Function("J", args, [ca.jacobian(y, x)]),
            ca.Function("g", args + [lam], [ca.gradient(ca.dot(lam, y), x)]),
            ca.Function("H", args + [lam], [ca.hessian(ca.dot(lam, y), x)[0]]),
        ]
        times = []
        for f in funs:
            inputs = values + [rng.normal(size=model.nv)] * (f.n_in() - len(values))
            f(*inputs)
            batches = []
            for _ in range(5):  # the fastest of 5 batches: the machine is shared
                start = time.perf_counter()
                for _ in range(calls):
                    f(*inputs)
                batches.append(1e3 * (time.perf_counter() - start) / calls)
            times.append(min(batches))
        out[mode] = times
    return out


def fmt_time(t):
    return "-" if not np.isfinite(t) else f"{t:.3f}" if t >= 0.1 else f"{1e3 * t:.1f} ms"


def ratio(x, y):
    return f"{x / y:.2f}" if np.isfinite(x) and np.isfinite(y) and y > 0 else "-"


def table(rows):
    head = [
        "example",
        "code",
        "Hessian",
        "Jacobian",
        "status",
        "iter",
        "solve wall [s]",
        "solve CPU [s]",
        "jac_g CPU",
        "hess_l CPU",
        "CPU per iter [ms]",
        "cost",
        "A/AD solve",
        "A/AD per iter",
        "A/AD jac_g",
        "A/AD hess_l",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        s = r["stats"]
        ratios = ["", "", "", ""]
        if r["jacobian"] == "analytical" and r.get("ad"):
            a = r["ad"]
            ratios = [ratio(s[k], a[k]) for k in ("cpu_total", "cpu_per_iter", "cpu_jac_g", "cpu_hess_l")]
        lines.append(
            "| "
            + " | ".join(
                [
                    r["example"],
                    "C" if r["compiled"] else "VM",
                    r["hessian"],
                    r["jacobian"],
                    s["status"],
                    str(s["iterations"]),
                    f"{s['t_total']:.3f}",
                    f"{s['cpu_total']:.3f}",
                    fmt_time(s["cpu_jac_g"]),
                    fmt_time(s["cpu_hess_l"]),
                    f"{1e3 * s['cpu_per_iter']:.1f}",
                    f"{s['cost']:.10g}",
                    *ratios,
                ]
            )
            + " |"
        )
    return "\n".join(lines)


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pairs = [r for r in rows if r["jacobian"] == "analytical" and r.get("ad")]
    labels = [
        f"{r['example']}\n{'C' if r['compiled'] else 'VM'}, {'L-BFGS' if r['hessian'] != 'exact' else 'exact H'}"
        for r in pairs
    ]
    x = np.arange(len(pairs))
    fig, (ax0, ax1) = plt.subplots(2, 1, figsize=(max(8, 1.1 * len(pairs)), 8), sharex=True)
    ax0.bar(x - 0.2, [1e3 * r["stats"]["cpu_per_iter"] for r in pairs], 0.4, label="analytical")
    ax0.bar(x + 0.2, [1e3 * r["ad"]["cpu_per_iter"] for r in pairs], 0.4, label="AD")
    ax0.set_yscale("log")
    ax0.set_ylabel("CPU time per IPOPT iteration [ms]")
    ax0.legend()
    ax0.grid(alpha=0.3, axis="y")
    for k, (key, label) in enumerate((("cpu_total", "solve"), ("cpu_jac_g", "jac_g"), ("cpu_hess_l", "hess_l"))):
        vals = [r["stats"][key] / r["ad"][key] if r["ad"][key] > 0 else np.nan for r in pairs]
        ax1.bar(x + (k - 1) * 0.27, vals, 0.27, label=label)
    ax1.axhline(1, color="k", lw=0.8)
    ax1.set_ylabel("analytical / AD (CPU time)")
    ax1.legend()
    ax1.grid(alpha=0.3, axis="y")
    ax1.set_xticks(x)
    ax1.set_xticklabels(labels, fontsize=8)
    fig.suptitle("Optimal control with casrbd: analytical vs AD Jacobians (IPOPT statistics)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


NOTES = """
## Reading the table

- `code`: VM is casadi's virtual machine evaluating the SX Functions; C is the dynamics exported with
  `casrbd.codegen` and loaded back (`ocp.dynamics(..., compiled=True)`, gcc `-O1`). casadi cannot
  differentiate compiled code, so the library holds the Function, `jac_<name>` (analytical, or AD's)
  and, for the exact Hessian, `jac_jac_<name>` (AD of AD of the dynamics). The rest of the NLP (RK4 stages,
  kinematics, contact forces, constraints) stays in the VM in both modes.
- `solve wall`: IPOPT's wall time (`t_wall_total`). The other times are the process's CPU time
  (`t_proc_*`) in total, in the constraint Jacobian (`jac_g`) and in the Lagrangian Hessian (`hess_l`):
  the machine is shared (2 cores, other jobs running), which inflates wall times by up to 2x at random
  and barely changes CPU times; where `solve wall` is well above `solve CPU`, other jobs took the
  processor. Each exact-Hessian configuration ran twice and the run with less CPU time is shown.
- `A/AD`: analytical over AD CPU time on the same problem from the same initial guess. With the exact
  Hessian both modes take the same iterates (same iteration count and cost; tests/test_ocp.py checks
  the optimum to 1e-6 relative in cost and 1e-5 in the trajectories).
- MPC rows sum 40 closed-loop solves (the first cold, the others warm-started); their cost is the first
  solve's. Building the solvers and loading the libraries is not in these times.

## What the analytical Jacobian changes

**First derivatives.** One call of the analytical Jacobian costs less than AD's for the Panda's aba and
solo12's rnea (table "One dynamics call" below); the 2-dof pendulum's aba leaves nothing to gain. In an
NLP the gain is diluted by what is AD in both modes: the RK4 stages, and for the jump the forward
kinematics, foot placements and contact-force mapping of every node. The limited-memory Hessian needs
first derivatives only, but 3 to 40 times more iterations than the exact Hessian, and it does not
converge on the jump (`python examples/legged.py --hessian limited-memory` stops with
Error_In_Step_Computation): the examples default to the exact Hessian, which converges in few iterations
to `Solve_Succeeded` with identical iterates in both modes.

**Second derivatives.** The Hessian dominates the solve. casadi builds the Hessian of the Lagrangian
as forward-mode AD over its gradient. casrbd's analytical Functions set `jac_penalty` 0.5: casadi goes
through the analytical Jacobian for full Jacobians and many directions at once, but takes a single
reverse sweep (the gradient of lambda^T f) by AD of the dynamics graph, so the Hessian is AD's
forward-over-reverse in both modes (the per-call table: the same gradient and Hessian times). With
`jac_penalty` 0, as before, the gradient was J^T lambda through the larger analytical Jacobian graph,
and the solves took 1.2 to 1.5x AD's time in the VM. Compiled, the library carries the Jacobian of the
Jacobian for IPOPT's exact Hessian; `ocp.dynamics` ships AD's (of the dynamics graph) in both modes, so
the compiled solves differ only by the Jacobian, which is a small share of them: the rest of each NLP
(RK4 stages, kinematics, contact mapping) is evaluated in the VM.
"""


def summary(rows):
    """Where analytical is faster or slower than AD (CPU time of the whole solve, 5 % either way)."""
    lines = ["## Summary (CPU time of the solve, analytical / AD)", ""]
    for r in rows:
        if r["jacobian"] == "analytical" and r.get("ad"):
            x = r["stats"]["cpu_total"] / r["ad"]["cpu_total"]
            verdict = "analytical faster" if x < 0.95 else "AD faster" if x > 1.05 else "even (within 5 %)"
            lines.append(
                f"- {r['example']}, {'compiled' if r['compiled'] else 'VM'}, {r['hessian']} Hessian: "
                f"{x:.2f}, {verdict}; jac_g {ratio(r['stats']['cpu_jac_g'], r['ad']['cpu_jac_g'])}, "
                f"hess_l {ratio(r['stats']['cpu_hess_l'], r['ad']['cpu_hess_l'])}"
            )
    return "\n".join(lines) + "\n"


def measure(sizes, repeat, write):
    mods = {name: load(name) for name in EXAMPLES}

    libraries, calls = [], []
    for name in ("swingup", "arm_p2p", "legged"):
        model, dyn, f_ext = dynamics_model(mods, name)
        n = library_sizes(model, dyn, f_ext)
        t = per_call(model, dyn, f_ext)
        for mode in ocp.JACOBIANS:
            start = time.perf_counter()
            ocp.dynamics(model, dyn, mode, compiled=True, f_ext=f_ext)
            libraries.append(
                (model.name, dyn + (" with f_ext" if f_ext else ""), mode, n[mode], time.perf_counter() - start)
            )
            calls.append((model.name, dyn + (" with f_ext" if f_ext else ""), mode, t[mode]))
            print(
                f"{model.name} {dyn} {mode}: instructions f/jac/jac_jac {n[mode]}, library build "
                f"{libraries[-1][-1]:.1f} s; per call J, grad, Hessian {np.round(t[mode], 3)} ms",
                flush=True,
            )

    rows, keep = [], {}
    for name in EXAMPLES:
        for compiled, hessian in SETTINGS[name]:
            for jacobian in ocp.JACOBIANS:
                best = None
                for _ in range(repeat if hessian == "exact" else 1):
                    result, stats = run(mods[name], name, sizes[name], jacobian, compiled, hessian)
                    if best is None or stats["cpu_total"] < best[1]["cpu_total"]:
                        best = (result, stats)
                print(
                    f"{name:8s} {'C ' if compiled else 'VM'} {hessian:14s} {jacobian:10s} "
                    f"{ocp.format_stats(best[1])}, wall {best[1]['wall']:.1f} s",
                    flush=True,
                )
                row = {
                    "example": name,
                    "compiled": compiled,
                    "hessian": hessian,
                    "jacobian": jacobian,
                    "stats": best[1],
                }
                if jacobian == "ad":
                    rows[-1]["ad"] = best[1]
                rows.append(row)
                if not compiled and hessian == "exact" and jacobian == "analytical":
                    keep[name] = best[0]
    text = table(rows)
    print(text)
    if not write:
        return 0

    RESULTS.mkdir(parents=True, exist_ok=True)
    call_lines = [
        "| model | dynamics | Jacobian | J [ms] | grad of lambda^T f [ms] | Hessian of lambda^T f [ms] |",
        "|---|---|---|---|---|---|",
    ]
    call_lines += [f"| {m} | {d} | {mode} | {t[0]:.3f} | {t[1]:.3f} | {t[2]:.3f} |" for m, d, mode, t in calls]
    lib_lines = [
        "| model | dynamics | Jacobian | instructions f / jac / jac_jac | build + compile [s] |",
        "|---|---|---|---|---|",
    ]
    lib_lines += [f"| {m} | {d} | {mode} | {' / '.join(map(str, n))} | {t:.1f} |" for m, d, mode, n, t in libraries]
    (RESULTS / "ocp.md").write_text(
        "# Optimal control: analytical vs AD Jacobians\n\n"
        f"`python -m benchmarks.ocp` on {platform.machine()}, Python {platform.python_version()}, "
        f"casadi {ca.__version__} with IPOPT (MUMPS), {time.strftime('%Y-%m-%d')}. "
        "Examples (`examples/`): double-pendulum swing-up (RK4 multiple shooting, 60 intervals), Panda point "
        "to point (RK4, 40 intervals), solo12 jump (inverse dynamics with contact forces, 40 intervals), Panda "
        "MPC (40 closed-loop solves of 10 RK4 intervals). ![](ocp.png)\n\n"
        + text
        + "\n\n"
        + summary(rows)
        + NOTES
        + "\n## One dynamics call inside an MX graph (VM)\n\n"
        + "\n".join(call_lines)
        + "\n\n## Compiled libraries\n\n"
        + "\n".join(lib_lines)
        + "\n\n(build: the SX Jacobians, C generation and gcc -O1, into an empty cache; the benchmark's runs "
        "then load the library.)\n"
    )
    plot(rows, RESULTS / "ocp.png")
    mods["swingup"].plot(keep["swingup"], RESULTS / "ocp_swingup.png")
    mods["arm_p2p"].plot(keep["arm_p2p"], RESULTS / "ocp_arm.png")
    mods["legged"].plot(keep["legged"], RESULTS / "ocp_legged.png")
    mods["mpc_arm"].plot(keep["mpc_arm"], RESULTS / "ocp_mpc.png")
    print(f"wrote {RESULTS / 'ocp.md'}, {RESULTS / 'ocp.png'} and the examples' plots")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="the test sizes; print only")
    p.add_argument("--repeat", type=int, default=None, help="runs per configuration (default 2, quick 1)")
    args = p.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    repeat = args.repeat or (1 if args.quick else 2)
    if repeat < 1:
        p.error(f"--repeat must be at least 1, got {repeat}")
    if args.quick:
        return measure(sizes, repeat, write=False)
    with tempfile.TemporaryDirectory(prefix="casrbd-ocp-") as cache:
        previous = os.environ.get("CASRBD_CACHE")
        os.environ["CASRBD_CACHE"] = cache  # compile from scratch: the library table reports compile times
        try:
            return measure(sizes, repeat, write=True)
        finally:
            if previous is None:
                del os.environ["CASRBD_CACHE"]
            else:
                os.environ["CASRBD_CACHE"] = previous


if __name__ == "__main__":
    raise SystemExit(main())
