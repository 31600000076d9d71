"""A quadruped trotting under random base pushes, whole-body MPC (``ocp.legged_mpc.GaitHorizon``) in
closed loop with MuJoCo as the plant: the scenario of examples/mpc_trot.py and benchmarks/mpc_trot.py,
and its metrics (fall, velocity tracking, foot slip, update CPU times)."""

import numpy as np

from ..api import frame_placement
from ..models import load_robot
from ..ocp.legged_mpc import GaitHorizon, trot_gait
from ..ocp.mpc import MPC
from .plant import Plant, Push

DT = 0.02  # the horizon's knots, s
MIN_HEIGHT, MAX_TILT = 0.12, 0.6  # a fall: the base below this (m) or tilted more than this (rad)


class Robot:
    """A robot of the scenario: the trot's foot ``pairs``, the feet's sphere ``radius``, the standing
    ``legs`` (joint positions), the ``base`` frame, joint PD gains ``kp``, ``kd`` (the feedback law
    without Riccati gains) and ``GaitHorizon``'s own ``options``."""

    def __init__(self, pairs, radius, legs, base, kp, kd, options=None):
        self.pairs, self.radius, self.legs, self.base = pairs, radius, np.asarray(legs, dtype=float), base
        self.kp, self.kd, self.options = kp, kd, options or {}


ROBOTS = {
    "solo12": Robot(
        (("FL_FOOT", "HR_FOOT"), ("FR_FOOT", "HL_FOOT")), 0.02,
        [0, 0.8, -1.6, 0, 0.8, -1.6, 0, -0.8, 1.6, 0, -0.8, 1.6], "base_link", 3.0, 0.1,
    ),
    # its control weight keeps one-step plans within the effort limits; the barrier bounds converged plans
    "go2": Robot(
        (("FL_foot", "RR_foot"), ("FR_foot", "RL_foot")), 0.022, np.tile([0.0, 0.8, -1.5], 4), "base", 20.0, 0.5,
        {"height": 0.08, "torque_limit": 0.9, "weights": {"base_velocity": 2e3, "base_pose": 2e3, "posture": 20.0,
                                                          "control": 5e-2, "swing": 2e4, "cone": 10.0}},
    ),
}  # fmt: skip


def pushes(duration, impulse, seed):
    """One push a second at a random time in it, horizontal, of ``impulse`` N s in a random direction."""
    rng = np.random.default_rng(seed)
    times, angles = np.arange(int(duration)) + rng.uniform(0.3, 0.9, int(duration)), rng.uniform(0, 2 * np.pi, 99)
    return tuple(Push(t, "root_joint", (impulse * np.cos(a), impulse * np.sin(a), 0.0)) for t, a in zip(times, angles))


def run(
    duration=5.0,
    rate=100,
    nodes=16,
    velocity=0.3,
    yaw_rate=0.0,
    push=0.5,
    seed=0,
    compiled=True,
    robot="solo12",
    model=None,
    swing=8,
    solver="riccati",
    gains=False,
    iterations=1,
    horizon=GaitHorizon,
    controller=MPC,
):
    """The closed loop of ``robot`` (a name of ``ROBOTS``) trotting at ``velocity`` (m/s) and ``yaw_rate``
    (rad/s) for ``duration`` s, the controller at ``rate`` Hz (``nodes`` knots of ``DT``, ``swing`` knots a
    swing, ``solver``, ``compiled`` and ``iterations`` (its ``max_iter``): ``GaitHorizon``'s; ``gains``: the
    Riccati gains as the feedback law, else the joint PD: the gains of a single step's plan make the trot
    unstable, two steps' do not),
    ``model`` the controller's (default the plant's), pushes of ``push`` N s (``pushes`` of ``seed``).
    ``horizon`` and ``controller``: their factories, called as ``GaitHorizon`` and ``MPC`` (another solver
    of the same problem, another feedback law). Returns a dict with the model, feet, q0, the plant's
    ``record``, the plans, the pushes, the velocity reference ``v`` and the ``horizon``."""
    if robot not in ROBOTS:
        raise ValueError(f"robot must be one of {sorted(ROBOTS)}, got {robot!r}")
    r = ROBOTS[robot]
    plant_model, feet = load_robot(robot), [f for pair in r.pairs for f in pair]
    q0 = np.r_[0, 0, 0, 0, 0, 0, 1, r.legs]
    q0[2] = r.radius - min(frame_placement(plant_model, q0, f)[2, 3] for f in feet)  # feet on the ground
    gait_horizon = horizon(
        model or plant_model,
        q0,
        trot_gait(r.pairs, swing),
        feet,
        base=r.base,
        nodes=nodes,
        dt=DT,
        velocity=(velocity, 0.0),
        yaw_rate=yaw_rate,
        foot_height=r.radius,
        compiled=compiled,
        solver=solver,
        max_iter=iterations,
        **r.options,
    )
    mpc = controller(gait_horizon, DT, r.kp, r.kd, (slice(7, None), slice(6, None)), gains=gains)
    plant = Plant(plant_model, feet=feet, foot_radius=r.radius, ground=True)
    kicks = pushes(duration, push, seed) if push else ()
    record = plant.run(mpc, duration, rate, q0, pushes=kicks)
    return {
        "model": plant_model,
        "feet": feet,
        "q0": q0,
        "record": record,
        "plans": mpc.plans,
        "pushes": kicks,
        "v": velocity,
        "horizon": gait_horizon,
    }


def metrics(result):
    """fell, the base's forward and lateral velocity error (RMS after the first second, or over the second half
    of a shorter run, m/s), mean forward speed, the feet's median horizontal speed while loaded (m/s), update
    CPU times (s) and the real-time factor."""
    r, model = result["record"], result["model"]
    qx, qy, qz, qw = r.q[:, 3:7].T
    tilt = np.arccos(np.clip(1 - 2 * (qx**2 + qy**2), -1, 1))
    fell = bool(np.any(r.q[:, 2] < MIN_HEIGHT) or np.any(tilt > MAX_TILT))
    late = r.t > min(1.0, r.t[0] + (r.t[-1] - r.t[0]) / 2)  # the start-up left out
    error = np.sqrt(np.mean((r.v[late, :2] - [result["v"], 0.0]) ** 2, axis=0))
    every = 5
    feet = np.array([[frame_placement(model, q, f)[:2, 3] for f in result["feet"]] for q in r.q[::every]])
    speed = np.linalg.norm(np.diff(feet, axis=0), axis=2) / (every * (r.t[1] - r.t[0]))
    loaded = r.contact_forces[::every, :, 2][: len(speed)] > 3.0
    return {
        "fell": fell,
        "velocity_rms": error,
        "mean_speed": float(r.v[late, 0].mean()),
        "slip": float(np.median(speed[loaded])) if loaded.any() else 0.0,
        "cpu": r.update_cpu[1:],
        "real_time_factor": (r.t[-1] - r.t[0]) / r.update_cpu.sum(),
    }


def summary(result):
    """The metrics as lines of text."""
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
