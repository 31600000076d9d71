"""Legged robots: contact, impulse and centroidal dynamics against Pinocchio.

    python -m benchmarks.legged                      # solo12, hyq, talos_reduced, talos_full_v2
    python -m benchmarks.legged --robots solo12 --o1    # gcc -O1: compiles faster

Per robot (contacts: the four feet as 3-D points for the quadrupeds, the two
soles as 6-D frames for talos, in their local frames, no Baumgarte), every
entry is a casadi SX Function measured by ``measure.measure``: graph size
(``n_instructions``), casadi VM time and compiled C time (timed from C,
``harness.py``; min and median of the batches), gcc time; next to the time of
Pinocchio's function for the same quantity through its Python bindings, less
the binding overhead measured on a model without joints (OMP_NUM_THREADS=1,
set before Pinocchio loads: its bindings link OpenMP). Each compiled output is
checked against Pinocchio's. The "AD" entries are casadi's AD of the dynamics
graph on the tangent space (q (+) delta at delta = 0), for the graph sizes.
Writes benchmarks/results/legged.md (and legged.json).
"""

import argparse
import json
import os
import platform
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import casadi as ca  # noqa: E402
import numpy as np  # noqa: E402
import pinocchio as pin  # noqa: E402

import casrbd  # noqa: E402
from casrbd import codegen  # noqa: E402
from casrbd.models import load_robot  # noqa: E402

from .measure import FEET, Settings, measure, python_time, rel_err  # noqa: E402
from .pinocchio_timing import _oracle_module  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
ROBOTS = ("solo12", "hyq", "talos_reduced", "talos_full_v2")
TARGETS = {"constraint_dynamics": 0.5, "constraint_dynamics_derivatives": 0.7, "ccrba": 0.35}


