"""C code export: generate, compile, cache and load casadi Functions.

``generate([f, g], directory, name)`` writes ``name.c`` and ``name.h`` with
casadi's code generator. ``compile_functions([f, g], name)`` also compiles
them into a shared library with the system C compiler and loads every
Function back with ``casadi.external``, so the result is called exactly like
the original. A Function with an analytical Jacobian (``jacobian="analytical"``)
ships its ``jac_<name>`` Function in the same library, where
``casadi.external`` finds it and uses it for derivatives.

Exported C symbols are the Function names (``casrbd.function`` prefixes them
with the model name) plus casadi's suffixes (``_work``, ``_n_in``, ...);
casadi's helpers are prefixed with the library name. So the libraries of two
models link into one program. ``check_names`` refuses, before generation,
names that are not usable C identifiers or that clash.

Builds are cached under ``cache_dir()`` by a hash of the serialized Functions
(which hold the model's constants), the library name, the compiler, the flags
and the casadi version: a second call loads the library without compiling.

Loading a shared library runs its code, as does deserializing a Function that
calls one: only load libraries and serialized Functions you built or trust.
"""

import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import casadi as ca

from .functions import function

# -O3 for this machine's CPU (a library built here runs here: fused multiply-adds and wide registers make
# aba_derivatives of solo12 1.8x faster), without the passes that look for redundant computations and
# loads: casadi's graphs are straight-line and already free of common subexpressions (ca.cse), so these
# find next to nothing, yet take most of gcc's time on large graphs (gcc -ftime-report, talos_full_v2's
# aba_derivatives, 325k instructions: 62 s of CPU with PRE and hoisting off, 43 s with load CSE after
# reload off too; PRE alone is two thirds of plain -O3's time on solo12's). Run times are unchanged.
DEFAULT_FLAGS = ("-O3", "-march=native", "-fno-tree-pre", "-fno-code-hoisting", "-fno-gcse-after-reload")
PROGRESS_SECONDS = 15  # a large graph takes minutes at -O3: say every so often that it is still going
VERBOSE_INSTRUCTIONS = 20000

C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# C and C++ keywords (the header is includable from C++), the program entry point, and <math.h>,
# which the generated file includes: a Function of one of these names breaks compiling or linking
_KEYWORDS = set(
    """auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef union unsigned
    void volatile while alignas alignof and and_eq asm bitand bitor bool catch char16_t char32_t char8_t class
    compl concept consteval constexpr constinit const_cast co_await co_return co_yield decltype delete
    dynamic_cast explicit export false friend mutable namespace new noexcept not not_eq nullptr operator or
    or_eq private protected public reinterpret_cast requires static_assert static_cast template this
    thread_local throw true try typeid typename using virtual wchar_t xor xor_eq main""".split()
)
_MATH = (
    "acos asin atan atan2 cos sin tan acosh asinh atanh cosh sinh tanh exp exp2 expm1 frexp ilogb ldexp "
    "log log10 log1p log2 logb modf scalbn scalbln cbrt fabs hypot pow sqrt erf erfc lgamma tgamma ceil "
    "floor nearbyint rint lrint llrint round lround llround trunc fmod remainder remquo copysign nan "
    "nextafter nexttoward fdim fmax fmin fma"
).split()
_MATH_NAMES = {n + s for n in _MATH for s in ("", "f", "l")} | set(
    "isnan isinf isfinite isnormal signbit fpclassify isgreater isgreaterequal isless islessequal "
    "islessgreater isunordered".split()
)
# what casadi's code generator exports besides the Function itself, per Function and per library
_FUNCTION_SUFFIXES = (
    "",
    "_checkout",
    "_release",
    "_incref",
    "_decref",
    "_n_in",
    "_n_out",
    "_default_in",
    "_name_in",
    "_name_out",
    "_sparsity_in",
    "_sparsity_out",
    "_work",
    "_work_bytes",
    "_alloc_mem",
    "_init_mem",
    "_free_mem",
    "_SZ_ARG",
    "_SZ_RES",
    "_SZ_IW",
    "_SZ_W",
)
_LIBRARY_SUFFIXES = ("_casadi_version", "_casadi_int_size", "_casadi_real_size")


