"""python -m benchmarks.compiled_calls: what a call of a compiled Function costs inside an NLP.

``casrbd.compiled(model, name)`` is a Function of a compiled library; an NLP
that casadi evaluates in its VM (Opti, nlpsol without jit) holds calls of it,
and of its derivatives ``jac_<name>`` (constraint Jacobian) and
``jac_adj1_<name>`` (exact Hessian). Per call, for each of the three:

- ``VM -> C``: an MX Function with N calls (one per column of its input, as
  the N stages of a transcription), evaluated in casadi's VM, per call,
  less the Python call of that Function (``measure.empty_like``);
- ``C``: the same compiled code called N times by casadi's serial ``map``
  (no VM instruction between the calls): the code itself;
- ``overhead``: the difference, what the VM adds per call;
- ``VM (SX)``: the uncompiled Function (the same graphs, in SX) called N
  times from the VM, for comparison: what compiling saves.

Times are CPU time of this process (one thread), the minimum over rounds of
batches.

  python -m benchmarks.compiled_calls                 # aba of arm7 and panda, N = 500
  python -m benchmarks.compiled_calls --robots arm7 --function rnea --calls 50 --o1
"""

import argparse
import time

import casadi as ca
import numpy as np

import casrbd
from casrbd import codegen
from casrbd.functions import spec
from casrbd.models import load_robot

from .measure import empty_like


def calls(f, n):
    """MX Function X -> [f(X[:, 0]), ..., f(X[:, n-1])]: each column holds f's inputs stacked."""
    sizes = [f.numel_in(i) for i in range(f.n_in())]
    X = ca.MX.sym("X", sum(sizes), n)
    cols = []
    for k in range(n):
        args = ca.vertsplit(X[:, k], np.cumsum([0, *sizes]).tolist())
        args = [ca.reshape(a, f.size_in(i)) for i, a in enumerate(args)]
        cols.append(ca.vertcat(*[ca.vec(y) for y in f.call(args)]))
    return ca.Function("calls_" + f.name(), [X], [ca.horzcat(*cols)])


def cpu_time(call, seconds=0.02):
    """Seconds of this process's CPU per call, over a batch of calls lasting about ``seconds``: CPU
    time, not wall clock, since the machine this was written on is shared (a preempted process
    accrues none)."""
    number = 1
    while True:
        start = time.process_time()
        for _ in range(number):
            call()
        elapsed = time.process_time() - start
        if elapsed > seconds:
            return elapsed / number
        number *= 2


def evaluations(f, X):
    """Callables: N calls of f from the VM (an MX Function, as an NLP holds them), N calls of its code
    by casadi's serial map, and the Python calls of both with nothing computed (to subtract)."""
    n, rows = X.shape[1], np.cumsum([0, *[f.numel_in(i) for i in range(f.n_in())]])
    F, mapped = calls(f, n), f.map(n)
    args = [
        ca.horzcat(*[ca.reshape(ca.DM(X[rows[i] : rows[i + 1], k]), f.size_in(i)) for k in range(n)])
        for i in range(f.n_in())
    ]
    empty_F, empty_mapped = empty_like(F), empty_like(mapped)
    return {
        "vm": lambda: F(X),
        "c": lambda: mapped(*args),
        "vm_empty": lambda: empty_F(X),
        "c_empty": lambda: empty_mapped(*args),
    }


def per_call(f, X, rounds):
    """(VM, C) seconds per call of f: the minimum over ``rounds`` of interleaved measurements, less the
    Python call."""
    timed = evaluations(f, X)
    best = dict.fromkeys(timed, np.inf)
    for _ in range(rounds):
        for k, call in timed.items():
            best[k] = min(best[k], cpu_time(call))
    n = X.shape[1]
    return (best["vm"] - best["vm_empty"]) / n, (best["c"] - best["c_empty"]) / n


def derivatives(f):
    """f, its Jacobian and its adjoint's Jacobian (the contracted Hessian), as casadi takes them."""
    return {"f": f, "jac": f.jacobian(), "jac_adj1": f.reverse(1).jacobian()}


def inputs(f, model, n, rng):
    """A column per call: q (normalised), then every other input at random."""
    cols = []
    for _ in range(n):
        x = [np.asarray(casrbd.random_configuration(model, rng)).ravel()]
        x += [rng.normal(size=f.numel_in(i)) for i in range(1, f.n_in())]
        cols.append(np.concatenate(x))
    return np.stack(cols, axis=1)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", nargs="+", default=["arm7", "panda"])
    parser.add_argument("--function", default="aba")
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=15, help="measurements per figure (the minimum is shown)")
    parser.add_argument("--o1", action="store_true", help="compile with -O1 (faster) instead of the default flags")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"per call of {args.function}, {args.calls} calls per evaluation, microseconds of CPU (min of {args.rounds})")
    print(f"{'robot':<8} {'Function':<9} {'VM -> C':>8} {'C':>8} {'overhead':>9} {'VM (SX)':>9}")
    for robot in args.robots:
        model = load_robot(robot)
        flags = ("-O1",) if args.o1 else codegen.DEFAULT_FLAGS
        compiled = derivatives(casrbd.compiled(model, args.function, flags=flags))
        jacobian = "analytical" if spec(args.function).jacobian else "ad"  # as casrbd.compiled chooses
        original = casrbd.function(model, args.function, jacobian=jacobian)
        interpreted = derivatives(original)
        for what, f in compiled.items():
            X = inputs(f, model, args.calls, rng)
            # the same numbers from both evaluators: the compiled call is what it replaces
            got, want = calls(f, 2)(X[:, :2]), calls(interpreted[what], 2)(X[:, :2])
            assert np.abs(np.array(got - want)).max() <= 1e-9 * max(1.0, np.abs(np.array(want)).max()), what
            vm, c = per_call(f, X, args.rounds)
            sx = per_call(interpreted[what], X, 1)[0]  # one round: it is only a comparison
            name = f.name().replace(original.name(), "f") if what != "f" else "f"
            print(f"{robot:<8} {name:<9} {vm * 1e6:8.2f} {c * 1e6:8.2f} {(vm - c) * 1e6:9.2f} {sx * 1e6:9.2f}")


if __name__ == "__main__":
    main()
