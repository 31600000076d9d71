"""Crocoddyl's legged problems with hard friction cones and torque limits: the anchors of issue 37.

    OMP_NUM_THREADS=1 .venv-croc/bin/python -m benchmarks.constrained

Needs the ``crocoddyl`` extra's environment (crocoddyl 3.2.1, pin/libpinocchio 4.0.0, mim-solvers 0.3.0).
Each problem is Crocoddyl's own: solo12's trot and jump from ``SimpleQuadrupedalGaitProblem`` as in
benchmarks/crocoddyl.py, Talos' walk from ``SimpleBipedGaitProblem`` as in benchmarks/humanoid.py, each in
four variants, all from Crocoddyl's guess (the standing state, quasi-static torques), one thread:

- ``penalty``: as Crocoddyl builds it (cones as quadratic barriers in the cost); FDDP;
- ``box``: the same with the torque limits as the action models' control bounds; Crocoddyl's BoxFDDP;
- ``torque``: the same limits as hard constraints (``ConstraintModelResidual`` on ``ResidualModelControl``);
  mim-solvers' CSQP;
- ``hard``: every running knot's cone barrier replaced by a hard constraint on the same residual with the
  same bounds (the barrier's zero set), plus the torque constraints; CSQP.

CSQP runs twice on each, its QPs to the example's and to the library's default tolerance. Reported per
solve: CPU time (``time.process_time`` around ``solve``, the fastest of up to REPEATS), iterations, CSQP's
QP (ADMM) iterations summed over its iterations, the stopping criterion where it stopped, the cost
(``problem.calc``), the largest violation of the cone and of the torque constraints (the constraint models'
residuals against their bounds, evaluated here; for FDDP's and BoxFDDP's solutions, of the ``hard`` and
``torque`` variants' constraints) and the largest dynamics defect. ``knot_spec`` lists, per knot, what the
casrbd problem layer must build to be the same problem. Then (``--casrbd``, default fatrop and IPOPT) the
``hard`` variant built on ``casrbd.ocp.legged`` (``casrbd_side``, benchmarks/constrained_layer.py), checked knot
by knot against Crocoddyl's, solved from the same guess, its solution's cost and violations evaluated by
Crocoddyl's models. Writes benchmarks/results/constrained.md (``--output``: elsewhere).
"""

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

# crocoddyl before mim_solvers: the libcrocoddyl.so of the libcrocoddyl wheel carries no RUNPATH, so the boost
# libraries it needs (libboost_atomic) are found only when already loaded, which crocoddyl's own extension
# module does through its RUNPATH into cmeel.prefix/lib; the loader then matches them by soname
import crocoddyl  # noqa: E402, I001
import example_robot_data  # noqa: E402
import mim_solvers  # noqa: E402
import numpy as np  # noqa: E402
from crocoddyl.utils.biped import SimpleBipedGaitProblem  # noqa: E402
from crocoddyl.utils.quadruped import SimpleQuadrupedalGaitProblem  # noqa: E402

from benchmarks.crocoddyl import PROBLEMS, defect  # noqa: E402
from benchmarks.humanoid import SIZES as WALK  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
# Solo12's joint torque: its actuators' motor constant 0.025 N m/A, 9:1 transmission and 12 A
# (ODRI's odri_control_interface config_solo12.yaml and open_robot_actuator_hardware's actuator module)
SOLO12_TORQUE = 2.7
ROBOTS = {"trot": "solo12", "jump": "solo12", "walk": "talos"}
VARIANTS = ("penalty", "box", "torque", "hard")
CONES = (crocoddyl.ResidualModelContactFrictionCone, crocoddyl.ResidualModelContactWrenchCone)
REPEATS, REPEAT_BUDGET = 3, 20.0
# CSQP's termination tolerance (its KKT residual), as in mim-solvers' solo12 example (1e-5 is not met on the
# trot: the inexact QPs leave a KKT residual above it), and its QPs' (ADMM) eps_abs = eps_rel: the example's
# 1e-6 and the library's default 1e-4
TOL, QP_EPS = 1e-4, (1e-6, 1e-4)
MAX_ITER, MAX_QP_ITERS = 100, 1000
# Crocoddyl FDDP's cost on the penalty problems as the results of benchmarks.crocoddyl and .humanoid give it
# (crocoddyl 3.2.1): the sanity line that these problems are those
FDDP_REFERENCE = {"trot": (66.87382825, "crocoddyl.md"), "jump": (2753.424334, "crocoddyl.md")}
FDDP_REFERENCE["walk"] = (5117.668763, "humanoid.md")


