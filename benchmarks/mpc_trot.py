"""Closed-loop trotting MPC benchmark: ``casrbd.sim.trot`` (examples/mpc_trot.py's scenario: solo12 or go2
trotting at 0.3 m/s under random base pushes, MuJoCo as the plant at 1 kHz, the controller at 100 Hz) over
seeds.

python -m benchmarks.mpc_trot [--seeds 20] [--duration 10] [--push 0.5] [--solver riccati|fatrop] [--gains]
    [--iterations 1] [--robot solo12|go2]
python -m benchmarks.mpc_trot --updates 200 [--nodes 16]: the update CPU times of both solvers, open loop,
    in turn on the same measured states (no plant), median and p99 and their ratio

Writes benchmarks/results/mpc_trot[_<robot>][_<solver>][_gains].md: per seed (the pushes' times and
directions), whether the robot fell, the velocity tracking error, the mean speed, the foot slip and the warm
updates' CPU times (``time.process_time``, one thread); then the CPU times over all seeds. The stage
libraries are compiled once and cached (``casrbd.codegen``); each run builds the horizon again.
"""

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import casrbd  # noqa: E402
from casrbd.ocp.legged_mpc import SOLVERS, GaitHorizon, trot_gait  # noqa: E402
from casrbd.sim import trot  # noqa: E402

from .mpc import RESULTS, SHARED, environment  # noqa: E402


def updates(count, nodes, robot):
    """The CPU times (s) of ``count`` warm updates of each solver, in turn, from the standing state with
    noise on the joints and velocities, the clock moving half a knot between updates."""
    r = trot.ROBOTS[robot]
    model, feet = casrbd.load_robot(robot), [f for pair in r.pairs for f in pair]
    q0 = np.r_[0, 0, 0, 0, 0, 0, 1, r.legs]
    q0[2] = r.radius - min(casrbd.frame_placement(model, q0, f)[2, 3] for f in feet)
    x0, gait = np.r_[q0, np.zeros(model.nv)], trot_gait(r.pairs, 8)
    options = {"base": r.base, "nodes": nodes, "dt": trot.DT, "foot_height": r.radius, "compiled": True} | r.options
    horizons = {s: GaitHorizon(model, q0, gait, feet, solver=s, **options) for s in SOLVERS}
    times, rng = {s: [] for s in SOLVERS}, np.random.default_rng(0)
    noise = np.r_[np.zeros(7), np.ones(model.nq - 7), np.ones(model.nv)]
    for h in horizons.values():
        h.solve(x0)
    for _ in range(count):
        x = x0 + 1e-3 * rng.standard_normal(x0.size) * noise
        for s, h in horizons.items():
            h.shift(0.5)
            start = time.process_time()
            h.solve(x)
            times[s].append(time.process_time() - start)
    return {s: np.array(t) for s, t in times.items()}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=20, help="runs, seeds 0 to this - 1 (default 20)")
    p.add_argument("--duration", type=float, default=10.0, help="simulated seconds per run (default 10)")
    p.add_argument("--push", type=float, default=0.5, help="push impulses, N s (default 0.5)")
    p.add_argument("--yaw-rate", type=float, default=0.0, help="turning rate reference, rad/s (default 0)")
    p.add_argument("--nodes", type=int, default=16, help="horizon knots of 20 ms (default 16)")
    p.add_argument("--solver", choices=SOLVERS, default="riccati", help="the horizon's solver (default riccati)")
    p.add_argument("--gains", action="store_true", help="the Riccati gains as the feedback law (default joint PD)")
    p.add_argument("--iterations", type=int, default=1, help="solver iterations per update (default 1)")
    p.add_argument("--robot", choices=sorted(trot.ROBOTS), default="solo12", help="the robot (default solo12)")
    p.add_argument("--updates", type=int, help="open-loop update CPU times of both solvers instead (this many)")
    args = p.parse_args(argv)
    if args.updates:
        times = updates(args.updates, args.nodes, args.robot)
        for s, t in times.items():
            print(
                f"{s}: {args.nodes} knots, median {1e3 * np.median(t):.2f} ms, p99 {1e3 * np.percentile(t, 99):.2f} ms"
            )
        ratio = np.median(times["riccati"]) / np.median(times["fatrop"])
        print(f"median riccati / fatrop: {ratio:.2f} ({environment()})")
        return
    rows, cpus, falls = [], [], 0
    for seed in range(args.seeds):
        options = {"robot": args.robot, "solver": args.solver, "gains": args.gains, "iterations": args.iterations}
        options |= {"yaw_rate": args.yaw_rate, "push": args.push, "seed": seed}
        result = trot.run(args.duration, nodes=args.nodes, **options)
        m = trot.metrics(result)
        print(f"seed {seed}:", *trot.summary(result), sep="\n  ")
        cpu = 1e3 * m["cpu"]
        cpus.append(cpu)
        falls += m["fell"]
        cells = [
            seed,
            "yes" if m["fell"] else "no",
            f"{m['mean_speed']:.3f}",
            f"{result['record'].v[result['record'].t > 1.0, 5].mean():.3f}",  # the base's local angular velocity z
            f"{m['velocity_rms'][0]:.3f} / {m['velocity_rms'][1]:.3f}",
            f"{1e3 * m['slip']:.1f}",
            f"{np.median(cpu):.1f}",
            f"{np.percentile(cpu, 99):.1f}",
            f"{cpu.max():.1f}",
            f"{m['real_time_factor']:.2f}",
        ]
        rows.append("| " + " | ".join(str(c) for c in cells) + " |")
        write(args, rows, cpus, falls)  # after every seed: an interrupted run keeps the seeds done


