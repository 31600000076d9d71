"""python -m benchmarks.gpu: casrbd.gpu's kernels against casrbd.fast's CPU batch and Pinocchio's
abaInParallel -> benchmarks/results/gpu.md, gpu.json, gpu_throughput.png, gpu_speedup.png.

Two parts, each record kept in gpu.json (merged run after run, so a run can be split by --robots and
--functions, and the report is rewritten from every record):

- ``static`` (CuPy's NVRTC, no GPU needed): per robot, Function, precision and split (one kernel, or
  one per output), the kernels' registers and spill bytes per thread (ptxas's report), NVRTC's compile
  time and peak memory (each compile in a fresh process and an empty cache), for --arch (default: the
  GPU's, else 90);
- ``throughput`` (a CUDA GPU): states per second through ``f.raw(..., out=)`` (the kernels' own
  layout, preallocated outputs; CUDA events; the best of 3 timings of at least 0.2 s) at each N of
  --sizes (N capped by the GPU's free memory), and at the largest N through ``f(*args)`` (one state per
  row: with the transposes); each Function's outputs are checked against casadi's evaluation on 64
  states (``TOL``, relative). Next to them, on the same machine: ``casrbd.fast.batch`` on one core
  and on every core (one clone per thread), and Pinocchio's ``abaInParallel`` on every core.

States are 1024 random states repeated to N (the kernels have no branches: values do not change the
time). Contacts: the feet (solo12, 3-D), the soles (talos, 6-D), the hand (panda, 6-D).

  python -m benchmarks.gpu                      # everything on a GPU machine (talos_full_v2: long compiles)
  python -m benchmarks.gpu --parts static --robots panda,solo12      # no GPU needed
  python -m benchmarks.gpu --robots panda --functions aba,aba_derivatives --sizes 1000,1048576
  python -m benchmarks.gpu --report-only
"""

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import casadi as ca  # noqa: E402
import numpy as np  # noqa: E402

import casrbd  # noqa: E402
from casrbd import fast, gpu  # noqa: E402
from casrbd.models import load_robot  # noqa: E402

from .measure import FEET, Settings, python_time, rel_err  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
ROBOTS = ("panda", "solo12", "talos_reduced", "talos_full_v2")
FUNCTIONS = (
    "rnea",
    "aba",
    "crba",
    "aba_derivatives",
    "constraint_dynamics",
    "constraint_dynamics_derivatives",
    "rnea_hessian",
    "aba_hessian",
)
CONTACTS = {"panda": [("panda_hand_tcp", "6d")], **FEET}
SIZES = (1_000, 10_000, 100_000, 1 << 20)  # the last as in the table
POOL = 1024  # distinct random states, repeated to N
CHECK = 64  # states checked against casadi's evaluation
# relative error against casadi's evaluation: the GPU contracts a*b+c into FMAs (NVRTC's default --fmad=true)
# and casadi's VM does not, which a badly conditioned KKT system (panda's 6-D hand contact) amplifies to 1e-12
TOL = {"double": 1e-10, "single": 1e-2}
# the first, naive kernels (H100, double, N = 2^20, states/s): what to beat, and by 2x for derivatives
FLOOR = {
    ("panda", "aba"): 2.9e9,
    ("panda", "aba_derivatives"): 1.2e8,
    ("solo12", "aba"): 5.8e8,
    ("solo12", "aba_derivatives"): 5.1e7,
    ("talos_reduced", "aba"): 1.35e8,
    ("talos_reduced", "aba_derivatives"): 6.6e6,
    ("solo12", "constraint_dynamics"): 1.5e8,
    ("solo12", "constraint_dynamics_derivatives"): 1.3e7,
    ("solo12", "aba_hessian"): 1.9e7,
}


def options(robot, name):
    return {"contacts": CONTACTS[robot]} if name.startswith("constraint_dynamics") else {}


def splits(f, requested):
    """The splits of ``requested`` ("none", "outputs", numbers of output nonzeros) that apply to f: per output
    only when f has several."""
    out = []
    for s in requested:
        if s == "none":
            out.append(None)
        elif s == "outputs":
            out += ["outputs"] if f.n_out() > 1 else []
        else:
            out.append(int(s))
    return out


def key(*parts):
    return "/".join(str(p) for p in parts)


