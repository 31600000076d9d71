"""Pinocchio's C++ ``ComputeRNEASecondOrderDerivatives``, which has no Python binding: build and run
``timing.cpp`` against the Pinocchio of the installed ``pin`` wheel.

    from benchmarks import pinocchio_cpp
    exe = pinocchio_cpp.build()                          # about 2.5 min and 4.3 GB the first time, then cached
    pinocchio_cpp.run(exe, "solo12")["timings_us"]["rnea_so"]
    pinocchio_cpp.tensors(exe, "solo12", oracle, q, v, a)  # the four tensors in casrbd's order

Headers, libraries and compile definitions are found through the installed distributions
(``importlib.metadata``), never through fixed paths: ``libpinocchio`` (pulled in by ``pin``) for
Pinocchio's headers, libraries and the CMake export that lists its definitions, ``cmeel-eigen`` and
``cmeel-urdfdom-headers`` (neither is a dependency of ``pin``: ``pip install cmeel-eigen
cmeel-urdfdom-headers``), ``cmeel-boost`` and ``cmeel-urdfdom``. README.md explains the flags (the
ABI guard that -march=native needs) and the tensor layout. The program is an entry of ``casrbd.cache``
(kind "benchmark", listed and pruned by ``casrbd cache``), keyed by a hash of the source, the command,
the compiler and the versions of the wheels; one that fails its checks is rebuilt with a ``CacheWarning``.
"""

import hashlib
import importlib.metadata as metadata
import json
import os
import re
import shlex
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from casrbd import cache
from casrbd.codegen.library import BENCHMARKS
from casrbd.models import robot_path

SOURCE = Path(__file__).resolve().parent / "timing.cpp"
FLAGS = ("-O3", "-march=native", "-DNDEBUG", "-std=c++17")
# the wheel's libraries are built for generic x86-64: Eigen with 16-byte alignment and plain malloc;
# -march=native must not change the layout of Model/Data nor Eigen's allocator (README.md)
ABI_FLAGS = ("-DEIGEN_MAX_ALIGN_BYTES=16", "-DEIGEN_MALLOC_ALREADY_ALIGNED=1")
LIBS = ("pinocchio_parsers", "pinocchio_default", "urdfdom_model", "boost_filesystem", "boost_serialization")
PINOCCHIO = ("libpinocchio", "pin")
WHEELS = PINOCCHIO + ("cmeel-eigen", "cmeel-boost", "cmeel-urdfdom", "cmeel-urdfdom-headers")
# switches on the geometry layer only, whose headers need coal's own definitions
DROPPED_DEFINES = ("PINOCCHIO_WITH_COLLISION", "PINOCCHIO_WITH_HPP_FCL")
TENSORS = ("d2tau_dqdq", "d2tau_dvdv", "d2tau_dqdv", "d2tau_dadq")
PROGRAM = "pin_timing"  # the program's name, in its entry and as the entry's stem


class Unavailable(RuntimeError):
    """Something the C++ program needs is not installed; the message says what."""


def _find(dists, suffix, hint=""):
    """The installed file of one of ``dists`` whose path ends with ``cmeel.prefix/<suffix>``."""
    for name in dists:
        try:
            files = metadata.distribution(name).files or ()
        except metadata.PackageNotFoundError:
            continue
        for f in files:
            if str(f).replace("\\", "/").endswith("cmeel.prefix/" + suffix):
                path = Path(f.locate()).resolve()
                if path.exists():
                    return path
    raise Unavailable(f"cannot find {suffix} in the installed {' or '.join(dists)}. {hint}".strip())


def _up(path, n):
    for _ in range(n):
        path = path.parent
    return path


def _defines(cmake_targets):
    """INTERFACE_COMPILE_DEFINITIONS of Pinocchio's CMake targets, generator expressions dropped."""
    text = cmake_targets.read_text()
    out = []
    for target in ("pinocchio_headers", "pinocchio_default", "pinocchio_parsers"):
        block = re.search(rf"set_target_properties\(pinocchio::{target} PROPERTIES(.*?)\n\)", text, re.S)
        found = block and re.search(r'INTERFACE_COMPILE_DEFINITIONS "([^"]*)"', block.group(1))
        for item in found.group(1).split(";") if found else ():
            if item and "$<" not in item and item not in out and item not in DROPPED_DEFINES:
                out.append(item)
    if not out:
        raise Unavailable(f"no compile definitions found in {cmake_targets}")
    return out


