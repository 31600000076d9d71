"""Solo12 trotting at 0.3 m/s under random base pushes: whole-body MPC on the problem layer, MuJoCo as the plant.

MuJoCo simulates solo12 (or ``--robot go2``) at 1 kHz on a ground plane, a sphere at each foot
(``casrbd.sim.Plant``); every 1 / ``--rate`` s the controller solves
``ocp.legged_mpc.GaitHorizon``: ``--nodes`` knots of 20 ms of contact dynamics
on a trot's contact schedule that advances with time, tracking the base
velocity (and ``--yaw-rate``), one warm-started fatrop iteration per update
(the stages compiled to C unless ``--no-compiled``), applied with a joint PD
around the plan between updates. Pushes of ``--push`` N s hit the base at
random times and directions (``--seed``). Metrics: fall, velocity tracking,
foot slip, update CPU times.

    python examples/mpc_trot.py --plot mpc_trot.png --html mpc_trot.html
"""

import argparse

import common
import numpy as np

import casrbd
from casrbd.ocp.legged_mpc import GaitHorizon, trot_gait
from casrbd.ocp.mpc import MPC
from casrbd.sim import Plant, Push

DT = 0.02


# per robot: the trot's foot pairs, foot radius, standing legs, base frame, joint PD gains around the plan,
# GaitHorizon's own options
ROBOTS = {
    "solo12": ((("FL_FOOT", "HR_FOOT"), ("FR_FOOT", "HL_FOOT")), 0.02, common.SOLO_LEGS, "base_link", 3.0, 0.1, {}),
    "go2": (
        (("FL_foot", "RR_foot"), ("FR_foot", "RL_foot")), 0.022, np.tile([0.0, 0.8, -1.5], 4), "base", 20.0, 0.5,
        {"height": 0.08, "weights": {"base_velocity": 2e3, "base_pose": 2e3, "posture": 20.0, "control": 5e-3,
                                     "swing": 2e4, "cone": 10.0}},
    ),
}  # fmt: skip
MIN_HEIGHT, MAX_TILT = 0.12, 0.6  # a fall: the base below this (m) or tilted more than this (rad)


def pushes(duration, impulse, seed):
    """One push a second at a random time in it, horizontal, of ``impulse`` N s in a random direction."""
    rng = np.random.default_rng(seed)
    times, angles = np.arange(int(duration)) + rng.uniform(0.3, 0.9, int(duration)), rng.uniform(0, 2 * np.pi, 99)
    return tuple(Push(t, "root_joint", (impulse * np.cos(a), impulse * np.sin(a), 0.0)) for t, a in zip(times, angles))


def run(duration=5.0, rate=100, nodes=16, velocity=0.3, yaw_rate=0.0, push=0.5, seed=0, compiled=True, **more):
    """The closed loop: a dict with the model, feet, q0, the plant's ``record``, the plans and the pushes.
    ``more``: ``robot`` (a name of ``ROBOTS``, default solo12), ``model`` (the controller's, default the
    plant's), ``swing`` (knots of a swing, default 8)."""
    pairs, radius, legs, base, kp, kd, options = ROBOTS[more.get("robot", "solo12")]
    plant_model, feet = casrbd.load_robot(more.get("robot", "solo12")), [f for pair in pairs for f in pair]
    q0 = np.r_[0, 0, 0, 0, 0, 0, 1, legs]
    q0[2] = radius - min(casrbd.frame_placement(plant_model, q0, f)[2, 3] for f in feet)  # feet on the ground
    horizon = GaitHorizon(
        more.get("model") or plant_model,
        q0,
        trot_gait(pairs, more.get("swing", 8)),
        feet,
        base=base,
        nodes=nodes,
        dt=DT,
        velocity=(velocity, 0.0),
        yaw_rate=yaw_rate,
        foot_height=radius,
        compiled=compiled,
        **options,
    )
    mpc = MPC(horizon, DT, kp, kd, (slice(7, None), slice(6, None)))
    plant = Plant(plant_model, feet=feet, foot_radius=radius, ground=True)
    kicks = pushes(duration, push, seed) if push else ()
    record = plant.run(mpc, duration, rate, q0, pushes=kicks)
    out = {"model": plant_model, "feet": feet, "q0": q0, "record": record, "plans": mpc.plans, "pushes": kicks}
    return out | {"v": velocity}


