"""casrbd's solo12 trot MPC (``casrbd.sim.trot``) against Crocoddyl's FDDP on the same horizon, same plant.

    OMP_NUM_THREADS=1 .venv-croc/bin/python -m benchmarks.mpc_crocoddyl [--seeds 20] [--duration 10]
        [--controllers riccati,fddp1,fddp3,fddp1k,fddp3k] [--push 0.5] [--nodes 16]

Needs the ``crocoddyl`` extra's environment with MuJoCo (benchmarks/README.md). ``CrocoddylHorizon`` is
``ocp.legged_mpc.GaitHorizon``'s problem as Crocoddyl action models: each knot type (contact set) of the
horizon converted term by term (``action_model``: the same residuals, activations and weights, 3-D contacts
with the Baumgarte velocity gain kd as Crocoddyl's gains [0, kd], semi-implicit Euler), one model per knot of
the horizon and contact set, one ``ShootingProblem`` and ``SolverFDDP`` per rotation of the gait. At each update
the references and weights come from the GaitHorizon's ``references(x0)`` (by term name) and the warm start
from its ``guess`` (the last plan shifted in time, its quaternions normalised), then FDDP runs a fixed number of
iterations (the first solve: to convergence, as casrbd's). ``casrbd.sim.trot.run`` drives it (its ``horizon``
factory; same plant, pushes, gait clock) with the same joint PD around the plan as casrbd's, or (its
``controller`` factory: ``RiccatiMPC``) with FDDP's Riccati gains of the first knot. ``same_problem`` checks
that every knot's cost and next state equal casrbd's stage Functions' at random states and controls.
``CONTROLLERS``: casrbd's Riccati RTI (``riccati``, one Gauss-Newton step, joint PD: ``trot.run``'s default),
casrbd's fatrop (``fatrop``, one iteration), FDDP with N iterations and the joint PD (``fddpN``) or its gains
(``fddpNk``). Writes benchmarks/results/mpc_trot_crocoddyl.md after each seed (an interrupted run keeps the
seeds done): per seed and controller the falls, velocity error, slip and update CPU times (``trot.metrics``),
and for Crocoddyl the CPU of ``solve`` alone.
"""

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402
import re  # noqa: E402
import time  # noqa: E402
from typing import NamedTuple  # noqa: E402

import crocoddyl  # noqa: E402
import numpy as np  # noqa: E402
import pinocchio as pin  # noqa: E402

from casrbd.models import robot_path  # noqa: E402
from casrbd.ocp.legged_mpc import GaitHorizon  # noqa: E402
from casrbd.ocp.mpc import MPC, Plan  # noqa: E402
from casrbd.ocp.residuals import Control, FramePlacement, FrameTranslation, FrameVelocity, FrictionCone, State  # noqa: E402
from casrbd.ocp.terms import Quadratic, QuadraticBarrier, WeightedQuadratic  # noqa: E402
from casrbd.sim import trot  # noqa: E402

from .mpc import RESULTS, SHARED, environment  # noqa: E402

FRAMES = {"local": pin.LOCAL, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED, "world": pin.WORLD}
COLD_ITERATIONS = 100  # the first solve's budget: to convergence, as GaitHorizon's first (cold) solve


def pinocchio_model(robot, model):
    """Pinocchio's model of the URDF of ``robot`` (a name of ``casrbd.load_robot``) with a free-flyer root, checked
    against casrbd's ``model`` of it."""
    path = robot_path(robot)[0]
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    if tuple(pm.names[1:]) != tuple(model.names) or (pm.nq, pm.nv) != (model.nq, model.nv):
        raise ValueError(f"{path}: Pinocchio's joints {list(pm.names[1:])} are not casrbd's {list(model.names)}")
    return pm


def _frame(state, frame):
    fid = state.pinocchio.getFrameId(frame)
    if fid >= state.pinocchio.nframes:
        raise ValueError(f"frame {frame!r}: not in Pinocchio's model {state.pinocchio.name!r}")
    return fid


# casrbd residual type -> Crocoddyl residual (its reference a placeholder: set per update)
RESIDUALS = {
    FrameVelocity: lambda s, r, nu: crocoddyl.ResidualModelFrameVelocity(
        s, _frame(s, r.frame), pin.Motion.Zero(), FRAMES[r.reference], nu
    ),
    FramePlacement: lambda s, r, nu: crocoddyl.ResidualModelFramePlacement(
        s, _frame(s, r.frame), pin.SE3.Identity(), nu
    ),
    FrameTranslation: lambda s, r, nu: crocoddyl.ResidualModelFrameTranslation(s, _frame(s, r.frame), np.zeros(3), nu),
    State: lambda s, r, nu: crocoddyl.ResidualModelState(s, r.x_ref, nu),
    Control: lambda s, r, nu: crocoddyl.ResidualModelControl(s, np.zeros(nu)),
}


