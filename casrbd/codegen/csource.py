"""casadi's generated C: its names checked, its patterns read once, and the mends casrbd writes into it.

casadi's SX code reads each input nonzero through a test of the input's pointer (``READ``: ``arg[i]?
arg[i][k] : 0``, casadi passes NULL for an input it has no values of) and writes each output nonzero
through one (``WRITE``: ``if (res[i]!=0) res[i][k]=``). The libraries read each pointer once
(``hoist_arguments``), the GPU kernels turn them into loads and stores of a thread's state
(``codegen.kernels``): both read them with these patterns. The C that casrbd adds lives in
``templates/`` (``template``).
"""

import contextlib
import functools
import re
import string
from importlib import resources

import casadi as ca

from ..naming import c_problem

SIGNATURE = "(const casadi_real** arg, casadi_real** res, casadi_int* iw, casadi_real* w, int mem) {"
READ = re.compile(r"arg\[(\d+)\]\s*\?\s*arg\[\1\]\[(\d+)\]\s*:\s*0")
WRITE = re.compile(r"if\s*\(res\[(\d+)\]\s*!=\s*0\)\s*res\[\1\]\[(\d+)\]\s*=")
FUNCTION = re.compile(r"^static int \w+" + re.escape(SIGNATURE) + r"\n", re.M)
ZERO_INPUTS = "casrbd_zero_inputs"

# what casadi's code generator exports besides the Function itself, per Function and per library
FUNCTION_SUFFIXES = tuple(
    ("", *"_checkout _release _incref _decref _n_in _n_out _default_in _name_in _name_out".split())
    + tuple("_sparsity_in _sparsity_out _work _work_bytes _alloc_mem _init_mem _free_mem".split())
    + tuple("_SZ_ARG _SZ_RES _SZ_IW _SZ_W".split())
)
LIBRARY_SUFFIXES = ("_casadi_version", "_casadi_int_size", "_casadi_real_size")


@functools.cache
def template(name):
    """A C template of ``templates/`` (a ``string.Template``: ``${field}``)."""
    return string.Template(resources.files(__package__).joinpath("templates").joinpath(name).read_text())


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
    symbols = [(n + s, n) for n in names for s in FUNCTION_SUFFIXES]
    symbols += [(library + s, f"library {library}") for s in LIBRARY_SUFFIXES if library is not None]
    for symbol, who in symbols:
        if symbol in owner:
            raise ValueError(
                f"exported C symbol {symbol!r} would be defined twice (by {owner[symbol]} and "
                f"{who}): give the Functions distinct names"
            )
        owner[symbol] = who


# casadi's scalar helpers (casadi_sq, casadi_fmin, casadi_fmax, casadi_sign, ...) as its code generator
# writes them: exported functions, which a shared library (-fPIC) calls through its PLT at every use, so
# that gcc neither inlines them (another library could interpose them) nor keeps the caller's values in
# registers across the call; and fmin and fmax call libm, whose legacy-SSE code stalls inside VEX
# (-march=native) code on some CPUs.
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


def hoist_arguments(source):
    """casadi's generated C ``source`` with the input and output pointers of each SX function read once,
    into locals, as casadi's MX code reads them: an input passed as NULL reads from a block of zeros
    (``ZERO_INPUTS``), an output passed as NULL is not written. The same operations on the same values.
    (At -O1, without type-based aliasing, gcc reloads and tests the pointer at every read and write; at
    -O3 the tests take a third of its time.)"""
    pieces, start, size = [], 0, 0
    for match in FUNCTION.finditer(source):
        end = source.index("\n}\n", match.end())
        body = source[match.end() : end]
        reads = READ.findall(body)
        inputs = sorted({int(i) for i, _ in reads})
        outputs = sorted({int(i) for i, _ in WRITE.findall(body)})
        if not (inputs or outputs):
            continue
        size = max([size, *(int(k) + 1 for _, k in reads)])
        local = ""
        if inputs:
            pointers = (f"*arg_{i} = arg[{i}] ? arg[{i}] : {ZERO_INPUTS}" for i in inputs)
            local += f"  const casadi_real {', '.join(pointers)};\n"
        if outputs:
            local += f"  casadi_real {', '.join(f'*res_{i} = res[{i}]' for i in outputs)};\n"
        body = WRITE.sub(r"if (res_\1) res_\1[\2]=", READ.sub(r"arg_\1[\2]", body))
        pieces += [source[start : match.end()], local, body]
        start = end
    if not pieces:
        return source
    text = "".join([*pieces, source[start:]])
    first = FUNCTION.search(text).start()
    return f"{text[:first]}static const casadi_real {ZERO_INPUTS}[{max(size, 1)}];\n\n{text[first:]}"


