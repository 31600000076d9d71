"""Batched evaluation on a GPU: any SX casadi Function as CUDA kernels, one state per thread.

    from casrbd import gpu
    aba = gpu.function(model, "aba")           # compiled at run time (NVRTC through CuPy), cached on disk
    A = aba(Q, V, T)                           # (N, nq), (N, nv), (N, nv) device arrays -> (N, nv)
    dq, dv, Minv = gpu.function(model, "aba_derivatives", precision="single", split="outputs")(Q, V, T)
    k = gpu.compile_function(f)                # any SX casadi Function (an MX one is expanded)

Source. casadi's CodeGenerator writes an SX Function as one C function whose
body is straight-line code over local scalars. The kernel keeps that body as
it is and rewrites only its reads (``a0=arg[i]? arg[i][j] : 0;``) and writes
(``if (res[k]!=0) res[k][j]=a5;``) into loads and stores of the thread's
state, and its wrapper into ``extern "C" __global__ void k(x0, ..., y0, ...,
N)``; casadi's helpers (``casadi_sq``, ``casadi_fmax``, ...) become device
functions over CUDA's built-in math (NVRTC has no <math.h>). Anything else in
the body (calls to other Functions, unknown helpers) is refused by name.
Single precision (``precision="single"``) makes every literal and math
function float (``2.5f``, ``sinf``); literals beyond float range become inf.

Layouts. Each kernel reads input i as an (nnz_i, N) array and writes output j
as an (nnz_j, N) array, state k in column k, entries in casadi's nonzero
order (column-major for a dense matrix): neighbouring threads touch
neighbouring addresses, so loads and stores coalesce. ``f.raw(*args)`` takes
and returns that layout as it is. ``f(*args)`` takes one state per row, as
``casrbd.fast``'s batch: (N, n) for a column, (N, m, n) for a dense matrix,
(N, nnz) for a sparse one (its nonzeros, ``f.sparsity_in(i)``), and returns
C-contiguous (N, ...) arrays likewise (sparse outputs as their nonzeros): one
transposing copy on the device per argument and per output, in the
precision's dtype. Arguments may be CuPy arrays or any device array with
``__cuda_array_interface__`` or DLPack (PyTorch, JAX), used in place; other
arrays (numpy) are copied to the device. Results are CuPy arrays
(``torch.from_dlpack(a)`` views one without a copy). Kernels run on CuPy's
current stream.

Splitting. A derivative Function spills registers (255 per thread and tens
of kB of local memory): ``split="outputs"`` compiles one kernel per output,
``split=k`` kernels of at most k output nonzeros each, ``split=[["da_dq"],
["da_dv", "da_dtau"]]`` the groups named; each kernel recomputes what its
outputs need. Each kernel spills less, but ptxas's report shows the total
growing (most outputs need most of the graph), so it is off by default;
``python -m benchmarks.gpu`` measures both. Single precision spills 2.5-7x less.

Checking without a GPU. ``host_function(f)`` compiles the same source with the
system C++ compiler, the CUDA qualifiers defined away and the thread index
set by a loop over the states, and calls it on numpy arrays with the same
layouts (the tests compare it with casadi's evaluation).

Builds are cached under ``casrbd.codegen.cache_dir()`` (``CASRBD_CACHE``) by a
hash of the source, the options, the target and the compiler version.
"""

import ctypes
import hashlib
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

import casadi as ca
import numpy as np

from . import codegen
from .functions import function as casrbd_function

