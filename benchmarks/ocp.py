"""Optimal-control benchmark: the examples with AD, analytical first-order, and analytical first- and
second-order derivatives of their dynamics, interpreted and compiled.

python -m benchmarks.ocp [--quick] [--repeat N] [--examples a,b]

Runs the examples of examples/ with IPOPT's exact Hessian, each from the same
initial guess, with the dynamics' derivatives in three modes: "AD" (casadi's
AD of the dynamics graph), "J" (the analytical Jacobian; the gradient and the
exact Hessian's forward-over-reverse by AD of the graph) and "J+H" (the
analytical Jacobian, adjoint and contracted Hessian: ``casrbd.function``'s
``second_order="analytical"``); in casadi's VM, and compiled: the NLP's own
functions (nlp_f, nlp_g, nlp_grad_f, nlp_jac_g, nlp_hess_l, with the dynamics
and their derivatives inside) generated to C and compiled by casadi's jit
(``ocp.solver_options(compiled=True)``, gcc -O1). The trot (contact dynamics) is
benchmarked against Crocoddyl in benchmarks/crocoddyl.py. The centroidal momentum
(weight shift) has an analytical Jacobian and no analytical second order: two
modes, in the VM only (``VM_ONLY``). MPC re-creates its solver after the cold
start, so its compiled runs load a dynamics library (``ocp.dynamics(compiled=True)``,
built once) and keep the NLP in the VM. Writes benchmarks/results/ocp.md,
ocp.png and the examples' own plots.

Each run is the example's command line in a process of its own (``python
examples/NAME.py ... --stats PATH.json``): the benchmark times the examples as
they are run, and no run inherits another's in-process caches (casadi
Functions, built problems), so each one's setup is its own; the examples stay
programs, not a library the benchmark imports.

Times come from IPOPT's statistics (casadi's ``record_time``): the process's
CPU time of the solve and of its callbacks, which other jobs on a shared
machine disturb far less than wall time; building the problem and the jit
compile are reported apart ("setup": the example's solve or run call's wall
time less the solves'). Each configuration runs ``--repeat`` times and the run
with the least CPU time is kept.
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import casadi as ca
import numpy as np

from casrbd import ocp

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
EXAMPLES = ("swingup", "arm_p2p", "legged", "mpc_arm", "humanoid_com")  # the trot: benchmarks/crocoddyl.py
FULL = {
    "swingup": {"nodes": 60},
    "arm_p2p": {"nodes": 40},
    "legged": {"nodes": 40},
    "mpc_arm": {"steps": 40, "nodes": 10},
    "humanoid_com": {"nodes": 20},
}
QUICK = {
    "swingup": {"nodes": 30},
    "arm_p2p": {"nodes": 12},
    "legged": {"nodes": 12},
    "mpc_arm": {"steps": 3, "nodes": 5},
    "humanoid_com": {"nodes": 8},
}
# mode -> (jacobian, second_order)
MODES = {"AD": ("ad", None), "J": ("analytical", "ad"), "J+H": ("analytical", "analytical")}
SECOND_ORDER = ("swingup", "arm_p2p", "legged", "mpc_arm")  # their dynamics have an analytical second order
# in the VM only: casadi's jit of a trot NLP (AD's second derivatives of the contact dynamics at 32
# nodes in nlp_hess_l) did not finish, gcc -O1 stopped after 11 min at 6.6 GB; the humanoid's
# (talos_reduced's centroidal graph) was not tried after that
VM_ONLY = ("humanoid_com",)
PLOTS = {
    "swingup": "ocp_swingup.png",
    "arm_p2p": "ocp_arm.png",
    "legged": "ocp_legged.png",
    "mpc_arm": "ocp_mpc.png",
    "humanoid_com": "ocp_humanoid.png",
}


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


def command(name, size, mode, compiled, stats, plot):
    """The example's command line for one configuration, writing its statistics to ``stats`` and its plots to
    ``plot``."""
    jacobian, second_order = MODES[mode]
    args = [sys.executable, str(ROOT / "examples" / f"{name}.py"), "--jacobian", jacobian]
    args += [f"--{k}={v}" for k, v in size.items()]
    if name in SECOND_ORDER and second_order:
        args += ["--second-order", second_order]
    if name == "mpc_arm":  # --[no-]compiled: its dynamics library
        args.append("--compiled" if compiled else "--no-compiled")
    elif compiled:  # --compiled: the NLP through casadi's jit
        args.append("--compiled")
    return args + ["--stats", str(stats), "--plot", str(plot)]


def run(name, size, mode, compiled, folder):
    """Runs one configuration in a process of its own: (its plot files, its statistics with ``setup``)."""
    stats_path, plot = folder / "stats.json", folder / "plot.png"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))))
    done = subprocess.run(
        command(name, size, mode, compiled, stats_path, plot), env=env, capture_output=True, text=True
    )
    if not stats_path.exists():
        raise RuntimeError(f"examples/{name}.py ({mode}, compiled {compiled}) failed:\n{done.stdout}{done.stderr}")
    out = json.loads(stats_path.read_text())
    stats = aggregate(out["solves"]) if "solves" in out else out["stats"]
    # outside the solves: building the problem and, compiled, casadi's jit or the library
    stats["setup"] = out["seconds"] - stats["t_total"]
    return sorted(folder.glob("plot*.png")), stats


def fmt_time(t):
    return "-" if not np.isfinite(t) else f"{t:.3f}" if t >= 0.1 else f"{1e3 * t:.1f} ms"


def ratio(x, y):
    return f"{x / y:.2f}" if np.isfinite(x) and np.isfinite(y) and y > 0 else "-"


def table(rows):
    head = ["example", "code", "derivatives", "status", "iter", "CPU [s]", "jac_g CPU", "hess_l CPU"]
    head += ["CPU per iter [ms]", "setup [s]", "cost", "/AD solve", "/AD jac_g", "/AD hess_l"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        s, ad = r["stats"], r.get("ad")
        ratios = [ratio(s[k], ad[k]) if ad else "" for k in ("cpu_total", "cpu_jac_g", "cpu_hess_l")]
        cells = [r["example"], "C" if r["compiled"] else "VM", r["mode"], s["status"], str(s["iterations"])]
        cells += [f"{s['cpu_total']:.3f}", fmt_time(s["cpu_jac_g"]), fmt_time(s["cpu_hess_l"])]
        cells += [f"{1e3 * s['cpu_per_iter']:.1f}", f"{s['setup']:.1f}", f"{s['cost']:.10g}", *ratios]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary(rows):
    """Analytical over AD, per example, code and mode: the whole solve and its two largest callbacks."""
    lines = ["## Summary (CPU time, analytical / AD)", ""]
    for r in rows:
        if r.get("ad"):
            s, a = r["stats"], r["ad"]
            lines.append(
                f"- {r['example']}, {'compiled' if r['compiled'] else 'VM'}, {r['mode']}: solve "
                f"{ratio(s['cpu_total'], a['cpu_total'])}, jac_g {ratio(s['cpu_jac_g'], a['cpu_jac_g'])}, "
                f"hess_l {ratio(s['cpu_hess_l'], a['cpu_hess_l'])}"
            )
    return "\n".join(lines) + "\n"


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pairs = [r for r in rows if r.get("ad")]
    labels = [f"{r['example']}\n{'C' if r['compiled'] else 'VM'}, {r['mode']}" for r in pairs]
    x = np.arange(len(pairs))
    fig, ax = plt.subplots(figsize=(max(8, 0.9 * len(pairs)), 5))
    for k, (key, label) in enumerate((("cpu_total", "solve"), ("cpu_jac_g", "jac_g"), ("cpu_hess_l", "hess_l"))):
        vals = [r["stats"][key] / r["ad"][key] if r["ad"][key] > 0 else np.nan for r in pairs]
        ax.bar(x + (k - 1) * 0.27, vals, 0.27, label=label)
    ax.axhline(1, color="k", lw=0.8)
    ax.axhline(0.7, color="k", lw=0.8, ls=":")
    ax.set_ylabel("analytical / AD (CPU time)")
    ax.legend()
    ax.grid(alpha=0.3, axis="y")
    ax.set_xticks(x)
    ax.set_xticklabels(labels, fontsize=7)
    fig.suptitle("Optimal control with casrbd: analytical derivatives over AD (IPOPT statistics)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


NOTES = """
## Reading the table