def ad_derivatives(model, name, n_vectors, **options):
    """casadi's AD of the Function ``name``'s graph: d/dq on the tangent space, d/d(the other inputs)."""
    f = casrbd.function(model, name, **options)
    q, d = ca.SX.sym("q", model.nq), ca.SX.sym("d", model.nv)
    xs = [ca.SX.sym(f.name_in(i + 1), model.nv) for i in range(n_vectors)]
    outs = f(casrbd.integrate(model, q, d), *xs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    jac = [ca.substitute(ca.jacobian(o, w), d, ca.DM.zeros(model.nv)) for o in outs for w in (d, *xs)]
    return ca.Function(f.name() + "_ad", [q, *xs], ca.cse(jac))


class Pinocchio:
    """Pinocchio's model of the robot, its contact models and its calls, in casrbd's orders."""

    def __init__(self, name, model, contacts):
        o = _oracle_module().Oracle.from_robot(name, model)
        self.o, pm = o, o.pmodel
        kinds = {"3d": pin.ContactType.CONTACT_3D, "6d": pin.ContactType.CONTACT_6D}
        self.cms, self.cds = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
        for f, t in contacts:
            frame = pm.frames[o.frame_ids[model.frame_index(f)]]
            self.cms.append(pin.RigidConstraintModel(kinds[t], pm, frame.parentJoint, frame.placement, pin.LOCAL))
        for cm in self.cms:
            self.cds.append(cm.createData())
        self.data = pm.createData()
        pin.initConstraintDynamics(pm, self.data, self.cms, self.cds)
        empty = pin.Model()
        self.empty = (empty, empty.createData(), pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData())
        pin.initConstraintDynamics(empty, self.empty[1], self.empty[2], self.empty[3])

    def calls(self, q, v, x):
        """{entry: (call on this robot, the same call on the empty model, outputs in casrbd's order)}."""
        o, pm, pd, cms, cds = self.o, self.o.pmodel, self.data, self.cms, self.cds
        em, ed, ecms, ecds = self.empty
        z = np.zeros(0)
        args = (o.q(q), o.v(v), o.v(x))
        out = {}

        def cd():
            return pin.constraintDynamics(pm, pd, *args, cms, cds)

        ddq = cd()
        out["constraint_dynamics"] = (cd, lambda: pin.constraintDynamics(em, ed, z, z, z, ecms, ecds))
        out["constraint_dynamics", "ref"] = [o.from_v(ddq), pd.lambda_c.copy()]
        d = [np.array(x).copy() for x in pin.computeConstraintDynamicsDerivatives(pm, pd, cms, cds)]
        out["constraint_dynamics_derivatives"] = (
            lambda: pin.computeConstraintDynamicsDerivatives(pm, pd, cms, cds),
            lambda: pin.computeConstraintDynamicsDerivatives(em, ed, ecms, ecds),
        )
        out["constraint_dynamics_derivatives", "ref"] = [o.from_vv(x) for x in d[:3]] + [
            o.from_jacobian(x) for x in d[3:]
        ]
        vp = pin.impulseDynamics(pm, pd, args[0], args[1], cms, cds, 0.0)
        out["impulse_dynamics"] = (
            lambda: pin.impulseDynamics(pm, pd, args[0], args[1], cms, cds, 0.0),
            lambda: pin.impulseDynamics(em, ed, z, z, ecms, ecds, 0.0),
        )
        out["impulse_dynamics", "ref"] = [o.from_v(vp), pd.impulse_c.copy()]
        Ag = pin.ccrba(pm, pd, args[0], args[1])
        out["ccrba"] = (lambda: pin.ccrba(pm, pd, args[0], args[1]), lambda: pin.ccrba(em, ed, z, z))
        out["ccrba", "ref"] = [o.from_jacobian(Ag), pd.hg.vector.copy()]
        c = pin.computeCentroidalDynamicsDerivatives(pm, pd, *args)
        out["centroidal_dynamics_derivatives"] = (
            lambda: pin.computeCentroidalDynamicsDerivatives(pm, pd, *args),
            lambda: pin.computeCentroidalDynamicsDerivatives(em, ed, z, z, z),
        )
        out["centroidal_dynamics_derivatives", "ref"] = [o.from_jacobian(np.array(x)) for x in c]
        return out


def entries(model, contacts):
    """{label: (Function, the Pinocchio entry it is timed and checked against, number of tangent inputs)}."""
    opts = {"contacts": contacts}
    return {
        "constraint_dynamics": (casrbd.function(model, "constraint_dynamics", **opts), "constraint_dynamics", 2),
        "constraint_dynamics_derivatives": (
            casrbd.function(model, "constraint_dynamics_derivatives", **opts),
            "constraint_dynamics_derivatives",
            2,
        ),
        "constraint_dynamics_derivatives (AD)": (
            ad_derivatives(model, "constraint_dynamics", 2, **opts),
            "constraint_dynamics_derivatives",
            2,
        ),
        "impulse_dynamics": (casrbd.function(model, "impulse_dynamics", **opts), "impulse_dynamics", 1),
        "ccrba": (casrbd.function(model, "ccrba"), "ccrba", 1),
        "centroidal_dynamics_derivatives": (
            casrbd.function(model, "centroidal_dynamics_derivatives"),
            "centroidal_dynamics_derivatives",
            2,
        ),
        "centroidal_dynamics_derivatives (AD)": (
            ad_derivatives(model, "centroidal_momentum_time_variation", 2),
            "centroidal_dynamics_derivatives",
            2,
        ),
    }


def reorder(label, outs):
    """The AD Functions' outputs in the order of the analytical ones (d ddq/d(q, v, tau), d lambda/...)."""
    if label == "centroidal_dynamics_derivatives (AD)":  # dh/dq, dh/dv, dh/da, dhd/dq, dhd/dv, dhd/da
        return [outs[0], outs[3], outs[4], outs[5]]
    return outs


def run_robot(name, settings, log=print):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # talos' mimic joints
        model = load_robot(name)
    rng = np.random.default_rng(0)
    q, v, x = np.asarray(casrbd.random_configuration(model, rng)), rng.normal(size=model.nv), rng.normal(size=model.nv)
    twin = Pinocchio(name, model, FEET[name])
    calls = twin.calls(q, v, x)
    rec = {"robot": name, "nv": model.nv, "contacts": FEET[name], "entries": {}, "pinocchio": {}}
    for label, (fun, pin_entry, n_vectors) in entries(model, FEET[name]).items():
        start = time.perf_counter()
        entry, outs = measure(fun, [q, v, x][: 1 + n_vectors], settings)
        outs = reorder(label, outs)
        entry["err_vs_pinocchio"] = max(rel_err(a, b) for a, b in zip(outs, calls[pin_entry, "ref"]))
        entry["pinocchio"] = pin_entry
        entry["seconds"] = time.perf_counter() - start
        rec["entries"][label] = entry
        if pin_entry not in rec["pinocchio"]:
            rec["pinocchio"][pin_entry] = time_call(*calls[pin_entry], settings)
        log(
            f"{name} {label}: {entry['instructions']} instructions, C {1e6 * entry.get('c_min', np.nan):.2f} us, "
            f"err vs Pinocchio {entry['err_vs_pinocchio']:.1e} ({entry['seconds']:.0f} s)",
            flush=True,
        )
    return rec


def time_call(call, empty, settings):
    """min and median seconds of a Pinocchio call, and the min of the same call on the empty model (the
    bindings' overhead)."""
    t, t_med = python_time(call, settings)
    return {"min": t, "median": t_med, "overhead_min": python_time(empty, settings)[0]}


def net(p):
    return p["min"] - p["overhead_min"]


def _number(x, spec):
    return format(x, spec) if np.isfinite(x) else "-"


def report(records, settings, flags):
    lines = [
        "# Legged robots: contact, impulse and centroidal dynamics",
        "",
        f"`python -m benchmarks.legged` on {platform.machine()}, casadi {ca.__version__}, Pinocchio {pin.__version__}, "
        f"{time.strftime('%Y-%m-%d')}; C compiled with `{' '.join(flags)}`; times are the min of "
        f"{settings.repeat} batches (median in brackets); Pinocchio through its Python bindings less the "
        "binding overhead (the same call on a model without joints), OMP_NUM_THREADS=1. Contacts: the feet as "
        "3-D points (solo12, hyq), the soles as 6-D frames (talos), local frames, no Baumgarte. "
        "`AD` rows: casadi's AD of the dynamics graph on the tangent space (not compiled above 4e5 "
        "instructions; graphs above 2.5e5 compile with -O1).",
        "",
        "| robot | nv | Function | instructions | VM [us] | C [us] | Pinocchio [us] | C / Pinocchio | target | "
        "gcc [s] | err vs Pinocchio |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for rec in records:
        for label, e in rec["entries"].items():
            p = rec["pinocchio"][e["pinocchio"]]
            c = e.get("c_min", np.nan)
            ratio = c / net(p) if np.isfinite(c) and net(p) > 0 else np.nan
            target = TARGETS.get(label)
            verdict = (
                "" if target is None or not np.isfinite(ratio) else f"{target} {'met' if ratio <= target else 'MISSED'}"
            )
            compiled = f"{1e6 * c:.2f} ({1e6 * e['c_median']:.2f})" if np.isfinite(c) else "not compiled"
            lines.append(
                f"| {rec['robot']} | {rec['nv']} | {label} | {e['instructions']} | {1e6 * e['vm_min']:.1f} | "
                f"{compiled} | {1e6 * net(p):.2f} | {_number(ratio, '.2f')} | "
                f"{verdict} | {_number(e.get('gcc_seconds', np.nan), '.1f')} | {e['err_vs_pinocchio']:.1e} |"
            )
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--robots", default=",".join(ROBOTS), help=f"comma-separated (default {','.join(ROBOTS)})")
    p.add_argument("--o1", action="store_true", help="compile with -O1 (faster gcc) instead of the default flags")
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--out", default=str(RESULTS / "legged.md"))
    args = p.parse_args(argv)
    flags = ("-O1",) if args.o1 else codegen.DEFAULT_FLAGS
    # the analytical derivatives of talos_full_v2 have 3.7e5 instructions: compiled, with -O1 above 2.5e5
    # (gcc -O3 takes minutes there); casadi's AD of them (1.5e6) is not
    settings = Settings(repeat=args.repeat, cap=4e5, o1_above=0 if args.o1 else 2.5e5)
    records = [run_robot(name, settings) for name in args.robots.split(",") if name]
    text = report(records, settings, flags)
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    Path(args.out).with_suffix(".json").write_text(json.dumps(records, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