BLOCK = 128  # threads per block: 64, 128 and 256 were within a few percent of each other on an H100
HOST_FLAGS = ("-O0",)  # the host build checks values, it is not timed: gcc -O1 takes 5x longer on 9k instructions
PRECISIONS = {"double": ("double", np.float64), "single": ("float", np.float32)}
# the math functions casadi's code calls by name; CUDA has each one and its float variant (name + "f")
MATH = set(
    "sqrt sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh exp log pow floor ceil fmod remainder "
    "fabs copysign erf erfinv atan2 fmax fmin log1p expm1 hypot".split()
)
# casadi's helpers (the CodeGenerator's casadi_<op>) and constants, over CUDA's built-in math
HELPERS = {
    "casadi_sq": "casadi_real casadi_sq(casadi_real x) { return x * x; }",
    "casadi_sign": "casadi_real casadi_sign(casadi_real x) { return x < 0 ? -1 : x > 0 ? 1 : x; }",
    "casadi_fabs": "casadi_real casadi_fabs(casadi_real x) { return fabs(x); }",
    "casadi_fmax": "casadi_real casadi_fmax(casadi_real x, casadi_real y) { return fmax(x, y); }",
    "casadi_fmin": "casadi_real casadi_fmin(casadi_real x, casadi_real y) { return fmin(x, y); }",
    "casadi_log1p": "casadi_real casadi_log1p(casadi_real x) { return log1p(x); }",
    "casadi_expm1": "casadi_real casadi_expm1(casadi_real x) { return expm1(x); }",
    "casadi_hypot": "casadi_real casadi_hypot(casadi_real x, casadi_real y) { return hypot(x, y); }",
}
CONSTANTS = {"casadi_inf": "(1.0 / 0.0)", "casadi_nan": "(0.0 / 0.0)"}
# the host shim: CUDA's qualifiers defined away, the thread index a global set by the loop over states
HOST_SHIM = """#include <math.h>
#define __global__
#define __device__
#define __forceinline__ inline
static struct { long long x; } threadIdx, blockIdx, blockDim;
"""

_READ = re.compile(r"arg\[(\d+)\]\s*\?\s*arg\[\1\]\[(\d+)\]\s*:\s*0")
_WRITE = re.compile(r"if\s*\(res\[(\d+)\]\s*!=\s*0\)\s*res\[\1\]\[(\d+)\]\s*=")
_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*")
_LITERAL = re.compile(r"(?<![\w.])(\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)(?![\w.])")
_LOCAL = re.compile(r"a\d+\Z")  # casadi's local scalars


def _cupy():
    try:
        import cupy
    except ImportError as e:
        raise ImportError(f"casrbd.gpu needs CuPy: pip install 'casrbd[gpu]' (cupy-cuda12x) ({e})") from None
    return cupy


def available():
    """(True, device name) when CuPy and a CUDA GPU are there, else (False, why not)."""
    try:
        cp = _cupy()
        count = cp.cuda.runtime.getDeviceCount()
    except Exception as e:  # ImportError, or CuPy's CUDARuntimeError without a driver or a GPU
        return False, f"{type(e).__name__}: {e}"
    if not count:
        return False, "CuPy sees no CUDA GPU"
    return True, cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"].decode()


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
    g = ca.Function("body", xs, outputs)
    gen = ca.CodeGenerator("body.c")
    gen.add(g)
    code = gen.dump()
    wrapper = re.search(r"\bint body\(const casadi_real\*\* arg[^{]*\{\s*return (casadi_f\d+)\(", code)
    start = re.search(rf"static int {wrapper[1]}\(const casadi_real\*\* arg[^{{]*\{{\n", code) if wrapper else None
    end = code.find("\n  return 0;\n}", start.end()) if start else -1
    if end < 0:
        raise RuntimeError(f"casadi {ca.__version__}'s generated code has a layout casrbd.gpu does not know")
    return code[start.end() : end]


def _translate(f, body, pieces, precision):
    """The kernel body: reads and writes of the thread's state; checked for anything not translated."""
    body = _READ.sub(lambda m: f"x{m[1]}[{m[2]} * N]", body)

    def write(m):
        output, first = pieces[int(m[1])][:2]
        return f"y{output}[{first + int(m[2])} * N]="

    body = _WRITE.sub(write, body)
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
                f'extern "C" __global__ void {self.names[-1]}({", ".join(params)}, const long long N) {{\n'
                "  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
                f"  if (t >= N) return;\n{offsets}{body}\n}}\n"
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
        return (
            f"{HOST_SHIM}{self.code}\n"
            'extern "C" void casrbd_host_run(void* const* x, void* const* y, long long N) {\n'
            "  blockIdx.x = 0;\n  blockDim.x = 1;\n"
            f"  for (threadIdx.x = 0; threadIdx.x < N; ++threadIdx.x) {{\n{calls}  }}\n}}\n"
        )