def definition(source, f):
    """The match of the one definition of f's C function in casadi's generated ``source`` (group 1: its
    C name)."""
    comment = r"^/\* " + re.escape(f.name()) + r":\(.*\*/\n"  # casadi writes one above each Function
    found = list(re.finditer(comment + r"static int (casadi_f\d+)" + re.escape(SIGNATURE) + r"\n", source, re.M))
    if len(found) != 1:
        raise ValueError(f"codegen: casadi's C holds {len(found)} definitions of {f.name()!r}, expected one")
    return found[0]


def body(f):
    """The body of the one C function casadi writes for the SX Function ``f`` (straight-line code over
    local scalars, ``READ`` and ``WRITE``), without its final ``return 0;``."""
    gen = ca.CodeGenerator(f.name() + ".c")
    gen.add(f)
    code = gen.dump()
    try:
        start = definition(code, f).end()
    except ValueError:
        start = None
    end = -1 if start is None else code.find("\n  return 0;\n}", start)
    if end < 0:
        raise RuntimeError(f"casadi {ca.__version__}'s generated code has a layout casrbd does not know")
    return code[start:end]


def eliminate_common(source, f):
    """casadi's generated C ``source`` with the body of the SX Function ``f`` (called inside it) written
    from f's graph with its common subexpressions eliminated (``ca.cse``): the same operations on the
    same values, each once, so the same bits (a stage's linearisation, where the contact dynamics'
    Jacobian and the forward mode through ``integrate`` recompute what the others computed). Done here,
    when a library is generated, and not where f is built, which a cached library's key needs every time.
    ``source`` unchanged where f is not a plain SX graph (one that calls other Functions)."""
    if not f.is_a("SXFunction") or any(f.instruction_id(k) == ca.OP_CALL for k in range(f.n_instructions())):
        return source
    args = f.sx_in()
    lean = ca.Function(f.name(), args, ca.cse(f.call(args)), f.name_in(), f.name_out())
    gen = ca.CodeGenerator(f.name() + ".c")
    gen.add(lean)
    text = gen.dump()
    new, old = definition(text, lean), definition(source, f)
    written = text[new.end() : text.index("\n}\n", new.end()) + 3]
    return source[: old.end()] + written + source[source.index("\n}\n", old.end()) + 3 :]


# per memoized Function and thread: far more slots than an optimal control problem has knots, in sets
# of MEMO_WAYS, so that a point displaces another only where more than MEMO_WAYS share a set (a
# direct-mapped table can hold two of a problem's knots on one slot, both recomputed at every evaluation)
MEMO_BYTES, MEMO_SLOTS, MEMO_WAYS = 1 << 24, 1024, 4
MEMO_WRAPPER = template("memo.c").template


def memoize(source, f):
    """casadi's generated C ``source`` with the Function ``f``, called inside it, evaluated once per
    distinct input: the callers share its outputs (an optimal control problem's Jacobian, gradient and
    Hessian evaluations each call a stage's linearisation at the same knot points, in turn over the
    knots). The table holds as many entries as fit in ``MEMO_BYTES``, in sets of ``MEMO_WAYS``; an
    input whose set is full displaces one of its entries, which is recomputed when asked again.
    Deterministic: a hit returns the bits that the evaluation at that input returned."""
    match = definition(source, f)
    fn = match.group(1)
    stride = 1 + f.nnz_in() + f.nnz_out()
    slots = max(1, min(MEMO_SLOTS, MEMO_BYTES // (8 * stride)))
    ways = min(MEMO_WAYS, slots)
    wrapper = template("memo.c").substitute(
        name=f.name(),
        fn=fn,
        raw=fn + "_evaluate",
        sets=slots // ways,
        ways=ways,
        stride=stride,
        first_output=1 + f.nnz_in(),
        inputs=f.n_in(),
        outputs=f.n_out(),
        n_in=", ".join(str(f.nnz_in(i)) for i in range(f.n_in())),
        n_out=", ".join(str(f.nnz_out(i)) for i in range(f.n_out())),
    )
    start = match.start()
    rest = source[start:].replace(f"static int {fn}(", f"static int {fn}_evaluate(", 1)
    return source[:start] + wrapper + "\n" + rest


def dependency(functions, name):
    """The Function ``name`` among ``functions`` or called inside one of them."""
    for f in functions:
        with contextlib.suppress(RuntimeError):  # casadi raises where f calls no Function of that name
            return f if f.name() == name else f.find_function(name)
    raise ValueError(f"memo: none of {[f.name() for f in functions]} calls a Function named {name!r}")
