"""What the examples share beyond casrbd: the robots they load, the friction cones, and their plots
(stick figures of configurations and time series, with matplotlib), so that each example reads top to
bottom as its problem. Examples import it as ``common`` (run as ``python examples/NAME.py``, their folder
is on the path)."""

import argparse
import xml.etree.ElementTree as ET

import numpy as np

import casrbd
from casrbd import ocp, viewer
from casrbd.functions import function
from casrbd.models import robot_path
from casrbd.spec import choice

ARM_TOOL = {"panda": "panda_hand_tcp", "arm7": "tool"}
SOLO_FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
SOLO_LEGS = np.array([0, 0.8, -1.6, 0, 0.8, -1.6, 0, -0.8, 1.6, 0, -0.8, 1.6])  # HAA, HFE, KFE per leg


def load_arm():
    """(model, limits, tool frame) of the Panda arm (fingers fixed), else arm7; ``limits``:
    dict of the model's lower, upper, velocity and effort arrays over the joints (the URDF's)."""
    try:
        name, path = "panda", robot_path("panda")[0]
    except LookupError:  # example-robot-data is not installed
        name, path = "arm7", robot_path("arm7")[0]
    root = ET.parse(path).getroot()
    for joint in root.iter("joint"):
        if "finger" in joint.get("name"):
            joint.set("type", "fixed")
            for mimic in joint.findall("mimic"):
                joint.remove(mimic)
    model = casrbd.load_urdf(ET.tostring(root, encoding="unicode"))
    limits = {
        "lower": model.lower,
        "upper": model.upper,
        "velocity": model.velocity_limit,
        "effort": model.effort_limit,
    }
    return model, limits, ARM_TOOL[name]


def solo12_standing(model, x=0.0):
    """Solo12's standing configuration (knees bent) with the feet on the ground (z = 0), base at ``x``."""
    q = np.r_[0, 0, 0, 0, 0, 0, 1, SOLO_LEGS]
    q[2] = -min(casrbd.frame_placement(model, q, f)[2, 3] for f in SOLO_FEET)
    q[0] = x
    return q


def schedule(nodes, phases):
    """The phase index of each of ``nodes`` equal intervals and their dt, for ``phases`` a sequence of
    (anything, seconds)."""
    duration = sum(s for _, s in phases)
    ends = np.cumsum([s for _, s in phases]) / duration * nodes
    return np.searchsorted(ends, np.arange(nodes) + 0.5), duration / nodes


def friction_pyramid(opti, f, mu):
    """Forces ``f`` (3 x k, world axes, z up) pushing (f_z >= 0) inside the linearised friction cone
    |f_x|, |f_y| <= mu f_z."""
    opti.subject_to(f[2, :] >= 0)
    for k in (0, 1):
        opti.subject_to(opti.bounded(-mu * f[2, :], f[k, :], mu * f[2, :]))


DERIVATIVE_FLAGS = ("jacobian", "hessian", "compiled", "second_order")


def parser(doc, nodes, nodes_help, plot_help, derivatives=DERIVATIVE_FLAGS):
    """The command line the optimal-control examples share (the README's flags): --nodes, the
    ``derivatives`` flags the example takes, --plot, --html, --verbose; the example adds its own."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--nodes", type=int, default=nodes, help=f"{nodes_help} (default {nodes})")
    if "jacobian" in derivatives:
        p.add_argument("--jacobian", choices=ocp.JACOBIANS, default="analytical")
    if "hessian" in derivatives:
        p.add_argument("--hessian", choices=ocp.HESSIANS, default="exact")
    if "compiled" in derivatives:
        p.add_argument("--compiled", action="store_true", help="the NLP's functions as C code (casadi's jit)")
    if "second_order" in derivatives:
        p.add_argument(
            "--second-order", choices=ocp.JACOBIANS, help="analytical (default with the analytical Jacobian) or ad"
        )
    p.add_argument("--plot", metavar="PATH.png", help=plot_help)
    p.add_argument("--html", metavar="PATH.html", help="write the motion as an HTML animation (offline, any browser)")
    p.add_argument("--verbose", action="store_true", help="IPOPT's iteration log")
    return p


def outputs(args, result, plot, robot=None):
    """What --plot and --html ask for: ``plot(result, path)``, and the motion of ``result`` (model, t, q)
    with the visuals of ``robot``."""
    if args.plot:
        plot(result, args.plot)
    if args.html:
        write_html(args.html, result["model"], result["t"], result["q"], robot)


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


def write_html(path, model, t, q, robot=None):
    """An example's motion (times ``t``, configurations ``q``, one per row) as a self-contained HTML
    animation (``casrbd.viewer``) with the visuals of ``robot`` (a name or file; None: a stick figure)."""
    viewer.write_html(path, model, t, q, robot)
    print(f"wrote {path}: open it in a browser")


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
