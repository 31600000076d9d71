"""Compiled libraries: casadi's C for Functions and the derivatives they ship, compiled, stored and loaded.

Builds are stored in ``casrbd.cache`` (kind "library") under a key hashing the serialized Functions
(which hold the model's constants), the library name, the compiler, the flags, this CPU and the casadi
version: a second call loads the library without compiling. An entry holds the C source, its header
and the library; the store checks every file's SHA-256 before the library reaches the dynamic loader,
and after loading every Function's name and input and output names and sparsities must be those
built. An entry that fails is rebuilt once with a ``CacheWarning`` naming the file; a fresh build that
fails raises ``CompileError`` with the compiler and its output.
"""

import concurrent.futures
import hashlib
import os
import secrets
from pathlib import Path

import casadi as ca

from .. import cache
from ..derivative_protocol import shipped, solver_set
from ..functions import function, spec
from ..model import per_model
from ..spec import HESSIANS, choice
from .compiler import CompileError, compile_library, cpu, find_compiler
from .csource import (
    MEMO_BYTES,
    MEMO_SLOTS,
    MEMO_WAYS,
    MEMO_WRAPPER,
    check_names,
    dependency,
    eliminate_common,
    hoist_arguments,
    inline_helpers,
    memoize,
)
from .flags import DEFAULT_FLAGS

VERBOSE_INSTRUCTIONS = 20000
# in every key: entries of an older layout (casadi's C as it wrote it, without ``inline_helpers`` or
# ``hoist_arguments``) are never looked at
CACHE_LAYOUT = "casrbd-cache-5"
LIBRARIES = cache.register("library", "libraries", "compiled library")
# the GPU front-end's builds (``codegen.gpu``) and the benchmarks' C builds (benchmarks/harness.py,
# benchmarks/pinocchio_cpp): registered here, where every casrbd process registers its kinds, so that
# ``casrbd cache`` lists and prunes them without importing their owners
GPU_KERNELS = cache.register("gpu", "gpu", "GPU kernel build")
BENCHMARKS = cache.register("benchmark", "benchmarks", "benchmark build")


class Library:
    """A compiled library: ``lib[name]`` is the loaded Function, ``lib.path`` the shared object,
    ``lib.source`` the C file (its header beside it), ``lib.compile_seconds`` the compile time (None
    when it came from the cache)."""

    def __init__(self, path, source, functions, compile_seconds):
        self.path, self.source, self.compile_seconds = Path(path), Path(source), compile_seconds
        self.functions = functions

    def __getitem__(self, name):
        try:
            return self.functions[name]
        except KeyError:
            names = list(self.functions)
            raise KeyError(f"library {self.path.name} holds no Function {name!r}; it holds {names}") from None

    def __iter__(self):
        return iter(self.functions.values())


def with_derivatives(functions):
    """The Functions and the derivatives each ships (``derivative_protocol.shipped``)."""
    return [g for f in functions for g in (f, *shipped(f))]


def generate(functions, directory, name):
    """Write ``name.c`` and ``name.h`` for the Functions and their custom derivatives into ``directory``;
    returns their paths."""
    functions = [functions] if isinstance(functions, ca.Function) else functions
    return _generate(with_derivatives(functions), directory, name)


def _generate(functions, directory, name, memo=()):
    check_names(functions, name)
    gen = ca.CodeGenerator(name + ".c", {"with_header": True})
    for f in functions:
        gen.add(f)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    gen.generate(str(directory) + os.sep)
    source = directory / (name + ".c")
    text = source.read_text()
    for called in memo:
        f = dependency(functions, called)
        text = memoize(eliminate_common(text, f), f)
    source.write_text(hoist_arguments(inline_helpers(text)))
    return source, directory / (name + ".h")


def _signature(f):
    """What a caller relies on: the name, and the names and sparsities of the inputs and outputs."""
    inputs = [(f.name_in(i), f.sparsity_in(i).serialize()) for i in range(f.n_in())]
    return f.name(), inputs, [(f.name_out(i), f.sparsity_out(i).serialize()) for i in range(f.n_out())]


def _opener(everything, names, seconds):
    """The Library of a checked entry, once every Function loaded has the signature built (else BadEntry);
    ``everything`` None (``load_library``): the Functions ``names``, with no built ones to compare."""

    def use(entry):
        library = entry.file(entry.info["library"])
        loaded = {}
        for f in names if everything is None else everything:
            name = f if everything is None else f.name()
            try:
                loaded[name] = ca.external(name, str(library))
            except RuntimeError as e:
                raise cache.BadEntry(library, f"does not load {name} ({str(e).splitlines()[-1]})") from None
            if everything is not None and _signature(loaded[name]) != _signature(f):
                raise cache.BadEntry(library, f"holds a {name} of another signature than the one built")
        return Library(library, entry.file(entry.info["source"]), {n: loaded[n] for n in names}, seconds)

    return use


