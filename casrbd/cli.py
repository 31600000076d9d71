"""Command line.

``casrbd compare [ROBOT]``: the model, the size of every Function, and for
every derivative method its error against casadi's AD and central finite
differences and its evaluation time in casadi's virtual machine (a short
timing by default, a few seconds in all; ``--time`` times carefully and adds
the compiled code's time through ``casrbd.fast`` and, when Pinocchio is
installed, Pinocchio's through its Python bindings).
``casrbd info [ROBOT]``: the model, its frames and limits (those that look like
placeholders of the description marked "placeholder?": ``Model.placeholder_limits``),
the reference configurations of its SRDF (robots of ``casrbd.models.EXAMPLE_SRDFS``)
and the size of the core Functions.
``casrbd cache``: where the disk cache (``casrbd.cache``) is and what it holds,
per kind (Functions, compiled libraries, GPU kernel builds, benchmark builds, partial builds);
``--clear`` removes its entries (``--unused-days N``: those not used for N
days), and nothing else: only a root with casrbd's ``CACHEDIR.TAG`` is cleared.
Entries of older casrbd or casadi versions are never loaded again and stay
until cleared; those of layouts before ``casrbd.cache`` are not casrbd's
entries any more (remove them by hand).
``casrbd solve-many SPEC.json --variations FILE --dataset DIR``: the problem of a
spec (``casrbd.ocp.many.ProblemSpec`` as JSON) solved for every item of a
variations table (.npz of columns, or .json: a list of objects or an object of
lists) into a dataset directory, on a local Dask cluster or ``--scheduler ADDR``;
a rerun adds only the missing items.
``casrbd blasfeo``: which instruction set the blasfeo behind casadi's fatrop was
built for (casadi's wheels: any x86-64); ``--install LIB`` puts a blasfeo built
for this CPU in its place (checked, then rolled back unless fatrop solves a tiny
problem with it; the wheel's kept), ``--restore`` the wheel's, checked by its
SHA-256 (``casrbd.ocp.blasfeo``).
ROBOT is a URDF or MJCF path, a model shipped with the package (default
``arm7``) or an example-robot-data robot name (``casrbd.models.EXAMPLE_ROBOTS``:
every name ``example_robot_data.load`` takes).
"""

import argparse
import json
import sys
import timeit
from pathlib import Path

import numpy as np

from . import __version__
from . import cache as store
from .api import difference, integrate, random_configuration
from .functions import function
from .loaders.srdf import load_srdf
from .loaders.xml import short_path
from .models import DEFAULT_ROBOT, EXAMPLE_SRDFS, load_robot, robot_format, robot_path, srdf_path
from .ocp import blasfeo
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
# casrbd Function -> Pinocchio's function of the same quantity (called with model, data, then the inputs)
PINOCCHIO = {
    "rnea": "rnea",
    "nonlinear_effects": "nonLinearEffects",
    "generalized_gravity": "computeGeneralizedGravity",
    "crba": "crba",
    "aba": "aba",
    "minverse": "computeMinverse",
    "rnea_derivatives": "computeRNEADerivatives",
    "aba_derivatives": "computeABADerivatives",
}


def call_time(call, careful=False):
    """Seconds per call of a Python callable: the minimum over 5 batches of about 0.2 s (careful), else
    one batch of about 10 ms."""
    timer = timeit.Timer(call)
    if careful:
        number, _ = timer.autorange()
        return min(timer.repeat(5, number)) / number
    number, elapsed = 1, timer.timeit(1)
    while elapsed < 0.01:
        number = max(2 * number, int(0.012 * number / max(elapsed, 1e-9)))
        elapsed = timer.timeit(number)
    return elapsed / number


def vm_time(fun, args, careful=False):
    """Seconds per call of a Function in casadi's VM (the Python call included)."""
    return call_time(lambda: fun(*args), careful)


class Timings:
    """The time columns of the tables: casadi's VM, and with ``careful`` the compiled code (casrbd.fast,
    a checked call returning new arrays) and Pinocchio's Python bindings on the same robot."""

    def __init__(self, path, model, careful, seed):
        self.careful, self.pinocchio, self.note = careful, None, ""
        self.header = f"{'VM time':>10s}" + (f" {'compiled':>10s} {'Pinocchio':>10s}" if careful else "")
        if careful:
            self.pinocchio, self.note = _pinocchio(path, model, seed)

    def row(self, model, name, fun, args, **options):
        """The time columns of Function ``name`` (``fun``, with options) at ``args`` (q, v, x[, f_ext])."""
        text = f"{vm_time(fun, args, self.careful) * 1e6:8.1f} us"
        if not self.careful:
            return text
        from . import fast

        f_ext = len(args) == 4
        compiled = fast.function(model, name, f_ext=f_ext, **options)
        text += f" {call_time(lambda: compiled(*args), True) * 1e6:8.2f} us"
        if self.pinocchio is None:
            return text + f" {'-':>10s}"
        pm, pd, state = self.pinocchio
        call = getattr(__import__("pinocchio"), PINOCCHIO[name])
        inputs = state[: len(args) - f_ext]
        return text + f" {call_time(lambda: call(pm, pd, *inputs), True) * 1e6:8.2f} us"


