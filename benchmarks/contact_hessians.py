"""Second order of contact and impulse dynamics: the analytical contracted Hessian against casadi's AD.

    python -m benchmarks.contact_hessians                           # solo12 4 feet 3-D, talos_reduced 2 feet 6-D
    python -m benchmarks.contact_hessians --cases solo12 --no-compile   # graph sizes only
    python -m benchmarks.contact_hessians --o1-above 0                  # everything compiled with -O1
    python -m benchmarks.contact_hessians --cases talos_reduced --o1-above 0 --cap 1e6   # AD sized, not compiled

Per case, at one random state, two SX Functions of (q, v, tau, w1, w2) (for impulses (q, v, w1, w2))
returning the Hessian of w1^T out1 + w2^T out2 by the raw (q, v, tau), timed in casadi's VM and
compiled to C (``benchmarks.measure``; graphs above ``--o1-above`` instructions with -O1):

- analytical: what IPOPT's ``nlp_hess_l`` evaluates at a call of the Function built with
  jacobian="analytical" (second_order="analytical" by default): the dynamics, the adjoint ``adj1_<name>``
  and its Jacobian ``jac_adj1_<name>`` (``casrbd/algorithms/contact/hessians.py``), the Hessian's
  blocks assembled;
- AD: casadi's forward-over-reverse Hessian of the same scalar through the dynamics graph
  (jacobian="ad"), the Hessian IPOPT's ``nlp_hess_l`` computes without it.

The two are checked against each other (compiled against the VM too). Prints a table and writes
results/contact_hessians.json and .md. The target (issue 19): analytical at most 0.5x AD, compiled.
"""

import argparse
import json
import sys
from pathlib import Path

import casadi as ca
import numpy as np

import casrbd
from casrbd.models import load_robot

from .measure import Settings, measure, rel_err

