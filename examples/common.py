"""What the examples share beyond casrbd: the command line of the optimal-control examples, printing and
writing their results (the solver's line, --plot, --html) and their plots (stick figures of configurations
and time series, with matplotlib). Robots, problems and simulation are casrbd's (``casrbd.models``,
``casrbd.ocp``, ``casrbd.sim``). Examples import it as ``common`` (run as ``python examples/NAME.py``, their
folder is on the path)."""

import argparse
import inspect
import json
import time

import numpy as np

from casrbd import ocp, viewer
from casrbd.functions import function
from casrbd.spec import choice

SOLO_LEGS = np.array([0, 0.8, -1.6, 0, 0.8, -1.6, 0, -0.8, 1.6, 0, -0.8, 1.6])  # mpc_trot's: HAA, HFE, KFE per leg


# ---- Crocoddyl's gait problems (quadruped_gait, humanoid_walk, gap_crossing: built by casrbd.ocp.legged) ----
def knots_result(model, steps, problem, sol):
    """What a gait example returns: the model, the gait's steps (``knots``), states xs, controls us (a list,
    empty at impulses), contact forces, the stage Functions with their parameters, the solver's stats and
    the largest constraint violation."""
    stages = [(s.function, p) for s, p in zip(problem.stages, problem.parameters)]
    return {
        "model": model,
        "knots": steps,
        "xs": sol.xs,
        "us": sol.us,
        "forces": sol.forces,
        "stages": stages,
        "stats": sol.stats,
        "violation": sol.violation,
    }


def write_knots_html(path, model, knots, xs, robot):
    """The motion of a knot problem as an HTML animation; an impulse knot takes no time, so the state
    after it is shown."""
    t = np.concatenate([[0.0], np.cumsum([k.dt for k in knots[: len(xs) - 1]])])
    keep = np.r_[np.diff(t) > 0, True]
    write_html(path, model, t[keep], xs[keep, : model.nq], robot)


# ---- the command line ----
DERIVATIVE_FLAGS = ("jacobian", "hessian", "compiled", "second_order")  # "compiled_dynamics": --[no-]compiled


def parser(doc, nodes, nodes_help, plot_help, derivatives=DERIVATIVE_FLAGS):
    """The command line the optimal-control examples share (the README's flags): --nodes, the
    ``derivatives`` flags the example takes, --plot, --html, --verbose; the example adds its own.
    "compiled" is --compiled, the NLP as C (off by default); "compiled_dynamics" is --[no-]compiled, the
    dynamics as a C library (on by default)."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--nodes", type=int, default=nodes, help=f"{nodes_help} (default {nodes})")
    if "jacobian" in derivatives:
        p.add_argument("--jacobian", choices=ocp.JACOBIANS, default="analytical")
    if "hessian" in derivatives:
        p.add_argument("--hessian", choices=ocp.HESSIANS, default="exact")
    if "compiled" in derivatives:
        p.add_argument("--compiled", action="store_true", help="the NLP's functions as C code (casadi's jit)")
    if "compiled_dynamics" in derivatives:
        text = "dynamics as C code through casrbd.codegen (default: yes)"
        p.add_argument("--compiled", action=argparse.BooleanOptionalAction, default=True, help=text)
    if "second_order" in derivatives:
        p.add_argument(
            "--second-order", choices=ocp.JACOBIANS, help="analytical (default with the analytical Jacobian) or ad"
        )
    p.add_argument("--plot", metavar="PATH.png", help=plot_help)
    p.add_argument("--html", metavar="PATH.html", help="write the motion as an HTML animation (offline, any browser)")
    p.add_argument("--verbose", action="store_true", help="IPOPT's iteration log")
    p.add_argument("--stats", metavar="PATH.json", help="write the solver statistics and wall time as JSON")
    return p


def arguments(args, function):
    """The keyword arguments of ``function`` that the command line ``args`` holds (by name): what main()
    passes on to the example's solve or run."""
    names = inspect.signature(function).parameters
    return {name: value for name, value in vars(args).items() if name in names}


def call(args, function):
    """``function`` (the example's solve or run) called with the keyword arguments it takes of the command line
    ``args``; with --stats, writes the wall time of the call and the solver's statistics (``result["stats"]``,
    or a closed loop's ``result["solves"]``) as JSON (what benchmarks/ocp.py reads)."""
    start = time.perf_counter()
    result = function(**arguments(args, function))
    if getattr(args, "stats", None):
        stats = {"seconds": time.perf_counter() - start}
        stats.update({k: result[k] for k in ("stats", "solves") if k in result})
        with open(args.stats, "w") as f:
            json.dump(stats, f, default=lambda x: x.item() if hasattr(x, "item") else str(x))
    return result


def modes(args):
    """The derivative modes an example's command line chose, for its summary line."""
    parts = [f"jacobian {args.jacobian}"]
    if hasattr(args, "second_order"):
        default = "analytical" if args.jacobian == "analytical" else "ad"
        parts.append(f"second order {args.second_order or default}")
    if hasattr(args, "hessian"):
        parts.append(f"hessian {args.hessian}")
    if getattr(args, "compiled", False):
        parts.append("compiled")
    return ", ".join(parts)


def finish(args, title, result, plot, robot=None, details=(), notes=()):
    """The end of an optimal-control example's main(): prints ``title``, the ``details`` and derivative
    modes in parentheses, the solver's statistics, then the lines ``notes``; writes what --plot and --html
    ask for (``outputs``); returns the exit status (0: solved)."""
    print(f"{title} ({', '.join([*details, modes(args)])}): {ocp.format_stats(result['stats'])}")
    for line in notes:
        print(line)
    outputs(args, result, plot, robot)
    return 0 if result["stats"]["success"] else 1


