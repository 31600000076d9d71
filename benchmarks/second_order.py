"""Second-order derivatives against casadi's AD and Pinocchio's C++ (issue 12, item 4).

    python -m benchmarks.second_order                       # every robot (gcc takes a while on the big graphs)
    python -m benchmarks.second_order --robots ur5,panda    # a subset
    python -m benchmarks.second_order --report-only         # rewrite the report from the stored records

Per robot, at one random state, every entry is an SX Function timed in casadi's VM (its Python call
overhead subtracted) and compiled to C (``benchmarks.measure``, gcc with casrbd's default flags),
next to the reference it is compared with:

- contracted Hessians: ``rnea_hessian`` and ``aba_hessian`` (the analytical second-order adjoint,
  q on the tangent space) against casadi's forward-over-reverse Hessian of lam^T rnea (lam^T aba)
  by the raw (q, v, a), the Hessian IPOPT's ``nlp_hess_l`` computes by AD;
- full tensors of inverse dynamics: ``rnea_second_order_derivatives`` (second-order IDSVA) against
  casadi's Jacobian of its Jacobian (method="ad") and Pinocchio's C++
  ``ComputeRNEASecondOrderDerivatives`` (``benchmarks/pinocchio_cpp``, its four tensors zeroed once,
  as the function only assigns a fixed set of entries; min over 50 batches of ~10 ms).

Values are checked: analytical against method="ad" at the state, compiled against the VM. Graphs above
``--cap`` instructions are sized but not compiled (the record says so). Results accumulate in
results/second_order.json (one record per robot) and the report is results/second_order.md.
"""

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

import casadi as ca
import numpy as np

import casrbd
from casrbd.models import load_robot

from .measure import Settings, measure, rel_err

ROBOTS = ("ur5", "arm7", "panda", "solo12", "hyq", "talos_reduced", "talos_full_v2")
RESULTS = Path(__file__).resolve().parent / "results"
# issue 12's targets: compiled time of ours / the reference's (robots from 7 dof up for aba)
TARGETS = {"H(rnea)": 0.7, "H(aba)": 0.5, "tensors": 0.7}
AD_OF_AD_MAX_NV = 20  # casadi's Jacobian of its Jacobian grows as nv^2 graphs of rnea: sized up to this nv


def ad_hessian(model, dynamics):
    """casadi's forward-over-reverse Hessian of lam^T dynamics(q, v, x) by the raw (q, v, x)."""
    fun = casrbd.function(model, dynamics)
    q, v, x, lam = (ca.SX.sym(n, model.nq if n == "q" else model.nv) for n in ("q", "v", "x", "lam"))
    H, _ = ca.hessian(ca.dot(lam, fun(q, v, x)), ca.vertcat(q, v, x))
    name = re.sub(r"\W", "_", f"{model.name}_{dynamics}_ad_hessian")
    name = name if re.match(r"[A-Za-z_]", name) else "m_" + name  # a C identifier
    return ca.Function(name, [q, v, x, lam], ca.cse([H]))


def entries(model):
    """label -> (Function, its inputs' order: "qvxl" or "qvx")."""
    return {
        "H(rnea) analytical": casrbd.function(model, "rnea_hessian"),
        "H(rnea) AD": ad_hessian(model, "rnea"),
        "H(aba) analytical": casrbd.function(model, "aba_hessian"),
        "H(aba) AD": ad_hessian(model, "aba"),
        "tensors IDSVA": casrbd.function(model, "rnea_second_order_derivatives"),
        "tensors AD": (
            casrbd.function(model, "rnea_second_order_derivatives", method="ad")
            if model.nv <= AD_OF_AD_MAX_NV
            else None
        ),
    }


