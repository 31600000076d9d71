"""The blasfeo library behind casadi's fatrop: which instruction set it was built for, and swapping in
one built for this CPU.

fatrop's Riccati recursion runs in blasfeo. casadi's wheels ship blasfeo built for any x86-64 (SSE2, no
AVX, no FMA); built for this CPU, it makes the recursion several times faster (figures:
benchmarks/README.md, Crocoddyl's legged problems). blasfeo builds in a minute (its ``make
shared_library``, for the default target ``X64_INTEL_HASWELL``: AVX2 and FMA); ``install`` puts the
result where fatrop loads it from, after checking that it exports every blasfeo symbol the installed
casadi imports and needs no instruction this CPU lacks, and keeps the wheel's copy for ``restore``.
Command line: ``casrbd blasfeo [--install LIB | --restore]``.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import casadi as ca

WHEEL = ".wheel"  # suffix of the wheel's own library, kept by install for restore


def casadi_dir():
    return Path(ca.__file__).resolve().parent


_FEATURES = """
import ctypes, sys
text = ctypes.create_string_buffer(256)
ctypes.CDLL(sys.argv[1]).blasfeo_processor_library_string(text)
print(text.value.decode())
"""


def features(path):
    """The instruction-set features a blasfeo library was built for (e.g. {"AVX2", "FMA"}; empty for
    the generic target), from its ``blasfeo_processor_library_string``, in a fresh process: this one
    may hold another library of the same path, and a library that fails to load stays out of it."""
    run = subprocess.run([sys.executable, "-c", _FEATURES, str(path)], capture_output=True, text=True)
    if run.returncode:
        reason = (run.stderr.strip().splitlines() or ["it exited with " + str(run.returncode)])[-1]
        raise ValueError(f"{path} is not a loadable blasfeo library ({reason})")
    return set(run.stdout.split())


def cpu_features():
    """The features of this CPU, as blasfeo names them, from /proc/cpuinfo (None where it is absent)."""
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
    except (OSError, StopIteration):
        return None
    names = {"avx": "AVX", "avx2": "AVX2", "fma": "FMA", "sse3": "SSE3", "pni": "SSE3"}
    return {names[f] for f in flags.split(":", 1)[1].split() if f in names}


def _symbols(path, defined):
    """The dynamic symbols a library defines (or imports), by ``nm -D``."""
    option = "--defined-only" if defined else "--undefined-only"
    try:
        out = subprocess.run(["nm", "-D", option, str(path)], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise ValueError(f"cannot list the symbols of {path} with nm -D (binutils): {e}") from None
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def needed_symbols(directory):
    """The blasfeo symbols the libraries of the casadi in ``directory`` import."""
    needed = set()
    for shared in sorted(Path(directory).glob("*.so*")):
        if shared.name.startswith("libblasfeo") or shared.is_symlink():
            continue
        if b"libblasfeo" not in shared.read_bytes():  # not linked against it
            continue
        needed |= {s for s in _symbols(shared, defined=False) if s.startswith("blasfeo_")}
    return needed


def library(directory=None):
    """The blasfeo fatrop loads in the casadi of ``directory`` (default: the imported one): the file of
    the name fatrop is linked against (casadi 3.8's wheels: libblasfeo.so.0, 3.7's: libblasfeo.so)."""
    directory = Path(directory) if directory else casadi_dir()
    for fatrop in sorted(directory.glob("libfatrop.so*")):
        name = re.search(rb"libblasfeo\.so[.0-9]*", fatrop.read_bytes())
        if name and (directory / name.group().decode()).is_file():
            return directory / name.group().decode()
    raise ValueError(f"{directory} holds no fatrop linked against a blasfeo beside it (a Linux casadi wheel does)")


def status(directory=None):
    """(path of the blasfeo fatrop loads, the features it was built for, this CPU's features, whether
    it is the wheel's: no copy of the wheel's kept beside it)."""
    path = library(directory)
    return path, features(path), cpu_features(), not path.with_name(path.name + WHEEL).exists()


def install(built, directory=None):
    """Put the blasfeo library ``built`` (a path) where the casadi in ``directory`` (default: the imported
    one) loads it from, keeping the wheel's copy (once) for ``restore``; processes started afterwards
    load it. Refuses a library that lacks a blasfeo symbol casadi's libraries import, or that was built
    for an instruction this CPU lacks. Returns the path written."""
    directory = Path(directory) if directory else casadi_dir()
    built = Path(built)
    if not built.is_file():
        raise ValueError(f"blasfeo library {built} does not exist")
    target, _, cpu, _ = status(directory)
    built_for = features(built)
    if cpu is not None and not built_for <= cpu:
        raise ValueError(
            f"{built} was built for {sorted(built_for)}, and this CPU lacks {sorted(built_for - cpu)}: "
            f"fatrop would stop on an illegal instruction; build blasfeo for another TARGET"
        )
    missing = needed_symbols(directory) - _symbols(built, defined=True)
    if missing:
        raise ValueError(
            f"{built} lacks {len(missing)} blasfeo symbols that casadi's libraries import, e.g. "
            f"{sorted(missing)[:5]}: build the blasfeo version casadi ships"
        )
    backup = target.with_name(target.name + WHEEL)
    if not backup.exists():
        shutil.copy2(target, backup)
    _replace(built, target)
    return target


def restore(directory=None):
    """Put the wheel's blasfeo back (after ``install``); returns its path."""
    target = library(directory)
    backup = target.with_name(target.name + WHEEL)
    if not backup.exists():
        raise ValueError(f"{target.parent} holds no {backup.name}: its blasfeo is the wheel's")
    _replace(backup, target)
    backup.unlink()
    return target


def _replace(source, target):
    """Copy source over target in one step (a process starting now loads one or the other, whole)."""
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=".blasfeo-")
    with open(source, "rb") as src, os.fdopen(fd, "wb") as tmp:
        shutil.copyfileobj(src, tmp)
    shutil.copymode(source, name)
    os.replace(name, target)
