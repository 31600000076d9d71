"""The compilers: finding them and running them (``flags``: what they are passed)."""

import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .flags import LIBRARIES, SHARED

PROGRESS_SECONDS = 15  # a large graph takes minutes at -O3: say every so often that it is still going


class CompilerNotFoundError(RuntimeError):
    """No C compiler on this machine."""


class CompileError(RuntimeError):
    """The C compiler failed; the message carries its command and output."""


def cpu():
    """This machine's CPU model and features: -march=native code must not be loaded on another CPU."""
    info = Path("/proc/cpuinfo")
    lines = info.read_text().splitlines() if info.exists() else []
    return platform.processor() + "".join(sorted({l for l in lines if l.startswith(("model name", "flags"))}))


def find_compiler(compiler=None):
    """Path of the C compiler: ``compiler``, else $CC, else the first of cc, gcc, clang on PATH."""
    return _find(compiler, "CC", ["cc", "gcc", "clang"], "C", "gcc or clang")


def find_cxx(compiler=None):
    """Path of the C++ compiler: ``compiler``, else $CXX, else the first of c++, g++, clang++ on PATH."""
    return _find(compiler, "CXX", ["c++", "g++", "clang++"], "C++", "g++ or clang++")


def _find(compiler, variable, names, language, install):
    if compiler:
        candidates, origin = [compiler], "compiler="
    elif os.environ.get(variable):
        # as make does: a compiler variable that is set is what the user wants, even if it is missing
        candidates, origin = [os.environ[variable]], f"${variable}="
    else:
        candidates, origin = names, ""
    for c in candidates:
        path = shutil.which(c)
        if path:
            return path
    raise CompilerNotFoundError(
        f"no {language} compiler found: tried {origin}{', '.join(candidates)} (PATH={os.environ.get('PATH', '')}); "
        f"install {install}, or pass compiler= or set {variable} to a compiler's name or path"
    )


def compile_library(compiler, source, target, flags, verbose, label):
    """Run the compiler; returns (seconds, its output). A compiler that fails, or that says it
    succeeded without writing a library, raises ``CompileError`` with its command and output."""
    cmd = [compiler, *flags, *SHARED, str(source), "-o", str(target), *LIBRARIES]

    def say(text):
        if verbose:
            print(f"casrbd.codegen: {text}", file=sys.stderr, flush=True)

    say(f"compiling {label} with {' '.join([Path(compiler).name, *flags])} ...")
    start = time.perf_counter()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace") as proc:
        try:
            while True:
                try:
                    out, _ = proc.communicate(timeout=PROGRESS_SECONDS)
                    break
                except subprocess.TimeoutExpired:
                    say(f"... {time.perf_counter() - start:.0f} s")
        except BaseException:  # Ctrl-C: do not leave a compiler running for minutes
            proc.kill()
            raise
    seconds = time.perf_counter() - start
    if proc.returncode:
        raise CompileError(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{out[-4000:]}")
    if not target.is_file() or target.stat().st_size == 0:
        raise CompileError(
            f"{' '.join(cmd)} exited 0 but wrote no library ({target} is missing or empty); "
            f"compiler output:\n{out[-4000:] or '(none)'}"
        )
    say(f"compiled {label} in {seconds:.1f} s")
    return seconds, out
