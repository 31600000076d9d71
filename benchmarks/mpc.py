"""Closed-loop MPC benchmark: ``casrbd.sim.reach_targets`` (the Panda reaching four targets, MuJoCo as the plant
at 1 kHz; what examples/mpc_panda.py shows) at each controller rate, with the CPU time of every update.

python -m benchmarks.mpc [--rates 500] [--solvers ipopt,fatrop] [--max-iter 1]

Writes benchmarks/results/mpc_panda.md: per rate and solver (IPOPT warm-started
with the last solution and its multipliers, fatrop with the solution only), the warm updates' CPU time
(``time.process_time`` around each controller call, one thread: BLAS and
OpenMP limited to one before anything loads them) as median, 99th percentile
and worst, the cold first solve, the tool's error at the end of each target,
the largest torque against its limit and the closest approach to a joint limit.
The stage library is compiled once and cached (``casrbd.codegen``).
"""

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
from datetime import datetime, timezone  # noqa: E402
from pathlib import Path  # noqa: E402

import casadi as ca  # noqa: E402
import numpy as np  # noqa: E402

from casrbd.sim import reach_summary, reach_targets  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SHARED = (
    "**The machine was shared with other jobs when this ran (load average above its core count): CPU times are",
    "inflated and noisy; rerun on a quiet machine before quoting them.**",
)


def environment():
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    cpu = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "unknown")
    import mujoco

    return (
        f"{datetime.now(timezone.utc).isoformat(timespec='seconds')}, {cpu}, {os.cpu_count()} cores, load average "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}; Python {platform.python_version()}, casadi "
        f"{ca.__version__}, MuJoCo {mujoco.__version__}"
    )


def row(rate, solver, result):
    r, m = result["record"], result["model"]
    cpu = 1e3 * r.update_cpu[1:]
    margin = np.minimum(r.q - m.lower, m.upper - r.q).min()
    cells = [
        f"{rate}",
        solver,
        f"{1e3 / rate:.1f}",
        f"{np.median(cpu):.2f}",
        f"{np.percentile(cpu, 99):.2f}",
        f"{cpu.max():.2f}",
        f"{1e3 * r.update_cpu[0]:.0f}",
        " / ".join(f"{1e3 * e:.2f}" for e in result["final"]),
        f"{(np.abs(r.tau) / m.effort_limit).max():.6f}",
        f"{margin:.3f}",
    ]
    return "| " + " | ".join(cells) + " |"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rates", default="500", help="controller rates in Hz, comma-separated (default 500)")
    p.add_argument("--solvers", default="ipopt,fatrop", help="comma-separated (default ipopt,fatrop)")
    p.add_argument("--max-iter", type=int, default=1, help="IPOPT iterations per warm update (default 1)")
    args = p.parse_args(argv)
    rows, name = [], "?"
    for rate in (int(x) for x in args.rates.split(",")):
        for solver in args.solvers.split(","):
            result = reach_targets(rate=rate, max_iter=args.max_iter, solver=solver)
            name = result["model"].name
            rows.append(row(rate, solver, result))
            print("\n".join(reach_summary(result)))
    lines = [
        f"# Whole-body MPC of the {name} with MuJoCo as the plant",
        "",
        f"`python -m benchmarks.mpc --rates {args.rates} --solvers {args.solvers} --max-iter {args.max_iter}` "
        f"({environment()}).",
        "",
        "casrbd.sim.reach_targets (examples/mpc_panda.py): MuJoCo at 1 kHz, the controller at each rate; horizon",
        f"10 intervals of 30 ms (RK4), Gauss-Newton stages compiled to C, warm-started, {args.max_iter} iteration(s)",
        "per update; four targets, 1 s each. Update CPU times of the warm updates in ms (process time, one",
        "thread); errors: the tool's distance to each target at the end of its second, mm; torque: max |tau| /",
        "effort limit over the run (1: the bound active); margin: closest approach to a joint limit, rad.",
        "",
        *(SHARED if os.getloadavg()[0] > os.cpu_count() else ()),
        "An update is real-time at a rate when its time stays under the period.",
        "",
        "| rate [Hz] | solver | period [ms] | median | p99 | worst | cold | errors [mm] | torque | margin |",
        "|---:|---|---:|---:|---:|---:|---:|---|---:|---:|",
        *rows,
        "",
    ]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "mpc_panda.md").write_text("\n".join(lines))
    print(f"wrote {RESULTS / 'mpc_panda.md'}")


if __name__ == "__main__":
    main()
