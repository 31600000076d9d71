"""A dataset of arm reaching motions from perturbed initial states, with their feedback gains, on Dask.

The problem is ``casrbd.ocp.reach`` (arm7's tool to a target in half a
second, torques within the effort limits) written as a ``ProblemSpec``; each
item starts from the rest configuration and zero velocity perturbed at
random. ``solve_many`` solves the items on a local Dask cluster (one worker
per core; ``--scheduler ADDR`` for any other) into a dataset directory, shard
by shard; run it again to resume an interrupted run. The plot shows the
spread of the motions, the torques and the size of the gains K_k = du_k/dx_k
(what a tracking controller would apply around each solution).

    python examples/dataset.py --items 300 --dataset reach-data --plot spread.png
"""

import argparse

import common
import numpy as np

from casrbd.ocp import reach
from casrbd.ocp.many import ProblemSpec, solve_many

NODES, DURATION = 10, 0.5
SPEC = ProblemSpec("casrbd.ocp.reach:build", {"nodes": NODES, "duration": DURATION}, {"tol": 1e-8})


def variations(items, sigma, seed):
    """``items`` initial states: the rest configuration perturbed by ``sigma`` rad, velocities by 2 sigma rad/s."""
    rng = np.random.default_rng(seed)
    x0 = np.r_[reach.REST, np.zeros(7)] + rng.normal(size=(items, 14)) * np.r_[np.full(7, sigma), np.full(7, 2 * sigma)]
    return {"x0": x0}


def run(dataset, items=300, sigma=0.05, seed=0, scheduler=None, workers=None, time_limit=60.0):
    """Solve (or resume) the dataset; returns its solutions (``Dataset.load``) and the dataset."""
    table = variations(items, sigma, seed)
    store = solve_many(SPEC, table, dataset, client=scheduler, time_limit=time_limit, gains=True, workers=workers)
    return store.load(), store


def report(data, store):
    print(store.summary())
    if not len(data["item"]):
        return
    success = data["success"].mean()
    print(f"solver success {100 * success:.0f} %, iterations median {np.median(data['iterations']):.0f}")
    print(f"cost: mean {data['cost'].mean():.4g}, std {data['cost'].std():.3g}")
    print(f"CPU time per solve: median {1e3 * np.median(data['cpu_time']):.0f} ms")
    K0 = np.linalg.norm(data["gains"][:, 0], axis=(1, 2))
    print(f"|K_0| (Frobenius): mean {K0.mean():.4g}, min {K0.min():.4g}, max {K0.max():.4g}")


def plot(data, path):
    t = np.linspace(0.0, DURATION, NODES + 1)
    series = {
        "q2 [rad]": data["states"][:, :, 1].T,
        "q4 [rad]": data["states"][:, :, 3].T,
        "tau2 [Nm]": data["controls"][:, :, 1].T,
        "|K_k|": np.linalg.norm(data["gains"], axis=(2, 3)).T,
    }
    common.plot_series(path, t, series, title=f"{len(data['item'])} reaching motions from perturbed states")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", required=True, help="the dataset directory (created, or resumed)")
    p.add_argument("--items", type=int, default=300, help="initial states (default 300)")
    p.add_argument("--sigma", type=float, default=0.05, help="perturbation of q in rad, twice that of v (0.05)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scheduler", metavar="ADDR", help="a Dask scheduler's address (default: a local cluster)")
    p.add_argument("--workers", type=int, help="local cluster: worker processes (default: one per core)")
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds per solve (default 60)")
    p.add_argument("--plot", metavar="PATH.png", help="write the spread of the motions and gains")
    args = p.parse_args(argv)
    data, store = run(**common.arguments(args, run))
    report(data, store)
    if args.plot:
        plot(data, args.plot)
    return 0 if len(data["item"]) == store.index["items"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
