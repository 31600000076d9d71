"""C code export: generate, compile, cache and load casadi Functions.

``compile_functions([f, g], name)`` writes ``name.c`` and ``name.h`` with
casadi's code generator, compiles them into a shared library with the
system C compiler and loads every Function back with ``casadi.external``,
so the result is called exactly like the original. A Function with an
analytical Jacobian (``jacobian="analytical"``) ships its ``jac_<name>``
Function in the same library, where ``casadi.external`` finds it.

Builds are cached under ``$CASRBD_CACHE`` (default ``~/.cache/casrbd``) by a
hash of the serialized Functions, the compiler and the flags: a second call
loads the library without compiling. The C symbols are the Function names,
which ``casrbd.function`` prefixes with the model name, so libraries of two
models link into one program; casadi's helpers are ``static``.

Loading a shared library runs its code: only load libraries (and serialized
Functions) you built yourself or trust.
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import casadi as ca

DEFAULT_FLAGS = ("-O3",)
C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# C keywords and the prefixes casadi's own generated symbols use
_RESERVED = {"auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
             "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
             "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
             "volatile", "while", "main"}


class CompilerNotFoundError(RuntimeError):
    """No C compiler on this machine."""


class CompileError(RuntimeError):
    """The C compiler failed; the message carries its output."""


def cache_dir():
    return Path(os.environ.get("CASRBD_CACHE") or Path.home() / ".cache" / "casrbd")


def find_compiler(compiler=None):
    """Path of the C compiler: ``compiler``, else $CC, cc, gcc, clang."""
    candidates = [compiler] if compiler else [c for c in (os.environ.get("CC"), "cc", "gcc", "clang") if c]
    for c in candidates:
        path = shutil.which(c)
        if path:
            return path
    raise CompilerNotFoundError(f"no C compiler found (tried {', '.join(candidates)}); install gcc or clang, "
                                f"or pass compiler= / set CC")


def check_names(functions, library=None):
    """Every Function name (and the library name) is a valid C identifier and no two clash."""
    names = [f.name() for f in _with_jacobians(functions)]
    for n in names + ([library] if library else []):
        if not C_IDENTIFIER.match(n) or n in _RESERVED or n.startswith("casadi_"):
            raise ValueError(f"{n!r} is not usable as a C identifier in generated code (letters, digits and "
                             f"'_', not starting with a digit, not a C keyword, not starting with 'casadi_')")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"Function names clash in one library: {dup}")


def _custom_jacobian(f):
    """The Function's Jacobian Function ``jac_<name>`` when it has one already (a custom Jacobian
    is stored at construction), else None."""
    return f.cache().get("jac_" + f.name())


def _with_jacobians(functions):
    return [g for f in functions for g in (f, _custom_jacobian(f)) if g is not None]


def generate(functions, directory, name):
    """Write ``name.c`` and ``name.h`` for the Functions (and their custom Jacobians) into ``directory``."""
    functions = list(functions)
    check_names(functions, name)
    gen = ca.CodeGenerator(name + ".c", {"with_header": True})
    for f in _with_jacobians(functions):
        gen.add(f)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    gen.generate(str(directory) + os.sep)
    return directory / (name + ".c"), directory / (name + ".h")


def _compile(compiler, source, target, flags, verbose, label):
    cmd = [compiler, *flags, "-fPIC", "-shared", str(source), "-o", str(target), "-lm"]
    if verbose:
        print(f"casrbd.codegen: compiling {label} with {' '.join([Path(compiler).name, *flags])} ...",
              file=sys.stderr, flush=True)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    while True:  # a large graph takes minutes at -O3: say it is still going
        try:
            out, _ = proc.communicate(timeout=15)
            break
        except subprocess.TimeoutExpired:
            if verbose:
                print(f"casrbd.codegen: ... {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - start
    if proc.returncode:
        raise CompileError(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{out[-4000:]}")
    if verbose:
        print(f"casrbd.codegen: compiled {label} in {seconds:.1f} s", file=sys.stderr, flush=True)
    return seconds


class Library:
    """A compiled library: ``lib[name]`` is the loaded Function, ``lib.path`` the shared object,
    ``lib.source`` the C file, ``lib.compile_seconds`` the compile time (None when cached)."""

    def __init__(self, path, source, names, compile_seconds):
        self.path, self.source, self.compile_seconds = Path(path), Path(source), compile_seconds
        self.functions = {n: ca.external(n, str(path)) for n in names}

    def __getitem__(self, name):
        return self.functions[name]

    def __iter__(self):
        return iter(self.functions.values())


def compile_functions(functions, name=None, flags=DEFAULT_FLAGS, compiler=None, directory=None, verbose=None):
    """Generate C for the Functions, compile it into a shared library and load it back (cached).

    ``flags``: compiler flags, ``("-O3",)`` by default; ``("-O1",)`` compiles
    graphs of several 100k instructions many times faster for a small loss
    of speed. ``directory``: where to build (default: the cache).
    ``verbose``: print progress and the compile time (default: for graphs
    over 20k instructions)."""
    functions = [functions] if isinstance(functions, ca.Function) else list(functions)
    if not functions:
        raise ValueError("compile_functions: no Functions given")
    name = name or functions[0].name()
    flags = tuple(flags)
    check_names(functions, name)
    compiler = find_compiler(compiler)
    key = hashlib.sha256("\0".join([ca.__version__, compiler, *flags, name] +
                                   [f.serialize() for f in _with_jacobians(functions)]).encode()).hexdigest()[:20]
    build = Path(directory) if directory else cache_dir() / f"{name}-{key}"
    target = build / f"{name}.so"
    names = [f.name() for f in functions]
    if target.exists() and (build / "key").exists() and (build / "key").read_text() == key:
        return Library(target, build / f"{name}.c", names, None)
    if verbose is None:
        verbose = sum(f.n_instructions() for f in functions if f.is_a("SXFunction")) > 20000
    source, _ = generate(functions, build, name)
    # compile beside the target and rename: a concurrent caller never loads a half-written library
    with tempfile.TemporaryDirectory(dir=build) as tmp:
        partial = Path(tmp) / target.name
        seconds = _compile(compiler, source, partial, flags, verbose, f"{name} ({', '.join(names)})")
        os.replace(partial, target)
    (build / "key").write_text(key)
    return Library(target, source, names, seconds)


def compiled(model, name, flags=DEFAULT_FLAGS, **options):
    """``casrbd.function(model, name, **options)`` compiled to C and loaded back (cached on disk)."""
    from .functions import function
    f = function(model, name, **options)
    return compile_functions([f], flags=flags)[f.name()]
