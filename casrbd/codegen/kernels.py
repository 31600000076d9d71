"""The CUDA source of a casadi SX Function's kernels (``casrbd.gpu``'s module docstring: the layouts).

casadi's CodeGenerator writes an SX Function as one C function whose body is straight-line code over
local scalars. A kernel keeps that body as it is and rewrites only its reads and writes
(``csource.READ``, ``csource.WRITE``) into loads and stores of the thread's state, in the wrapper of
``templates/kernel.cu``; casadi's helpers become the device functions of ``templates/helpers.cu``, over
CUDA's built-in math (NVRTC has no <math.h>). Anything else in the body (calls to other Functions,
unknown helpers) is refused by name. Single precision makes every literal and math function float
(``2.5f``, ``sinf``); literals beyond float range become inf.
"""

import re

import casadi as ca
import numpy as np

from . import csource
from .csource import READ, WRITE, template

PRECISIONS = {"double": ("double", np.float64), "single": ("float", np.float32)}
# the math functions casadi's code calls by name; CUDA has each one and its float variant (name + "f")
MATH = set(
    "sqrt sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh exp log pow floor ceil fmod remainder "
    "fabs copysign erf erfinv atan2 fmax fmin log1p expm1 hypot".split()
)
# casadi's helpers (the CodeGenerator's casadi_<op>) and constants, over CUDA's built-in math
HELPERS = {
    re.match(r"casadi_real (\w+)\(", line)[1]: line
    for line in template("helpers.cu").template.splitlines()
    if line.strip()
}
CONSTANTS = {"casadi_inf": "(1.0 / 0.0)", "casadi_nan": "(0.0 / 0.0)"}
# the host shim: CUDA's qualifiers defined away, the thread index a global set by the loop over states
HOST_SHIM = template("host_shim.h").template

_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*")
_LITERAL = re.compile(r"(?<![\w.])(\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)(?![\w.])")
_LOCAL = re.compile(r"a\d+\Z")  # casadi's local scalars


def _shape(sparsity):
    """One state's shape of an argument: (n,) for a column, (m, n) for a dense matrix, (nnz,) if sparse."""
    rows, cols = sparsity.size()
    if not sparsity.is_dense():
        return (sparsity.nnz(),)
    return (rows,) if cols == 1 else (rows, cols)


def _sx(f):
    if not isinstance(f, ca.Function):
        raise TypeError(f"casrbd.gpu takes a casadi Function, got {type(f).__name__}")
    if f.is_a("SXFunction"):
        return f
    try:
        return f.expand()
    except RuntimeError as e:
        raise ValueError(f"{f.name()} is not an SX Function and does not expand to one: {e}") from None


def _groups(f, split):
    """The kernels' outputs: per kernel, a list of (output index, first nonzero, end nonzero)."""
    nnz = [f.sparsity_out(i).nnz() for i in range(f.n_out())]
    whole = [(i, 0, n) for i, n in enumerate(nnz) if n]
    if split is None:
        return [whole] if whole else []
    if split == "outputs":
        return [[piece] for piece in whole]
    if isinstance(split, (int, np.integer)) and not isinstance(split, bool):
        if split < 1:
            raise ValueError(f"split must be at least 1 output nonzero per kernel, got {split}")
        groups, room = [], 0
        for i, lo, n in whole:
            while lo < n:
                if not room:
                    groups.append([])
                    room = int(split)
                hi = min(n, lo + room)
                groups[-1].append((i, lo, hi))
                room, lo = room - (hi - lo), hi
        return groups
    if isinstance(split, (list, tuple)) and all(isinstance(g, (list, tuple)) for g in split):
        names = f.name_out()
        named = [name for g in split for name in g]
        unknown = sorted(set(named) - set(names))
        twice = sorted({n for n in named if named.count(n) > 1})
        missing = [n for n in names if n not in named]
        if unknown or twice or missing:
            raise ValueError(
                f"split groups must name every output of {f.name()} {names} once: "
                f"unknown {unknown}, named twice {twice}, missing {missing}"
            )
        groups = [[(names.index(n), 0, nnz[names.index(n)]) for n in g if nnz[names.index(n)]] for g in split]
        return [g for g in groups if g]
    raise ValueError(
        f"split must be None, 'outputs', a number of output nonzeros per kernel, or groups of output names; "
        f"got {split!r}"
    )