- `code`: VM is casadi's virtual machine; C is the whole NLP generated to C and compiled by casadi's
  jit (gcc -O1; `setup` includes that compile); MPC's C is its dynamics library, with the NLP in the VM.
  humanoid_com runs in the VM only: the jit of a trot NLP, with AD's second
  derivatives of the contact dynamics in its Hessian, did not finish (gcc -O1 stopped after 11 min at
  6.6 GB); the humanoid's was not tried.
- `derivatives`: AD, casadi's AD of the dynamics graph; J, the analytical Jacobian with AD's second
  derivatives; J+H, the analytical Jacobian, adjoint and contracted Hessian (`second_order="analytical"`).
- Times are the process's CPU time in the solve (`t_proc_total`), in the constraint Jacobian (`jac_g`)
  and in the Hessian of the Lagrangian (`hess_l`); `/AD` is the ratio to the AD row of the same example
  and code. The modes take the same iterates (tests/ocp/test_ocp.py and tests/second_order/test_second_order_wiring.py).
- MPC rows sum the closed-loop solves, the first cold, the others warm-started.
"""


def measure(sizes, repeat, names, write, scratch):
    rows, keep = [], {}
    for name in names:
        modes = list(MODES) if name in SECOND_ORDER else ["AD", "J"]
        for compiled in (False,) if name in VM_ONLY else (False, True):
            reference = None
            for mode in modes:
                best = None
                for k in range(repeat):
                    folder = scratch / f"{name}_{'C' if compiled else 'VM'}_{mode}_{k}"
                    folder.mkdir()
                    plots, stats = run(name, sizes[name], mode, compiled, folder)
                    if best is None or stats["cpu_total"] < best[1]["cpu_total"]:
                        best = (plots, stats)
                print(
                    f"{name:14s} {'C ' if compiled else 'VM'} {mode:4s} {ocp.format_stats(best[1])}, "
                    f"setup {best[1]['setup']:.1f} s",
                    flush=True,
                )
                row = {"example": name, "compiled": compiled, "mode": mode, "stats": best[1]}
                if mode == "AD":
                    reference = best[1]
                else:
                    row["ad"] = reference
                rows.append(row)
                keep[name] = best[0]
    text = table(rows)
    print(text)
    if not write:
        return 0
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "ocp.md").write_text(
        "# Optimal control: analytical derivatives vs AD\n\n"
        f"`python -m benchmarks.ocp` on {platform.machine()}, Python {platform.python_version()}, "
        f"casadi {ca.__version__} with IPOPT (MUMPS), {time.strftime('%Y-%m-%d')}, best of {repeat} run(s); sizes: "
        f"{', '.join(f'{n} {sizes[n]}' for n in names)}. ![](ocp.png)\n\n" + text + "\n\n" + summary(rows) + NOTES
    )
    plot(rows, RESULTS / "ocp.png")
    for name, plots in keep.items():  # plot.png and plot_snapshots.png of the kept run
        for path in plots:
            shutil.copy(path, RESULTS / path.name.replace("plot", PLOTS[name][:-4], 1))
    print(f"wrote {RESULTS / 'ocp.md'}, {RESULTS / 'ocp.png'} and the examples' plots")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes; print only")
    p.add_argument("--repeat", type=int, default=None, help="runs per configuration (default 2, quick 1)")
    p.add_argument("--examples", default=",".join(EXAMPLES), help=f"a subset of {','.join(EXAMPLES)}")
    args = p.parse_args(argv)
    names = [n for n in args.examples.split(",") if n]
    unknown = set(names) - set(EXAMPLES)
    if unknown:
        p.error(f"unknown examples {sorted(unknown)}; valid: {', '.join(EXAMPLES)}")
    sizes = QUICK if args.quick else FULL
    repeat = args.repeat or (1 if args.quick else 2)
    if repeat < 1:
        p.error(f"--repeat must be at least 1, got {repeat}")
    with tempfile.TemporaryDirectory(prefix="casrbd-ocp-runs-") as scratch:
        if args.quick:
            return measure(sizes, repeat, names, False, Path(scratch))
        with tempfile.TemporaryDirectory(prefix="casrbd-ocp-") as cache:
            previous = os.environ.get("CASRBD_CACHE")
            os.environ["CASRBD_CACHE"] = cache  # compile from scratch, so that setup includes compiling
            try:
                return measure(sizes, repeat, names, set(names) == set(EXAMPLES), Path(scratch))
            finally:
                if previous is None:
                    del os.environ["CASRBD_CACHE"]
                else:
                    os.environ["CASRBD_CACHE"] = previous


if __name__ == "__main__":
    raise SystemExit(main())
