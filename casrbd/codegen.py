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
An entry is a directory ``<name>-<key>`` holding the C source, the library and
a manifest (the key and the library's SHA-256), renamed into place in one step
once complete. Before loading, the manifest must name this key and the
library must hash to what it recorded, so that a truncated, corrupted, empty
or foreign file never reaches the dynamic loader (where it could crash the
process or answer wrong); after loading, every Function's name and input and
output names and sparsities must be those built. An entry that fails is
rebuilt once with a ``CacheWarning`` naming the file; a fresh build that
fails raises ``CompileError`` with the compiler and its output.

Loading a shared library runs its code, as does deserializing a Function that
calls one: only load libraries and serialized Functions you built or trust.
"""

import concurrent.futures
import contextlib
import errno
import hashlib
import json
import os
import platform
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import NamedTuple

import casadi as ca

from .functions import function, spec
from .model import per_model
from .naming import c_problem
from .spec import choice

# the solver's word for its Hessian: "exact" (second derivatives) or "limited-memory" (none)
HESSIANS = ("exact", "limited-memory")

# -O3 for this machine's CPU (a library built here runs here: fused multiply-adds and wide registers make
# aba_derivatives of solo12 1.8x faster), without the passes that look for redundant computations and
# loads: casadi's graphs are straight-line and already free of common subexpressions (ca.cse), so these
# find next to nothing, yet take most of gcc's time on large graphs (gcc -ftime-report, talos_full_v2's
# aba_derivatives, 325k instructions: 62 s of CPU with PRE and hoisting off, 43 s with load CSE after
# reload off too; PRE alone is two thirds of plain -O3's time on solo12's). Run times are unchanged.
DEFAULT_FLAGS = ("-O3", "-march=native", "-fno-tree-pre", "-fno-code-hoisting", "-fno-gcse-after-reload")
PROGRESS_SECONDS = 15  # a large graph takes minutes at -O3: say every so often that it is still going
VERBOSE_INSTRUCTIONS = 20000
MANIFEST = "manifest.json"
# in every key: entries of an older layout (no manifest, or casadi's C as it wrote it: ``inline_helpers``,
# ``hoist_arguments``) are never looked at
CACHE_LAYOUT = "casrbd-cache-4"

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


# a private build directory or temporary file this old belongs to no running process
STALE_SECONDS = 3600


class CacheEntry(NamedTuple):
    """One entry of the build cache: ``kind`` "function" (``casrbd.function``'s serialized Functions),
    "library" (a compiled library), "benchmark" (an object of ``benchmarks/``) or "partial" (a build or
    write in progress, or left by a process that died); its bytes and the seconds since it was last
    written or loaded."""

    kind: str
    path: Path
    size: int
    idle: float


def cache_entries(root=None):
    """The entries under ``root`` (``cache_dir()``), oldest use first. Files of other names are not
    entries: they are never listed or removed."""
    root, now, found = Path(root or cache_dir()), time.time(), []

    def add(kind, path, stamp):
        with contextlib.suppress(FileNotFoundError):  # another process removed it meanwhile
            files = [path] if path.is_file() else [f for f in path.rglob("*") if f.is_file()]
            size = sum(f.stat().st_size for f in files)
            found.append(CacheEntry(kind, path, size, now - stamp.stat().st_mtime))

    for path in sorted(root.glob("functions/*")):
        if path.suffix in (".json", ".tmp"):
            add("function" if path.suffix == ".json" else "partial", path, path)
    for path in sorted(root.glob("bench/*")):
        if path.is_dir():
            add("benchmark", path, path)
    for path in sorted(root.iterdir()) if root.is_dir() else ():
        if path.is_dir() and path.name.startswith("."):
            add("partial", path, path)
        elif path.is_dir() and (path / MANIFEST).is_file():
            add("library", path, path / MANIFEST)
    return sorted(found, key=lambda e: -e.idle)


def prune_cache(unused_days=None, root=None):
    """Remove the cache entries not written or loaded for more than ``unused_days`` days (every entry
    when None), and partial ones older than ``STALE_SECONDS``; returns the removed ``CacheEntry``s.
    Safe beside running processes: a directory is renamed away in one step before it is deleted, a
    library already loaded stays mapped, and a Function or library removed is rebuilt when asked for."""
    if unused_days is not None and not unused_days >= 0:
        raise ValueError(f"prune_cache: unused_days must be a number of days >= 0, got {unused_days!r}")
    removed = []
    for entry in cache_entries(root):
        limit = STALE_SECONDS if entry.kind == "partial" else 0 if unused_days is None else 86400 * unused_days
        if entry.idle <= limit:
            continue
        if entry.path.is_dir():
            _discard(entry.path)
        else:
            with contextlib.suppress(FileNotFoundError):
                entry.path.unlink()
        removed.append(entry)
    return removed


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
    problem = c_problem(name)
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
    second-order adjoint ``adj1_<name>`` (``casrbd.function(..., second_order="analytical")``) with its own
    custom Jacobian ``jac_adj1_<name>``.

    ``f.cache()`` also lists any derivative casadi built on request while someone holds it, which
    must not change what is generated. A custom Jacobian survives serialization, so it is taken from
    there; the ``cache`` option does not (casadi 3.8), so the adjoint is taken from the live cache,
    where only a casrbd adjoint carries a custom Jacobian of its own."""
    if not f.cache():  # a custom Jacobian or adjoint is in the live cache from the start
        return []
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
    for dependency in memo:
        f = _dependency(functions, dependency)
        text = memoize(eliminate_common(text, f), f)
    source.write_text(hoist_arguments(inline_helpers(text)))
    return source, directory / (name + ".h")


# casadi's scalar helpers (casadi_sq, casadi_fmin, casadi_fmax, casadi_sign, ...) as its code generator
# writes them: exported functions, which a shared library (-fPIC) calls through its PLT at every use, so
# that gcc neither inlines them (another library could interpose them) nor keeps the caller's values in
# registers across the call; and fmin and fmax call libm, whose legacy-SSE code stalls inside VEX
# (-march=native) code on some CPUs. On an Intel Xeon (AVX-512) that was a quarter of solo12 trot's
# derivative time per iteration (10.8 against 7.9 ms, fmin and fmax 8 % of the solve in perf).
_HELPER = re.compile(r"^casadi_real (casadi_\w+)\((casadi_real x(?:, casadi_real y)?)\) \{", re.M)
# fmin and fmax as casadi's VM and numpy evaluate them: the other operand where one is NaN (IEEE 754), the
# first where they are equal (-0 and +0); gcc writes a compare and a blend
_MIN_MAX = {
    "  return fmin(x, y);": "  return y != y || x <= y ? x : y;",
    "  return fmax(x, y);": "  return y != y || x >= y ? x : y;",
}


def inline_helpers(source):
    """casadi's generated C ``source`` with its scalar helpers ``static inline`` and its fmin and fmax
    written out (``_HELPER``, ``_MIN_MAX``): the same bits, without a call per use."""
    source = _HELPER.sub(r"static inline casadi_real \1(\2) {", source)
    for call, written in _MIN_MAX.items():
        source = source.replace(call, written)
    return source


def _dependency(functions, name):
    for f in functions:
        with contextlib.suppress(RuntimeError):  # casadi raises where f calls no Function of that name
            return f if f.name() == name else f.find_function(name)
    raise ValueError(f"memo: none of {[f.name() for f in functions]} calls a Function named {name!r}")


# per memoized Function and thread: far more slots than an optimal control problem has knots, in sets
# of MEMO_WAYS, so that a point displaces another only where more than MEMO_WAYS share a set (a
# direct-mapped table of 912 slots had a pair of solo12's 25 two-foot knots on one slot, and both were
# recomputed at every evaluation of the iteration)
MEMO_BYTES, MEMO_SLOTS, MEMO_WAYS = 1 << 24, 1024, 4
MEMO_WRAPPER = """
/* casrbd.codegen.memoize: {name}'s outputs kept per input, in a table of {sets} sets of {ways} entries
   (allocated per thread on first use); a hit is an input equal bit for bit to one stored in its set */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
static int {raw}(const casadi_real** arg, casadi_real** res, casadi_int* iw, casadi_real* w, int mem);
static _Thread_local casadi_real* {raw}_table;
static int {raw}_holds(const casadi_real* slot, const casadi_real** arg, const casadi_int* n_in) {{
  casadi_int i, j, k;
  casadi_real x;
  if (slot[0] == 0) return 0;
  for (i = 0, k = 1; i < {inputs}; ++i) {{
    for (j = 0; j < n_in[i]; ++j, ++k) {{
      x = arg[i] ? arg[i][j] : 0;
      if (memcmp(slot + k, &x, sizeof x)) return 0;
    }}
  }}
  return 1;
}}
static int {fn}(const casadi_real** arg, casadi_real** res, casadi_int* iw, casadi_real* w, int mem) {{
  static const casadi_int n_in[] = {{{n_in}}}, n_out[] = {{{n_out}}};
  casadi_real *set, *slot = 0, *outputs[{outputs}], x;
  uint64_t h = 1469598103934665603u, bits;
  casadi_int i, j, k;
  if (!{raw}_table) {raw}_table = (casadi_real*)calloc({sets} * {ways} * {stride}, sizeof(casadi_real));
  if (!{raw}_table) return {raw}(arg, res, iw, w, mem);
  for (i = 0; i < {inputs}; ++i) {{
    for (j = 0; j < n_in[i]; ++j) {{
      x = arg[i] ? arg[i][j] : 0;
      memcpy(&bits, &x, sizeof bits);
      h = (h ^ bits) * 1099511628211u;
    }}
  }}
  set = {raw}_table + (h % {sets}) * {ways} * {stride};
  for (i = 0; i < {ways} && !slot; ++i) {{
    if ({raw}_holds(set + i * {stride}, arg, n_in)) slot = set + i * {stride};
  }}
  k = {first_output};  /* an entry: its flag, the inputs, then the outputs */
  if (!slot) {{  /* a miss: an empty entry of the set, else one chosen by the hash's high bits */
    for (i = 0; i < {ways} && !slot; ++i) {{
      if (set[i * {stride}] == 0) slot = set + i * {stride};
    }}
    if (!slot) slot = set + (casadi_int)((h >> 40) % {ways}) * {stride};
    for (i = 0, j = 0; i < {outputs}; ++i) {{
      outputs[i] = slot + k + j;
      j += n_out[i];
    }}
    slot[0] = 0;
    if ({raw}(arg, outputs, iw, w, mem)) return 1;
    for (i = 0, k = 1; i < {inputs}; ++i) {{
      for (j = 0; j < n_in[i]; ++j, ++k) slot[k] = arg[i] ? arg[i][j] : 0;
    }}
    slot[0] = 1;
  }}
  for (i = 0; i < {outputs}; ++i) {{
    if (res[i]) memcpy(res[i], slot + k, n_out[i] * sizeof(casadi_real));
    k += n_out[i];
  }}
  return 0;
}}
"""


SIGNATURE = "(const casadi_real** arg, casadi_real** res, casadi_int* iw, casadi_real* w, int mem) {"


# casadi's SX code reads each input nonzero through a test of the input's pointer (``arg[i]? arg[i][k] : 0``:
# casadi passes NULL for an input it has no values of) and writes each output nonzero through one (``if
# (res[i]!=0) res[i][k]=...``); at -O1, without type-based aliasing, gcc reloads and tests the pointer at
# every one of them (6.9k reads and 8.6k writes in solo12 trot's two-foot stage), and at -O3 the tests
# take a third of its time
_READ = re.compile(r"arg\[(\d+)\]\? arg\[\1\]\[(\d+)\] : 0")
_WRITE = re.compile(r"if \(res\[(\d+)\]!=0\) res\[\1\]\[")
_FUNCTION = re.compile(r"^static int \w+" + re.escape(SIGNATURE) + r"\n", re.M)
ZERO_INPUTS = "casrbd_zero_inputs"


def hoist_arguments(source):
    """casadi's generated C ``source`` with the input and output pointers of each SX function read once,
    into locals, as casadi's MX code reads them: an input passed as NULL reads from a block of zeros
    (``ZERO_INPUTS``), an output passed as NULL is not written. The same operations on the same values."""
    pieces, start, size = [], 0, 0
    for match in _FUNCTION.finditer(source):
        end = source.index("\n}\n", match.end())
        body = source[match.end() : end]
        reads = _READ.findall(body)
        inputs = sorted({int(i) for i, _ in reads})
        outputs = sorted({int(i) for i in _WRITE.findall(body)})
        if not (inputs or outputs):
            continue
        size = max([size, *(int(k) + 1 for _, k in reads)])
        local = ""
        if inputs:
            pointers = (f"*arg_{i} = arg[{i}] ? arg[{i}] : {ZERO_INPUTS}" for i in inputs)
            local += f"  const casadi_real {', '.join(pointers)};\n"
        if outputs:
            local += f"  casadi_real {', '.join(f'*res_{i} = res[{i}]' for i in outputs)};\n"
        body = _WRITE.sub(r"if (res_\1) res_\1[", _READ.sub(r"arg_\1[\2]", body))
        pieces += [source[start : match.end()], local, body]
        start = end
    if not pieces:
        return source
    text = "".join([*pieces, source[start:]])
    first = _FUNCTION.search(text).start()
    return f"{text[:first]}static const casadi_real {ZERO_INPUTS}[{max(size, 1)}];\n\n{text[first:]}"


def _definition(source, f):
    """The match of the one definition of f's C function in casadi's generated ``source``."""
    comment = r"^/\* " + re.escape(f.name()) + r":\(.*\*/\n"  # casadi writes one above each Function
    found = list(re.finditer(comment + r"static int (casadi_f\d+)" + re.escape(SIGNATURE) + r"\n", source, re.M))
    if len(found) != 1:
        raise ValueError(f"codegen: casadi's C holds {len(found)} definitions of {f.name()!r}, expected one")
    return found[0]


def eliminate_common(source, f):
    """casadi's generated C ``source`` with the body of the SX Function ``f`` (called inside it) written
    from f's graph with its common subexpressions eliminated (``ca.cse``): the same operations on the
    same values, each once, so the same bits (a stage's linearisation: 59k instructions instead of 71k
    on solo12's trot, where the contact dynamics' Jacobian and the forward mode through ``integrate``
    recompute what the others computed). Done here, when a library is generated, and not where f is
    built, which a cached library's key needs every time (``ca.cse`` takes 0.7 s on that stage).
    ``source`` unchanged where f is not a plain SX graph (one that calls other Functions)."""
    if not f.is_a("SXFunction") or any(f.instruction_id(k) == ca.OP_CALL for k in range(f.n_instructions())):
        return source
    args = f.sx_in()
    lean = ca.Function(f.name(), args, ca.cse(f.call(args)), f.name_in(), f.name_out())
    gen = ca.CodeGenerator(f.name() + ".c")
    gen.add(lean)
    text = gen.dump()
    new, old = _definition(text, lean), _definition(source, f)
    body = text[new.end() : text.index("\n}\n", new.end()) + 3]
    return source[: old.end()] + body + source[source.index("\n}\n", old.end()) + 3 :]


def memoize(source, f):
    """casadi's generated C ``source`` with the Function ``f``, called inside it, evaluated once per
    distinct input: the callers share its outputs (an optimal control problem's Jacobian, gradient and
    Hessian evaluations each call a stage's linearisation at the same knot points, in turn over the
    knots). The table holds as many entries as fit in ``MEMO_BYTES``, in sets of ``MEMO_WAYS``; an
    input whose set is full displaces one of its entries, which is recomputed when asked again.
    Deterministic: a hit returns the bits that the evaluation at that input returned."""
    match = _definition(source, f)
    fn = match.group(1)
    stride = 1 + f.nnz_in() + f.nnz_out()
    slots = max(1, min(MEMO_SLOTS, MEMO_BYTES // (8 * stride)))
    ways = min(MEMO_WAYS, slots)
    sets = slots // ways
    wrapper = MEMO_WRAPPER.format(
        name=f.name(),
        fn=fn,
        raw=fn + "_evaluate",
        sets=sets,
        ways=ways,
        stride=stride,
        first_output=1 + f.nnz_in(),
        inputs=f.n_in(),
        outputs=f.n_out(),
        n_in=", ".join(str(f.nnz_in(i)) for i in range(f.n_in())),
        n_out=", ".join(str(f.nnz_out(i)) for i in range(f.n_out())),
    )
    start = match.start()
    body = source[start:].replace(f"static int {fn}(", f"static int {fn}_evaluate(", 1)
    return source[:start] + wrapper.lstrip("\n") + "\n" + body


def compile_library(compiler, source, target, flags, verbose, label):
    """Run the compiler; returns (seconds, its output). A compiler that fails, or that says it
    succeeded without writing a library, raises ``CompileError`` with its command and output."""
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
    if not target.is_file() or target.stat().st_size == 0:
        raise CompileError(
            f"{' '.join(cmd)} exited 0 but wrote no library ({target} is missing or empty); "
            f"compiler output:\n{out[-4000:] or '(none)'}"
        )
    say(f"compiled {label} in {seconds:.1f} s")
    return seconds, out


class CacheWarning(UserWarning):
    """A cached library failed its checks and is rebuilt."""


class _BadEntry(Exception):
    """A cache entry that must not be loaded: ``path`` is the culprit file, ``reason`` says why."""

    def __init__(self, path, reason):
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


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


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _signature(f):
    """What a caller relies on: the name, and the names and sparsities of the inputs and outputs."""
    inputs = [(f.name_in(i), f.sparsity_in(i).serialize()) for i in range(f.n_in())]
    return f.name(), inputs, [(f.name_out(i), f.sparsity_out(i).serialize()) for i in range(f.n_out())]


def _load(entry, key, everything, names, seconds):
    """The Library of a cache entry, after checking, in this order: its manifest was written for
    ``key``; the library's bytes hash to what the manifest recorded when it was built (so a
    truncated, corrupted or replaced file is never handed to the dynamic loader, where it could
    crash the process); once loaded, every Function has the expected signature."""
    manifest = entry / MANIFEST
    try:
        record = json.loads(manifest.read_text())
        library = entry / record["library"]
        recorded_key, recorded_hash = record["key"], record["sha256"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise _BadEntry(manifest, f"is missing or unreadable ({type(e).__name__}: {e})") from None
    if recorded_key != key or library.parent != entry:
        raise _BadEntry(manifest, "was not written for this build")
    try:
        actual = _sha256(library)
    except OSError as e:
        raise _BadEntry(library, f"cannot be read ({e})") from None
    if actual != recorded_hash:
        raise _BadEntry(library, "differs from the library built (its hash): truncated, corrupted or replaced")
    loaded = {}
    for f in names if everything is None else everything:  # None: load_library's, no Functions to compare
        name = f if everything is None else f.name()
        try:
            loaded[name] = ca.external(name, str(library))
        except RuntimeError as e:
            raise _BadEntry(library, f"does not load {name} ({str(e).splitlines()[-1]})") from None
        if everything is not None and _signature(loaded[name]) != _signature(f):
            raise _BadEntry(library, f"holds a {name} of another signature than the one built")
    with contextlib.suppress(OSError):  # its last use, for prune_cache (a read-only cache stays as it is)
        os.utime(manifest)
    return Library(library, entry / record["source"], {n: loaded[n] for n in names}, seconds)


def _discard(entry):
    """Move a bad entry out of the way (atomically: another process may be reading it) and delete it."""
    trash = Path(tempfile.mkdtemp(dir=entry.parent, prefix=".trash-"))
    with contextlib.suppress(FileNotFoundError):  # another process discarded it first
        os.replace(entry, trash / entry.name)
    shutil.rmtree(trash, ignore_errors=True)


def _build(entry, key, everything, name, compiler, flags, verbose, label, memo=()):
    """Generate and compile into a private directory, write the manifest, then rename the directory to
    ``entry`` in one step: no process ever sees a half-written entry. When another process finished
    the same build first, its entry is kept. Returns a thunk that runs the compiler and returns
    (seconds, compiler output): casadi generates the C here, the compilers of several builds can then
    run side by side (``compile_libraries``)."""
    tmp = Path(tempfile.mkdtemp(dir=entry.parent, prefix=f".{entry.name}-"))
    try:
        c_file, _ = _generate(everything, tmp, name, memo)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise

    def run():
        try:
            built = tmp / f"{name}.so"
            seconds, out = compile_library(compiler, c_file, built, flags, verbose, label)
            digest = _sha256(built)
            # a name of its own for every build: a rebuilt library never takes the path of one this process
            # loaded before, for which the dynamic loader would hand back the old one
            library = built.rename(tmp / f"{name}-{secrets.token_hex(8)}.so")
            record = {"key": key, "library": library.name, "source": c_file.name, "sha256": digest}
            (tmp / MANIFEST).write_text(json.dumps(record, indent=1))
            try:
                os.rename(tmp, entry)
            except OSError as e:
                if e.errno not in (errno.EEXIST, errno.ENOTEMPTY):  # else another process built it meanwhile
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return seconds, out

    return run


def compile_functions(functions, name=None, flags=DEFAULT_FLAGS, compiler=None, verbose=None):
    """Generate C for the Functions, compile it into a shared library and load it back (cached).

    ``name``: the library name, prefix of casadi's helper symbols (default:
    the first Function's name). ``flags``: compiler flags, ``DEFAULT_FLAGS``
    (-O3 for this CPU, without the passes that find nothing in casadi's
    code) by default; drop ``-march=native`` for a library to copy elsewhere;
    ``("-O1",)`` compiles graphs of 100k instructions and more faster still.
    ``compiler``: name or path of the C compiler (default: $CC, else cc, gcc or clang). ``verbose``: print
    progress and the compile time to stderr (default: for graphs of more
    than ``VERBOSE_INSTRUCTIONS`` instructions).

    A cached library is loaded only after the checks of the module docstring; one that fails them
    is rebuilt once, with a ``CacheWarning`` naming the file; a rebuild that fails them too raises
    ``CompileError``."""
    functions = [functions] if isinstance(functions, ca.Function) else list(functions)
    if not functions:
        raise ValueError("compile_functions: no Functions given")
    return compile_libraries({name or functions[0].name(): functions}, flags, compiler, verbose)[0]


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


def _entry_key(name, flags, compiler, kept, content):
    """The cache entry and key of a library: its Functions (``content``) and how they are compiled."""
    wrapper = f"{MEMO_WRAPPER}{MEMO_BYTES} {MEMO_SLOTS} {MEMO_WAYS} cse" if kept else ""
    parts = [CACHE_LAYOUT, ca.__version__, compiler, *flags, name, *kept, wrapper, _cpu(), content]
    key = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]
    return cache_dir() / f"{name}-{key}", key


def load_library(name, description, names, flags=DEFAULT_FLAGS, compiler=None, memo=()):
    """The Library that ``compile_libraries(..., memo={name: memo}, keys={name: description})`` wrote,
    with its Functions ``names``, if it is cached and passes the checks of the module docstring (but
    for the Functions' signatures: there are none to compare); else None. A caller that describes its
    Functions loads them so without building their graphs."""
    entry, key = _entry_key(name, tuple(flags), find_compiler(compiler), tuple(memo), description)
    if not entry.exists():
        return None
    try:
        return _load(entry, key, None, names, None)
    except _BadEntry as e:
        warnings.warn(f"casrbd.codegen: not loading the cached library: {e}", CacheWarning, stacklevel=2)
        return None


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
    per_library, memo = {name: tuple(f) for name, f in per_library.items()}, memo or {}
    compiler = find_compiler(compiler)
    plans = []
    for name, functions in libraries.items():
        if not functions:
            raise ValueError(f"compile_libraries: library {name!r} has no Functions")
        check_names(functions, name)
        # the serializations hold the model's constants and every derivative shipped with the Functions
        everything = _with_derivatives(functions)
        if keys and name in keys:
            content = keys[name]
        else:
            packed = ca.StringSerializer()
            packed.pack(everything)  # the Functions they share (a stage's linearisation), written once
            content = packed.encode()
        # memo tables as written, and their Functions' C written from the common subexpressions
        kept = tuple(memo.get(name, ()))
        entry, key = _entry_key(name, per_library[name], compiler, kept, content)
        plans.append((entry, key, everything, name, [f.name() for f in functions], kept))
    found, builds = {}, {}
    missing = []
    for entry, key, everything, name, names, kept in plans:
        if entry.exists():
            try:
                found[name] = _load(entry, key, everything, names, None)
                continue
            except _BadEntry as e:
                warnings.warn(f"casrbd.codegen: rebuilding the cached library: {e}", CacheWarning, stacklevel=3)
                _discard(entry)
        missing.append((sx_instructions(everything), entry, key, everything, name, names, kept))
    jobs = jobs or os.cpu_count() or 1
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(jobs, len(missing) or 1))) as pool:
        # the compilers release the GIL: one compiles while the next library is generated
        for size, entry, key, everything, name, names, kept in sorted(missing, key=lambda m: -m[0]):
            entry.parent.mkdir(parents=True, exist_ok=True)
            loud = size > VERBOSE_INSTRUCTIONS if verbose is None else verbose
            label = f"{name} ({', '.join(names)})"
            run = _build(entry, key, everything, name, compiler, per_library[name], loud, label, kept)
            builds[name] = pool.submit(run)
    for entry, key, everything, name, names, _ in plans:
        if name in found:
            continue
        seconds, out = builds[name].result()
        try:
            found[name] = _load(entry, key, everything, names, seconds)
        except _BadEntry as e:
            _discard(entry)
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
    (Gauss-Newton, L-BFGS);
    AD second derivatives can be large (solo12's 4-contact ``constraint_dynamics``: 1.4M instructions)
    and a Hessian through a call without them fails. ``flags``, ``compiler``: as
    ``compile_functions``; ``-O1`` compiles large graphs (1e5 instructions and more) several times
    faster than the default.
    """
    if "jacobian" not in options:
        offered = spec(name).jacobian is not None and not options.get("parameters")
        options["jacobian"] = "analytical" if offered else "ad"
    choice("hessian", hessian, HESSIANS)
    return _compiled(model, function(model, name, **options), tuple(flags), compiler, hessian == "exact")


@per_model
def _compiled(model, f, flags, compiler, second_order):
    return compile_functions(_derivative_set(f, second_order), flags=flags, compiler=compiler)[f.name()]


def _derivative_set(f, second_order):
    """f and, for those of its derivatives it does not carry itself (``_custom_derivatives``), casadi's AD
    ones: the Jacobian, and with ``second_order`` one adjoint and the adjoint's Jacobian."""
    shipped = {g.name() for g in _custom_derivatives(f)}
    extra = [] if "jac_" + f.name() in shipped else [f.jacobian()]
    if second_order and "adj1_" + f.name() not in shipped:
        adjoint = f.reverse(1)
        extra += [adjoint, adjoint.jacobian()]
    return [f, *extra]
