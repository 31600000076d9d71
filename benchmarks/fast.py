"""python -m benchmarks.fast: numeric evaluation from Python through casrbd.fast against Pinocchio's
Python bindings, single calls and a batch of aba over many states -> benchmarks/results/fast.md.

Single calls (rnea, aba, rnea_derivatives, aba_derivatives with their default
methods), per robot:

- ``call``: ``f(q, v, x)``, the checked call of a ``casrbd.fast.FastFunction``
  (arguments checked and copied in, new arrays out), the like of
- ``Pinocchio``: ``pin.rnea(model, data, q, v, a)``, ``pin.computeABADerivatives(...)``,
  ... through its Python bindings (which convert the arguments and return new arrays);
- ``evaluate``: ``f.evaluate()`` on the preallocated arrays (the compiled code plus the
  buffer's trigger).

Batch: aba over N states (10,000 by default) from (N, nq), (N, nv) arrays:
``casrbd.fast.batch`` (a compiled map bound to the arrays without copies)
against a Python loop over ``pin.aba`` and ``pin.abaInParallel`` (1 and 2
threads, a ``ModelPool``).

Every time is the minimum (and the median) over 15 batches of calls, wall
clock; every result is checked against Pinocchio's. OMP_NUM_THREADS is set to
1 before Pinocchio is imported (abaInParallel sets its own thread count).

  python -m benchmarks.fast                      # panda, solo12, talos_reduced
  python -m benchmarks.fast --robots panda --states 2000
"""

import argparse
import os
import platform
import sys
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import casadi as ca  # noqa: E402
import numpy as np  # noqa: E402
import pinocchio as pin  # noqa: E402

import casrbd  # noqa: E402
from casrbd import fast  # noqa: E402
from casrbd.models import load_robot  # noqa: E402

from .measure import Settings, python_time, rel_err  # noqa: E402
from .pinocchio_timing import PinocchioTwin  # noqa: E402

ROBOTS = ("panda", "solo12", "talos_reduced")
FUNCTIONS = ("rnea", "aba", "rnea_derivatives", "aba_derivatives")
OUT = Path(__file__).resolve().parent / "results" / "fast.md"
TARGET = 1.5  # the bound on call / Pinocchio


def single_calls(name, model, settings):
    """Rows: (function, call, evaluate, Pinocchio (min, median) seconds, error against Pinocchio)."""
    rng = np.random.default_rng(0)
    q = np.asarray(casrbd.random_configuration(model, rng))
    v, x = rng.normal(size=model.nv), rng.normal(size=model.nv)
    twin = PinocchioTwin(name, model, q, v, x)
    rows = []
    for kind in FUNCTIONS:
        f = fast.function(model, kind)
        out = f(q, v, x)
        error = max(rel_err(o, r) for o, r in zip(out if isinstance(out, tuple) else (out,), twin.evaluate(kind)))
        for key, value in zip(f.inputs, (q, v, x)):
            f.inputs[key][...] = value
        call = python_time(lambda f=f: f(q, v, x), settings)
        evaluate = python_time(f.evaluate, settings)
        pinocchio = twin.time(kind, settings)
        rows.append((kind, call, evaluate, (pinocchio["min"], pinocchio["median"]), error))
    return rows