def _cached(label, key_parts, suffix, build):
    """The path of a build product cached under codegen.cache_dir() by a hash of ``key_parts``;
    ``build(directory)`` writes it (in a private directory, moved in complete) and returns its path."""
    key = hashlib.sha256("\0".join([ca.__version__, *key_parts]).encode()).hexdigest()[:20]
    target = codegen.cache_dir() / f"{label}-{key}" / f"{label}.{suffix}"
    if target.exists():
        return target, None
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        start = time.perf_counter()
        product = build(Path(tmp))
        seconds = time.perf_counter() - start
        os.replace(product, target)
    return target, seconds


class _Batched:
    """The calls common to the GPU and host builds, over an array module ``xp`` (CuPy or numpy)."""

    def __init__(self, source, xp):
        self.source, self.xp, self.name = source, xp, source.name
        self.names_in, self.names_out = source.names_in, source.names_out
        self.sparsity_in, self.sparsity_out = source.sparsity_in, source.sparsity_out
        self._nnz_in = [s.nnz() for s in source.sparsity_in]
        self._nnz_out = [s.nnz() for s in source.sparsity_out]

    def __repr__(self):
        kernels = len(self.source.names)
        return f"{type(self).__name__}({self.name!r}, {self.source.precision}, {kernels} kernel{'s' * (kernels != 1)})"

    def _array(self, x):
        return self.xp.asarray(x, dtype=self.source.dtype)

    def __call__(self, *args):
        """The outputs at every state, one state per row (new arrays; a tuple when there are several)."""
        src, xp = self.source, self.xp
        self._check_count(args)
        arrays = [self._array(x) for x in args]
        N = arrays[0].shape[0] if arrays and arrays[0].ndim else None
        raw = []
        for name, shape, nnz, a in zip(src.names_in, src.shapes_in, self._nnz_in, arrays):
            if a.shape != (N, *shape):
                raise ValueError(
                    f"{self.name}: argument {name!r} must have shape (N, {', '.join(map(str, shape))}), one state "
                    f"per row, with the same N for every argument; got shape {a.shape}" + (f" (N = {N})" if N else "")
                )
            # (N, m, n) -> (n, m, N) C-contiguous: column-major nonzeros of each state, states side by side
            raw.append(xp.ascontiguousarray(a.transpose(*range(a.ndim - 1, -1, -1))).reshape(nnz, N))
        out = [
            xp.ascontiguousarray(y.reshape(*shape[::-1], N).transpose(*range(len(shape), -1, -1)))
            for y, shape in zip(self.raw(*raw), src.shapes_out)
        ]
        return out[0] if len(out) == 1 else tuple(out)

    def raw(self, *args, out=None):
        """The kernels' own layout: inputs (nnz_i, N), outputs (nnz_j, N) (a tuple); C-contiguous arguments of
        the precision's dtype are read in place; ``out``: arrays to write the outputs into (new ones if None)."""
        self._check_count(args)
        arrays = [self.xp.ascontiguousarray(self._array(x)) for x in args]
        N = arrays[0].shape[1] if arrays and arrays[0].ndim == 2 else None
        for name, nnz, a in zip(self.names_in, self._nnz_in, arrays):
            if a.shape != (nnz, N):
                raise ValueError(
                    f"{self.name}: raw argument {name!r} must have shape ({nnz}, N), one state per column, with "
                    f"the same N for every argument; got shape {a.shape}"
                )
        if out is None:
            out = [self.xp.empty((nnz, N), dtype=self.source.dtype) for nnz in self._nnz_out]
        for name, nnz, y in zip(self.names_out, self._nnz_out, out):
            ok = isinstance(y, self.xp.ndarray) and y.dtype == self.source.dtype and y.flags.c_contiguous
            if not ok or y.shape != (nnz, N):
                raise ValueError(
                    f"{self.name}: out for {name!r} must be a C-contiguous {self.xp.__name__} array of shape "
                    f"({nnz}, {N}) and dtype {np.dtype(self.source.dtype).name}"
                )
        if len(out) != len(self.names_out):
            raise ValueError(f"{self.name}: out must hold {len(self.names_out)} arrays {self.names_out}")
        if N:
            self._launch(arrays, out, N)
        return tuple(out)

    def _check_count(self, args):
        if not self.names_in:
            raise ValueError(f"{self.name}: a batch needs a Function with inputs (one state per row)")
        if len(args) != len(self.names_in):
            raise TypeError(f"{self.name}: takes {len(self.names_in)} arguments {self.names_in}, got {len(args)}")


