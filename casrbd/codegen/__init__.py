"""C code export: generate, compile, cache and load casadi Functions; compiled calls from Python.

``generate([f, g], directory, name)`` writes ``name.c`` and ``name.h`` with casadi's code generator.
``compile_functions([f, g], name)`` also compiles them into a shared library with the system C compiler
and loads every Function back with ``casadi.external``, so the result is called exactly like the
original. A Function with an analytical Jacobian (``jacobian="analytical"``) ships its ``jac_<name>``
Function in the same library, where ``casadi.external`` finds it and uses it for derivatives.

Exported C symbols are the Function names (``casrbd.function`` prefixes them with the model name) plus
casadi's suffixes (``_work``, ``_n_in``, ...); casadi's helpers are prefixed with the library name. So
the libraries of two models link into one program. ``check_names`` refuses, before generation, names
that are not usable C identifiers or that clash.

The package, as Pinocchio keeps its codegen apart from its algorithms:

- ``csource``: casadi's C read (one set of patterns) and mended; the C casrbd adds is in ``templates/``;
- ``flags``: every compiler flag; ``compiler``: finding and running the compilers;
- ``library``: libraries stored in ``casrbd.cache`` and loaded checked, ``compiled``;
- ``fast`` (``casrbd.fast``): compiled calls from Python; ``kernels`` and ``gpu`` (``casrbd.gpu``):
  batched CUDA kernels.

Loading a shared library runs its code, as does deserializing a Function that calls one: only load
libraries and serialized Functions you built or trust.
"""

from ..cache import MANIFEST, STALE_SECONDS, CacheEntry, CacheWarning, cache_dir
from ..cache import entries as cache_entries
from ..cache import prune as prune_cache
from .compiler import PROGRESS_SECONDS, CompileError, CompilerNotFoundError, compile_library, find_compiler
from .csource import (
    FUNCTION_SUFFIXES,
    LIBRARY_SUFFIXES,
    MEMO_BYTES,
    MEMO_SLOTS,
    MEMO_WAYS,
    MEMO_WRAPPER,
    SIGNATURE,
    ZERO_INPUTS,
    check_names,
    eliminate_common,
    hoist_arguments,
    inline_helpers,
    memoize,
)
from .flags import DEFAULT_FLAGS
from .library import (
    CACHE_LAYOUT,
    HESSIANS,
    VERBOSE_INSTRUCTIONS,
    Library,
    compile_functions,
    compile_libraries,
    compiled,
    generate,
    is_external,
    load_library,
    sx_instructions,
)

__all__ = [
    "CACHE_LAYOUT",
    "DEFAULT_FLAGS",
    "FUNCTION_SUFFIXES",
    "HESSIANS",
    "LIBRARY_SUFFIXES",
    "MANIFEST",
    "MEMO_BYTES",
    "MEMO_SLOTS",
    "MEMO_WAYS",
    "MEMO_WRAPPER",
    "PROGRESS_SECONDS",
    "SIGNATURE",
    "STALE_SECONDS",
    "VERBOSE_INSTRUCTIONS",
    "ZERO_INPUTS",
    "CacheEntry",
    "CacheWarning",
    "CompileError",
    "CompilerNotFoundError",
    "Library",
    "cache_dir",
    "cache_entries",
    "check_names",
    "compile_functions",
    "compile_libraries",
    "load_library",
    "compile_library",
    "compiled",
    "eliminate_common",
    "find_compiler",
    "generate",
    "is_external",
    "hoist_arguments",
    "inline_helpers",
    "memoize",
    "prune_cache",
    "sx_instructions",
]