def _cost(state, term, nu):
    """A casrbd ``Cost`` as Crocoddyl's residual cost (weight set per update)."""
    r, a = term.residual, term.activation
    if type(r) is FrictionCone:
        if r.facets != 4:
            raise ValueError(f"term {term.name!r}: Crocoddyl's friction cone is a pyramid (facets=4)")
        cone = crocoddyl.FrictionCone(np.eye(3), r.mu, 4, False)  # the outer pyramid: mu itself, as casrbd's
        residual = crocoddyl.ResidualModelContactFrictionCone(state, _frame(state, r.frame), cone, nu, True)
        natural = cone.lb, cone.ub  # casrbd's bounds in Crocoddyl's row order (+fx, +fy, -fx, -fy, fz)
    elif type(r) in RESIDUALS:
        residual, natural = RESIDUALS[type(r)](state, r, nu), None
    else:
        raise ValueError(f"term {term.name!r}: no Crocoddyl residual for casrbd's {type(r).__name__}")
    n = residual.nr
    if type(a) is Quadratic:
        activation = crocoddyl.ActivationModelQuad(n)
    elif type(a) is WeightedQuadratic:
        activation = crocoddyl.ActivationModelWeightedQuad(np.broadcast_to(a.weights, n).copy())
    elif type(a) is QuadraticBarrier and a.lower is None and a.upper is None and natural is not None:
        activation = crocoddyl.ActivationModelQuadraticBarrier(crocoddyl.ActivationBounds(*natural))
    else:
        raise ValueError(f"term {term.name!r}: no Crocoddyl activation for {type(a).__name__} on {type(r).__name__}")
    return crocoddyl.CostModelResidual(state, activation, residual)


def action_model(state, stage):
    """casrbd's ``stage`` (``ocp.problem.Stage``: its knot and terms; a terminal one without a knot) as a Crocoddyl
    integrated action model: contact dynamics on 3-D contacts (kd: Crocoddyl's gains [0, kd]) or, terminal,
    costs only; semi-implicit Euler (``IntegratedActionModelEuler``; dt 0: the cost alone, undivided)."""
    nu = state.nv - 6
    actuation = crocoddyl.ActuationModelFloatingBase(state)
    costs = crocoddyl.CostModelSum(state, nu)
    for term in stage.terms:
        costs.addCost(term.name, _cost(state, term, nu), term.weight)
    knot = stage.knot
    if knot is None:
        return crocoddyl.IntegratedActionModelEuler(
            crocoddyl.DifferentialActionModelFreeFwdDynamics(state, actuation, costs), 0.0
        )
    d = knot.dynamics
    if d.kind != "contact" or knot.integrator != "semi-implicit":
        raise ValueError(f"stage {stage.function.name()!r}: {d.kind} dynamics, {knot.integrator} integrator")
    contacts = crocoddyl.ContactModelMultiple(state, nu)
    for frame, kind in d.contacts:
        if kind != "3d":
            raise ValueError(f"contact {frame!r}: {kind}, converted are 3d contacts")
        gains = np.array([0.0, d.kd])
        contact = crocoddyl.ContactModel3D(state, _frame(state, frame), np.zeros(3), FRAMES[d.reference], nu, gains)
        contacts.addContact(frame, contact)
    dam = crocoddyl.DifferentialActionModelContactFwdDynamics(state, actuation, contacts, costs, 0.0, True)
    return crocoddyl.IntegratedActionModelEuler(dam, knot.dt)


def _setter(residual_type):
    """How a reference slice of p (``Stage.parameters``' layout) goes into the Crocoddyl residual."""
    if residual_type is FrameVelocity:
        return lambda res, ref: setattr(res, "reference", pin.Motion(ref))
    if residual_type is FramePlacement:
        return lambda res, ref: setattr(res, "reference", pin.SE3(ref[3:].reshape(3, 3, order="F"), ref[:3]))
    if residual_type in (FrameTranslation, Control):
        return lambda res, ref: setattr(res, "reference", ref)
    return None  # no reference (State's is constant, the cone's none)


