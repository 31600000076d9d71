"""python -m benchmarks: Table I of Carpentier & Mansard (RSS 2018), scaling and accuracy, with a
markdown report and plots.

Results accumulate in OUT/results.json (one record per robot, tree size or
accuracy robot, each tagged with the run that measured it), so a run can be
split by --parts and --robots and resumed; compiled objects are cached (see
benchmarks/harness.py), so a rerun only times. The report and the PNG plots
are rewritten from all stored records at the end of every run.

  python -m benchmarks                          # everything (an hour or more, mostly gcc)
  python -m benchmarks --quick                  # CI: tiny robots, few repeats, about a minute
  python -m benchmarks --parts table1 --robots ur5,panda,solo12
  python -m benchmarks --report-only            # rewrite report.md and the plots from results.json
"""

import argparse
import json
import os
import platform
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import casadi as ca
import numpy as np
import pinocchio as pin

from casrbd import codegen

from . import accuracy, report, scaling, table1
from .measure import Settings

PARTS = ("table1", "scaling", "accuracy")
RESULTS = Path(__file__).resolve().parent / "results"
# CI: the quick mode checks that everything runs and agrees, so it compiles fast (-O1) rather than well
QUICK_SETTINGS = Settings(repeat=3, batch_seconds=0.002, cap=2e4, o1_above=0)


def _csv(text, convert=str):
    return tuple(convert(x) for x in text.split(",") if x)


def environment(settings, args):
    """The machine, software versions, date and settings of this run."""
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    cpu = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "unknown")
    gcc = subprocess.run([codegen.find_compiler(), "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    return {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "load_average": os.getloadavg(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "casadi": ca.__version__,
        "numpy": np.__version__,
        "pinocchio": pin.__version__,
        "compiler": gcc,
        "settings": {**settings._asdict(), "full": args.full, "quick": args.quick, "limit": args.limit},
    }


def parse(argv):
    p = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="tiny robots and trees, few repeats (CI)")
    p.add_argument("--parts", type=_csv, default=PARTS, help=f"comma-separated subset of {','.join(PARTS)}")
    p.add_argument(
        "--robots",
        type=_csv,
        help=f"Table I robots (default {','.join(table1.ROBOTS)}; chainN and treeN are synthetic)",
    )
    p.add_argument(
        "--entries",
        type=_csv,
        default=tuple(table1.ENTRIES),
        help=f"Table I entries (default all: {','.join(table1.ENTRIES)})",
    )
    p.add_argument("--accuracy-robots", type=_csv, help=f"default {','.join(accuracy.ROBOTS)}")
    p.add_argument("--trees", type=_csv, help=f"scaling trees (default {','.join(scaling.TREES)})")
    p.add_argument("--grid", type=lambda s: _csv(s, int), help=f"scaling N (default {scaling.GRID})")
    p.add_argument(
        "--limit",
        type=float,
        default=scaling.LIMIT,
        help="scaling: do not build graphs predicted above this many instructions (default %(default)g; "
        f"AD: {scaling.LIMITS['dID ad']:g})",
    )
    p.add_argument(
        "--cap",
        type=float,
        help=f"do not compile graphs above this many instructions "
        f"(default {Settings().cap:g}; --quick {QUICK_SETTINGS.cap:g})",
    )
    p.add_argument("--full", action="store_true", help="compile every graph, whatever its size")
    p.add_argument(
        "--o1-above",
        type=float,
        help="compile graphs above this many instructions with -O1 instead of -O3 (default: none; --quick: all)",
    )
    p.add_argument("--repeat", type=int, help="timing batches (default 15, --quick 3)")
    p.add_argument("--out", type=Path, help=f"results directory (default {RESULTS}, --quick {RESULTS / 'quick'})")
    p.add_argument("--report-only", action="store_true", help="only rewrite the report from results.json")
    args = p.parse_args(argv)
    for option, given, valid in (
        ("--parts", args.parts, PARTS),
        ("--entries", args.entries, table1.ENTRIES),
        ("--trees", args.trees or (), scaling.TREES),
    ):
        unknown = sorted(set(given) - set(valid))
        if unknown:
            p.error(f"{option}: unknown {unknown}; valid: {', '.join(valid)}")
    return args


def log(text):
    print(text, file=sys.stderr, flush=True)


def run(args, settings, save):
    """Measure the selected parts; ``save(part, key, record)`` stores each record as soon as it is made."""
    if "table1" in args.parts:
        for robot in args.robots or (table1.QUICK_ROBOTS if args.quick else table1.ROBOTS):
            log(f"table1: {robot}")
            save("table1", robot, table1.run_robot(robot, settings, args.full, args.entries, log))
    if "scaling" in args.parts:
        for tree in args.trees or (scaling.QUICK_TREES if args.quick else tuple(scaling.TREES)):
            sizes = scaling.known_sizes(save.results["scaling"], tree)
            for n in args.grid or (scaling.QUICK_GRID if args.quick else scaling.GRID):
                log(f"scaling: {tree} N={n}")
                save("scaling", f"{tree} {n}", scaling.run_tree(tree, n, settings, args.full, args.limit, sizes, log))
    if "accuracy" in args.parts:
        steps = accuracy.QUICK_STEPS if args.quick else accuracy.STEPS
        for robot in args.accuracy_robots or (accuracy.QUICK_ROBOTS if args.quick else accuracy.ROBOTS):
            log(f"accuracy: {robot}")
            save("accuracy", robot, accuracy.run_robot(robot, steps, log))


class Store:
    """OUT/results.json: every record by part and key, each tagged with its run, rewritten on each save."""

    def __init__(self, path):
        self.path = path
        self.results = json.loads(path.read_text()) if path.exists() else {}
        for part in ("runs",) + PARTS:
            self.results.setdefault(part, {})
        self.run = None

    def start(self, env):
        self.run = env["date"]
        self.results["runs"][self.run] = env

    def __call__(self, part, key, record):
        record["run"] = self.run
        self.results[part][key] = record
        self.path.write_text(json.dumps(self.results, indent=1))


def main(argv=None):
    args = parse(argv)
    base = QUICK_SETTINGS if args.quick else Settings()
    settings = base._replace(
        cap=args.cap or base.cap,
        repeat=args.repeat or base.repeat,
        o1_above=base.o1_above if args.o1_above is None else args.o1_above,
    )
    out = args.out or (RESULTS / "quick" if args.quick else RESULTS)
    out.mkdir(parents=True, exist_ok=True)
    save = Store(out / "results.json")
    if not args.report_only:
        env = environment(settings, args)
        save.start(env)
        log(f"benchmarks: {env['cpu']}, {env['cores']} cores, load {env['load_average']}; results in {out}")
        run(args, settings, save)
    mismatches = report.write(save.results, out)
    log(
        f"report: {out / 'report.md'}; "
        + (
            f"{len(mismatches)} MISMATCHES: {mismatches}"
            if mismatches
            else "every compiled output matched the VM and Pinocchio"
        )
    )
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
