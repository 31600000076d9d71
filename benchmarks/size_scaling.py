"""python -m benchmarks.size_scaling: how casrbd's unrolled code grows with the robot, against Pinocchio
-> benchmarks/results/size_scaling.md, size_scaling.json, size_scaling.png.

For rnea, aba, their derivatives (∂ID, ∂FD: each Function's default method) and the contact dynamics and
their derivatives, on arm7, solo12, talos_reduced, talos_full_v2 and random trees of 10 to 100 bodies
(``random_tree(n, branching=None, seed=0)``: every constant-subspace joint type, random parents; their
contacts two leaves as 3-D points): the graph size (``n_instructions``), the CPU seconds of building the
Function (a fresh model, no disk cache), gcc's seconds and peak memory (its whole process tree) on the
generated C at the flags ``benchmarks.measure`` picks by size, the compiled time of one call (the C
harness, ``benchmarks/harness.py``) and Pinocchio's time for the same work (through its bindings, less
their overhead), with the error against Pinocchio's result.

A graph is not built when its size, extrapolated from the two previous trees (log-log), exceeds
``BUILD_LIMIT`` instructions, and not compiled above ``Settings.cap`` (building and compiling such a
graph takes minutes to hours and gigabytes: the rows say so). Records are kept in the json, so a run can
be split by robots.

    python -m benchmarks.size_scaling                   # everything (about an hour on 2 cores)
    python -m benchmarks.size_scaling arm7 tree10       # some robots
    python -m benchmarks.size_scaling --report-only
"""

import argparse
import json
import math
import os
import time
import warnings
from pathlib import Path

import numpy as np

import casrbd

from .legged import Pinocchio, net, time_call
from .measure import FEET, Settings, measure, rel_err
from .pinocchio_timing import PinocchioTwin
from .table1 import make_model, random_state

RESULTS = Path(__file__).resolve().parent / "results"
ROBOTS = ("arm7", "solo12", "talos_reduced", "talos_full_v2", "tree10", "tree25", "tree50", "tree100")
FUNCTIONS = (
    "rnea",
    "aba",
    "rnea_derivatives",
    "aba_derivatives",
    "constraint_dynamics",
    "constraint_dynamics_derivatives",
)
BUILD_LIMIT = 2e6
SETTINGS = Settings(repeat=7, batch_seconds=0.02)


def contacts(name, model):
    if name in FEET:
        return FEET[name]
    if name == "arm7":
        return [("tool", "6d")]
    parents = set(model.parents)
    leaves = [i for i in range(model.njoints) if i not in parents]
    return [(f"tip{i}", "3d") for i in leaves[-2:]]


def predicted(records, name, fname):
    """The instructions of ``fname`` on tree ``name`` extrapolated from the two previous trees (log-log in
    the number of bodies), or None."""
    n = int(name[4:]) if name.startswith("tree") else None
    trees = [r for r in records.values() if r["robot"].startswith("tree") and int(r["robot"][4:]) < (n or 0)]
    known = sorted(
        (int(r["robot"][4:]), r["functions"][fname]["instructions"])
        for r in trees
        if "instructions" in r["functions"].get(fname, {})
    )
    if n is None or len(known) < 2:
        return None
    (n0, i0), (n1, i1) = known[-2:]
    slope = math.log(i1 / i0) / math.log(n1 / n0)
    return i1 * (n / n1) ** slope


def run_robot(name, records, log=print):
    model = make_model(name)
    q, v, x = random_state(model)
    cs = contacts(name, model)
    twin, legged = PinocchioTwin(name, model, q, v, x), Pinocchio(name, model, cs).calls(q, v, x)
    rec = {"robot": name, "nv": model.nv, "contacts": cs, "functions": {}}
    for fname in FUNCTIONS:
        guess = predicted(records, name, fname)
        if guess is not None and guess > BUILD_LIMIT:
            rec["functions"][fname] = {"not_built": f"about {guess:.1e} instructions predicted > {BUILD_LIMIT:.0e}"}
            log(f"{name} {fname}: not built ({rec['functions'][fname]['not_built']})")
            continue
        options = {"contacts": cs} if fname.startswith("constraint") else {}
        fresh = make_model(name)  # no Function cached for it in this process
        start = time.process_time()
        f = casrbd.function(fresh, fname, **options)
        build = time.process_time() - start
        inputs = [q, v, x][: f.n_in()]
        entry, outs = measure(f, inputs, SETTINGS)
        entry["build_seconds"] = build
        if fname.startswith("constraint"):
            ref, pin = legged[fname, "ref"], time_call(*legged[fname], SETTINGS)
        else:
            ref, pin = twin.evaluate(fname), twin.time(fname, SETTINGS)
        entry["pinocchio"] = pin
        entry["err_vs_pinocchio"] = max(rel_err(a, b) for a, b in zip(outs, ref))
        rec["functions"][fname] = entry
        log(
            f"{name} {fname}: {entry['instructions']} instructions, built in {build:.1f} s, "
            f"gcc {entry.get('gcc_seconds', math.nan):.1f} s {entry.get('gcc_peak_mib', math.nan):.0f} MiB, "
            f"C {1e6 * entry.get('c_min', math.nan):.3g} us, Pinocchio {1e6 * net(pin):.3g} us, "
            f"error {entry['err_vs_pinocchio']:.1e}",
            flush=True,
        )
    return rec


