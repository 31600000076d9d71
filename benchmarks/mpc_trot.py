"""Closed-loop trotting MPC benchmark: examples/mpc_trot.py (solo12 trotting at 0.3 m/s under random base
pushes, MuJoCo as the plant at 1 kHz, the controller at 100 Hz) over seeds.

python -m benchmarks.mpc_trot [--seeds 20] [--duration 10] [--push 0.5]

Writes benchmarks/results/mpc_trot.md: per seed (the pushes' times and directions), whether the robot
fell, the velocity tracking error, the mean speed, the foot slip and the warm updates' CPU times
(``time.process_time``, one thread); then the CPU times over all seeds. The stage libraries are compiled
once and cached (``casrbd.codegen``); each run builds the horizon's NLPs again.
"""

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

from .mpc import RESULTS, ROOT, SHARED, environment  # noqa: E402


def example():
    """examples/mpc_trot.py as a module (its folder on the path, for ``common``)."""
    sys.path.insert(0, str(ROOT / "examples"))
    spec = importlib.util.spec_from_file_location("mpc_trot", ROOT / "examples" / "mpc_trot.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=20, help="runs, seeds 0 to this - 1 (default 20)")
    p.add_argument("--duration", type=float, default=10.0, help="simulated seconds per run (default 10)")
    p.add_argument("--push", type=float, default=0.5, help="push impulses, N s (default 0.5)")
    p.add_argument("--nodes", type=int, default=16, help="horizon knots of 20 ms (default 16)")
    args = p.parse_args(argv)
    module, rows, cpus, falls = example(), [], [], 0
    for seed in range(args.seeds):
        result = module.run(args.duration, nodes=args.nodes, push=args.push, seed=seed)
        m = module.metrics(result)
        print(f"seed {seed}:", *module.summary(result), sep="\n  ")
        cpu = 1e3 * m["cpu"]
        cpus.append(cpu)
        falls += m["fell"]
        cells = [
            seed,
            "yes" if m["fell"] else "no",
            f"{m['mean_speed']:.3f}",
            f"{m['velocity_rms'][0]:.3f} / {m['velocity_rms'][1]:.3f}",
            f"{1e3 * m['slip']:.1f}",
            f"{np.median(cpu):.1f}",
            f"{np.percentile(cpu, 99):.1f}",
            f"{cpu.max():.1f}",
            f"{m['real_time_factor']:.2f}",
        ]
        rows.append("| " + " | ".join(str(c) for c in cells) + " |")
    every = np.concatenate(cpus)
    lines = [
        "# Whole-body MPC of solo12 trotting, MuJoCo as the plant",
        "",
        f"`python -m benchmarks.mpc_trot --seeds {args.seeds} --duration {args.duration} --push {args.push} "
        f"--nodes {args.nodes}` ({environment()}).",
        "",
        f"examples/mpc_trot.py: MuJoCo at 1 kHz, the controller at 100 Hz; horizon {args.nodes} knots of 20 ms of",
        "contact dynamics on a trot (8 swing knots, 1 double support knot per half period), Gauss-Newton stages",
        "compiled to C, one warm-started fatrop iteration per update, joint PD around the plan between updates;",
        f"velocity reference 0.3 m/s; one horizontal push of {args.push} N s a second (random time and direction).",
        "Speed: mean forward speed (local x) after the first second; velocity error: RMS of the base's (x, y) velocity",
        "(local axes) minus the reference after the first second, m/s; slip: the feet's median horizontal speed",
        "while loaded (> 3 N), mm/s; CPU: the warm updates, ms; RTF: simulated time / controller CPU time.",
        "",
        *(SHARED if os.getloadavg()[0] > os.cpu_count() else ()),
        "",
        f"Falls: {falls} of {args.seeds}. All warm updates: median {np.median(every):.1f} ms, p99 "
        f"{np.percentile(every, 99):.1f} ms, worst {every.max():.1f} ms (period 10 ms).",
        "",
        "| seed | fell | speed [m/s] | velocity error x / y | slip | median | p99 | worst | RTF |",
        "|---:|---|---:|---|---:|---:|---:|---:|---:|",
        *rows,
        "",
    ]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "mpc_trot.md").write_text("\n".join(lines))
    print(f"wrote {RESULTS / 'mpc_trot.md'}")


if __name__ == "__main__":
    main()