class CrocoddylHorizon:
    """GaitHorizon ``gait``'s problem (its model: ``robot``'s) solved by Crocoddyl's FDDP, ``iterations`` per
    warm solve; ``solve``, ``shift``, ``reset`` as ``GaitHorizon``'s (``mpc.MPC`` drives it). ``solve_cpu``: CPU
    seconds of each ``solver.solve``; ``gains``: the last solve's Riccati gains of its first knot (FDDP's K_0)."""

    def __init__(self, gait, robot="solo12", iterations=1):
        self.gait, self.iterations = gait, iterations
        self.state = crocoddyl.StateMultibody(pinocchio_model(robot, gait.model))
        models = [{s: action_model(self.state, st) for s, (st, _) in gait.stages.items()} for _ in range(gait.nodes)]
        terminal = action_model(self.state, gait.terminal)
        x0, period = np.r_[gait.q_standing, np.zeros(gait.model.nv)], len(gait.gait)
        self.problems, self.solvers = [], []
        for r in range(period):
            running = [models[k][gait.gait[(r + k) % period]] for k in range(gait.nodes)]
            problem = crocoddyl.ShootingProblem(x0, running, terminal)
            problem.nthreads = 1
            self.problems.append(problem)
            self.solvers.append(crocoddyl.SolverFDDP(problem))
        # per knot and contact set, and the terminal: {term name: (cost item, residual, reference setter)}
        self._items = {
            (k, s): self._bind(models[k][s], st) for k in range(gait.nodes) for s, (st, _) in gait.stages.items()
        }
        self._items["terminal"] = self._bind(terminal, gait.terminal)
        self.solve_cpu = []

    @staticmethod
    def _bind(model, stage):
        costs = model.differential.costs.costs
        return {t.name: (costs[t.name], costs[t.name].cost.residual, _setter(type(t.residual))) for t in stage.terms}

    def set_parameters(self, x0):
        """The references and weights of GaitHorizon's ``references(x0)`` set on the rotation's models: its
        problem."""
        g = self.gait
        rotation, knots = g.references(x0)
        for k, terms in enumerate(knots):
            key = (k, g.gait[(rotation + k) % len(g.gait)]) if k < g.nodes else "terminal"
            for name, (item, residual, setter) in self._items[key].items():
                reference, item.weight = terms[name]
                if setter is not None:
                    setter(residual, reference)
        return rotation

    def solve(self, x0):
        x0 = np.asarray(x0, dtype=float).ravel()
        g = self.gait
        g.heading(x0)
        cold = g.cold
        rotation = self.set_parameters(x0)
        xs, us = g.guess(x0)
        xs[:, 3:7] /= np.linalg.norm(xs[:, 3:7], axis=1, keepdims=True)  # Pinocchio takes unit quaternions
        problem, solver = self.problems[rotation], self.solvers[rotation]
        problem.x0 = x0
        start = time.process_time()
        done = solver.solve(list(xs), list(us), COLD_ITERATIONS if cold else self.iterations, False)
        self.solve_cpu.append(time.process_time() - start)
        xs, us = np.array(solver.xs), np.array(solver.us)
        g.keep(xs, us)
        self.gains = np.array(solver.K[0])
        return Plan(xs, us, solver.iter, "converged" if done else "iterations")

    def shift(self, fraction):
        self.gait.shift(fraction)

    def reset(self):
        self.gait.reset()


class RiccatiLaw(NamedTuple):
    """u = u_0 - K_0 (x (-) x_0): a plan's first knot with FDDP's Riccati gains (its forward pass' sign)."""

    state: object
    x: np.ndarray
    u: np.ndarray
    K: np.ndarray

    def __call__(self, t, q, v):
        return self.u - self.K @ self.state.diff(self.x, np.r_[q, v])


class RiccatiMPC(MPC):
    """``mpc.MPC`` of a ``CrocoddylHorizon`` answering a ``RiccatiLaw`` (``MPC``'s other arguments unused)."""

    def __init__(self, horizon, dt, *args, **options):
        super().__init__(horizon, dt)

    def __call__(self, t, q, v):
        u = super().__call__(t, q, v)
        return RiccatiLaw(self.horizon.state, self.plans[-1].xs[0], u, self.horizon.gains)