def _build(plan, compiler, flags, verbose, label):
    """Generate into the entry's private directory; returns a thunk that runs the compiler and commits
    the entry, returning (seconds, compiler output, Entry): casadi generates the C here, the compilers of
    several builds can then run side by side (``compile_libraries``)."""
    stem, key, everything, name, _, memo = plan
    build = cache.begin(LIBRARIES, stem, key)
    try:
        c_file, _ = _generate(everything, build.directory, name, memo)
    except BaseException:
        build.abandon()
        raise

    def run():
        try:
            # a name of its own for every build: a rebuilt library never takes the path of one this process
            # loaded before, for which the dynamic loader would hand back the old one
            library = build.directory / f"{name}-{secrets.token_hex(8)}.so"
            seconds, out = compile_library(compiler, c_file, library, flags, verbose, label)
            return seconds, out, build.commit({"library": library.name, "source": c_file.name})
        finally:
            if build.persistent:
                build.abandon()  # a no-op once committed

    return run


def compile_functions(functions, name=None, flags=DEFAULT_FLAGS, compiler=None, verbose=None):
    """Generate C for the Functions, compile it into a shared library and load it back (cached).

    ``name``: the library name, prefix of casadi's helper symbols (default: the first Function's name).
    ``flags``: compiler flags, ``DEFAULT_FLAGS`` (``codegen.flags``) by default; drop ``-march=native``
    for a library to copy elsewhere; ``("-O1",)`` compiles graphs of 100k instructions and more faster
    still. ``compiler``: name or path of the C compiler (default: $CC, else cc, gcc or clang).
    ``verbose``: print progress and the compile time to stderr (default: for graphs of more than
    ``VERBOSE_INSTRUCTIONS`` instructions).

    A cached library is loaded only after the checks of the module docstring; one that fails them
    is rebuilt once, with a ``CacheWarning`` naming the file; a rebuild that fails them too raises
    ``CompileError``."""
    functions = [functions] if isinstance(functions, ca.Function) else list(functions)
    if not functions:
        raise ValueError("compile_functions: no Functions given")
    return compile_libraries({name or functions[0].name(): functions}, flags, compiler, verbose)[0]


def is_external(f):
    """Whether the Function ``f`` runs a compiled library (``casadi.external``). By its class name:
    ``f.is_a("External")`` is False for externals on casadi 3.7."""
    return f.class_name() == "External"


def sx_instructions(functions):
    """The SX instructions of the Functions and of every Function they call, each counted once: what
    casadi writes as C for them, and what the compiler's time grows with."""
    seen = {}

    def visit(f):
        if f.name() not in seen:
            seen[f.name()] = f.n_instructions() if f.is_a("SXFunction") else 0
            for g in f.get_function():
                visit(f.get_function(g))

    for f in functions:
        visit(f)
    return sum(seen.values())


def _key(name, compiler, flags, kept, content):
    """The cache key of a library: what it holds (``content``) and how it is compiled."""
    # memo tables as written, and their Functions' C written from the common subexpressions
    wrapper = f"{MEMO_WRAPPER}{MEMO_BYTES} {MEMO_SLOTS} {MEMO_WAYS} cse" if kept else ""
    parts = [CACHE_LAYOUT, ca.__version__, compiler, *flags, name, *kept, wrapper, cpu(), content]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _plan(name, functions, compiler, flags, kept, description=None):
    """(stem, key, every Function with its derivatives, name, the names asked for, memo) of a library."""
    if not functions:
        raise ValueError(f"compile_libraries: library {name!r} has no Functions")
    check_names(functions, name)
    # the serializations hold the model's constants and every derivative shipped with the Functions
    everything = with_derivatives(functions)
    if description is None:
        packed = ca.StringSerializer()
        packed.pack(everything)  # the Functions they share (a stage's linearisation), written once
        description = packed.encode()
    return name, _key(name, compiler, flags, kept, description), everything, name, [f.name() for f in functions], kept


def load_library(name, description, names, flags=DEFAULT_FLAGS, compiler=None, memo=()):
    """The Library that ``compile_libraries(..., memo={name: memo}, keys={name: description})`` stored, with
    its Functions ``names``, if it is cached and passes the store's checks (but for the Functions'
    signatures: no built ones to compare); else None. A caller that describes its Functions loads them
    so without building their graphs."""
    key = _key(name, find_compiler(compiler), tuple(flags), tuple(memo), description)
    return cache.load(LIBRARIES, name, key, _opener(None, list(names), None), stacklevel=3)