class GPUFunction(_Batched):
    """A Function's kernels compiled by NVRTC and loaded through CuPy: ``f(*args)``, ``f.raw(*args)``;
    ``f.kernels`` the CuPy RawKernels (``num_regs``, ``local_size_bytes``: register spills),
    ``f.compile_seconds`` (None from the cache), ``f.path`` the cubin or PTX."""

    def __init__(self, source, block=BLOCK, nvrtc_options=()):
        cp = _cupy()
        super().__init__(source, cp)
        self.block = int(block)
        self.path, self.compile_seconds = nvrtc_build(source, cp.cuda.Device().compute_capability, nvrtc_options)
        module = cp.RawModule(path=str(self.path))
        self.kernels = [module.get_function(name) for name in source.names]
        for kernel in self.kernels:  # a kernel of 255 registers per thread fits 256 threads per block
            if self.block > kernel.max_threads_per_block:
                raise ValueError(
                    f"block={self.block} is more than {kernel.name} can run ({kernel.max_threads_per_block} threads "
                    f"of {kernel.num_regs} registers each): pass a smaller block"
                )

    def _array(self, x):
        cp = self.xp
        if not isinstance(x, cp.ndarray):
            if hasattr(x, "__cuda_array_interface__"):
                x = cp.asarray(x)
            elif hasattr(x, "__dlpack_device__") and x.__dlpack_device__()[0] != 1:  # 1: kDLCPU
                x = cp.from_dlpack(x)
        return cp.asarray(x, dtype=self.source.dtype)

    def _launch(self, inputs, outputs, N):
        grid = (N + self.block - 1) // self.block
        args = (*inputs, *outputs, np.int64(N))
        for kernel in self.kernels:
            kernel((grid,), (self.block,), args)


def nvrtc_build(source, arch, nvrtc_options=()):
    """(path, seconds) of the cubin of ``source``'s kernels for compute capability ``arch`` ("90": sm_90)
    compiled by NVRTC (cached; seconds None from the cache). NVRTC needs no GPU, only CuPy and its
    library. A GPU newer than this NVRTC gets PTX for the newest architecture it knows, which the driver
    compiles when loading it."""
    _cupy()
    from cupy_backends.cuda.libs import nvrtc

    supported = [str(a) for a in nvrtc.getSupportedArchs()]
    target, suffix = (f"sm_{arch}", "cubin") if str(arch) in supported else (f"compute_{supported[-1]}", "ptx")
    options = [f"--gpu-architecture={target}", "--ptxas-options=-v", *nvrtc_options]  # -v: registers, spills
    version = ".".join(map(str, nvrtc.getVersion()))

    def build(directory):
        program = nvrtc.createProgram(source.code, f"{source.name}.cu", [], [])
        try:
            try:
                nvrtc.compileProgram(program, options)
            except nvrtc.NVRTCError as e:
                log = nvrtc.getProgramLog(program)[-4000:]
                raise codegen.CompileError(f"NVRTC {version} {' '.join(options)} failed ({e}):\n{log}") from None
            binary = nvrtc.getCUBIN(program) if suffix == "cubin" else nvrtc.getPTX(program)
            (directory.parent / "ptxas.log").write_text(nvrtc.getProgramLog(program))
        finally:
            nvrtc.destroyProgram(program)
        (directory.parent / f"{source.name}.cu").write_text(source.code)  # beside the binary, to read
        path = directory / f"kernels.{suffix}"
        path.write_bytes(binary if isinstance(binary, bytes) else binary.encode())
        return path

    return _cached(f"{source.name}_{source.precision}_gpu", [source.code, version, *options], suffix, build)


