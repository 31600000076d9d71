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

Times are the minimum over repeated batches (wall clock, one thread).

  python -m benchmarks.compiled_calls                 # aba of arm7 and panda, N = 100
  python -m benchmarks.compiled_calls --robots arm7 --function rnea --calls 50 --o1
"""

import argparse

import casadi as ca
import numpy as np

import casrbd
from casrbd import codegen
from casrbd.models import load_robot

from .measure import Settings, empty_like, python_time


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


def per_call_vm(f, X, settings):
    """Seconds per call of f from the VM: N calls in one MX Function, less its Python call."""
    F = calls(f, X.shape[1])
    empty = empty_like(F)
    return (python_time(lambda: F(X), settings)[0] - python_time(lambda: empty(X), settings)[0]) / X.shape[1]


def per_call_c(f, X, settings):
    """Seconds per call of f's code, N calls through casadi's serial map of f."""
    n, rows = X.shape[1], np.cumsum([0, *[f.numel_in(i) for i in range(f.n_in())]])
    mapped = f.map(n)
    args = [
        ca.horzcat(*[ca.reshape(ca.DM(X[rows[i] : rows[i + 1], k]), f.size_in(i)) for k in range(n)])
        for i in range(f.n_in())
    ]
    empty = empty_like(mapped)
    return (python_time(lambda: mapped(*args), settings)[0] - python_time(lambda: empty(*args), settings)[0]) / n


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
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--o1", action="store_true", help="compile with -O1 (faster) instead of the default flags")
    args = parser.parse_args(argv)
    settings = Settings(repeat=7, batch_seconds=0.05)
    rng = np.random.default_rng(0)
    print(f"per call of {args.function}, {args.calls} calls per evaluation, microseconds (min over batches)")
    print(f"{'robot':<8} {'Function':<9} {'VM -> C':>8} {'C':>8} {'overhead':>9} {'VM (SX)':>9}")
    for robot in args.robots:
        model = load_robot(robot)
        flags = ("-O1",) if args.o1 else codegen.DEFAULT_FLAGS
        compiled = derivatives(casrbd.compiled(model, args.function, flags=flags))
        original = casrbd.function(model, args.function, jacobian="analytical")
        interpreted = derivatives(original)
        X = {}
        for what, f in compiled.items():
            X[what] = inputs(f, model, args.calls, rng)
            # the same numbers from both evaluators: the compiled call is what it replaces
            got, want = calls(f, 2)(X[what][:, :2]), calls(interpreted[what], 2)(X[what][:, :2])
            assert np.abs(np.array(got - want)).max() <= 1e-9 * max(1.0, np.abs(np.array(want)).max()), what
            vm, c = per_call_vm(f, X[what], settings), per_call_c(f, X[what], settings)
            sx = per_call_vm(interpreted[what], X[what], settings)
            name = f.name().replace(original.name(), "f") if what != "f" else "f"
            print(f"{robot:<8} {name:<9} {vm * 1e6:8.2f} {c * 1e6:8.2f} {(vm - c) * 1e6:9.2f} {sx * 1e6:9.2f}")


if __name__ == "__main__":
    main()
