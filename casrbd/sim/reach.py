"""The Panda (or arm7) reaching targets in turn under whole-body MPC, with MuJoCo as the plant.

MuJoCo simulates the arm at 1 kHz (``Plant``, its model written from casrbd's)
and the controller updates at ``rate`` Hz from the measured state:
``ocp.mpc.reaching_horizon`` (RK4 multiple shooting, Gauss-Newton stages,
compiled to C or not, torque, joint and velocity limits as hard bounds), solved
once to convergence, then warm-started from its shifted last solution with a
fixed budget of ``max_iter`` iterations. The tool visits ``targets`` (offsets
from its start) in turn, ``hold`` s each. What examples/mpc_panda.py shows and
benchmarks/mpc.py times.
"""

import numpy as np

from ..functions import function
from ..models import load_arm
from ..ocp.mpc import MPC, reaching_horizon
from .plant import Plant

Q0 = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
# tool positions relative to the start's, m
TARGETS = np.array([[0.1, 0.1, -0.1], [0.15, -0.15, 0.0], [-0.05, -0.2, 0.15], [0.0, 0.0, 0.0]])
PLANT_DT = 1e-3  # Plant's step


def reach_targets(
    rate=500, hold=1.0, nodes=10, dt=0.03, max_iter=1, compiled=True, solver="ipopt", targets=TARGETS, robot=None
):
    """The closed loop from rest at ``Q0``: a dict with the model, tool, targets (world), the plant's
    ``record``, the tool's positions ``tool_p`` and its ``error`` to the current target over time, each
    target's ``final`` error, the ``plans``, ``rate``, ``solver``, and the motion (``t``, ``q``).
    ``robot``: ``load_arm``'s (default the Panda, else arm7); ``compiled``: the stages as C."""
    model, tool = load_arm(robot)
    tool_at = function(model, "frame_placement", frame=tool)
    start = np.asarray(tool_at(Q0))[:3, 3]
    targets = start + np.asarray(targets, dtype=float)
    name = f"reach_{model.name}" if compiled else None
    horizon = reaching_horizon(model, tool, targets[0], nodes, dt, compiled=name, max_iter=max_iter, solver=solver)
    mpc = MPC(horizon, dt)

    def controller(t, q, v):
        horizon.parameters = targets[min(int(t / hold), len(targets) - 1)]
        return mpc(t, q, v)

    record = Plant(model).run(controller, hold * len(targets), rate, Q0)
    tool_p = np.array([np.asarray(tool_at(q))[:3, 3] for q in record.q])
    current = targets[np.minimum((record.t / hold).astype(int), len(targets) - 1)]
    current[-1] = targets[-1]
    error = np.linalg.norm(tool_p - current, axis=1)
    ends = [round(k * hold / PLANT_DT) for k in range(1, len(targets) + 1)]
    final = np.array([np.linalg.norm(tool_p[i] - targets[k]) for k, i in enumerate(ends)])
    result = {"model": model, "tool": tool, "targets": targets, "record": record, "tool_p": tool_p, "rate": rate}
    result.update(solver=solver, error=error, final=final, plans=mpc.plans, t=record.t, q=record.q)
    return result


def reach_summary(result):
    """Lines on a ``reach_targets`` run: update CPU times, the errors at each target, torque and joint-limit
    margins."""
    r, m = result["record"], result["model"]
    cpu = 1e3 * r.update_cpu[1:]  # the first solve is cold
    iters = np.array([p.iterations for p in result["plans"][1:]])
    margin = np.minimum(r.q - m.lower, m.upper - r.q).min()
    return [
        f"{m.name}: {len(r.update_cpu)} updates at {result['rate']} Hz ({result['solver']}), plant 1 kHz, "
        f"{r.t[-1]:.1f} s simulated",
        f"update CPU time (warm): median {np.median(cpu):.2f} ms, 99th percentile {np.percentile(cpu, 99):.2f} ms, "
        f"worst {cpu.max():.2f} ms; first (cold) {1e3 * r.update_cpu[0]:.0f} ms; iterations <= {iters.max()}",
        "tool error at the end of each target: " + ", ".join(f"{1e3 * e:.2f} mm" for e in result["final"]),
        f"max |tau| / effort limit {(np.abs(r.tau) / m.effort_limit).max():.9f}; "
        f"closest approach to a joint limit {margin:.3f} rad",
    ]