def environment():
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    cpu = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "unknown")
    env = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "casadi": ca.__version__,
    }
    try:
        import cupy as cp
        from cupy_backends.cuda.libs import nvrtc

        env.update(cupy=cp.__version__, nvrtc=".".join(map(str, nvrtc.getVersion())))
        ok, device = gpu.available()
        if ok:
            env.update(gpu=device, driver=cp.cuda.runtime.driverGetVersion())
    except Exception as e:  # CuPy or its NVRTC missing: said in the record
        env["cupy"] = f"unavailable ({type(e).__name__})"
    return env


# ---- static: registers, spills, NVRTC time and memory (no GPU) ----


def _compile_in_child(source, arch):
    """In a fresh process and an empty cache: NVRTC's registers and spills per kernel, its seconds and the
    process's peak memory (MiB)."""
    with tempfile.TemporaryDirectory() as cache:
        os.environ["CASRBD_CACHE"] = cache
        path, seconds = gpu.nvrtc_build(source, arch)
        used = gpu.resources(path)
    return used, seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def static(robot, model, name, precision, split, arch):
    f = casrbd.function(model, name, **options(robot, name))
    source = gpu.KernelSource(f, precision, split)
    with ProcessPoolExecutor(max_workers=1) as pool:  # one process per build: its peak is NVRTC's
        used, seconds, peak = pool.submit(_compile_in_child, source, arch).result()
    return {
        "instructions": f.n_instructions(),
        "kernels": len(source.names),
        "arch": arch,
        "nvrtc_seconds": seconds,
        "nvrtc_peak_mib": peak,
        "registers": max(r for r, _, _ in used.values()),
        "spill_stores": sum(s for _, s, _ in used.values()),
        "spill_loads": sum(s for _, _, s in used.values()),
        "per_kernel": used,
    }


# ---- throughput (GPU) ----


