"""Scaling with the number of bodies N, after Singh, Russell & Wensing (RA-L 2022) Figs. 2, 4, 6 and 7.

Trees of N revolute joints (random axes and placements): a serial chain and
complete trees of branching factor 2 and 5 (``casrbd.models.random_tree``).
For each N: the graph size, build time and compiled time of the ∂ID methods
(IDSVA, chain rule, AD) and of ∂FD by IDSVA with the DMM and AZA products,
next to Pinocchio's computeRNEADerivatives and computeABADerivatives.

A graph is not built when its size, extrapolated from the two previous N of
the same series (log-log), exceeds ``limit`` (5 million instructions by
default; at most a million for AD, the reference only while it is cheap).
The chain rule and AD grow as about N^2 on a chain with a large constant,
and building a graph of millions of SX nodes takes minutes and gigabytes.
Graphs above the compile cap are built and evaluated in the VM but not
compiled.
"""

import math
import time

from casrbd.models import random_tree

from .measure import measure, rel_err
from .pinocchio_timing import PinocchioTwin
from .table1 import ENTRIES, TOLERANCE, random_state

TREES = {"serial": 1, "bf2": 2, "bf5": 5}
QUICK_TREES = ("serial", "bf2")
GRID = (2, 5, 10, 20, 50, 100, 200)
QUICK_GRID = (2, 3)
METHODS = ("dID idsva", "dID chain_rule", "dID ad", "dFD idsva/dmm", "dFD idsva/aza", "dFD idsva/ltdl")
LIMIT = 5e6
LIMITS = {"dID ad": 1e6}


def known_sizes(scaling, tree):
    """method -> {N: instructions} of the stored records of ``tree`` (so that a resumed run extrapolates)."""
    return {key: dict(series(scaling, tree, key, "instructions")) for key in METHODS}


def predicted_size(sizes, n):
    """Instructions at N = n extrapolated from the two largest N below n in {N: instructions}, or None."""
    below = sorted((m, s) for m, s in sizes.items() if m < n)
    if len(below) < 2:
        return None
    (n0, s0), (n1, s1) = below[-2:]
    slope = math.log(s1 / s0) / math.log(n1 / n0)
    return s1 * (n / n1) ** slope


def run_tree(tree, n, settings, full, limit, sizes, log=print):
    """The record of one tree at N = n; ``sizes`` (from ``known_sizes``) gets the sizes built."""
    model = random_tree(n, ("revolute",), branching=TREES[tree], seed=0, name=f"{tree}_{n}")
    q, v, x = random_state(model)
    twin = PinocchioTwin(model.name, model, q, v, x)
    rec = {
        "tree": tree,
        "N": n,
        "nv": model.nv,
        "methods": {},
        "pinocchio": {kind: twin.time(kind, settings) for kind in ("rnea_derivatives", "aba_derivatives")},
    }
    for key in METHODS:
        guess, most = predicted_size(sizes[key], n), min(limit, LIMITS.get(key, limit))
        if guess is not None and guess > most:
            rec["methods"][key] = {"not_built": f"predicted {guess:.2g} instructions > limit {most:.0g}"}
            continue
        entry = ENTRIES[key]
        start = time.perf_counter()
        fun = entry.build(model)
        build_seconds = time.perf_counter() - start
        sizes[key][n] = fun.n_instructions()
        r, out = measure(fun, [q, v, x], settings, full)
        r["build_seconds"] = build_seconds
        r["err_vs_pinocchio"] = max(rel_err(o, p) for o, p in zip(out, twin.evaluate(entry.pinocchio)))
        r["ok"] = max(r["err_vs_pinocchio"], r.get("err_c_vs_vm", 0.0)) <= TOLERANCE
        rec["methods"][key] = r
        compiled = f"compiled {r['c_min'] * 1e6:.3g} µs" if "c_min" in r else f"not compiled: {r['not_compiled']}"
        log(
            f"  {tree} N={n} {key}: {r['instructions']} instructions, built in {build_seconds:.1f} s, {compiled}, "
            f"error vs Pinocchio {r['err_vs_pinocchio']:.1e}: {'ok' if r['ok'] else 'MISMATCH'}"
        )
    return rec


def series(scaling, tree, key, field):
    """(N, value) of one method over N for one tree, where measured."""
    return sorted(
        (rec["N"], rec["methods"][key][field])
        for rec in scaling.values()
        if rec["tree"] == tree and field in rec["methods"].get(key, {})
    )


def ad_stops(scaling):
    """tree -> (last N whose AD graph was built, why the next was not) or None when AD was built at every N."""
    out = {}
    for tree in sorted({rec["tree"] for rec in scaling.values()}):
        recs = sorted((rec for rec in scaling.values() if rec["tree"] == tree), key=lambda r: r["N"])
        skipped = [r for r in recs if "not_built" in r["methods"]["dID ad"]]
        built = [r["N"] for r in recs if "not_built" not in r["methods"]["dID ad"]]
        out[tree] = (max(built, default=None), skipped[0]["methods"]["dID ad"]["not_built"]) if skipped else None
    return out


def crossovers(scaling, other="dFD idsva/aza"):
    """tree -> (N from which ``other``'s graph is smaller than DMM's, N from which it is faster compiled);
    None where it is not below DMM at the largest N measured."""
    out = {}
    for tree in sorted({rec["tree"] for rec in scaling.values()}):
        found = []
        for field in ("instructions", "c_min"):
            dmm = dict(series(scaling, tree, "dFD idsva/dmm", field))
            aza = dict(series(scaling, tree, other, field))
            both = sorted(set(dmm) & set(aza))
            above = [n for i, n in enumerate(both) if all(aza[m] < dmm[m] for m in both[i:])]
            found.append(above[0] if above else None)
        out[tree] = tuple(found)
    return out
