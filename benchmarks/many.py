"""python -m benchmarks.many: many solves on Dask (casrbd.ocp.many) against a plain loop -> results/many.md.

The problem is ``casrbd.ocp.reach`` (arm7, 10 knots, RK4, IPOPT) from perturbed
initial states. Measured, wall clock:

- ``loop``: the solves one after the other in this process (the problem built once);
- ``guarded loop``: the same, each in a child process forked for it (``many.guarded``,
  the time-limit guard every task runs in): its cost per solve;
- ``solve_many``, 1 and 2 workers: a LocalCluster of single-threaded worker processes
  started beforehand, the dataset written; throughput and the overhead per item over the loop;
- cold start: a fresh worker's first item (import, build of the problem with the
  Functions from casrbd's disk cache, solve), and the cluster's start;
- the overhead per task alone: the same runs of a problem whose solve returns at once
  (``null``, this module's builder).

The solver's own CPU time per solve (``cpu_time``, median) tells the solves' slowdown
on a busy machine apart from the overhead around them.

  python -m benchmarks.many                 # 20 items, under a minute on a quiet machine
  python -m benchmarks.many --items 200 --workers 1,2,4
"""

import argparse
import os
import platform
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from casrbd.ocp import many, reach

RESULTS = Path(__file__).resolve().parent / "results"
SPEC = many.ProblemSpec("casrbd.ocp.reach:build", {"nodes": 10, "duration": 0.5}, {"tol": 1e-8})
NULL = many.ProblemSpec("benchmarks.many:null")


def null(solver):
    """A problem whose solve returns at once: what solve_many costs around a solve."""
    return Null()


class Null:
    def solve(self, gains=False, x0=None):
        return {"cpu_time": 0.0}


def initial_states(items, seed=0):
    rng = np.random.default_rng(seed)
    return np.r_[reach.REST, np.zeros(7)] + 0.05 * rng.normal(size=(items, 14))


def loops(spec, x0):
    """(seconds per solve in a plain loop, in a guarded loop, median solver CPU), the problem built first."""
    problem = spec.build()
    problem.solve(x0=x0[0])  # first call's one-time costs out of the timing
    start = time.perf_counter()
    cpu = [problem.solve(x0=x)["cpu_time"] for x in x0]
    plain = (time.perf_counter() - start) / len(x0)
    start = time.perf_counter()
    for x in x0:
        outcome = many.guarded(lambda x=x: problem.solve(x0=x), 60.0)
        assert "result" in outcome, outcome
    return plain, (time.perf_counter() - start) / len(x0), float(np.median(cpu))


def on_cluster(spec, x0, workers):
    """(cluster start, first items on fresh workers, seconds per item over all, median solver CPU)."""
    from distributed import Client, LocalCluster

    start = time.perf_counter()
    with (
        LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster,
        Client(cluster) as client,
    ):
        client.wait_for_workers(workers)
        started = time.perf_counter() - start
        with tempfile.TemporaryDirectory() as root:
            # one item per worker: each builds the problem (the cold start), then the timed run
            start = time.perf_counter()
            many.solve_many(spec, {"x0": x0[:workers]}, f"{root}/warm", client=client, progress=False)
            cold = time.perf_counter() - start
            start = time.perf_counter()
            store = many.solve_many(spec, {"x0": x0}, f"{root}/run", client=client, progress=False)
            per_item = (time.perf_counter() - start) / len(x0)
            data = store.load()
            assert len(data["item"]) == len(x0), store.summary()
    return started, cold, per_item, float(np.median(data["cpu_time"]))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--items", type=int, default=20, help="reach's solves per measurement, 10x for null (20)")
    p.add_argument("--workers", default="1,2", help="worker counts, comma-separated (default 1,2)")
    p.add_argument("--out", default=str(RESULTS / "many.md"), help="markdown report (default results/many.md)")
    args = p.parse_args(argv)
    workers = [int(n) for n in args.workers.split(",")]
    lines = [
        "# Many solves on Dask (`python -m benchmarks.many`)",
        "",
        f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}; `casrbd.ocp.reach` (arm7, 10 knots, RK4, "
        f"IPOPT, tol 1e-8) from {args.items} perturbed initial states, and `null` ({10 * args.items} items).",
        "",
        f"**The machine was shared with other jobs and noisy** (load average {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} cores at the start, other agents compiling and testing):",
        "these numbers show the shape of the costs, not their size; they are to be rerun on a quiet machine.",
        "",
        "| problem | run | cluster start | first items (cold workers) | per item | items/s | vs loop | solver CPU |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for spec, items in ((SPEC, args.items), (NULL, 10 * args.items)):
        x0 = initial_states(items)
        label = "reach" if spec is SPEC else "null"
        plain, guarded, cpu = loops(spec, x0)
        rows = [("loop (in process)", "-", "-", plain, cpu), ("guarded loop (fork per solve)", "-", "-", guarded, cpu)]
        for n in workers:
            started, cold, per_item, cpu = on_cluster(spec, x0, n)
            rows.append((f"solve_many, {n} worker{'s' * (n > 1)}", f"{started:.2f} s", f"{cold:.2f} s", per_item, cpu))
        for name, started, cold, per_item, cpu in rows:
            lines.append(
                f"| {label} | {name} | {started} | {cold} | {1e3 * per_item:.2f} ms | {1 / per_item:.1f} | "
                f"{f'{per_item / plain:.2f}x' if spec is SPEC else '-'} | {1e3 * cpu:.1f} ms |"
            )
    lines += [
        "",
        "cluster start: a LocalCluster's processes up; first items: one item per fresh worker (imports, the",
        "problem built with its Functions from the disk cache, one solve, the dataset created); per item: a",
        "run of all items on the warm workers, dataset shards included (wall clock over the run, divided by",
        "the items). `null`'s per item is the overhead of `solve_many` per task (scheduling, the fork guard,",
        "the transfer of results and the shards); solver CPU: the median of the solves' own process time.",
    ]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
