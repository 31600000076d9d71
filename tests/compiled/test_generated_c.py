"""Safety of the generated C code, checked from C.

The C of rnea, aba and aba_derivatives (with external forces) of arm7 and of
a random tree with every constant-subspace joint type is

- compiled by gcc at -O1 (where its flow analysis runs) with
  ``-Wall -Wextra -Wno-unused-parameter -Werror``;
- called by a small driver (``tests/c/driver.c``) with work arrays sized
  exactly as its ``_work`` function asks, under valgrind and, built with
  AddressSanitizer and UndefinedBehaviorSanitizer, natively (all but the
  tree's aba_derivatives, whose instrumented build takes long): no report,
  and the printed outputs equal casadi's VM evaluation of the original;
- called from 8 threads at once (``tests/c/threads.c``), each with its own
  arrays, 3200 calls each: every result bit-identical to the single-threaded
  one, natively and under ThreadSanitizer.

Also the standalone C example of ``examples/standalone_c`` is built with the
gcc command of its README and run.
"""

import functools
import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import casadi as ca
import numpy as np
import pytest

import casrbd
from casrbd import codegen
from casrbd.models import CONSTANT_SUBSPACE_TYPES, load_robot, random_tree
from casrbd.testing import random_state, rel_err

ROOT = Path(__file__).resolve().parents[2]
C_DIR = ROOT / "tests" / "c"
WARNINGS = ("-Wall", "-Wextra", "-Wno-unused-parameter", "-Werror")
SANITIZERS = ("-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer")
TOL = 1e-12
CASES = [(robot, algorithm) for robot in ("arm7", "tree") for algorithm in ("rnea", "aba", "aba_derivatives")]
CASE_IDS = [f"{r}-{a}" for r, a in CASES]
THREADED = ("tree", "aba")
# the largest graph takes gcc several seconds more with the sanitizers; valgrind checks it
SANITIZED = [case for case in CASES if case != ("tree", "aba_derivatives")]

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")


@functools.cache
def model(robot):
    if robot == "arm7":
        return load_robot("arm7")
    return random_tree(8, joint_types=CONSTANT_SUBSPACE_TYPES, branching=None, seed=5, name="tree")


def function(case):
    robot, algorithm = case
    return casrbd.function(model(robot), algorithm, f_ext=True)


def run(cmd, **kwargs):
    """Run a command; fail the test with its output when it fails."""
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kwargs)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    return proc


def once(method):
    """method(self, case) computed once per case and kept by the instance (functools.cache on a
    method would keep every instance alive)."""

    @functools.wraps(method)
    def cached(self, case):
        key = (method.__name__, case)
        if key not in self.made:
            self.made[key] = method(self, case)
        return self.made[key]

    return cached


class Build:
    """Generated C, objects and inputs of each case in one directory, made once per module."""

    def __init__(self, root):
        self.root = root
        self.made = {}

    @once
    def source(self, case):
        f = function(case)
        return codegen.generate([f], self.root / f.name(), f.name())[0]

    @once
    def object(self, case):
        """The C compiled with warnings as errors (at -O1, where gcc's flow analysis runs)."""
        source = self.source(case)
        run(["gcc", *WARNINGS, "-O1", "-g", "-c", source, "-o", source.with_suffix(".o")])
        return source.with_suffix(".o")

    @once
    def inputs(self, case):
        """(input file, the inputs) of a random state."""
        q, v, x, F = random_state(model(case[0]), np.random.default_rng(7))
        values = [ca.DM(q), ca.DM(v), ca.DM(x), ca.DM(F)]
        path = self.root / f"{function(case).name()}.in"
        np.concatenate([np.array(d.nonzeros()) for d in values]).astype("<f8").tofile(path)
        return path, values


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    return Build(tmp_path_factory.mktemp("generated_c"))


def driver_flags(*functions):
    """gcc arguments to build tests/c/driver.c for the generated Functions (headers beside their C)."""
    includes = [a for f in functions for a in ("-include", f.with_suffix(".h"))]
    table = ", ".join(f"FUN_T({f.stem})" for f in functions)
    return [*includes, f"-DFUNCTIONS={table}", "-I", C_DIR, C_DIR / "driver.c"]


def printed_outputs(stdout):
    """{function name: its printed output nonzeros}."""
    out, name = {}, None
    for line in stdout.splitlines():
        if line.startswith("# "):
            name = line[2:]
            out[name] = []
        else:
            out[name].append(float(line))
    return {k: np.array(v) for k, v in out.items()}


