"""python -m benchmarks.many: many solves on Dask (casrbd.ocp.many) against a plain loop -> results/many.md.

The problem is ``casrbd.ocp.reach`` (arm7, 10 knots, RK4, IPOPT) from perturbed
initial states. Measured, wall clock:

- ``loop``: the solves one after the other in this process (the problem built once);
- ``guarded loop``: the same, each in a child process forked for it (``many.guarded``,
  the time-limit guard every task runs in): its cost per solve;
- ``solve_many``, 1 and 2 workers: a LocalCluster of single-threaded worker processes
  started beforehand, the dataset written; throughput and the overhead per item over the loop;
- cold start: a fresh worker's first item (import, build of the problem with the
  compiled libraries from casrbd's disk cache, solve), and the cluster's start.

  python -m benchmarks.many                 # 40 items, about a minute
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


def initial_states(items, seed=0):
    rng = np.random.default_rng(seed)
    return np.r_[reach.REST, np.zeros(7)] + 0.05 * rng.normal(size=(items, 14))


def loops(x0):
    """(seconds per solve in a plain loop, in a guarded loop), the problem built beforehand."""
    problem = SPEC.build()
    problem.solve(x0=x0[0])  # first call's one-time costs out of the timing
    start = time.perf_counter()
    for x in x0:
        problem.solve(x0=x)
    plain = (time.perf_counter() - start) / len(x0)
    start = time.perf_counter()
    for x in x0:
        outcome = many.guarded(lambda x=x: problem.solve(x0=x), 60.0)
        assert "result" in outcome, outcome
    return plain, (time.perf_counter() - start) / len(x0)


def on_cluster(x0, workers):
    """(cluster start, first item on fresh workers, seconds per item over the rest) with ``workers``."""
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
            many.solve_many(SPEC, {"x0": x0[:workers]}, f"{root}/warm", client=client, progress=False)
            cold = time.perf_counter() - start
            start = time.perf_counter()
            store = many.solve_many(SPEC, {"x0": x0}, f"{root}/run", client=client, progress=False)
            per_item = (time.perf_counter() - start) / len(x0)
            assert len(store.load()["item"]) == len(x0), store.summary()
    return started, cold, per_item


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--items", type=int, default=40, help="solves per measurement (default 40)")
    p.add_argument("--workers", default="1,2", help="worker counts, comma-separated (default 1,2)")
    p.add_argument("--out", default=str(RESULTS / "many.md"), help="markdown report (default results/many.md)")
    args = p.parse_args(argv)
    x0 = initial_states(args.items)
    plain, guarded = loops(x0)
    rows = [("loop (in process)", "-", "-", plain), ("guarded loop (fork per solve)", "-", "-", guarded)]
    for n in map(int, args.workers.split(",")):
        started, cold, per_item = on_cluster(x0, n)
        rows.append((f"solve_many, {n} worker{'s' * (n > 1)}", f"{started:.2f} s", f"{cold:.2f} s", per_item))
    lines = [
        "# Many solves on Dask (`python -m benchmarks.many`)",
        "",
        f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}; `casrbd.ocp.reach` (arm7, 10 knots, RK4, "
        f"IPOPT, tol 1e-8), {args.items} items from perturbed initial states.",
        "",
        "**The machine was shared with other jobs and noisy** (2 cores, several agents compiling and testing):",
        "these numbers show the shape of the costs, not their size; they are to be rerun on a quiet machine.",
        "",
        "| run | cluster start | first items (cold workers) | per item | items/s | vs loop |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, started, cold, per_item in rows:
        lines.append(
            f"| {name} | {started} | {cold} | {1e3 * per_item:.1f} ms | {1 / per_item:.1f} | {per_item / plain:.2f}x |"
        )
    lines += [
        "",
        "cluster start: a LocalCluster's processes up; first items: one item per fresh worker (imports, the",
        "problem built with its libraries from the disk cache, one solve, the dataset created); per item: a",
        "run of all items on the warm workers, dataset shards included. The overhead of `solve_many` per",
        "item is its per-item time times the workers minus the loop's (scheduling, the fork guard, the",
        "transfer of results and the shards).",
    ]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