def metrics(result):
    """fell, the base's forward and lateral velocity error (RMS after the first second, m/s), mean forward speed,
    the feet's median horizontal speed while loaded (m/s), update CPU times (s) and the real-time factor."""
    r, model = result["record"], result["model"]
    qx, qy, qz, qw = r.q[:, 3:7].T
    tilt = np.arccos(np.clip(1 - 2 * (qx**2 + qy**2), -1, 1))
    fell = bool(np.any(r.q[:, 2] < MIN_HEIGHT) or np.any(tilt > MAX_TILT))
    late = r.t > 1.0
    error = np.sqrt(np.mean((r.v[late, :2] - [result["v"], 0.0]) ** 2, axis=0))
    every = 5
    feet = np.array([[casrbd.frame_placement(model, q, f)[:2, 3] for f in result["feet"]] for q in r.q[::every]])
    speed = np.linalg.norm(np.diff(feet, axis=0), axis=2) / (every * (r.t[1] - r.t[0]))
    loaded = r.contact_forces[::every, :, 2][: len(speed)] > 3.0
    cpu = r.update_cpu[1:]
    return {
        "fell": fell,
        "velocity_rms": error,
        "mean_speed": float(r.v[late, 0].mean()),
        "slip": float(np.median(speed[loaded])) if loaded.any() else 0.0,
        "cpu": cpu,
        "real_time_factor": (r.t[-1] - r.t[0]) / r.update_cpu.sum(),
    }


def summary(result):
    m, r = metrics(result), result["record"]
    cpu = 1e3 * m["cpu"]
    return [
        f"{result['model'].name} trot at {result['v']} m/s: {len(r.update_cpu)} updates, plant 1 kHz, "
        f"{len(result['pushes'])} pushes",
        f"fell: {m['fell']}; base height min {r.q[:, 2].min():.3f} m; forward speed {m['mean_speed']:.3f} m/s; "
        f"velocity RMS error (x, y) {m['velocity_rms'][0]:.3f}, {m['velocity_rms'][1]:.3f} m/s",
        f"foot slip (median horizontal speed while loaded) {1e3 * m['slip']:.1f} mm/s",
        f"update CPU (warm): median {np.median(cpu):.1f} ms, p99 {np.percentile(cpu, 99):.1f} ms, worst {cpu.max():.1f}"
        f" ms; controller real-time factor {m['real_time_factor']:.2f}",
    ]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--robot", choices=sorted(ROBOTS), default="solo12", help="the robot (default solo12)")
    p.add_argument("--duration", type=float, default=5.0, help="simulated seconds (default 5)")
    p.add_argument("--rate", type=int, default=100, help="controller updates per second (default 100)")
    p.add_argument("--nodes", type=int, default=16, help="horizon knots of 20 ms (default 16)")
    p.add_argument("--velocity", type=float, default=0.3, help="forward velocity reference, m/s")
    p.add_argument("--yaw-rate", type=float, default=0.0, help="turning rate reference, rad/s")
    p.add_argument("--push", type=float, default=0.5, help="push impulses, N s (0: none)")
    p.add_argument("--seed", type=int, default=0, help="the pushes' random generator seed")
    p.add_argument("--compiled", action=argparse.BooleanOptionalAction, default=True, help="stages as C")
    p.add_argument("--plot", metavar="PATH.png", help="write the base velocity, height, foot forces and torques")
    p.add_argument("--html", metavar="PATH.html", help="write the motion as an HTML animation")
    args = p.parse_args(argv)
    a = args
    result = run(a.duration, a.rate, a.nodes, a.velocity, a.yaw_rate, a.push, a.seed, a.compiled, robot=a.robot)
    print("\n".join(summary(result)))
    r = result["record"]
    if args.plot:
        series = {"base v (local) [m/s]": r.v[:, :3], "base z [m]": r.q[:, 2:3]}
        series |= {"foot forces z [N]": r.contact_forces[:, :, 2], "tau [Nm]": r.tau}
        common.plot_series(args.plot, r.t, series, f"{a.robot} trot: MPC, MuJoCo plant, pushes")
    if args.html:
        every = max(1, len(r.t) // 500)
        common.write_html(args.html, result["model"], r.t[::every], r.q[::every], a.robot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