RESULTS = Path(__file__).resolve().parent / "results"
SOLO = [(f, "3d") for f in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")]
TALOS = [(f, "6d") for f in ("left_sole_link", "right_sole_link")]
CASES = {
    "solo12": ("solo12", "constraint_dynamics", {"contacts": SOLO, "kd": 50.0}),
    "solo12-impulse": ("solo12", "impulse_dynamics", {"contacts": SOLO}),
    "talos_reduced": ("talos_reduced", "constraint_dynamics", {"contacts": TALOS, "kd": 50.0}),
}
TARGET = 0.5


def symbols(fun):
    xs = [ca.SX.sym(fun.name_in(i), fun.sparsity_in(i)) for i in range(fun.n_in())]
    ws = [ca.SX.sym("w_" + fun.name_out(k), fun.sparsity_out(k)) for k in range(fun.n_out())]
    return xs, ws


def analytical_hessian(model, name, options):
    """The Hessian from the Function's adj1 and jac_adj1, as nlp_hess_l calls them."""
    fun = casrbd.function(model, name, jacobian="analytical", **options)
    xs, ws = symbols(fun)
    adjoint = fun.reverse(1)
    jac = adjoint.jacobian()
    outs = fun(*xs)
    adj = adjoint(*xs, *outs, *ws)
    adj = adj if isinstance(adj, (list, tuple)) else [adj]
    blocks = jac(*xs, *outs, *ws, *adj)
    n_in = fun.n_in()
    per_row = jac.n_out() // n_in  # blocks by (inputs, nominal outputs, multipliers): the first n_in
    rows = [ca.horzcat(*[blocks[i * per_row + j] for j in range(n_in)]) for i in range(n_in)]
    H = ca.vertcat(*rows)
    return ca.Function(f"{fun.name()}_hessian", [*xs, *ws], ca.cse([H])), adjoint, jac


def ad_hessian(model, name, options):
    fun = casrbd.function(model, name, **options)
    xs, ws = symbols(fun)
    phi = sum((ca.dot(w, o) for w, o in zip(ws, fun(*xs))), 0)
    H, _ = ca.hessian(phi, ca.vertcat(*xs))
    adjoint = fun.reverse(1)
    return ca.Function(f"{fun.name()}_ad_hessian", [*xs, *ws], ca.cse([H])), adjoint, adjoint.jacobian()


def run(case, settings, compile_):
    robot, name, options = CASES[case]
    model = load_robot(robot)
    ours, adj, jac = analytical_hessian(model, name, options)
    ref, adj_ad, jac_ad = ad_hessian(model, name, options)
    rng = np.random.default_rng(0)
    q = np.asarray(casrbd.random_configuration(model, rng))
    inputs = [q] + [rng.normal(size=ours.size1_in(i)) for i in range(1, ours.n_in())]
    rec = {"case": case, "robot": robot, "function": name, "options": {k: str(v) for k, v in options.items()}}
    rec["adj1"] = {"analytical": adj.n_instructions(), "ad": adj_ad.n_instructions()}
    rec["jac_adj1"] = {"analytical": jac.n_instructions(), "ad": jac_ad.n_instructions()}
    settings = settings if compile_ else settings._replace(cap=0)
    rec["analytical"], out = measure(ours, inputs, settings)
    rec["ad"], out_ref = measure(ref, inputs, settings)
    rec["err_vs_ad"] = rel_err(out[0], out_ref[0])
    return rec


def ratio(rec, key):
    a, b = rec["analytical"].get(key), rec["ad"].get(key)
    return None if a is None or b is None else a / b


def _compiled(rec):
    return f"{rec['c_min'] * 1e6:.1f} us" if "c_min" in rec else "not compiled"


def _gcc(rec):
    return f"{rec['gcc_seconds']:.0f} s ({rec['flags'].split()[0]})" if "gcc_seconds" in rec else "-"


def report(records):
    lines = [
        "| case | jac_adj1 instructions (ours / AD) | Hessian instructions (ours / AD) | compiled (ours / AD) | "
        "ratio | VM (ours / AD) | gcc (ours / AD) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in records:
        a, d = r["analytical"], r["ad"]
        rc = ratio(r, "c_min")
        lines.append(
            f"| {r['case']} | {r['jac_adj1']['analytical']} / {r['jac_adj1']['ad']} | {a['instructions']} / "
            f"{d['instructions']} ({a['instructions'] / d['instructions']:.3f}x) | {_compiled(a)} / {_compiled(d)} | "
            f"{'-' if rc is None else f'{rc:.3f}x'} (target {TARGET}x) | {a['vm_min'] * 1e3:.2f} / "
            f"{d['vm_min'] * 1e3:.2f} ms | {_gcc(a)} / {_gcc(d)} |"
        )
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="solo12,solo12-impulse,talos_reduced", help=f"of {sorted(CASES)}")
    parser.add_argument("--no-compile", action="store_true", help="graph sizes and VM times only")
    parser.add_argument("--o1-above", type=float, default=2e5, help="compile graphs above this size with -O1")
    parser.add_argument("--cap", type=float, default=np.inf, help="graphs above this size are not compiled")
    parser.add_argument("--report-only", action="store_true", help="rewrite the report from the stored records")
    args = parser.parse_args(argv)
    store = RESULTS / "contact_hessians.json"
    if args.report_only:
        records = json.loads(store.read_text())
    else:
        settings = Settings(cap=args.cap, o1_above=args.o1_above)
        records = []
        for case in args.cases.split(","):
            rec = run(case, settings, not args.no_compile)
            print(json.dumps(rec), file=sys.stderr, flush=True)
            records.append(rec)
        RESULTS.mkdir(exist_ok=True)
        store.write_text(json.dumps(records, indent=1))
    table = report(records)
    (RESULTS / "contact_hessians.md").write_text(f"# Contact Hessians: analytical vs casadi's AD\n\n{table}\n")
    print(table)


if __name__ == "__main__":
    main()