def same_problem(horizon, seed=0, rotations=(0, 5)):
    """The largest |cost difference| / max(1, |cost|) and |next-state difference| of the Crocoddyl models and
    casrbd's stage Functions over every knot of the horizon at ``rotations`` of the gait, on random states (the
    standing pose turned to a random heading and moved by normal tangent steps of 0.1, velocities of 0.5) and
    controls (u_ref plus 0.5 normal), random references (a random clock within the rotation, the heading and
    base position of the random first state). Resets the horizon."""
    g, rng, worst = horizon.gait, np.random.default_rng(seed), np.zeros(2)
    pm, nv = horizon.state.pinocchio, g.model.nv

    def state(yaw=0.0):
        q = g.q_standing.copy()
        q[3:7] = 0.0, 0.0, np.sin(yaw / 2), np.cos(yaw / 2)
        return np.r_[pin.integrate(pm, q, 0.1 * rng.normal(size=nv)), 0.5 * rng.normal(size=nv)]

    for rotation in rotations:
        g.reset()
        g.shift(max(0.0, rotation + rng.uniform(-0.4, 0.4)))
        x0 = state(rng.uniform(-np.pi, np.pi))
        g.heading(x0)
        r = horizon.set_parameters(x0)
        problem, (_, p) = horizon.problems[r], g.parameters(x0)
        stages, at = g.sequence(r) + [g.terminal], 0
        models, datas = [*problem.runningModels, problem.terminalModel], [*problem.runningDatas, problem.terminalData]
        for k, (stage, model, data) in enumerate(zip(stages, models, datas)):
            n_p = stage.function.numel_in(2)
            x = state()
            u = g.u_ref[g.gait[(r + k) % len(g.gait)]] + 0.5 * rng.normal(size=g.nu) if k < g.nodes else np.zeros(0)
            cost, x_next = (np.asarray(o).ravel() for o in stage.function(x, u, p[at : at + n_p])[:2])
            at += n_p
            model.calc(data, x, u) if k < g.nodes else model.calc(data, x)
            worst[0] = max(worst[0], abs(data.cost - cost[0]) / max(1.0, abs(cost[0])))
            if k < g.nodes:
                worst[1] = max(worst[1], np.abs(data.xnext - x_next).max())
    g.reset()
    return worst


CASRBD = {"riccati": "casrbd Riccati RTI, 1 step", "fatrop": "casrbd fatrop, 1 iteration"}
FDDP = re.compile(r"fddp([1-9][0-9]*)(k?)")


def describe(controller):
    """A controller's name (``riccati``, ``fatrop``, ``fddpN``, ``fddpNk``) in words."""
    if controller in CASRBD:
        return CASRBD[controller] + ", joint PD"
    match = FDDP.fullmatch(controller)
    if match is None:
        raise ValueError(f"controller {controller!r}: expected one of {sorted(CASRBD)}, fddpN or fddpNk (N > 0)")
    n = int(match[1])
    return f"Crocoddyl FDDP, {n} iteration{'s' * (n > 1)}, " + ("FDDP's Riccati gains" if match[2] else "joint PD")


def run(controller, duration=3.0, seed=0, push=0.5, nodes=16, robot="solo12"):
    """``trot.run``'s closed loop with ``controller`` (``describe``'s names): ``trot.run``'s result, for FDDP
    with ``same_problem``'s check of its horizon ("same")."""
    options = {"nodes": nodes, "push": push, "seed": seed, "robot": robot}
    if controller in CASRBD:
        return trot.run(duration, solver=controller, **options)
    describe(controller)  # refuses a name it does not know
    match = FDDP.fullmatch(controller)

    def horizon(*args, max_iter, **kwargs):
        return CrocoddylHorizon(GaitHorizon(*args, **kwargs), robot, max_iter)

    law = RiccatiMPC if match[2] else MPC
    result = trot.run(duration, iterations=int(match[1]), horizon=horizon, controller=law, **options)
    return result | {"same": same_problem(result["horizon"])}


def _cells(name, m, solve=None):
    cpu = 1e3 * m["cpu"]
    solve = "-" if solve is None else f"{np.median(solve):.2f}"
    return [
        name,
        "yes" if m["fell"] else "no",
        f"{m['mean_speed']:.3f}",
        f"{m['velocity_rms'][0]:.3f} / {m['velocity_rms'][1]:.3f}",
        f"{1e3 * m['slip']:.1f}",
        f"{np.median(cpu):.2f}",
        f"{np.percentile(cpu, 99):.2f}",
        f"{cpu.max():.2f}",
        solve,
    ]