def pinocchio_time(robot):
    """Pinocchio's C++ ComputeRNEASecondOrderDerivatives, seconds per call, or a reason it is missing."""
    try:
        from . import pinocchio_cpp

        exe = pinocchio_cpp.built() or pinocchio_cpp.build(verbose=True)
        times = pinocchio_cpp.run(exe, robot)
    except Exception as e:  # the C++ side is optional: the report says why it is missing
        return {"missing": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
    return {"min": 1e-6 * times["timings_us"]["rnea_so"], "cpu_min": 1e-6 * times["timings_cpu_us"]["rnea_so"]}


def bench_robot(robot, settings, compile_code=True, pinocchio=True):
    model = load_robot(robot)
    rng = np.random.default_rng(0)
    q = casrbd.random_configuration(model, rng)
    v, x, lam = (rng.normal(size=model.nv) for _ in range(3))
    record = {"robot": robot, "nv": model.nv, "nq": model.nq, "entries": {}}
    values = {}
    for label, fun in entries(model).items():
        if fun is None:
            record["entries"][label] = {"not_built": f"AD of AD sized only up to nv = {AD_OF_AD_MAX_NV}"}
            continue
        inputs = [q, v, x] + ([lam] if fun.n_in() == 4 else [])
        start = time.perf_counter()
        if compile_code:
            rec, out = measure(fun, inputs, settings)
        else:
            rec, out = {"instructions": fun.n_instructions()}, [np.array(o) for o in fun.call(inputs)]
        rec["seconds"] = time.perf_counter() - start
        record["entries"][label] = rec
        values[label] = out
        print(f"{robot} {label}: {rec}", flush=True)
    # values: the analytical Functions against their method="ad" twins (the raw AD Hessian of a
    # free-flyer robot is by raw q, so the tangent-space reference is method="ad")
    for name, label in (("rnea_hessian", "H(rnea) analytical"), ("aba_hessian", "H(aba) analytical")):
        ref = casrbd.function(model, name, method="ad").call([q, v, x, lam])
        record["entries"][label]["err_vs_ad"] = max(rel_err(a, np.array(b)) for a, b in zip(values[label], ref))
    if "tensors AD" in values:
        errs = [rel_err(a, b) for a, b in zip(values["tensors IDSVA"], values["tensors AD"])]
        record["entries"]["tensors IDSVA"]["err_vs_ad"] = max(errs)
    if pinocchio:
        record["pinocchio_cpp"] = pinocchio_time(robot)
    return record


def _us(seconds):
    return "-" if seconds is None else f"{1e6 * seconds:.3g}"


def _net_vm(rec):
    return rec["vm_min"] - rec["vm_overhead_min"] if "vm_min" in rec else None


def _ratio(a, b):
    return None if a is None or b is None else a / b


def _fmt_ratio(r, target):
    if r is None:
        return "-"
    return f"{r:.2f}" + ("" if target is None else (" ✓" if r <= target else " ✗"))


def report(records, path):
    lines = [
        "# Second-order derivatives: graph sizes and times",
        "",
        "Generated by `python -m benchmarks.second_order` (see its docstring for what each entry is). Times in µs",
        "per call: VM = casadi's virtual machine, Python call overhead subtracted; C = compiled with gcc, timed",
        "from C. Ratios are ours / the reference's compiled times (instructions in parentheses), ✓/✗ against",
        f"issue 12's targets (H(rnea) {TARGETS['H(rnea)']}, H(aba) {TARGETS['H(aba)']} from 7 dof up and 0.35 on "
        f"the Talos models, tensors {TARGETS['tensors']} of Pinocchio's C++ on ur5, panda, solo12, hyq). Load average:",
        "the machine's (2 cores, shared) when the robot was measured.",
        "",
        "| robot | nv | entry | instructions | VM | C | error vs AD |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in records:
        for label, rec in r["entries"].items():
            size = rec.get("instructions", "-")
            why = rec.get("not_compiled") or rec.get("not_built")
            c = _us(rec.get("c_min")) if why is None else f"- ({why})"
            err = f"{rec['err_vs_ad']:.1e}" if "err_vs_ad" in rec else ""
            lines.append(f"| {r['robot']} | {r['nv']} | {label} | {size} | {_us(_net_vm(rec))} | {c} | {err} |")
        p = r.get("pinocchio_cpp", {})
        pin = _us(p.get("min")) if "min" in p else f"- ({p.get('missing', 'not run')})"
        lines.append(f"| {r['robot']} | {r['nv']} | Pinocchio C++ tensors | | | {pin} | |")
    lines += [
        "",
        "## Ratios",
        "",
        "| robot | nv | H(rnea) / AD | H(aba) / AD | tensors / Pinocchio C++ | tensors / AD | load average |",
    ]
    lines.append("|---|---|---|---|---|---|---|")
    for r in records:
        e = r["entries"]

        def pair(ours, ref, entries=e):
            a, b = entries.get(ours, {}), entries.get(ref, {})
            c = _ratio(a.get("c_min"), b.get("c_min"))
            n = _ratio(a.get("instructions"), b.get("instructions"))
            return c, n

        talos = r["robot"].startswith("talos")
        cells = []
        for ours, ref, target in (
            ("H(rnea) analytical", "H(rnea) AD", TARGETS["H(rnea)"]),
            ("H(aba) analytical", "H(aba) AD", (0.35 if talos else TARGETS["H(aba)"]) if r["nv"] >= 7 else None),
        ):
            c, n = pair(ours, ref)
            cells.append(f"{_fmt_ratio(c, target)} ({'-' if n is None else f'{n:.2f}'})")
        pin = r.get("pinocchio_cpp", {}).get("min")
        c = _ratio(e["tensors IDSVA"].get("c_min"), pin)
        cells.append(_fmt_ratio(c, TARGETS["tensors"] if r["robot"] in ("ur5", "panda", "solo12", "hyq") else None))
        c, n = pair("tensors IDSVA", "tensors AD")
        cells.append(f"{_fmt_ratio(c, None)} ({'-' if n is None else f'{n:.2f}'})")
        load = f"{r['load_average'][0]:.1f}" if "load_average" in r else "-"
        lines.append(f"| {r['robot']} | {r['nv']} | " + " | ".join(cells) + f" | {load} |")
    path.write_text("\n".join(lines) + "\n")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.second_order", description=__doc__)
    p.add_argument("--robots", default=",".join(ROBOTS), help="comma-separated robots")
    p.add_argument("--cap", type=float, default=1.5e6, help="graphs above this many instructions are not compiled")
    p.add_argument("--no-compile", action="store_true", help="graph sizes and values only")
    p.add_argument("--no-pinocchio", action="store_true", help="without Pinocchio's C++ program")
    p.add_argument("--report-only", action="store_true")
    p.add_argument("--out", default=str(RESULTS))
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    store = out / "second_order.json"
    records = json.loads(store.read_text()) if store.exists() else {}
    if not args.report_only:
        settings = Settings(cap=args.cap)
        for robot in filter(None, args.robots.split(",")):
            rec = bench_robot(robot, settings, not args.no_compile, not args.no_pinocchio)
            rec["load_average"] = os.getloadavg()
            records[robot] = rec
            store.write_text(json.dumps(records, indent=1))
    order = [r for r in ROBOTS if r in records] + [r for r in records if r not in ROBOTS]
    report([records[r] for r in order], out / "second_order.md")


if __name__ == "__main__":
    main(sys.argv[1:])