def batch_aba(name, model, n_states, settings):
    """{route: (min, median) seconds per state} and the largest error, for aba over n_states states."""
    rng = np.random.default_rng(1)
    Q = np.array([casrbd.random_configuration(model, rng) for _ in range(n_states)])
    V, T = rng.normal(size=(n_states, model.nv)), rng.normal(size=(n_states, model.nv))
    twin = PinocchioTwin(name, model, Q[0], V[0], T[0])
    o, pm, pd = twin.oracle, twin.oracle.pmodel, twin.oracle.data
    PQ = np.array([o.q(q) for q in Q])  # Pinocchio's joint order and joint coordinates
    PV, PT = np.array([o.v(v) for v in V]), np.array([o.v(t) for t in T])
    batch = fast.batch(model, "aba")
    A = batch(Q, V, T)
    ref = np.array([o.from_v(pin.aba(pm, pd, PQ[k], PV[k], PT[k])) for k in range(n_states)])
    error = rel_err(A, ref)
    repeat = Settings(repeat=settings.repeat, batch_seconds=0.0)  # one batch call per timing

    def loop():
        for k in range(n_states):
            pin.aba(pm, pd, PQ[k], PV[k], PT[k])

    routes = {"casrbd.fast.batch": lambda: batch(Q, V, T), "Python loop over pin.aba": loop}
    PQt, PVt, PTt = (np.asfortranarray(X.T) for X in (PQ, PV, PT))
    out = np.zeros((model.nv, n_states), order="F")
    for threads in (1, 2):
        pool = pin.ModelPool(pm, threads)
        routes[f"pin.abaInParallel, {threads} thread{'s' * (threads > 1)}"] = lambda pool=pool, threads=threads: (
            pin.abaInParallel(threads, pool, PQt, PVt, PTt, out)
        )
    pin.abaInParallel(1, pin.ModelPool(pm, 1), PQt, PVt, PTt, out)
    error = max(error, rel_err(np.array([o.from_v(a) for a in out.T]), ref))
    times = {route: tuple(t / n_states for t in python_time(call, repeat)) for route, call in routes.items()}
    return times, error


def environment():
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    cpu = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "unknown")
    return (
        f"{datetime.now(timezone.utc).isoformat(timespec='seconds')}, {cpu}, {os.cpu_count()} cores, load average "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}; Python {platform.python_version()}, casadi "
        f"{ca.__version__}, numpy {np.__version__}, Pinocchio {pin.__version__}"
    )


def report(singles, batches, n_states):
    us = 1e6
    lines = [
        "# casrbd.fast against Pinocchio's Python bindings",
        "",
        f"`python -m benchmarks.fast` ({environment()}). Times per call, minimum (median) over 15 batches, "
        "wall clock; ratio = call / Pinocchio, minima (target: at most 1.5). `call` is the checked call "
        "`f(q, v, x)` of `casrbd.fast.function(model, name)` returning new arrays, as Pinocchio's bindings do; "
        "`evaluate` runs the compiled code on preallocated arrays. Errors: relative, against Pinocchio.",
        "",
        "| robot | nv | function | call | evaluate | Pinocchio | ratio | error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (name, nv), rows in singles.items():
        for kind, call, evaluate, pinocchio, error in rows:
            ratio = call[0] / pinocchio[0]
            lines.append(
                f"| {name} | {nv} | {kind} | {call[0] * us:.2f} ({call[1] * us:.2f}) us | "
                f"{evaluate[0] * us:.2f} ({evaluate[1] * us:.2f}) us | "
                f"{pinocchio[0] * us:.2f} ({pinocchio[1] * us:.2f}) us "
                f"| {ratio:.2f}x{'' if ratio <= TARGET else ' (over target)'} | {error:.1e} |"
            )
    lines += [
        "",
        f"## aba over {n_states} states",
        "",
        "Time per state, minimum (median) over 15 calls of the whole batch, wall clock.",
        "",
        "| robot | route | per state | error |",
        "|---|---|---|---|",
    ]
    for (name, _), (times, error) in batches.items():
        for route, (best, median) in times.items():
            lines.append(f"| {name} | {route} | {best * us:.3f} ({median * us:.3f}) us | {error:.1e} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.fast", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--robots", default=",".join(ROBOTS), help="comma-separated (default: %(default)s)")
    p.add_argument("--states", type=int, default=10_000, help="states of the aba batch (default: %(default)s)")
    p.add_argument("--out", type=Path, default=OUT, help="the report (default: benchmarks/results/fast.md)")
    args = p.parse_args(argv)
    settings = Settings(repeat=15, batch_seconds=0.02)
    singles, batches = {}, {}
    for name in args.robots.split(","):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # panda's mimic fingers
            model = load_robot(name)
        start = time.perf_counter()
        singles[name, model.nv] = single_calls(name, model, settings)
        batches[name, model.nv] = batch_aba(name, model, args.states, settings)
        print(f"{name}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    text = report(singles, batches, args.states)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    worst = max(e for rows in singles.values() for *_, e in rows)
    return 0 if worst < 1e-8 and max(e for _, e in batches.values()) < 1e-8 else 1


if __name__ == "__main__":
    sys.exit(main())