def _casadi_body(xs, outputs):
    """casadi's C body of the SX Function from the symbols ``xs`` to ``outputs`` (SX columns)."""
    return csource.body(ca.Function("body", xs, outputs))


def _translate(f, body, pieces, precision):
    """The kernel body: reads and writes of the thread's state; checked for anything not translated."""
    body = READ.sub(lambda m: f"x{m[1]}[{m[2]} * N]", body)

    def write(m):
        output, first = pieces[int(m[1])][:2]
        return f"y{output}[{first + int(m[2])} * N]="

    body = WRITE.sub(write, body)
    allowed = {"casadi_real", "N"} | MATH | set(HELPERS) | set(CONSTANTS)
    allowed |= {f"x{i}" for i in range(f.n_in())} | {f"y{i}" for i in range(f.n_out())}
    unknown = sorted({w for w in _IDENTIFIER.findall(body) if w not in allowed and not _LOCAL.match(w)})
    if unknown:
        raise ValueError(
            f"{f.name()}: casadi's generated code uses {unknown}, which casrbd.gpu does not translate (a call "
            "to another Function inside the graph, or an operation without a CUDA equivalent)"
        )
    return _precision(body, precision)


def _precision(code, precision):
    """Single precision: float literals and the float variants of the math functions."""
    if precision == "double":
        return code
    code = _LITERAL.sub(r"\1f", code)
    return re.sub(r"\b(" + "|".join(sorted(MATH)) + r")\(", r"\1f(", code)


class KernelSource:
    """The CUDA source of a Function's kernels: ``code``, the kernel ``names``, the ``precision`` and
    its numpy ``dtype``, and one state's ``shapes_in``/``shapes_out`` (see ``_shape``)."""

    def __init__(self, f, precision="double", split=None):
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {sorted(PRECISIONS)}, got {precision!r}")
        f = _sx(f)
        self.function, self.name, self.precision = f, f.name(), precision
        self.dtype = PRECISIONS[precision][1]
        self.names_in, self.names_out = f.name_in(), f.name_out()
        self.sparsity_in = [f.sparsity_in(i) for i in range(f.n_in())]
        self.sparsity_out = [f.sparsity_out(i) for i in range(f.n_out())]
        self.shapes_in = [_shape(s) for s in self.sparsity_in]
        self.shapes_out = [_shape(s) for s in self.sparsity_out]
        xs = f.sx_in()
        ys = f.call(xs)
        stem = "k_" + re.sub(r"\W", "_", f.name())
        params = [f"const casadi_real* __restrict__ x{i}" for i in range(f.n_in())]
        params += [f"casadi_real* __restrict__ y{i}" for i in range(f.n_out())]
        offsets = "".join(f"  x{i} += t;\n" for i in range(f.n_in()))
        offsets += "".join(f"  y{i} += t;\n" for i in range(f.n_out()))
        self.names, kernels = [], []
        for k, pieces in enumerate(_groups(f, split)):
            body = _translate(f, _casadi_body(xs, [ys[i].nz[lo:hi] for i, lo, hi in pieces]), pieces, precision)
            self.names.append(f"{stem}_{k}")
            kernels.append(
                template("kernel.cu").substitute(
                    name=self.names[-1], params=", ".join(params), offsets=offsets, body=body
                )
            )
        used = set(_IDENTIFIER.findall("".join(kernels)))
        preamble = [f"/* casrbd.gpu: {self.name} ({precision}) from casadi {ca.__version__}'s generated code */"]
        preamble.append(f"typedef {PRECISIONS[precision][0]} casadi_real;")
        preamble += [f"#define {c} {value}" for c, value in CONSTANTS.items() if c in used]
        preamble += [f"__device__ __forceinline__ {h}" for name, h in HELPERS.items() if name in used]
        self.code = _precision("\n".join(preamble), precision) + "\n\n" + "\n".join(kernels)

    def host_code(self):
        """The same source for the CPU: the shim first, ``casrbd_host_run(x, y, N)`` last, which runs every
        kernel on states 0..N-1 (x, y: the input and output pointers)."""
        xs = [f"(const casadi_real*)x[{i}]" for i in range(len(self.names_in))]
        ys = [f"(casadi_real*)y[{i}]" for i in range(len(self.names_out))]
        calls = "".join(f"    {name}({', '.join(xs + ys)}, N);\n" for name in self.names)
        return f"{HOST_SHIM}{self.code}\n" + template("host_run.cpp").substitute(calls=calls)
