"""Whole-body MPC of the Panda (fingers fixed; arm7 without example-robot-data) with MuJoCo as the plant.

MuJoCo simulates the arm at 1 kHz (``casrbd.sim.Plant``, its model written from
casrbd's) and the controller updates at ``--rate`` Hz from the measured state:
``ocp.mpc.reaching_horizon`` (RK4 multiple shooting, Gauss-Newton stages compiled
to C, torque, joint and velocity limits as hard bounds), solved once to
convergence, then warm-started from its shifted last solution with a fixed
budget of iterations (IPOPT with its multipliers too, or fatrop). The tool visits
``casrbd.sim.reach.TARGETS`` in turn, ``--hold`` s each (``casrbd.sim.reach_targets``).

    python examples/mpc_panda.py --rate 500 --solver fatrop --plot mpc_panda.png --html mpc_panda.html
"""

import argparse

import common
import numpy as np

from casrbd.sim import reach_summary, reach_targets


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
    result = reach_targets(
        args.rate, args.hold, args.nodes, max_iter=args.max_iter, compiled=args.compiled, solver=args.solver
    )
    print("\n".join(reach_summary(result)))
    common.record_outputs(args, result, plot, result["model"].name)
    return 0 if np.all(result["final"] < 5e-3) else 1


if __name__ == "__main__":
    raise SystemExit(main())