def _pinocchio(path, model, seed):
    """(Pinocchio's model, data and a random state of it) of the robot file, or None, and a note."""
    try:
        import pinocchio as pin
    except ImportError:
        return None, "Pinocchio is not installed: no Pinocchio times"
    if robot_format(path) == "mjcf":
        pm = pin.buildModelFromMJCF(path)
    elif model.joints and model.joints[0].type == "floating" and model.names[0] == "root_joint":
        pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    else:
        pm = pin.buildModelFromUrdf(path)
    if pm.nv != model.nv:
        return None, f"Pinocchio's parser gives nv = {pm.nv} for this file (casrbd: {model.nv}): no Pinocchio times"
    rng = np.random.default_rng(seed)
    q = pin.integrate(pm, pin.neutral(pm), rng.normal(size=pm.nv))
    note = (
        "compiled: casrbd.fast (a checked call returning new arrays); Pinocchio: its own parse of the file, "
        "at a random state of its own, through its Python bindings, without external forces"
    )
    return (pm, pm.createData(), (q, rng.normal(size=pm.nv), rng.normal(size=pm.nv))), note


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
    timings = Timings(robot_path(args.robot)[0], model, args.time, args.seed)
    print(
        f"\nat a random state (seed {args.seed}) with random external forces; errors are relative "
        f"(max |x - ref| / max(1, max |ref|)); times per call include Python's call "
        + ("(careful timing)" if args.time else "(a short timing: --time for careful ones, compiled and Pinocchio's)")
    )
    if args.time:
        print(timings.note)
    print(f"\n{'Function':<34s} {'n_instructions':>14s} {timings.header}")
    for name in CORE_FUNCTIONS:
        fun = function(model, name)
        ins = [q, v, x][: fun.n_in()]
        print(f"{name:<34s} {fun.n_instructions():14d} {timings.row(model, name, fun, ins)}")
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
            rows.append((method + "".join(f"/{v}" for v in extra.values()), fun, out, {"method": method, **extra}))
        print(f"\n{kind}_derivatives: d/dq, d/dv, d/d{'a' if kind == 'rnea' else 'tau'}")
        print(f"{'method':<22s} {'n_instructions':>14s} {timings.header} {'err vs AD':>10s} {'err vs FD':>10s}")
        for label, fun, out, options in rows:
            err_ad = max(rel_err(o, r) for o, r in zip(out, ref))
            err_fd = max(rel_err(o, r) for o, r in zip(out, fd))
            row = timings.row(model, f"{kind}_derivatives", fun, [q, v, x, F], **options)
            print(f"{label:<22s} {fun.n_instructions():14d} {row} {err_ad:10.1e} {err_fd:10.1e}")
    print(
        f"\nmanifold check: |difference(q, integrate(q, v)) - v| = "
        f"{np.max(np.abs(difference(model, q, integrate(model, q, 0.1 * v)) - 0.1 * v)):.1e}"
    )


def info(args):
    model = load_robot(args.robot, args.floating_base)
    print(model.summary())
    print(f"frames ({len(model.frames)}; name, joint):")
    for f in model.frames:
        print(f"  {f.name:<40s} {model.names[f.joint] if f.joint >= 0 else 'world'}")
    print("limits per joint: position [rad or m] lower, upper; velocity [rad/s or m/s]; effort [N m or N]:")
    placeholders = model.placeholder_limits()
    for i, name in enumerate(model.names):
        q, v = model.q_slice(i), model.v_slice(i)
        flag = f"  placeholder? {', '.join(placeholders[name])}" if name in placeholders else ""
        print(
            f"  {name:<32s} {_numbers(model.lower[q])} {_numbers(model.upper[q])} "
            f"{_numbers(model.velocity_limit[v])} {_numbers(model.effort_limit[v])}{flag}"
        )
    if placeholders:
        print(
            "  placeholder?: likely not the robot's (on a revolute joint, a position limit beyond a full turn, "
            "a velocity or effort bound of 1000 or more; casrbd.Model.placeholder_limits)"
        )
    if args.robot in EXAMPLE_SRDFS:
        path = srdf_path(args.robot)
        poses = load_srdf(path, model, strict=False).reference_configurations
        print(f"reference configurations ({short_path(path)}; q):")
        for pose, q in poses.items():
            print(f"  {pose:<24s} {_numbers(q)}")
    print("casadi SX Function sizes (n_instructions):")
    for name in CORE_FUNCTIONS:
        print(f"  {name:<22s} {function(model, name).n_instructions():8d}")