def pool_states(model, f, seed=0):
    """POOL random states of f's inputs in the batch layout (one state per row)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(f.n_in()):
        sp = f.sparsity_in(i)
        if f.name_in(i) == "q":
            out.append(np.array([casrbd.random_configuration(model, rng) for _ in range(POOL)]))
        else:
            out.append(rng.normal(size=(POOL, *((sp.size1(),) if sp.size2() == 1 else sp.size()))))
    return out


def check(f, g, states):
    """Largest relative error of the kernels' raw outputs against casadi's evaluation, per state."""
    raw_in = [x[:CHECK].reshape(CHECK, -1, order="F").T if x.ndim == 3 else x[:CHECK].T for x in states]
    outputs = [g.xp.asnumpy(y) if hasattr(g.xp, "asnumpy") else y for y in g.raw(*raw_in)]
    error = 0.0
    for k in range(CHECK):
        ref = f(*[x[k] for x in states])
        for y, r in zip(outputs, ref if isinstance(ref, tuple) else (ref,)):
            error = max(error, rel_err(y[:, k], np.array(ca.DM(r).nonzeros())) if y.shape[0] else 0.0)
    return error


def gpu_rate(g, raw_in, N, min_seconds=0.2):
    """States per second of g.raw(..., out=) on N states (best of 3 timings of >= min_seconds)."""
    cp = g.xp
    out = [cp.empty((s.nnz(), N), dtype=g.source.dtype) for s in g.sparsity_out]
    g.raw(*raw_in, out=out)  # the first launch loads the module
    start, end = cp.cuda.Event(), cp.cuda.Event()
    repeat, best = 1, 0.0
    for _ in range(3):
        while True:
            start.record()
            for _ in range(repeat):
                g.raw(*raw_in, out=out)
            end.record()
            end.synchronize()
            seconds = cp.cuda.get_elapsed_time(start, end) / 1e3
            if seconds >= min_seconds:
                break
            repeat *= 2
        best = max(best, N * repeat / seconds)
    return best


def gpu_rate_batch_layout(g, states, N):
    """States per second of g(*args), one state per row (with the transposes), on N states."""
    cp = g.xp
    args = [cp.asarray(np.resize(x, (N, *x.shape[1:]))) for x in states]
    g(*args)
    cp.cuda.Device().synchronize()
    start = time.perf_counter()
    g(*args)
    cp.cuda.Device().synchronize()
    return N / (time.perf_counter() - start)


def throughput(robot, model, name, precision, split, sizes):
    cp = gpu._cupy()
    f = casrbd.function(model, name, **options(robot, name))
    g = gpu.compile_function(f, precision, split)
    states = pool_states(model, f)
    itemsize = np.dtype(g.source.dtype).itemsize
    per_state = itemsize * sum(s.nnz() for s in g.sparsity_in + g.sparsity_out)
    cap = int(0.3 * cp.cuda.Device().mem_info[0] / per_state)  # raw in and out, and the transposed copies
    pool_raw = [cp.asarray(x.reshape(POOL, -1, order="F").T if x.ndim == 3 else x.T) for x in states]
    rates = {}
    for n in sorted(sizes):
        if n > cap:
            rates[str(n)] = None  # does not fit
            continue
        raw_in = [cp.ascontiguousarray(cp.tile(x, (1, -(-n // POOL)))[:, :n]) for x in pool_raw]
        rates[str(n)] = gpu_rate(g, raw_in, n)
        del raw_in
    fitting = [n for n in sizes if rates[str(n)] is not None]
    largest = max(fitting) if fitting else None
    error = check(f, g, states)
    return {
        "instructions": f.n_instructions(),
        "kernels": len(g.source.names),
        "states_per_second": rates,
        "batch_layout_states_per_second": gpu_rate_batch_layout(g, states, largest) if largest else None,
        "largest_n": largest,
        "error": error,
        "ok": error < TOL[precision],
    }


def cpu_rates(robot, model, name):
    """casrbd.fast.batch on one core and on every core (threads over clones), and Pinocchio's
    abaInParallel for aba, in states per second."""
    f = casrbd.function(model, name, **options(robot, name))
    states = pool_states(model, f)
    batch = fast.batch(model, name, **options(robot, name))
    one = Settings(repeat=5, batch_seconds=0.05)
    single = POOL / python_time(lambda: batch(*states), one)[0]
    threads = os.cpu_count()
    clones = [batch.clone() for _ in range(threads)]
    with ThreadPoolExecutor(threads) as ex:
        every = threads * POOL / python_time(lambda: list(ex.map(lambda c: c(*states), clones)), one)[0]
    record = {"one_core": single, "all_cores": every, "threads": threads}
    if name == "aba":
        record["pinocchio_aba_in_parallel"] = pinocchio_parallel(robot, model, states, threads, one)
    return record


def pinocchio_parallel(robot, model, states, threads, settings):
    """Pinocchio's abaInParallel in states per second, or None where Pinocchio is not installed (a GPU
    machine may lack it: its column then reads '-')."""
    try:
        import pinocchio as pin
    except ImportError as e:
        print(f"benchmarks.gpu: no Pinocchio baseline ({e})", file=sys.stderr)
        return None

    from .pinocchio_timing import PinocchioTwin

    Q, V, T = states
    o = PinocchioTwin(robot, model, Q[0], V[0], T[0]).oracle
    PQ = np.asfortranarray(np.array([o.q(q) for q in Q]).T)
    PV, PT = (np.asfortranarray(np.array([o.v(x) for x in X]).T) for X in (V, T))
    out = np.zeros((model.nv, POOL), order="F")
    pool = pin.ModelPool(o.pmodel, threads)
    return POOL / python_time(lambda: pin.abaInParallel(threads, pool, PQ, PV, PT, out), settings)[0]


# ---- report and plots ----


def _si(x):
    return "-" if x is None else f"{x:.3g}"


def _split_name(split):
    return {"None": "one kernel", "outputs": "per output"}.get(str(split), f"{split} nonzeros")


def best(results, robot, name, precision):
    """(states/s, split) of the fastest split at its largest N, or None."""
    found = [
        (rec["states_per_second"][str(rec["largest_n"])], rec["split"])
        for rec in results["throughput"].values()
        if (rec["robot"], rec["function"], rec["precision"]) == (robot, name, precision) and rec["largest_n"]
    ]
    return max(found, key=lambda x: x[0]) if found else None


def ordered(records):
    """Records in the order of ROBOTS, FUNCTIONS, precision, split."""

    def rank(rec):
        robot = ROBOTS.index(rec["robot"]) if rec["robot"] in ROBOTS else len(ROBOTS)
        return robot, rec["robot"], FUNCTIONS.index(rec["function"]), rec.get("precision", ""), rec.get("split", "")

    return sorted(records.values(), key=rank)


def report(results):
    runs = "\n".join(f"- {json.dumps(env)}" for env in results["runs"])
    lines = ["# casrbd.gpu: batched kernels against the CPU", "", "`python -m benchmarks.gpu`. Runs:", "", runs, ""]
    lines += [
        "## Registers, spills and NVRTC (static, no GPU needed)",
        "",
        "Per thread, summed over a Function's kernels; spills go to local memory. NVRTC's time and the peak "
        "memory of the process that ran it (a fresh one, with an empty cache).",
        "",
        "| robot | function | instructions | precision | split | kernels | registers (max) | spill stores / loads "
        "(bytes) | NVRTC s | NVRTC peak MiB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for rec in ordered(results["static"]):
        lines.append(
            f"| {rec['robot']} | {rec['function']} | {rec['instructions']} | {rec['precision']} | "
            f"{_split_name(rec['split'])} | {rec['kernels']} | {rec['registers']} | {rec['spill_stores']} / "
            f"{rec['spill_loads']} | {_si(rec['nvrtc_seconds'])} | {_si(rec['nvrtc_peak_mib'])} |"
        )
    sizes = sorted({int(n) for rec in results["throughput"].values() for n in rec["states_per_second"]})
    lines += [
        "",
        "## Throughput (states/s)",
        "",
        "Through `f.raw(..., out=)` (the kernels' layout), and at the largest N through `f(*args)` (one state per "
        "row, with the transposes). '-': N does not fit in memory. Error: relative, against casadi's evaluation.",
        "",
        "| robot | function | precision | split | " + " | ".join(f"N = {n}" for n in sizes) + " | f(*args) | error |",
        "|---|---|---|---|" + "---|" * len(sizes) + "---|---|",
    ]
    for rec in ordered(results["throughput"]):
        rates = [_si(rec["states_per_second"].get(str(n))) for n in sizes]
        flag = "" if rec["ok"] else " **MISMATCH**"
        lines.append(
            f"| {rec['robot']} | {rec['function']} | {rec['precision']} | {_split_name(rec['split'])} | "
            f"{' | '.join(rates)} | {_si(rec['batch_layout_states_per_second'])} | {rec['error']:.1e}{flag} |"
        )
    lines += [
        "",
        "## Against the CPU (states/s)",
        "",
        "GPU: the fastest split at the largest N. CPU: `casrbd.fast.batch` on one core and on every core of the "
        "same machine; Pinocchio's `abaInParallel` on every core.",
        "",
        "| robot | function | GPU double | GPU single | fast, 1 core | fast, all cores | abaInParallel | "
        "GPU double / all cores |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for rec in ordered(results["cpu"]):
        double, single = (best(results, rec["robot"], rec["function"], p) for p in ("double", "single"))
        ratio = _si(double[0] / rec["all_cores"]) if double else "-"
        lines.append(
            f"| {rec['robot']} | {rec['function']} | {_si(double and double[0])} | {_si(single and single[0])} | "
            f"{_si(rec['one_core'])} | {_si(rec['all_cores'])} ({rec['threads']} threads) | "
            f"{_si(rec.get('pinocchio_aba_in_parallel'))} | {ratio} |"
        )
    lines += [
        "",
        "## The issue's floor",
        "",
        "The first, naive kernels (H100, double, N = 2^20); the target is that figure, twice it for derivatives, "
        "on the same GPU class.",
        "",
        "| robot | function | naive | target | measured (split) | |",
        "|---|---|---|---|---|---|",
    ]
    for (robot, name), floor in FLOOR.items():
        target = floor * (1 if name in ("aba", "constraint_dynamics") else 2)
        measured = best(results, robot, name, "double")
        status = "not measured" if measured is None else ("met" if measured[0] >= target else "missed")
        shown = "-" if measured is None else f"{measured[0]:.3g} ({_split_name(measured[1])})"
        lines.append(f"| {robot} | {name} | {floor:.3g} | {target:.3g} | {shown} | {status} |")
    return "\n".join(lines) + "\n"


def plots(results, out):
    import matplotlib

    matplotlib.use("Agg")  # files only
    import matplotlib.pyplot as plt

    robots = sorted({rec["robot"] for rec in results["throughput"].values()})
    if not robots:
        return
    fig, axes = plt.subplots(1, len(robots), figsize=(5 * len(robots), 4.5), squeeze=False)
    for ax, robot in zip(axes[0], robots):
        for j, name in enumerate(FUNCTIONS):
            for precision, style in (("double", "-"), ("single", "--")):
                chosen = best(results, robot, name, precision)
                rec = chosen and results["throughput"].get(key(robot, name, precision, chosen[1]))
                points = sorted((int(n), r) for n, r in rec["states_per_second"].items() if r) if rec else []
                if points:
                    ax.loglog(
                        *zip(*points), style, marker="o", ms=3, color=plt.cm.tab10(j), label=f"{name} {precision}"
                    )
            cpu = results["cpu"].get(key(robot, name))
            if cpu:
                ax.axhline(cpu["all_cores"], color=plt.cm.tab10(j), lw=0.8, ls=":")
        ax.set_title(f"{robot} (dotted: casrbd.fast on every core)")
        ax.set_xlabel("N (states per call)")
        ax.set_ylabel("states per second")
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(out / "gpu_throughput.png", dpi=110)
    plt.close(fig)


# ---- driver ----


def load(path):
    empty = {"runs": [], "static": {}, "throughput": {}, "cpu": {}}
    return {**empty, **json.loads(path.read_text())} if path.exists() else empty


def parse(argv):
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.gpu", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--parts", default="static,throughput", help="static (no GPU needed), throughput")
    p.add_argument("--robots", default=",".join(ROBOTS))
    p.add_argument("--functions", default=",".join(FUNCTIONS))
    p.add_argument("--precisions", default="double,single")
    p.add_argument("--sizes", default=",".join(map(str, SIZES)))
    p.add_argument("--splits", default="none,outputs", help="none, outputs, or numbers of output nonzeros per kernel")
    p.add_argument("--arch", default=None, help="compute capability for the static part (default: the GPU's, or 90)")
    p.add_argument("--no-cpu", action="store_true", help="skip the CPU baselines (they compile with gcc)")
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--report-only", action="store_true")
    return p.parse_args(argv)


def requirements(parts):
    """Why the parts asked for cannot run here, or None."""
    if "throughput" in parts:
        ok, why = gpu.available()
        if not ok:
            return f"the throughput part needs a CUDA GPU and CuPy (pip install 'casrbd[gpu]'): {why}"
    try:
        gpu._cupy()
        from cupy_backends.cuda.libs import nvrtc

        nvrtc.getVersion()
    except Exception as e:
        return f"CuPy's NVRTC is not usable: {e}"
    return None


def measure_robot(results, path, robot, args, parts, arch, date):
    """Every record of one robot, saved as it comes."""
    model = load_robot(robot)
    sizes = [int(n) for n in args.sizes.split(",")]
    for name in args.functions.split(","):
        f = casrbd.function(model, name, **options(robot, name))
        for precision in args.precisions.split(","):
            for split in splits(f, args.splits.split(",")):
                k = key(robot, name, precision, split)
                label = {"robot": robot, "function": name, "precision": precision, "split": str(split), "date": date}
                print(f"benchmarks.gpu: {k} ...", file=sys.stderr, flush=True)
                if "static" in parts:
                    results["static"][k] = {**label, **static(robot, model, name, precision, split, arch)}
                if "throughput" in parts:
                    results["throughput"][k] = {**label, **throughput(robot, model, name, precision, split, sizes)}
                path.write_text(json.dumps(results, indent=1))
        if "throughput" in parts and not args.no_cpu:
            results["cpu"][key(robot, name)] = {"robot": robot, "function": name, **cpu_rates(robot, model, name)}
            path.write_text(json.dumps(results, indent=1))


def main(argv=None):
    args = parse(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "gpu.json"
    results = load(path)
    if not args.report_only:
        parts = args.parts.split(",")
        problem = requirements(parts)
        if problem:
            print(f"python -m benchmarks.gpu: {problem}. Nothing measured (--parts static needs no GPU).")
            return 2
        env = environment()
        results["runs"].append(env)
        arch = args.arch or (gpu._cupy().cuda.Device().compute_capability if env.get("gpu") else "90")
        for robot in args.robots.split(","):
            measure_robot(results, path, robot, args, parts, arch, env["date"])
    (args.out / "gpu.md").write_text(report(results))
    plots(results, args.out)
    print(f"benchmarks.gpu: wrote {args.out / 'gpu.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