def vm_outputs(f, values):
    """The Function's outputs in casadi's virtual machine, nonzeros in order."""
    return np.concatenate([np.array(o.nonzeros()) for o in f.call(values)])


def check_driver_outputs(stdout, case, build):
    f = function(case)
    printed = printed_outputs(stdout)[f.name()]
    assert rel_err(printed, vm_outputs(f, build.inputs(case)[1])) < TOL


# the largest graph (33 s of gcc -Wall on 2 cores) with -m slow
@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=pytest.mark.slow) if c not in SANITIZED else c for c in CASES],
    ids=CASE_IDS,
)
def test_compiles_without_warnings(case, build):
    assert build.object(case).exists()


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_clean_under_valgrind(case, build):
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed")
    exe = build.root / f"valgrind_{function(case).name()}"
    source = build.source(case)
    run(["gcc", "-O1", "-g", *driver_flags(source), build.object(case), "-o", exe, "-lm"])
    proc = run(["valgrind", "--error-exitcode=1", "--leak-check=full", exe, build.inputs(case)[0]])
    assert "ERROR SUMMARY: 0 errors" in proc.stderr
    check_driver_outputs(proc.stdout, case, build)


@pytest.mark.parametrize("case", SANITIZED, ids=[f"{r}-{a}" for r, a in SANITIZED])
def test_clean_under_address_and_undefined_behavior_sanitizers(case, build):
    exe = build.root / f"asan_{function(case).name()}"
    source = build.source(case)
    run(["gcc", "-O1", "-g", *SANITIZERS, *driver_flags(source), source, "-o", exe, "-lm"])
    proc = run([exe, build.inputs(case)[0]], env={**os.environ, "ASAN_OPTIONS": "detect_leaks=1"})
    assert proc.stderr == ""
    check_driver_outputs(proc.stdout, case, build)


def threads_flags(case, build):
    """gcc arguments to build tests/c/threads.c for the generated Function."""
    source = build.source(case)
    return ["-include", source.with_suffix(".h"), f"-DFUNCTION={source.stem}", "-I", C_DIR, C_DIR / "threads.c"]


def test_eight_threads_get_bit_identical_results(build):
    exe = build.root / "threads"
    run(["gcc", "-O1", "-g", *threads_flags(THREADED, build), build.object(THREADED), "-o", exe, "-pthread", "-lm"])
    proc = run([exe, build.inputs(THREADED)[0]])
    assert proc.stdout.split() == ["calls", "25600", "mismatches", "0"]


def test_eight_threads_are_race_free_under_thread_sanitizer(build):
    exe = build.root / "threads_tsan"
    run(
        [
            "gcc",
            "-O1",
            "-g",
            "-fsanitize=thread",
            *threads_flags(THREADED, build),
            build.source(THREADED),
            "-o",
            exe,
            "-pthread",
            "-lm",
        ]
    )
    # halt_on_error: a race exits nonzero at once
    proc = run([exe, build.inputs(THREADED)[0]], env={**os.environ, "TSAN_OPTIONS": "halt_on_error=1"})
    assert proc.stdout.split() == ["calls", "25600", "mismatches", "0"] and "ThreadSanitizer" not in proc.stderr


def test_standalone_c_example(tmp_path, monkeypatch, capsys):
    example = ROOT / "examples" / "standalone_c"
    monkeypatch.setattr(sys, "argv", ["export.py", str(tmp_path)])
    runpy.run_path(str(example / "export.py"), run_name="__main__")
    assert (tmp_path / "arm7_aba.c").exists() and (tmp_path / "arm7_aba.h").exists()
    # the README's build command, verbatim, run from the repository root with OUTDIR = tmp_path
    command = next(line for line in (example / "README.md").read_text().splitlines() if line.startswith("gcc "))
    run(command.replace("OUTDIR", str(tmp_path)).split(), cwd=ROOT)
    printed = {}
    for line in run([tmp_path / "arm7_aba"]).stdout.splitlines():
        key, values = line.split("=")
        printed[key.strip()] = np.array(values.split(), dtype=float)
    m = model("arm7")
    q, v, tau, a = printed["q"], printed["v"], printed["tau"], printed["a"]
    assert rel_err(a, casrbd.aba(m, q, v, tau)) < TOL
    assert rel_err(casrbd.rnea(m, q, v, a), tau) < 1e-10