def cache(args):
    root = store.cache_dir()
    if args.unused_days is not None and not args.clear:
        raise ValueError("--unused-days selects what --clear removes: give both")
    if args.clear:
        removed = store.prune(args.unused_days, root)
        print(f"{root}: removed {len(removed)} entries, {_megabytes(sum(e.size for e in removed))}")
        return
    entries = store.entries(root)
    print(f"{root}: {len(entries)} entries, {_megabytes(sum(e.size for e in entries))}")
    for kind in [*store.KINDS, "partial"]:
        some = [e for e in entries if e.kind == kind]
        if some:
            size, idle = _megabytes(sum(e.size for e in some)), max(e.idle for e in some) / 86400
            print(f"  {kind:9} {len(some):5} {size:>10}  oldest use {idle:.1f} days ago")


def blasfeo_command(args):
    if args.install and args.restore:
        raise ValueError("--install and --restore: give one")
    if args.install:
        path = blasfeo.install(args.install)
        print(f"installed {args.install} as {path} (fatrop solved a check problem with it; the wheel's kept beside it)")
    elif args.restore:
        print(f"restored the wheel's blasfeo: {blasfeo.restore()}")
    path, built, cpu, wheel = blasfeo.status()
    origin = "the wheel's" if wheel else "installed by casrbd blasfeo --install"
    target = " ".join(sorted(built)) or "any x86-64 (no AVX, no FMA)"
    print(f"{path}: {origin}, built for {target}; this CPU has {' '.join(sorted(cpu or ())) or 'unknown features'}")
    if not built and cpu and {"AVX2", "FMA"} <= cpu:
        print(
            "fatrop's Riccati recursion runs faster with blasfeo built for the CPU (benchmarks/README.md): "
            "build blasfeo "
            "(github.com/giaf/blasfeo, the version casadi ships, `make shared_library`) and run "
            "casrbd blasfeo --install lib/libblasfeo.so"
        )


def _seed(text):
    """argparse's type of --seed: its message is printed after the option's name."""
    try:
        seed = int(text)
    except ValueError:
        seed = -1
    if seed < 0:
        raise argparse.ArgumentTypeError(f"an integer >= 0 expected, got {text!r}")
    return seed


def solve_many_command(args):
    from .ocp import many

    path = Path(args.variations)
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as npz:
            variations = {k: npz[k] for k in npz.files}
    elif path.suffix == ".json":
        variations = json.loads(path.read_text())
    else:
        raise ValueError(f"--variations {path}: a .npz or .json file")
    store = many.solve_many(
        many.ProblemSpec.load(args.spec),
        variations,
        args.dataset,
        client=args.scheduler,
        time_limit=args.time_limit,
        gains=args.gains,
        progress=not args.quiet,
        workers=args.workers,
        retry=args.retry,
    )
    print(store.summary())


def _megabytes(size):
    return f"{size / 1e6:.1f} MB"


def _numbers(x):
    return "[" + " ".join(f"{value:.4g}" for value in x) + "]"


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="casrbd", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"casrbd {__version__}")
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
            help="URDF or MJCF path, shipped model or example-robot-data name (default: %(default)s)",
        )
        p.add_argument("--floating-base", action="store_true", default=None, help="add a free-flyer root")
        p.add_argument("--seed", type=_seed, default=0, help="random state, an integer >= 0 (default: %(default)s)")
        if name == "compare":
            p.add_argument(
                "--time",
                action="store_true",
                help="careful timing, plus compiled code (casrbd.fast, compiles every Function once) and Pinocchio",
            )
        p.set_defaults(run=run)
    p = sub.add_parser("cache", help="the disk cache (Functions, libraries, GPU kernels): where, how large; --clear")
    p.add_argument("--clear", action="store_true", help="remove entries (all, or those of --unused-days)")
    p.add_argument("--unused-days", type=float, metavar="N", help="with --clear: only entries not used for N days")
    p.set_defaults(run=cache)
    p = sub.add_parser("blasfeo", help="the blasfeo of casadi's fatrop: what it was built for; --install, --restore")
    p.add_argument("--install", metavar="LIB", help="a blasfeo shared library built for this CPU, to load instead")
    p.add_argument("--restore", action="store_true", help="load the wheel's blasfeo again")
    p.set_defaults(run=blasfeo_command)
    p = sub.add_parser("solve-many", help="a problem spec solved for a table of variations into a dataset, on Dask")
    p.add_argument("spec", help="the problem spec, JSON: builder, parameters, solver")
    p.add_argument("--variations", required=True, help=".npz (columns) or .json (rows or columns) of the items")
    p.add_argument("--dataset", required=True, help="the dataset directory (created, or resumed)")
    p.add_argument("--scheduler", metavar="ADDR", help="a Dask scheduler's address (default: a local cluster)")
    p.add_argument("--workers", type=int, help="local cluster: worker processes (default: one per core)")
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds per solve (default: %(default)s)")
    p.add_argument("--gains", action="store_true", help="store the feedback gains of each solution")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.add_argument(
        "--retry", action="append", default=[], metavar="STATUS", help="solve again the items unsolved with STATUS"
    )
    p.set_defaults(run=solve_many_command)
    args = parser.parse_args(argv)
    try:
        args.run(args)
    except (LookupError, ValueError, OSError, ImportError) as e:  # one line, naming the robot or the extra
        print(f"casrbd: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