class CompilerNotFoundError(RuntimeError):
    """No C compiler on this machine."""


class CompileError(RuntimeError):
    """The C compiler failed; the message carries its command and output."""


def cache_dir():
    """Root of the build cache: $CASRBD_CACHE, else $XDG_CACHE_HOME/casrbd, else ~/.cache/casrbd."""
    if os.environ.get("CASRBD_CACHE"):
        return Path(os.environ["CASRBD_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "casrbd"


def _cpu():
    """This machine's CPU model and features: -march=native code must not be loaded on another CPU."""
    info = Path("/proc/cpuinfo")
    lines = info.read_text().splitlines() if info.exists() else []
    return platform.processor() + "".join(sorted({l for l in lines if l.startswith(("model name", "flags"))}))


def find_compiler(compiler=None):
    """Path of the C compiler: ``compiler``, else $CC, else the first of cc, gcc, clang on PATH."""
    if compiler:
        candidates, origin = [compiler], "compiler="
    elif os.environ.get("CC"):
        # as make does: a CC that is set is what the user wants, even if it is missing
        candidates, origin = [os.environ["CC"]], "$CC="
    else:
        candidates, origin = ["cc", "gcc", "clang"], ""
    for c in candidates:
        path = shutil.which(c)
        if path:
            return path
    raise CompilerNotFoundError(
        f"no C compiler found: tried {origin}{', '.join(candidates)} (PATH={os.environ.get('PATH', '')}); "
        f"install gcc or clang, or pass compiler= or set CC to a compiler's name or path"
    )


def _check_name(name, what):
    problem = None
    if not C_IDENTIFIER.match(name):
        problem = "it is not a C identifier (letters, digits and '_', not starting with a digit)"
    elif name in _KEYWORDS or name in _MATH_NAMES:
        problem = "it is a C/C++ keyword, 'main' or a <math.h> function"
    elif name.startswith("__") or re.match(r"_[A-Z]", name) or name.startswith("casadi_"):
        problem = "names starting with '__', '_' and a capital, or 'casadi_' are reserved"
    if problem:
        raise ValueError(f"{what} {name!r} cannot be used in generated C code: {problem}")


def check_names(functions, library=None):
    """Refuse Function names (and a library name) that are not valid C identifiers for the generated
    code, and Functions whose exported C symbols would clash (two Functions of the same name, or one
    named as another's ``_work``, ``_n_in``, ... symbol)."""
    names = [f.name() for f in functions]
    for n in names:
        _check_name(n, "Function name")
    if library is not None:
        _check_name(library, "library name")
    owner = {}
    symbols = [(n + s, n) for n in names for s in _FUNCTION_SUFFIXES]
    symbols += [(library + s, f"library {library}") for s in _LIBRARY_SUFFIXES if library is not None]
    for symbol, who in symbols:
        if symbol in owner:
            raise ValueError(
                f"exported C symbol {symbol!r} would be defined twice (by {owner[symbol]} and "
                f"{who}): give the Functions distinct names"
            )
        owner[symbol] = who


def _custom_derivatives(f):
    """The derivative Functions that are part of ``f``: its custom Jacobian ``jac_<name>``, and a
    second-order adjoint ``adj1_<name>`` (``casrbd.function(..., hessian="analytical")``) with its own
    custom Jacobian ``jac_adj1_<name>``.

    ``f.cache()`` also lists any derivative casadi built on request while someone holds it, which
    must not change what is generated. A custom Jacobian survives serialization, so it is taken from
    there; the ``cache`` option does not (casadi 3.8), so the adjoint is taken from the live cache,
    where only a casrbd adjoint carries a custom Jacobian of its own."""
    found = list(ca.Function.deserialize(f.serialize()).cache().values())
    adjoint = f.cache().get("adj1_" + f.name())
    own = [] if adjoint is None else _custom_derivatives(adjoint)
    return found + ([adjoint, *own] if own else [])


def _with_derivatives(functions):
    return [g for f in functions for g in (f, *_custom_derivatives(f))]


def generate(functions, directory, name):
    """Write ``name.c`` and ``name.h`` for the Functions and their custom derivatives into ``directory``;
    returns their paths."""
    functions = [functions] if isinstance(functions, ca.Function) else functions
    return _generate(_with_derivatives(functions), directory, name)


def _generate(functions, directory, name):
    check_names(functions, name)
    gen = ca.CodeGenerator(name + ".c", {"with_header": True})
    for f in functions:
        gen.add(f)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    gen.generate(str(directory) + os.sep)
    return directory / (name + ".c"), directory / (name + ".h")


def _compile(compiler, source, target, flags, verbose, label):
    cmd = [compiler, *flags, "-fPIC", "-shared", str(source), "-o", str(target), "-lm"]

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
    say(f"compiled {label} in {seconds:.1f} s")
    return seconds


class Library:
    """A compiled library: ``lib[name]`` is the loaded Function, ``lib.path`` the shared object,
    ``lib.source`` the C file (its header beside it), ``lib.compile_seconds`` the compile time (None
    when it came from the cache)."""

    def __init__(self, path, source, names, compile_seconds):
        self.path, self.source, self.compile_seconds = Path(path), Path(source), compile_seconds
        self.functions = {n: ca.external(n, str(path)) for n in names}

    def __getitem__(self, name):
        try:
            return self.functions[name]
        except KeyError:
            names = list(self.functions)
            raise KeyError(f"library {self.path.name} holds no Function {name!r}; it holds {names}") from None

    def __iter__(self):
        return iter(self.functions.values())


def compile_functions(functions, name=None, flags=DEFAULT_FLAGS, compiler=None, verbose=None):
    """Generate C for the Functions, compile it into a shared library and load it back (cached).

    ``name``: the library name, prefix of casadi's helper symbols (default:
    the first Function's name). ``flags``: compiler flags, ``DEFAULT_FLAGS``
    (-O3 for this CPU, without the passes that find nothing in casadi's
    code) by default; drop ``-march=native`` for a library to copy elsewhere;
    ``("-O1",)`` compiles graphs of 100k instructions and more faster still.
    ``compiler``: name or path of the C compiler (default: $CC, else cc, gcc or clang). ``verbose``: print
    progress and the compile time to stderr (default: for graphs of more
    than ``VERBOSE_INSTRUCTIONS`` instructions)."""
    functions = [functions] if isinstance(functions, ca.Function) else list(functions)
    if not functions:
        raise ValueError("compile_functions: no Functions given")
    name = name or functions[0].name()
    flags = tuple(flags)
    check_names(functions, name)
    compiler = find_compiler(compiler)
    # the serializations hold the model's constants and every derivative shipped with the Functions
    everything = _with_derivatives(functions)
    key = hashlib.sha256(
        "\0".join([ca.__version__, compiler, *flags, name, _cpu()] + [f.serialize() for f in everything]).encode()
    ).hexdigest()[:20]
    # the key is in the path: a library loaded by path is never replaced by another build
    build = cache_dir() / f"{name}-{key}"
    source, target = build / f"{name}.c", build / f"{name}.so"
    names = [f.name() for f in functions]
    if target.exists():
        return Library(target, source, names, None)
    build.mkdir(parents=True, exist_ok=True)
    # build in a private directory and move the results in, library last: processes building the same
    # key at once never see a half-written file, and an existing library means a complete build
    with tempfile.TemporaryDirectory(dir=build) as tmp:
        c_file, h_file = _generate(everything, tmp, name)
        if verbose is None:
            verbose = sum(f.n_instructions() for f in everything if f.is_a("SXFunction")) > VERBOSE_INSTRUCTIONS
        seconds = _compile(compiler, c_file, Path(tmp) / target.name, flags, verbose, f"{name} ({', '.join(names)})")
        for path in (c_file, h_file, Path(tmp) / target.name):
            os.replace(path, build / path.name)
    return Library(target, source, names, seconds)


def compiled(model, name, flags=DEFAULT_FLAGS, **options):
    """``casrbd.function(model, name, **options)`` compiled to C and loaded back (cached on disk)."""
    f = function(model, name, **options)
    return compile_functions([f], flags=flags)[f.name()]
