"""Whole-body MPC of the Panda (fingers fixed; arm7 without example-robot-data) with MuJoCo as the plant.

MuJoCo simulates the arm at 1 kHz (``casrbd.sim.Plant``, its model written from
casrbd's) and the controller updates at ``--rate`` Hz from the measured state:
``ocp.mpc.reaching_horizon`` (RK4 multiple shooting, Gauss-Newton stages compiled
to C, torque, joint and velocity limits as hard bounds), solved once to
convergence, then warm-started from its shifted last solution with a fixed
budget of iterations (IPOPT with its multipliers too, or fatrop). The tool visits
``TARGETS`` in turn, ``--hold`` s each.

    python examples/mpc_panda.py --rate 500 --solver fatrop --plot mpc_panda.png --html mpc_panda.html
"""

import argparse

import common
import numpy as np

import casrbd
from casrbd.ocp.mpc import MPC, reaching_horizon
from casrbd.sim import Plant

Q0 = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
# tool positions relative to the start's, m
TARGETS = np.array([[0.1, 0.1, -0.1], [0.15, -0.15, 0.0], [-0.05, -0.2, 0.15], [0.0, 0.0, 0.0]])


def run(rate=500, hold=1.0, nodes=10, dt=0.03, max_iter=1, compiled=True, solver="ipopt"):
    """The closed loop: a dict with the model, tool, targets (world), the plant's ``record``, the tool's
    positions and its error to the current target over time, each target's final error and the plans."""
    model, _, tool = common.load_arm()
    tool_at = casrbd.function(model, "frame_placement", frame=tool)
    start = np.asarray(tool_at(Q0))[:3, 3]
    targets = start + TARGETS
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
    ends = [round(k * hold / 1e-3) for k in range(1, len(targets) + 1)]
    final = np.array([np.linalg.norm(tool_p[i] - targets[k]) for k, i in enumerate(ends)])
    result = {"model": model, "tool": tool, "targets": targets, "record": record, "tool_p": tool_p, "rate": rate}
    result["solver"] = solver
    result.update(error=error, final=final, plans=mpc.plans, t=record.t, q=record.q)
    return result


def summary(result):
    """Lines on the run: update CPU times, the errors at each target, torque and joint-limit margins."""
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


def plot(result, path):
    r, m = result["record"], result["model"]
    series = {
        "tool error [mm]": 1e3 * result["error"],
        "tau / effort limit": r.tau / m.effort_limit,
        "q [rad]": r.q,
    }
    common.plot_series(path, r.t, series, f"{m.name}: MPC with MuJoCo as the plant")
    cpu_path = path[:-4] + "_cpu.png" if path.endswith(".png") else path + "_cpu.png"
    common.plot_series(cpu_path, r.update_t[1:], {"update CPU time [ms]": 1e3 * r.update_cpu[1:]}, "MPC updates")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rate", type=int, default=500, help="controller updates per second (default 500)")
    p.add_argument("--hold", type=float, default=1.0, help="seconds per target (default 1)")
    p.add_argument("--nodes", type=int, default=10, help="horizon intervals (default 10)")
    p.add_argument("--max-iter", type=int, default=1, help="IPOPT iterations per update (default 1)")
    p.add_argument("--solver", choices=("ipopt", "fatrop"), default="ipopt", help="ipopt (default) or fatrop")
    p.add_argument("--compiled", action=argparse.BooleanOptionalAction, default=True, help="stages as C")
    p.add_argument("--plot", metavar="PATH.png", help="write the tool error, torques, q and update times")
    p.add_argument("--html", metavar="PATH.html", help="write the motion as an HTML animation")
    args = p.parse_args(argv)
    result = run(args.rate, args.hold, args.nodes, max_iter=args.max_iter, compiled=args.compiled, solver=args.solver)
    print("\n".join(summary(result)))
    if args.plot:
        plot(result, args.plot)
    if args.html:
        r = result["record"]
        every = max(1, len(r.t) // 500)  # at most about 500 frames
        common.write_html(args.html, result["model"], r.t[::every], r.q[::every], result["model"].name)
    return 0 if np.all(result["final"] < 5e-3) else 1


if __name__ == "__main__":
    raise SystemExit(main())