def compile_libraries(libraries, flags=DEFAULT_FLAGS, compiler=None, verbose=None, jobs=None, memo=None, keys=None):
    """``compile_functions`` for several libraries, ``{name: [Functions]}``: the ones not in the cache
    are generated one after the other, the largest first (``sx_instructions``), each compiled as soon as
    it is generated, ``jobs`` compilers at a time (default: the CPUs this process may use). ``flags``:
    the compiler flags of every library, or ``{name: flags}`` per library. ``memo``: ``{name: [Function
    names]}``, Functions called inside a library's Functions whose outputs the library keeps per input
    (``memoize``) and whose C is written from their common subexpressions (``eliminate_common``).
    ``keys``: ``{name: description}``, a string that determines a library's Functions, keys its cache
    entry in place of their serialization (``load_library`` finds it by the same description). Returns
    the Libraries in the given order."""
    per_library = flags if isinstance(flags, dict) else dict.fromkeys(libraries, flags)
    if set(per_library) != set(libraries):
        raise ValueError(f"compile_libraries: flags for {sorted(per_library)}, libraries {sorted(libraries)}")
    per_library, memo, keys = {name: tuple(f) for name, f in per_library.items()}, memo or {}, keys or {}
    compiler = find_compiler(compiler)
    plans = [
        _plan(name, functions, compiler, per_library[name], tuple(memo.get(name, ())), keys.get(name))
        for name, functions in libraries.items()
    ]
    found, builds, missing = {}, {}, []
    for plan in plans:
        stem, key, everything, name, names, _ = plan
        loaded = cache.load(LIBRARIES, stem, key, _opener(everything, names, None), stacklevel=3)
        if loaded is not None:
            found[name] = loaded
        else:
            missing.append((sx_instructions(everything), plan))
    jobs = jobs or os.cpu_count() or 1
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(jobs, len(missing) or 1))) as pool:
        # the compilers release the GIL: one compiles while the next library is generated
        for size, plan in sorted(missing, key=lambda m: -m[0]):
            name, names = plan[3], plan[4]
            loud = size > VERBOSE_INSTRUCTIONS if verbose is None else verbose
            builds[name] = pool.submit(_build(plan, compiler, per_library[name], loud, f"{name} ({', '.join(names)})"))
    for stem, key, everything, name, names, _ in plans:
        if name in found:
            continue
        seconds, out, entry = builds[name].result()
        try:
            if entry is None:
                raise cache.BadEntry(cache.entry_path(LIBRARIES, stem, key), "was removed before it was loaded")
            found[name] = _opener(everything, names, seconds)(entry)
        except cache.BadEntry as e:
            cache.discard(cache.entry_path(LIBRARIES, stem, key))
            raise CompileError(
                f"{compiler} {' '.join(per_library[name])} built a library that fails its checks: {e}; "
                f"compiler output:\n{out[-4000:] or '(none)'}"
            ) from None
    return [found[name] for name in libraries]


def compiled(model, name, flags=DEFAULT_FLAGS, compiler=None, hessian="exact", **options):
    """``casrbd.function(model, name, **options)`` as a Function of a compiled, disk-cached library
    that carries its first and second derivatives, built once per model (and options, flags and
    compiler) in a process and once per machine on disk.

    Meant to be called many times from an NLP that casadi evaluates in its VM (or jits): the NLP's
    graph then holds calls into the library, and casadi's derivatives of a call are the library's
    Functions, never a differentiation of the call (which a compiled Function does not allow):

    - ``jac_<name>``: the Jacobian (constraint Jacobians, many directions);
    - ``adj1_<name>``: one adjoint (gradients, and the reverse half of IPOPT's exact Hessian);
    - ``jac_adj1_<name>``: its Jacobian, the contracted Hessian (the forward half).

    Each is the analytical one where ``casrbd.function`` offers it: ``jacobian`` defaults to
    "analytical" where the spec has an analytical Jacobian (and no ``parameters``), and the Hessian
    is then analytical where the spec has a second-order adjoint; the others are casadi's AD of the
    Function's graph, generated to C (``second_order="ad"`` asks for AD where the analytical one is
    offered). ``hessian``, the solver's word: "exact" ships second derivatives; "limited-memory" no AD
    second derivatives (an analytical adjoint still ships), for solvers that take no exact Hessian
    (Gauss-Newton, L-BFGS); AD second derivatives can be far larger than the Function (benchmarks/README.md,
    Graph sizes) and a Hessian through a call without them fails.
    ``flags``, ``compiler``: as ``compile_functions``.
    """
    if "jacobian" not in options:
        offered = spec(name).jacobian is not None and not options.get("parameters")
        options["jacobian"] = "analytical" if offered else "ad"
    choice("hessian", hessian, HESSIANS)
    return _compiled(model, function(model, name, **options), tuple(flags), compiler, hessian == "exact")


@per_model
def _compiled(model, f, flags, compiler, second_order):
    return compile_functions(solver_set(f, second_order), flags=flags, compiler=compiler)[f.name()]