def _cell(x, spec):
    return "-" if x is None or not np.isfinite(x) else format(x, spec)


def report(records):
    lines = [
        "# Size scaling: graph size, build, compile and compiled time against Pinocchio",
        "",
        "`python -m benchmarks.size_scaling` (see its docstring). Build: CPU seconds of "
        "`casrbd.function` on a fresh model. gcc: wall seconds and peak memory of compiling the generated C "
        f"(`codegen.DEFAULT_FLAGS`, -O3, at every size; not compiled above {SETTINGS.cap:.1e} instructions). "
        f"C: one call, min of {SETTINGS.repeat} batches; Pinocchio through its Python bindings less their "
        "overhead, one thread.",
        "",
        "| robot | nv | function | instructions | build [s] | gcc [s] | gcc peak [MiB] | C [us] | Pinocchio [us] "
        "| C / Pinocchio | error |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for rec in records.values():
        for fname, e in rec["functions"].items():
            head = f"| {rec['robot']} | {rec['nv']} | {fname} |"
            if "not_built" in e:
                lines.append(f"{head} not built: {e['not_built']} | | | | | | | |")
                continue
            c = e.get("c_min", math.nan)
            p = net(e["pinocchio"])
            lines.append(
                f"{head} {e['instructions']} | {e['build_seconds']:.2f} | {_cell(e.get('gcc_seconds'), '.1f')} | "
                f"{_cell(e.get('gcc_peak_mib'), '.0f')} | {_cell(1e6 * c, '.3g')} | {_cell(1e6 * p, '.3g')} | "
                f"{_cell(c / p if p > 0 else math.nan, '.2f')} | {e['err_vs_pinocchio']:.1e} |"
            )
    return "\n".join(lines) + "\n"


def plot(records, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.6))
    for color, fname in enumerate(FUNCTIONS):
        style = {"color": f"C{color}"}
        for trees in (True, False):  # the random trees as a line, the robots as markers
            rows = sorted(
                (rec["nv"], e)
                for rec in records.values()
                for f, e in rec["functions"].items()
                if f == fname and "instructions" in e and rec["robot"].startswith("tree") == trees
            )
            if not rows:
                continue
            marker = {"marker": "o", "ls": "-", "label": fname} if trees else {"marker": "s", "ls": "none"}
            nv = [n for n, _ in rows]
            axes[0].loglog(nv, [e["instructions"] for _, e in rows], **style, **marker)
            timed = [(n, e["c_min"] / net(e["pinocchio"])) for n, e in rows if "c_min" in e and net(e["pinocchio"]) > 0]
            if timed:
                axes[1].semilogx(*zip(*timed), **style, **marker)
            compiled = [(e["instructions"], e["gcc_seconds"]) for _, e in rows if "gcc_seconds" in e]
            if compiled:
                axes[2].loglog(*zip(*compiled), **style, marker=marker["marker"], ls="none")
    axes[0].set(xlabel="nv", ylabel="instructions", title="graph size (lines: random trees; squares: robots)")
    axes[1].axhline(1.0, color="k", lw=0.8)
    axes[1].set(xlabel="nv", ylabel="compiled C / Pinocchio", title="time against Pinocchio (below 1: faster)")
    axes[2].set(xlabel="instructions", ylabel="gcc seconds", title="compile time")
    axes[0].legend(fontsize=7)
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.size_scaling", description=__doc__.splitlines()[0])
    p.add_argument("robots", nargs="*", default=list(ROBOTS))
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--report-only", action="store_true")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "size_scaling.json"
    records = json.loads(path.read_text()) if path.exists() else {}
    if not args.report_only:
        os.environ["CASRBD_FUNCTION_CACHE"] = "off"  # every build timed from scratch, none loaded
        for name in args.robots:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # talos' mimic joints
                records[name] = run_robot(name, records)
            path.write_text(json.dumps(records, indent=1))
    records = {n: records[n] for n in ROBOTS if n in records} | records
    (args.out / "size_scaling.md").write_text(report(records))
    plot(records, args.out / "size_scaling.png")
    print(f"benchmarks.size_scaling: wrote {args.out / 'size_scaling.md'}")


if __name__ == "__main__":
    main()