def base_problem(name):
    """Crocoddyl's own problem ``name`` (trot, jump, walk), one thread, and its initial state."""
    if name not in ROBOTS:
        raise ValueError(f"problem {name!r}: expected one of {list(ROBOTS)}")
    robot = example_robot_data.load(ROBOTS[name])
    if name == "walk":
        x0 = np.r_[robot.model.referenceConfigurations["half_sitting"], np.zeros(robot.model.nv)]
        problem = SimpleBipedGaitProblem(robot.model, "right_sole_link", "left_sole_link").createWalkingProblem(
            x0, *WALK
        )
    else:
        x0 = np.r_[robot.model.referenceConfigurations["standing"], np.zeros(robot.model.nv)]
        gait = SimpleQuadrupedalGaitProblem(robot.model, "FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
        problem = PROBLEMS[name](gait, x0)
    problem.nthreads = 1
    return problem, x0


def torque_limit(name, model):
    """The joint torque bound: Solo12's actuators' peak; Talos' URDF efforts."""
    return np.full(model.nv - 6, SOLO12_TORQUE) if ROBOTS[name] == "solo12" else model.effortLimit[6:].copy()


def constrained_knot(model, tau, hard_cones):
    """A running knot rebuilt with |u| <= tau as a hard constraint and, if ``hard_cones``, its cone barriers
    moved from the cost into hard constraints on the same residual and bounds."""
    d = model.differential
    state, nu = d.state, d.nu
    costs, constraints = crocoddyl.CostModelSum(state, nu), crocoddyl.ConstraintModelManager(state, nu)
    for name, item in d.costs.costs.todict().items():
        if hard_cones and isinstance(item.cost.residual, CONES):
            bounds = item.cost.activation.bounds
            if bounds.beta != 1.0:
                raise ValueError(f"cost {name!r}: a barrier with beta {bounds.beta} has no hard counterpart")
            constraints.addConstraint(
                name, crocoddyl.ConstraintModelResidual(state, item.cost.residual, bounds.lb, bounds.ub)
            )
        else:
            costs.addCost(name, item.cost, item.weight, item.active)
    torque = crocoddyl.ConstraintModelResidual(state, crocoddyl.ResidualModelControl(state, nu), -tau, tau)
    constraints.addConstraint("torque", torque)
    # enable_force=True as Crocoddyl's gait builders construct their knots
    dam = crocoddyl.DifferentialActionModelContactFwdDynamics(
        state, d.actuation, d.contacts, costs, constraints, d.JMinvJt_damping, True
    )
    dam.armature = d.armature
    return crocoddyl.IntegratedActionModelEuler(dam, model.control, model.dt)


def build(name, variant):
    """Crocoddyl's problem ``name`` in ``variant`` (penalty, box, torque, hard) and its initial state. The
    impulse knots and the terminal knot (no control) stay as built, the terminal's cone barriers included."""
    if variant not in VARIANTS:
        raise ValueError(f"variant {variant!r}: expected one of {VARIANTS}")
    problem, x0 = base_problem(name)
    if variant == "penalty":
        return problem, x0
    tau = torque_limit(name, problem.runningModels[0].state.pinocchio)
    rebuilt = {}  # Crocoddyl repeats model objects (the trot's support knots); keep them shared
    knots = []
    for m in problem.runningModels:
        if isinstance(m, crocoddyl.IntegratedActionModelEuler):
            if variant == "box":
                m.u_lb, m.u_ub = -tau, tau
            else:
                if id(m) not in rebuilt:
                    rebuilt[id(m)] = constrained_knot(m, tau, variant == "hard")
                m = rebuilt[id(m)]
        knots.append(m)
    problem = crocoddyl.ShootingProblem(x0, knots, problem.terminalModel)
    problem.nthreads = 1
    return problem, x0


def _residual(residual, frames):
    """What a residual model is: its type, its frame and its reference (a cone's parameters)."""
    out = {"residual": type(residual).__name__}
    if hasattr(residual, "id"):
        out["frame"] = frames[residual.id].name
    ref = getattr(residual, "reference", None)
    if isinstance(ref, crocoddyl.FrictionCone):
        out.update(mu=ref.mu, facets=ref.nf, inner=ref.inner_appr, rotation=np.array(ref.R))
    elif isinstance(ref, crocoddyl.WrenchCone):
        out.update(mu=ref.mu, facets=ref.nf, inner=ref.inner_appr, rotation=np.array(ref.R), box=np.array(ref.box))
        out.update(min_nforce=ref.min_nforce, max_nforce=ref.max_nforce)
    elif ref is not None and not isinstance(residual, crocoddyl.ResidualModelControl):
        out["reference"] = _placement(ref)
    return out


def _placement(ref):
    """A reference as numbers: an SE3 as its 4x4 matrix, anything else as an array."""
    return np.array(ref.homogeneous if hasattr(ref, "homogeneous") else ref, dtype=float)


def _activation(activation):
    out = {"activation": type(activation).__name__}
    if hasattr(activation, "weights"):
        out["weights"] = np.array(activation.weights)
    if hasattr(activation, "bounds"):
        out.update(lb=np.array(activation.bounds.lb), ub=np.array(activation.bounds.ub), beta=activation.bounds.beta)
    return out


def knot_spec(problem):
    """Per knot (running ones, then the terminal): its kind (``running``, ``terminal``), whether it is an
    impulse, its time step and (impulses) restitution, its contacts (frame, contact type, Baumgarte gains, reference
    frame, reference), its costs (name, weight, active, residual, frame, reference, activation with its
    weights or barrier bounds), its hard constraints (name, residual, frame, cone: mu, facets, inner
    approximation, rotation, for wrench cones the sole's box and normal-force bounds; lb, ub) and its control
    bounds (None where the model has none)."""
    frames = problem.runningModels[0].state.pinocchio.frames
    spec = []
    models = [(m, "running") for m in problem.runningModels] + [(problem.terminalModel, "terminal")]
    for m, kind in models:
        impulse = isinstance(m, crocoddyl.ActionModelImpulseFwdDynamics)
        d = m if impulse else m.differential
        points = d.impulses.impulses if impulse else d.contacts.contacts
        contacts = [
            {
                "frame": frames[c.id].name,
                "type": type(c).__name__,
                "gains": None if impulse else np.array(c.gains),
                "reference_frame": str(c.type),
                "reference": None if impulse else _placement(c.reference),
            }
            for c in (item.impulse if impulse else item.contact for item in points.todict().values())
        ]
        costs = [
            {"name": n, "weight": it.weight, "active": it.active}
            | _residual(it.cost.residual, frames)
            | _activation(it.cost.activation)
            for n, it in d.costs.costs.todict().items()
        ]
        constraints = [
            {
                "name": n,
                **_residual(it.constraint.residual, frames),
                "lb": np.array(it.constraint.lb),
                "ub": np.array(it.constraint.ub),
            }
            for n, it in (d.constraints.constraints.todict().items() if d.constraints is not None else ())
        ]
        spec.append(
            {
                "kind": kind,
                "impulse": impulse,
                "dt": 0.0 if impulse else m.dt,
                "restitution": m.r_coeff if impulse else None,
                "contacts": contacts,
                "costs": costs,
                "constraints": constraints,
                "control_bounds": (np.array(m.u_lb), np.array(m.u_ub)) if m.nu and m.has_control_limits else None,
            }
        )
    return spec


def violation(problem, xs, us):
    """The largest violation of ``problem``'s hard cone and torque constraints at (xs, us), each constraint
    model's residual (computed by Crocoddyl's calc) against its bounds: {"cones": v, "torque": v}, None for
    a kind the problem does not have."""
    problem.calc(list(xs), list(us))
    worst = {"cones": None, "torque": None}
    for m, d in zip(problem.runningModels, problem.runningDatas):
        cm = getattr(getattr(m, "differential", None), "constraints", None)
        if cm is None:
            continue
        items = d.differential.constraints.constraints.todict()
        for name, item in cm.constraints.todict().items():
            r = np.array(items[name].residual.r)
            v = max(np.max(item.constraint.lb - r), np.max(r - item.constraint.ub), 0.0)
            kind = "torque" if name == "torque" else "cones"
            worst[kind] = max(worst[kind] or 0.0, v)
    return worst


class QPIterations(mim_solvers.CallbackAbstract):
    """Sums CSQP's QP (ADMM) iterations over its SQP iterations."""

    def __init__(self):
        super().__init__()
        self.total = 0

    def __call__(self, solver, solver_type):
        self.total += solver.qp_iters


def solver_for(kind, problem, qp_eps=None):
    if kind == "FDDP":
        return crocoddyl.SolverFDDP(problem)
    if kind == "BoxFDDP":
        return crocoddyl.SolverBoxFDDP(problem)
    solver = mim_solvers.SolverCSQP(problem)
    solver.termination_tolerance = TOL
    solver.eps_abs = solver.eps_rel = qp_eps
    solver.max_qp_iters = MAX_QP_ITERS
    solver.with_callbacks = False
    return solver


def solve(kind, problem, x0, qp_eps=None):
    """Solves from Crocoddyl's guess, REPEATS times while the solves so far took under REPEAT_BUDGET CPU
    seconds; the fastest counts. CSQP's QP iterations are summed by a callback (one Python call per
    iteration, in every solve)."""
    xs0 = [x0] * (problem.T + 1)
    us0 = problem.quasiStatic(xs0[:-1])
    cpus = []
    for _ in range(REPEATS):
        solver = solver_for(kind, problem, qp_eps)
        if kind == "CSQP":
            counter = QPIterations()
            solver.setCallbacks([counter])
        start = time.process_time()
        converged = solver.solve(xs0, us0, MAX_ITER, False) if "FDDP" in kind else solver.solve(xs0, us0, MAX_ITER)
        cpus.append(time.process_time() - start)
        if sum(cpus) > REPEAT_BUDGET:
            break
    return {
        "solver": kind if qp_eps is None else f"{kind}, QP eps {qp_eps:g}",
        "converged": converged,
        "cpu": min(cpus),
        "cpus": cpus,
        "iterations": solver.iter,
        # the stopping criterion where the solver stopped: CSQP's KKT residual, FDDP's expected improvement
        "stop": solver.KKT if kind == "CSQP" else solver.stop,
        "qp_iterations": int(counter.total) if kind == "CSQP" else None,
        "xs": np.array(solver.xs),
        "us": [np.array(u) for u in solver.us],
    }


RUNS = [("penalty", "FDDP", None), ("box", "BoxFDDP", None)]
RUNS += [(variant, "CSQP", eps) for variant in ("torque", "hard") for eps in QP_EPS]
# what each variant's solution is checked against: its own constraints, or for the penalty and box
# variants those of the variants that state the same sets as hard constraints
CHECKED_BY = {"penalty": "hard", "box": "torque", "torque": "torque", "hard": "hard"}


def casrbd_side(problem_name, variant, solver="fatrop", guess=None):
    """casrbd's solve of ``problem_name`` in ``variant`` ("penalty", "hard") with fatrop or IPOPT on the compiled
    Gauss-Newton route from ``guess`` ((xs, us)): ``benchmarks.constrained_layer.solve_layer``."""
    from benchmarks.constrained_layer import solve_layer

    return solve_layer(problem_name, variant, solver, guess)


def spread(r):
    """The fastest solve's CPU time and, after it, the slowest's and the number of solves."""
    return f"{r['cpu']:.3f} ({max(r['cpus']):.3f}, {len(r['cpus'])})"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default="trot,jump,walk")
    parser.add_argument("--casrbd", default="fatrop,ipopt", help="casrbd's solvers ('': none)")
    parser.add_argument("--output", default=str(RESULTS / "constrained.md"), help="the report's path")
    args = parser.parse_args(argv)
    threads = os.environ["OMP_NUM_THREADS"]
    load = "load average (1, 5, 15 min) at the start {:.1f}, {:.1f}, {:.1f}".format(*os.getloadavg())
    lines = [
        f"crocoddyl {crocoddyl.__version__}, mim-solvers 0.3.0, OMP_NUM_THREADS={threads}, problem.nthreads=1; "
        f"CSQP: termination_tolerance {TOL:g}, max_qp_iters {MAX_QP_ITERS}; "
        f"CPU time the fastest of up to {REPEATS} solves (within {REPEAT_BUDGET:g} s; in brackets the slowest and "
        f"the number of solves), at most {MAX_ITER} iterations. "
        f"Torque limits: solo12 {SOLO12_TORQUE} N m on every joint (its actuators' peak), Talos its URDF's efforts. "
        f"Measured on a shared 2-core machine under other jobs' load ({load}): CPU times drift by tens of "
        "percent.\n",
        "| problem | variant | solver | converged | iterations | QP iterations | stopping criterion "
        "| CPU of the solve [s] | cost (Crocoddyl's calc) | cone violation | torque violation | defect |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    sanity, ours, checks = [], [], []
    solvers = [s for s in args.casrbd.split(",") if s]
    for name in args.problems.split(","):
        problems = {v: build(name, v) for v in VARIANTS}
        csqp = {}
        for variant, kind, qp_eps in RUNS:
            problem, x0 = problems[variant]
            r = solve(kind, problem, x0, qp_eps)
            if variant == "hard":
                csqp[qp_eps] = r
            cost = problem.calc(list(r["xs"]), list(r["us"]))
            checked = CHECKED_BY[variant]
            viol = violation(problems[checked][0], r["xs"], r["us"])
            where = "" if checked == variant else f" (of {checked})"
            viol = " | ".join("-" if v is None else f"{v:.1e}{where}" for v in viol.values())
            qp = "-" if r["qp_iterations"] is None else r["qp_iterations"]
            lines.append(
                f"| {name} | {variant} | {r['solver']} | {r['converged']} | {r['iterations']} | {qp} | {r['stop']:.1e} "
                f"| {spread(r)} | {cost:.10g} | {viol} | {defect(problem, r['xs'], r['us']):.1e} |"
            )
            print(lines[-1], flush=True)
            if variant == "penalty" and name in FDDP_REFERENCE:
                reference, source = FDDP_REFERENCE[name]
                sanity.append(
                    f"Sanity: the {name}'s FDDP cost {cost:.10g} against results/{source}'s {reference:.10g} "
                    f"(relative difference {cost / reference - 1:+.1e})."
                )
                print(sanity[-1], flush=True)
        if solvers:
            from benchmarks.constrained_layer import casrbd_rows

            rows, check = casrbd_rows(name, *problems["hard"], csqp, solvers)
            ours += rows
            checks.append(check)
    if ours:
        from benchmarks.constrained_layer import CASRBD_HEADER, CASRBD_MAX_ITER, CASRBD_OPTIONS, CASRBD_TOL

        lines += [
            "",
            "## casrbd on the hard variants (casrbd.ocp.legged, hard=True; compiled Gauss-Newton stages)",
            "",
            "From Crocoddyl's guess through the penalty problem's solution (the hard problems' start, its iterations "
            "and CPU time counted), "
            f"tolerance {CASRBD_TOL:g} (the solver's KKT residual), {CASRBD_OPTIONS} over legged.HARD_OPTIONS, at most "
            f"{CASRBD_MAX_ITER} iterations; CPU the solver's t_proc_total (fastest, in brackets the slowest and the "
            "number of solves); build: wall seconds of the problem from the library cache and creating the solver; "
            "cost and violations by Crocoddyl's models on casrbd's solution (the cost of the hard variant, "
            "compared with CSQP's at QP eps 1e-4); per iteration the solver's CPU in the stage derivatives "
            "(one evaluation of each), fatrop's search direction (its linear algebra) and the rest.",
            "",
            CASRBD_HEADER,
            *ours,
            "",
            *checks,
        ]
    text = "\n".join(lines + [""] + sanity) + "\n"
    Path(args.output).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