def write(args, rows, cpus, falls):
    """The report of the seeds done so far, in benchmarks/results/."""
    every = np.concatenate(cpus)
    step = {
        "riccati": "warm-started Gauss-Newton steps of a Riccati recursion (casrbd.ocp.riccati)",
        "fatrop": "warm-started fatrop iterations",
    }[args.solver]
    step = f"{args.iterations} {step} per update"
    law = "the recursion's feedback gains" if args.gains and args.solver == "riccati" else "joint PD"
    flags = f" --solver {args.solver} --robot {args.robot} --iterations {args.iterations} --yaw-rate {args.yaw_rate}"
    flags += " --gains" if args.gains else ""
    lines = [
        f"# Whole-body MPC of {args.robot} trotting, MuJoCo as the plant",
        "",
        f"`python -m benchmarks.mpc_trot --seeds {args.seeds} --duration {args.duration} --push {args.push} "
        f"--nodes {args.nodes}{flags}` ({environment()}).",
        "",
        f"casrbd.sim.trot: MuJoCo at 1 kHz, the controller at 100 Hz; horizon {args.nodes} knots of 20 ms of",
        "contact dynamics on a trot (8 swing knots, 1 double support knot per half period), Gauss-Newton stages",
        f"compiled to C, {step}, {law} around the plan between updates;",
        f"velocity reference 0.3 m/s, yaw rate {args.yaw_rate} rad/s; one horizontal push of {args.push} N s a",
        "second (random time and direction).",
        "Speed, yaw rate: means (local x, local z) after the first second; velocity error: RMS of the base's",
        "(x, y) velocity (local axes) minus the reference after the first second, m/s; slip: the feet's median",
        "horizontal speed while loaded (> 3 N), mm/s; CPU: the warm updates, ms; RTF: simulated time / controller",
        "CPU time.",
        "",
        *(SHARED if os.getloadavg()[0] > os.cpu_count() else ()),
        "",
        f"Falls: {falls} of {len(rows)} (seeds done of {args.seeds}). All warm updates: median "
        f"{np.median(every):.1f} ms, p99 "
        f"{np.percentile(every, 99):.1f} ms, worst {every.max():.1f} ms (period 10 ms).",
        "",
        "| seed | fell | speed [m/s] | yaw rate [rad/s] | velocity error x / y | slip | median | p99 | worst | RTF |",
        "|---:|---|---:|---:|---|---:|---:|---:|---:|---:|",
        *rows,
        "",
    ]
    name = "mpc_trot" + ("" if args.robot == "solo12" else f"_{args.robot}")
    name += ("" if args.solver == "riccati" else f"_{args.solver}") + ("_gains" if args.gains else "")
    name += "_turning" if args.yaw_rate else ""
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.md").write_text("\n".join(lines))
    print(f"wrote {RESULTS / f'{name}.md'}")


if __name__ == "__main__":
    main()