def outputs(args, result, plot, robot=None):
    """What --plot and --html ask for: ``plot(result, path)``, and the motion of ``result`` (model, t, q)
    with the visuals of ``robot``."""
    if args.plot:
        plot(result, args.plot)
    if args.html:
        write_html(args.html, result["model"], result["t"], result["q"], robot)


def record_outputs(args, result, plot, robot=None):
    """What --plot and --html ask for of a closed loop: ``plot(result, path)``, and the motion of
    ``result["record"]`` (a ``casrbd.sim.Record``, at most about 500 frames) with the visuals of ``robot``."""
    if args.plot:
        plot(result, args.plot)
    if args.html:
        r = result["record"]
        every = max(1, len(r.t) // 500)
        write_html(args.html, result["model"], r.t[::every], r.q[::every], robot)


def write_html(path, model, t, q, robot=None):
    """An example's motion (times ``t``, configurations ``q``, one per row) as a self-contained HTML
    animation (``casrbd.viewer``) with the visuals of ``robot`` (a name or file; None: a stick figure)."""
    viewer.write_html(path, model, t, q, robot)
    print(f"wrote {path}: open it in a browser")


# ---- plots ----
def skeleton(model, q, frames=()):
    """Line segments (pairs of world points) of a stick figure: parent joint to joint,
    and joint to each named frame (feet, tool); from ``forward_kinematics``/``frame_placement``."""
    oMi = function(model, "forward_kinematics")(q).full()
    origin = [oMi[:3, 4 * i + 3] for i in range(model.njoints)]
    # a fixed base hangs from the world origin; a floating base does not
    segments = [
        (origin[p] if p >= 0 else np.zeros(3), origin[i])
        for i, (p, j) in enumerate(zip(model.parents, model.joints))
        if p >= 0 or not j.full_motion
    ]
    for name in frames:
        frame = model.frames[model.frame_index(name)]
        p = function(model, "frame_placement", frame=name)(q).full()[:3, 3]
        segments.append((origin[frame.joint], p))
    return segments


def snapshot_path(path):
    """Where an example writes the snapshots of its plot ``PATH.png``: ``PATH_snapshots.png``."""
    path = str(path)
    return (path[:-4] if path.endswith(".png") else path) + "_snapshots.png"


def picks(n, count):
    """``count`` indices from 0 to ``n`` - 1, evenly spaced: which configurations a plot draws."""
    return np.linspace(0, n - 1, count).round().astype(int)


def plot_motion(path, result, series, title, snapshots, snapshots_title=None, **options):
    """``series`` over the times ``result["t"]`` at ``path`` (``plot_series`` with ``title``), and
    ``snapshots`` of the configurations ``result["q"]``, evenly spaced, as stick figures of
    ``result["model"]`` at ``PATH_snapshots.png`` (``plot_snapshots`` with ``snapshots_title`` and its
    ``options``)."""
    plot_series(path, result["t"], series, title)
    qs = result["q"][picks(len(result["q"]), snapshots)]
    plot_snapshots(result["model"], qs, snapshot_path(path), title=snapshots_title, **options)


def plot_snapshots(model, qs, path, frames=(), title=None, planes=("xz", "xy"), strip=False, labels=None):
    """Stick figures of the configurations ``qs`` in one figure, written as a PNG to ``path``.

    Overlaid (earlier ones lighter) in one panel per projection plane, or with
    ``strip=True`` one panel per configuration (titled by ``labels``), four to
    a row, on ``planes[0]``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for plane in planes:
        choice("planes entry", plane, ("xz", "yz", "xy"))
    figures = [skeleton(model, q, frames) for q in qs]
    panels = [(planes[0], [k]) for k in range(len(qs))] if strip else [(p, range(len(qs))) for p in planes]
    cols = min(4, len(panels)) if strip else len(panels)
    rows = -(-len(panels) // cols)
    size = (3.2, 2.4) if strip else (5, 4.5)
    fig, axs = plt.subplots(
        rows, cols, figsize=(size[0] * cols, size[1] * rows + 0.5), squeeze=False, sharex=strip, sharey=strip
    )
    for ax in axs.flat[len(panels) :]:
        ax.set_visible(False)
    for n, (ax, (plane, picks)) in enumerate(zip(axs.flat, panels)):
        i, j = "xyz".index(plane[0]), "xyz".index(plane[1])
        for k in picks:
            shade = plt.cm.viridis_r(0.15 + 0.85 * k / max(len(figures) - 1, 1))
            for p0, p1 in figures[k]:
                ax.plot([p0[i], p1[i]], [p0[j], p1[j]], "-o", color=shade, ms=2, lw=1.5)
        if plane[1] == "z":
            ax.axhline(0, color="0.6", lw=0.8)  # the ground
        if strip and labels is not None:
            ax.set_title(labels[n], fontsize=9)
        ax.set_aspect("equal", adjustable="box" if strip else "datalim")
        ax.set_xlabel(f"{plane[0]} [m]")
        ax.set_ylabel(f"{plane[1]} [m]")
        ax.grid(alpha=0.3)
    fig.suptitle(title or f"{model.name}: {len(qs)} snapshots")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_series(path, t, series, title=""):
    """One subplot per entry of ``series`` (label -> array of rows over time ``t``), as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axs = plt.subplots(len(series), 1, figsize=(7, 2.2 * len(series)), sharex=True, squeeze=False)
    for ax, (label, y) in zip(axs[:, 0], series.items()):
        y = np.asarray(y)
        ax.plot(t[: len(y)], y, lw=1)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axs[-1, 0].set_xlabel("t [s]")
    axs[0, 0].set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
