"""Solo12 trotting at 0.3 m/s under random base pushes: whole-body MPC on the problem layer, MuJoCo as the plant.

MuJoCo simulates solo12 (or ``--robot go2``) at 1 kHz on a ground plane, a sphere at each foot
(``casrbd.sim.Plant``); every 1 / ``--rate`` s the controller solves
``ocp.legged_mpc.GaitHorizon``: ``--nodes`` knots of 20 ms of contact dynamics
on a trot's contact schedule that advances with time, tracking the base
velocity (and ``--yaw-rate``), one warm-started Gauss-Newton step of a Riccati
recursion per update (``--iterations``; ``--solver fatrop``: fatrop iterations;
the stages compiled to C unless ``--no-compiled``), applied between updates
with a joint PD around the plan (``--gains``: the recursion's feedback gains,
which need two steps per update: the gains of one step's plan make it fall).
Pushes of ``--push`` N s hit the base at random times and directions
(``--seed``). The scenario and its metrics (fall, velocity tracking, foot slip,
update CPU times) are ``casrbd.sim.trot``'s.

    python examples/mpc_trot.py --plot mpc_trot.png --html mpc_trot.html
"""

import argparse

import common

from casrbd.ocp.legged_mpc import SOLVERS
from casrbd.sim import trot


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--robot", choices=sorted(trot.ROBOTS), default="solo12", help="the robot (default solo12)")
    p.add_argument("--duration", type=float, default=5.0, help="simulated seconds (default 5)")
    p.add_argument("--rate", type=int, default=100, help="controller updates per second (default 100)")
    p.add_argument("--nodes", type=int, default=16, help="horizon knots of 20 ms (default 16)")
    p.add_argument("--velocity", type=float, default=0.3, help="forward velocity reference, m/s")
    p.add_argument("--yaw-rate", type=float, default=0.0, help="turning rate reference, rad/s")
    p.add_argument("--push", type=float, default=0.5, help="push impulses, N s (0: none)")
    p.add_argument("--seed", type=int, default=0, help="the pushes' random generator seed")
    p.add_argument("--solver", choices=SOLVERS, default="riccati", help="the horizon's solver (default riccati)")
    p.add_argument("--gains", action=argparse.BooleanOptionalAction, default=False, help="Riccati gains, else PD")
    p.add_argument("--iterations", type=int, default=1, help="solver iterations per update (default 1)")
    p.add_argument("--compiled", action=argparse.BooleanOptionalAction, default=True, help="stages as C")
    p.add_argument("--plot", metavar="PATH.png", help="write the base velocity, height, foot forces and torques")
    p.add_argument("--html", metavar="PATH.html", help="write the motion as an HTML animation")
    a = p.parse_args(argv)
    result = trot.run(
        a.duration, a.rate, a.nodes, a.velocity, a.yaw_rate, a.push, a.seed, a.compiled, a.robot,
        solver=a.solver, gains=a.gains, iterations=a.iterations,
    )  # fmt: skip
    print("\n".join(trot.summary(result)))
    r = result["record"]
    if a.plot:
        series = {"base v (local) [m/s]": r.v[:, :3], "base z [m]": r.q[:, 2:3]}
        series |= {"foot forces z [N]": r.contact_forces[:, :, 2], "tau [Nm]": r.tau}
        common.plot_series(a.plot, r.t, series, f"{a.robot} trot: MPC, MuJoCo plant, pushes")
    if a.html:
        every = max(1, len(r.t) // 500)
        common.write_html(a.html, result["model"], r.t[::every], r.q[::every], a.robot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