_PTXAS = re.compile(
    r"Function properties for (\w+)\n.*?(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads"
    r"\n.*?Used (\d+) registers"
)


def resources(path):
    """{kernel: (registers, spill store bytes, spill load bytes)} per thread, from ptxas's report of the
    NVRTC build at ``path`` (spills go to local memory: the cost that splitting a Function cuts)."""
    log = (Path(path).parent / "ptxas.log").read_text()
    return {m[1]: (int(m[5]), int(m[3]), int(m[4])) for m in _PTXAS.finditer(log)}


class HostFunction(_Batched):
    """The kernels compiled for the CPU (the host shim, a loop over states) and called on numpy arrays
    with the layouts of ``GPUFunction``; ``path`` the shared library, ``compile_seconds``."""

    def __init__(self, source, flags=HOST_FLAGS, compiler=None):
        super().__init__(source, np)
        compiler = _cxx(compiler)
        flags = tuple(flags)

        def build(directory):
            code = directory / f"{source.name}.cpp"
            code.write_text(source.host_code())
            target = directory / "kernels.so"
            codegen.compile_library(compiler, code, target, flags, False, source.name)
            return target

        label = f"{source.name}_{source.precision}_host"
        self.path, self.compile_seconds = _cached(label, [source.code, compiler, *flags], "so", build)
        self._run = ctypes.CDLL(str(self.path)).casrbd_host_run
        self._run.argtypes = [ctypes.POINTER(ctypes.c_void_p)] * 2 + [ctypes.c_longlong]

    def _launch(self, inputs, outputs, N):
        xs = (ctypes.c_void_p * max(1, len(inputs)))(*[a.ctypes.data for a in inputs])
        ys = (ctypes.c_void_p * max(1, len(outputs)))(*[a.ctypes.data for a in outputs])
        self._run(xs, ys, N)


def _cxx(compiler):
    """The C++ compiler: ``compiler``, else $CXX, else the first of c++, g++, clang++ on PATH."""
    candidates = [compiler] if compiler else [os.environ["CXX"]] if os.environ.get("CXX") else ["c++", "g++", "clang++"]
    for c in candidates:
        if shutil.which(c):
            return shutil.which(c)
    raise codegen.CompilerNotFoundError(f"no C++ compiler found: tried {', '.join(candidates)}; install g++ or clang++")


def compile_function(f, precision="double", split=None, block=BLOCK, nvrtc_options=()):
    """A ``GPUFunction`` of any SX casadi Function (``precision``, ``split``: see the module docstring;
    ``nvrtc_options``: more NVRTC flags, e.g. ``("--maxrregcount=128",)``)."""
    return GPUFunction(KernelSource(f, precision, split), block, nvrtc_options)


def function(model, name, precision="double", split=None, block=BLOCK, nvrtc_options=(), **options):
    """``compile_function`` of ``casrbd.function(model, name, **options)``."""
    return compile_function(casrbd_function(model, name, **options), precision, split, block, nvrtc_options)


def host_function(f, precision="double", split=None, flags=HOST_FLAGS, compiler=None):
    """A ``HostFunction``: the GPU kernels' source compiled for this CPU, to check it without a GPU."""
    return HostFunction(KernelSource(f, precision, split), flags, compiler)
