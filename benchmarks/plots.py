"""PNG plots of the stored results (matplotlib, no display needed)."""

import matplotlib

matplotlib.use("Agg")  # files only: no display on CI machines
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import NullFormatter  # noqa: E402

from .accuracy import KINDS, max_error  # noqa: E402
from .pinocchio_timing import net_time  # noqa: E402
from .scaling import METHODS, series  # noqa: E402
from .table1 import ENTRIES  # noqa: E402

TREE_STYLE = {"serial": "-", "bf2": "-.", "bf5": "--"}
RATIO_ENTRIES = (
    "ID",
    "dID chain_rule",
    "dID idsva",
    "dID ad",
    "FD",
    "dFD chain_rule/dmm",
    "dFD idsva/dmm",
    "dFD idsva/aza",
    "dFD idsva/ltdl",
    "dFD ad",
    "Minv",
    "Minv ldl",
)


def _legend(ax, **options):
    """A legend when something was drawn with a label (a part may have no compiled times)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(**options)


def _save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table1_ratios(table, path):
    """Compiled time / Pinocchio's (net of binding overhead), per robot and entry."""
    robots = list(table)
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(robots)), 4.5))
    width = 0.8 / len(RATIO_ENTRIES)
    for j, key in enumerate(RATIO_ENTRIES):
        xs, ys = [], []
        for i, robot in enumerate(robots):
            rec = table[robot]
            e = rec["entries"].get(key, {})
            net = net_time(rec["pinocchio"][ENTRIES[key].pinocchio]) if "c_min" in e else None
            if net:
                xs.append(i + (j - len(RATIO_ENTRIES) / 2) * width)
                ys.append(e["c_min"] / net)
        ax.bar(xs, ys, width, label=key, color=plt.cm.tab20(j))
    ax.axhline(1, color="k", lw=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(robots)), robots, rotation=20)
    ax.set_ylabel("compiled / Pinocchio (net), min times")
    _legend(ax, fontsize=7, ncol=2)
    _save(fig, path)


def _trees(scaling):
    return sorted({rec["tree"] for rec in scaling.values()})


def scaling_instructions(scaling, path):
    fig, ax = plt.subplots(figsize=(7, 5))
    for j, key in enumerate(METHODS):
        for tree in _trees(scaling):
            pts = series(scaling, tree, key, "instructions")
            if pts:
                ax.loglog(
                    *zip(*pts),
                    TREE_STYLE.get(tree, ":"),
                    marker="o",
                    ms=3,
                    color=plt.cm.tab10(j),
                    label=f"{key} {tree}",
                )
    ax.set_xlabel("N (bodies)")
    ax.set_ylabel("n_instructions()")
    _legend(ax, fontsize=6, ncol=2)
    _save(fig, path)


def scaling_time(scaling, path):
    """Compiled time of each method and Pinocchio's net time, ∂ID and ∂FD side by side."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for ax, prefix, kind in zip(axes, ("dID", "dFD"), ("rnea_derivatives", "aba_derivatives")):
        for tree in _trees(scaling):
            for j, key in enumerate(METHODS):
                pts = series(scaling, tree, key, "c_min")
                if key.startswith(prefix) and pts:
                    ax.loglog(
                        *zip(*[(n, t * 1e6) for n, t in pts]),
                        TREE_STYLE.get(tree, ":"),
                        marker="o",
                        ms=3,
                        color=plt.cm.tab10(j),
                        label=f"{key} {tree}",
                    )
            pin = sorted(
                (r["N"], 1e6 * net_time(r["pinocchio"][kind]))
                for r in scaling.values()
                if r["tree"] == tree and net_time(r["pinocchio"][kind])
            )
            if pin:
                ax.loglog(*zip(*pin), TREE_STYLE.get(tree, ":"), color="k", label=f"Pinocchio {tree} (net)")
        ax.set_xlabel("N (bodies)")
        ax.set_ylabel("µs per call (min)")
        ax.set_title(f"{'∂ID' if prefix == 'dID' else '∂FD'}: compiled casadi vs Pinocchio")
        _legend(ax, fontsize=6)
    _save(fig, path)


def dmm_vs_aza(scaling, path):
    """AZA / DMM and LTDL / DMM ratios of graph size and compiled time (below 1: the other product wins)."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, field, label in zip(axes, ("instructions", "c_min"), ("instructions", "compiled time")):
        for other, marker in (("aza", "o"), ("ltdl", "s")):
            for tree in _trees(scaling):
                dmm = dict(series(scaling, tree, "dFD idsva/dmm", field))
                x = dict(series(scaling, tree, f"dFD idsva/{other}", field))
                both = sorted(set(dmm) & set(x))
                if both:
                    ax.semilogx(
                        both,
                        [x[n] / dmm[n] for n in both],
                        TREE_STYLE.get(tree, ":"),
                        marker=marker,
                        label=f"{other.upper()} {tree}",
                    )
        ax.axhline(1, color="k", lw=0.8)
        ax.xaxis.set_minor_formatter(NullFormatter())  # log axis over less than a decade: no crowded labels
        ax.set_xlabel("N (bodies)")
        ax.set_ylabel(f"product / DMM {label}")
        _legend(ax)
    _save(fig, path)


def accuracy(acc, path):
    """Error against AD vs step size (random state) and the residue of ∂/∂v at rest; analytical as lines."""
    fig, axes = plt.subplots(len(acc), 2, figsize=(11, 4 * len(acc)), squeeze=False)
    for row, (robot, rec) in zip(axes, acc.items()):
        for ax, kind in zip(row, KINDS):
            for scheme, color in (("central", "C0"), ("forward", "C1")):
                ax.loglog(
                    rec["steps"],
                    [max_error(e) for e in rec["states"]["random"][kind][scheme]],
                    color=color,
                    marker="o",
                    ms=3,
                    label=f"{scheme}: error (random state)",
                )
                rest = [max(e["max_abs_dv"], 1e-18) for e in rec["states"]["rest"][kind][scheme]]
                ax.loglog(rec["steps"], rest, "--", color=color, label=f"{scheme}: max |∂/∂v| at rest")
            for j, (key, e) in enumerate(rec["states"]["random"][kind]["analytical"].items()):
                ax.axhline(max(max_error(e), 1e-18), color=plt.cm.Dark2(j), lw=0.8, ls=":", label=key)
            ax.set_xlabel("finite-difference step h")
            ax.set_ylabel("error vs AD")
            ax.set_title(f"{robot}: {kind} derivatives")
            _legend(ax, fontsize=6)
    _save(fig, path)


def write_all(results, out):
    if results["table1"]:
        table1_ratios(results["table1"], out / "table1_ratios.png")
    if results["scaling"]:
        scaling_instructions(results["scaling"], out / "scaling_instructions.png")
        scaling_time(results["scaling"], out / "scaling_time.png")
        dmm_vs_aza(results["scaling"], out / "dmm_vs_aza.png")
    if results["accuracy"]:
        accuracy(results["accuracy"], out / "accuracy.png")