def write(args, done, rows, cpus, solves, falls, same):
    """benchmarks/results/mpc_trot_crocoddyl.md of the ``done`` seeds so far."""
    names = [describe(c) for c in args.controllers.split(",")]
    reference = np.median(np.concatenate(cpus[names[0]]))
    totals = []
    for name in names:
        c = np.concatenate(cpus[name])
        solve = f"; `solve` alone median {np.median(np.concatenate(solves[name])):.2f} ms" if solves[name] else ""
        totals.append(
            f"- {name}: falls {falls[name]} of {done}; warm updates median {np.median(c):.2f} ms "
            f"({np.median(c) / reference:.2f}x the first's), p99 {np.percentile(c, 99):.2f} ms, worst {c.max():.2f} ms"
            + solve
        )
    check = (
        "Same problem: at random states, controls and references, every knot's cost (Crocoddyl's action models "
        f"against casrbd's stage Functions) agrees to {same[0]:.0e} (relative), its next state to {same[1]:.0e}."
    )
    command = (
        f"python -m benchmarks.mpc_crocoddyl --seeds {args.seeds} --duration {args.duration} --push {args.push} "
        f"--nodes {args.nodes} --controllers {args.controllers}"
    )
    lines = [
        "# solo12 trotting MPC: casrbd (Riccati RTI, fatrop) and Crocoddyl (FDDP) on the same problem, MuJoCo plant",
        "",
        f"`{command}` ({environment()}, crocoddyl {crocoddyl.__version__}).",
        "",
        f"casrbd.sim.trot's closed loop (MuJoCo at 1 kHz, the controller at 100 Hz, a push of {args.push} N s a",
        "second) with GaitHorizon's problem solved by casrbd (compiled stages, one warm-started Gauss-Newton Riccati",
        "step or fatrop iteration, the joint PD around the plan between updates) or as Crocoddyl action models by",
        "FDDP (one thread, warm-started from the same shifted plan, GaitHorizon's references and weights; between",
        "updates the same joint PD or FDDP's Riccati gains of the first knot). Columns as in mpc_trot.md; median,",
        "p99, worst: the warm updates' CPU (ms), each the whole controller call (references, warm start, solve);",
        "solve: Crocoddyl's `solve` alone, median (ms). A run that fell: its speed, errors and slip describe the",
        "fall, not the trot.",
        "",
        *((check, "") if same.any() else ()),
        *(SHARED if os.getloadavg()[0] > os.cpu_count() else ()),
        "",
        f"Seeds done: {done} of {args.seeds}.",
        "",
        *totals,
        "",
        "| seed | controller | fell | speed [m/s] | velocity error x / y | slip | median | p99 | worst | solve |",
        "|---:|---|---|---:|---|---:|---:|---:|---:|---:|",
        *rows,
        "",
    ]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "mpc_trot_crocoddyl.md").write_text("\n".join(lines))
    return totals


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=20, help="runs, seeds 0 to this - 1 (default 20)")
    p.add_argument("--duration", type=float, default=10.0, help="simulated seconds per run (default 10)")
    p.add_argument("--push", type=float, default=0.5, help="push impulses, N s (default 0.5)")
    p.add_argument("--nodes", type=int, default=16, help="horizon knots of 20 ms (default 16)")
    p.add_argument(
        "--controllers",
        default="riccati,fddp1,fddp3,fddp1k,fddp3k",
        help="comma-separated: riccati, fatrop (casrbd), fddpN (FDDP, N iterations, joint PD), fddpNk (its gains); "
        "ratios are to the first (default riccati,fddp1,fddp3,fddp1k,fddp3k)",
    )
    args = p.parse_args(argv)
    controllers = args.controllers.split(",")
    names = [describe(c) for c in controllers]  # bad names refused before any run
    rows, cpus, solves, falls = [], {n: [] for n in names}, {n: [] for n in names}, dict.fromkeys(names, 0)
    same = np.zeros(2)
    for seed in range(args.seeds):
        for controller, name in zip(controllers, names):
            result = run(controller, args.duration, seed, args.push, args.nodes)
            m = trot.metrics(result)
            horizon = result["horizon"]
            solve = 1e3 * np.array(horizon.solve_cpu[1:]) if isinstance(horizon, CrocoddylHorizon) else None
            if solve is not None:
                solves[name].append(solve)
            same = np.maximum(same, result.get("same", 0.0))
            cpus[name].append(1e3 * m["cpu"])
            falls[name] += m["fell"]
            rows.append("| " + " | ".join([str(seed), *_cells(name, m, solve)]) + " |")
            print(rows[-1], flush=True)
        totals = write(args, seed + 1, rows, cpus, solves, falls, same)
    print("\n".join(totals))
    print(f"wrote {RESULTS / 'mpc_trot_crocoddyl.md'}")


if __name__ == "__main__":
    main()
