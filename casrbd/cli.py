"""Command line.

``casrbd compare [ROBOT]``: the model, the size of every Function, and for
every derivative method its error against casadi's AD and central finite
differences and its evaluation time in casadi's virtual machine.
``casrbd info [ROBOT]``: the model and the size of the core Functions.
ROBOT is a URDF path, a model shipped with the package (default ``arm7``)
or an example-robot-data robot name.
"""

import argparse
import sys
import timeit

import numpy as np

from .api import difference, integrate, random_configuration
from .functions import function
from .models import DEFAULT_ROBOT, load_robot
from .testing import central_differences, rel_err

CORE_FUNCTIONS = ("rnea", "nonlinear_effects", "generalized_gravity", "crba", "aba", "minverse")
ID_METHODS = (("chain_rule", {}), ("idsva", {}), ("ad", {}))
FD_METHODS = (
    ("chain_rule", {"minv_product": "dmm"}),
    ("chain_rule", {"minv_product": "aza"}),
    ("idsva", {"minv_product": "dmm"}),
    ("idsva", {"minv_product": "aza"}),
    ("idsva", {"minv_product": "ltdl"}),
    ("ad", {}),
)


def vm_time(fun, args, repeat=5):
    """Seconds per call of a Function in casadi's VM (min over batches, Python call included)."""
    timer = timeit.Timer(lambda: fun(*args))
    number, _ = timer.autorange()
    return min(timer.repeat(repeat, number)) / number


def _numeric(fun, *args):
    out = fun(*args)
    return [np.array(o) for o in out] if isinstance(out, tuple) else np.array(out)


def compare(args):
    model = load_robot(args.robot, args.floating_base)
    print(model.summary())
    rng = np.random.default_rng(args.seed)
    q = random_configuration(model, rng)
    v, x = rng.normal(size=model.nv), rng.normal(size=model.nv)
    F = rng.normal(size=(6, model.njoints))
    print(
        f"\nat a random state (seed {args.seed}) with random external forces; errors are relative "
        f"(max |x - ref| / max(1, max |ref|)); VM time per call includes Python's call overhead\n"
    )
    print(f"{'Function':<34s} {'n_instructions':>14s} {'VM time':>10s}")
    for name in CORE_FUNCTIONS:
        fun = function(model, name)
        ins = [q, v, x][: fun.n_in()]
        print(f"{name:<34s} {fun.n_instructions():14d} {vm_time(fun, ins) * 1e6:8.1f} us")
    for kind, methods, plain in (("rnea", ID_METHODS, "rnea"), ("aba", FD_METHODS, "aba")):
        dyn = function(model, plain, f_ext=True)
        fd = central_differences(model, lambda *a, f=dyn: np.array(f(*a)).ravel(), q, v, x, F)
        ref = None
        rows = []
        for method, extra in methods:
            fun = function(model, f"{kind}_derivatives", f_ext=True, method=method, **extra)
            out = _numeric(fun, q, v, x, F)
            if method == "ad":
                ref = out
            rows.append((method + "".join(f"/{v}" for v in extra.values()), fun, out))
        print(f"\n{kind}_derivatives: d/dq, d/dv, d/d{'a' if kind == 'rnea' else 'tau'}")
        print(f"{'method':<22s} {'n_instructions':>14s} {'VM time':>10s} {'err vs AD':>10s} {'err vs FD':>10s}")
        for label, fun, out in rows:
            err_ad = max(rel_err(o, r) for o, r in zip(out, ref))
            err_fd = max(rel_err(o, r) for o, r in zip(out, fd))
            print(
                f"{label:<22s} {fun.n_instructions():14d} {vm_time(fun, [q, v, x, F]) * 1e6:8.1f} us "
                f"{err_ad:10.1e} {err_fd:10.1e}"
            )
    print(
        f"\nmanifold check: |difference(q, integrate(q, v)) - v| = "
        f"{np.max(np.abs(difference(model, q, integrate(model, q, 0.1 * v)) - 0.1 * v)):.1e}"
    )


def info(args):
    model = load_robot(args.robot, args.floating_base)
    print(model.summary())
    print("casadi SX Function sizes (n_instructions):")
    for name in CORE_FUNCTIONS:
        print(f"  {name:<22s} {function(model, name).n_instructions():8d}")


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="casrbd", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, run, text in (
        ("compare", compare, "derivative methods against AD and finite differences"),
        ("info", info, "model summary and Function sizes"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument(
            "robot",
            nargs="?",
            default=DEFAULT_ROBOT,
            help="URDF path, shipped model or example-robot-data name (default: %(default)s)",
        )
        p.add_argument("--floating-base", action="store_true", default=None, help="add a free-flyer root")
        p.add_argument("--seed", type=int, default=0, help="random state (default: %(default)s)")
        p.set_defaults(run=run)
    args = parser.parse_args(argv)
    try:
        args.run(args)
    except (LookupError, ValueError) as e:
        print(f"casrbd: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