def compile_command(output, compiler="g++"):
    """The g++ command that builds timing.cpp into ``output``."""
    so = _find(PINOCCHIO, "lib/libpinocchio_default.so")
    includes = [
        _up(_find(PINOCCHIO, "include/pinocchio/config.hpp"), 2),
        _up(_find(("cmeel-eigen",), "include/eigen3/Eigen/Core", "pip install cmeel-eigen"), 2),
        _up(_find(("cmeel-boost",), "include/boost/version.hpp"), 2),
        _up(
            _find(
                ("cmeel-urdfdom-headers",),
                "include/urdfdom_headers/urdf_model/model.h",
                "pip install cmeel-urdfdom-headers (Pinocchio's urdf.hpp includes <urdf_model/model.h>)",
            ),
            2,
        ),
    ]
    libdirs = [
        so.parent,
        _find(("cmeel-urdfdom",), "lib/liburdfdom_model.so").parent,
        _find(("cmeel-boost",), "lib/libboost_filesystem.so").parent,
    ]
    cmake = _up(so, 2) / "lib" / "cmake" / "pinocchio" / "pinocchioTargets.cmake"
    cmd = [compiler, *FLAGS, *ABI_FLAGS, *("-D" + d for d in _defines(cmake))]
    cmd += ["-I" + str(p) for p in dict.fromkeys(includes)] + [str(SOURCE), "-o", str(output)]
    for d in dict.fromkeys(libdirs):
        cmd += ["-L" + str(d), "-Wl,-rpath," + str(d)]
    return cmd + ["-l" + lib for lib in LIBS]


def _versions():
    out = {}
    for name in WHEELS:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _key(compiler):
    """(the store's key of the program for the installed wheels, its compile command with "@OUT@" as output)."""
    cmd = compile_command("@OUT@", compiler)
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout.splitlines()[:1]
    key = json.dumps([cmd, version, _versions(), os.uname().machine, SOURCE.read_text()])
    return hashlib.sha256(key.encode()).hexdigest(), cmd


def _program(entry):
    return entry.file(PROGRAM)  # a BadEntry where the entry holds no program: rebuilt


def build(compiler="g++", verbose=False):
    """The path of the compiled program, built if it is not in the store (a single translation unit:
    about 2.5 min of one core and 4.3 GB of memory)."""
    key, cmd = _key(compiler)
    exe = cache.load(BENCHMARKS, PROGRAM, key, _program)
    if exe is not None:
        return exe
    entry = cache.begin(BENCHMARKS, PROGRAM, key)
    try:
        cmd = [str(entry.directory / PROGRAM) if c == "@OUT@" else c for c in cmd]
        if verbose:
            print(shlex.join(cmd), flush=True)
        start = time.perf_counter()
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode:
            raise RuntimeError(f"compiling {SOURCE.name} failed:\n{shlex.join(cmd)}\n{result.stderr[-8000:]}")
        record = {"command": cmd, "seconds": time.perf_counter() - start, "versions": _versions()}
        return entry.commit(record).file(PROGRAM)
    finally:
        if entry.persistent:
            entry.abandon()  # a no-op once committed


def built(compiler="g++"):
    """The stored program if it is built for the installed wheels, else None (never builds)."""
    try:
        key, _ = _key(compiler)
    except (Unavailable, OSError):
        return None
    return cache.load(BENCHMARKS, PROGRAM, key, _program)


def run(exe, robot, dump_state=None, timing=True, batches=50, pool=100, seed=42, budget_s=0.01):
    """Run the program on an example-robot-data robot (or a URDF path): its JSON output as a dict,
    times in microseconds per call (``timings_us``: min over batches; ``timings_cpu_us``: the same
    in thread CPU time). ``dump_state`` = (q, v, a) in Pinocchio's order adds "tensors": the four
    (nv, nv, nv) tensors there (and dtau_dq, dtau_dv, M, tau), in Pinocchio's order."""
    urdf, floating = robot_path(robot)
    cmd = [str(exe), urdf, "--floating", str(int(floating)), "--batches", str(batches), "--pool", str(pool)]
    cmd += ["--seed", str(seed), "--budget", repr(budget_s)] + ([] if timing else ["--no-timing"])
    with tempfile.TemporaryDirectory(prefix="pin_dump_") as tmp:
        if dump_state is not None:
            state = Path(tmp) / "state.txt"
            state.write_text("".join(" ".join(repr(float(x)) for x in vec) + "\n" for vec in dump_state))
            cmd += ["--dump", str(state), tmp]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode:
            raise RuntimeError(f"{shlex.join(cmd)} failed ({result.returncode}):\n{result.stderr[-4000:]}")
        out = json.loads(result.stdout)
        if dump_state is not None:
            names = TENSORS + ("dtau_dq", "dtau_dv", "M", "tau")
            out["tensors"] = {n: np.load(Path(tmp) / f"{n}.npy") for n in names}
    return out


def tensors(exe, robot, oracle, q, v, a):
    """Pinocchio's (d2tau_dqdq, d2tau_dvdv, d2tau_dqdv, d2tau_dadq) at casrbd's state (q, v, a), in
    casrbd's order; ``oracle`` is tests/oracle.py's ``Oracle`` of the robot (joint maps)."""
    dumped = run(exe, robot, (oracle.q(q), oracle.v(v), oracle.v(a)), timing=False)["tensors"]
    index = oracle.v_index
    return tuple(dumped[n][np.ix_(index, index, index)] for n in TENSORS)
