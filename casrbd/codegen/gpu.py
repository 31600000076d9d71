"""Batched evaluation on a GPU: any SX casadi Function as CUDA kernels, one state per thread.

    from casrbd import gpu
    aba = gpu.function(model, "aba")           # compiled at run time (NVRTC through CuPy), cached on disk
    A = aba(Q, V, T)                           # (N, nq), (N, nv), (N, nv) device arrays -> (N, nv)
    dq, dv, Minv = gpu.function(model, "aba_derivatives", precision="single", split="outputs")(Q, V, T)
    k = gpu.compile_function(f)                # any SX casadi Function (an MX one is expanded)

Source. ``codegen.kernels``: casadi's straight-line C body of the Function, its
reads and writes turned into loads and stores of the thread's state.

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

Splitting. A derivative Function spills registers (all a thread has, and
local memory besides): ``split="outputs"`` compiles one kernel per output,
``split=k`` kernels of at most k output nonzeros each, ``split=[["da_dq"],
["da_dv", "da_dtau"]]`` the groups named; each kernel recomputes what its
outputs need. Each kernel spills less, but ptxas's report shows the total
growing (most outputs need most of the graph), so it is off by default;
``python -m benchmarks.gpu`` measures both. Single precision spills less
(benchmarks/README.md, GPU batches).

Checking without a GPU. ``host_function(f)`` compiles the same source with the
system C++ compiler, the CUDA qualifiers defined away and the thread index
set by a loop over the states, and calls it on numpy arrays with the same
layouts (the tests compare it with casadi's evaluation).

Builds are stored in ``casrbd.cache`` (kind "gpu") by a hash of the source, the
options, the target and the compiler version, and checked (SHA-256) before
CuPy or the dynamic loader reads them. Arguments are refused by name when
they hold complex numbers (never truncated) or when an ``out`` array shares
memory with an input.
"""

import ctypes
import hashlib
import re
import secrets
import time
from pathlib import Path

import casadi as ca
import numpy as np

from .. import cache
from ..functions import function as casrbd_function
from .compiler import CompileError, compile_library, find_cxx
from .flags import HOST_FLAGS, NVRTC_OPTIONS
from .kernels import CONSTANTS, HELPERS, HOST_SHIM, MATH, PRECISIONS, KernelSource  # noqa: F401 (casrbd.gpu's)
from .library import GPU_KERNELS

BLOCK = 128  # threads per block: 64, 128 and 256 were within a few percent of each other on an H100


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


def _cached(label, key_parts, build):
    """(path, seconds) of a build product stored in ``casrbd.cache`` (kind "gpu") by a hash of
    ``key_parts``, checked before it is handed to a loader; ``build(directory)`` writes it and returns its
    path (seconds None from the cache)."""
    key = hashlib.sha256("\0".join([ca.__version__, *key_parts]).encode()).hexdigest()
    entry = cache.load(GPU_KERNELS, label, key, stacklevel=3)
    if entry is not None:
        return entry.file(entry.info["product"]), None
    start = time.perf_counter()
    build_ = cache.begin(GPU_KERNELS, label, key)
    try:
        product = build(build_.directory)
        seconds = time.perf_counter() - start
        entry = build_.commit({"product": product.name})
    finally:
        if build_.persistent:
            build_.abandon()  # a no-op once committed
    return entry.file(entry.info["product"]), seconds


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

    def _native(self, x):
        return self.xp.asarray(x)

    def _array(self, name, x):
        """x as an array of the precision's dtype; complex numbers are refused, never truncated."""
        a = self._native(x)
        if a.dtype.kind == "c":
            raise ValueError(f"{self.name}: argument {name!r} holds complex numbers; it takes real ones")
        return a.astype(self.source.dtype, copy=False)

    def __call__(self, *args):
        """The outputs at every state, one state per row (new arrays; a tuple when there are several)."""
        src, xp = self.source, self.xp
        self._check_count(args)
        arrays = [self._array(n, x) for n, x in zip(src.names_in, args)]
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
        arrays = [self.xp.ascontiguousarray(self._array(n, x)) for n, x in zip(self.names_in, args)]
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
        for j, (name, y) in enumerate(zip(self.names_out, out)):
            # a kernel reads its inputs while it writes its outputs: an overlap would read values written
            shared = [n for n, a in zip(self.names_in, arrays) if self.xp.may_share_memory(y, a)]
            shared += [
                n for k, (n, z) in enumerate(zip(self.names_out, out)) if k != j and self.xp.may_share_memory(y, z)
            ]
            if shared:
                raise ValueError(
                    f"{self.name}: out for {name!r} shares memory with {shared}; give it an array of its own"
                )
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

    def _native(self, x):
        cp = self.xp
        if not isinstance(x, cp.ndarray):
            if hasattr(x, "__cuda_array_interface__"):
                x = cp.asarray(x)
            elif hasattr(x, "__dlpack_device__") and x.__dlpack_device__()[0] != 1:  # 1: kDLCPU
                x = cp.from_dlpack(x)
        return cp.asarray(x)

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
    options = [f"--gpu-architecture={target}", *NVRTC_OPTIONS, *nvrtc_options]
    version = ".".join(map(str, nvrtc.getVersion()))

    def build(directory):
        program = nvrtc.createProgram(source.code, f"{source.name}.cu", [], [])
        try:
            try:
                nvrtc.compileProgram(program, options)
            except nvrtc.NVRTCError as e:
                log = nvrtc.getProgramLog(program)[-4000:]
                raise CompileError(f"NVRTC {version} {' '.join(options)} failed ({e}):\n{log}") from None
            binary = nvrtc.getCUBIN(program) if suffix == "cubin" else nvrtc.getPTX(program)
            (directory / "ptxas.log").write_text(nvrtc.getProgramLog(program))
        finally:
            nvrtc.destroyProgram(program)
        (directory / f"{source.name}.cu").write_text(source.code)  # beside the binary, to read
        path = directory / f"kernels.{suffix}"
        path.write_bytes(binary if isinstance(binary, bytes) else binary.encode())
        return path

    return _cached(f"{source.name}_{source.precision}_gpu", [source.code, version, *options], build)


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
        compiler = find_cxx(compiler)
        flags = tuple(flags)

        def build(directory):
            code = directory / f"{source.name}.cpp"
            code.write_text(source.host_code())
            # a name of its own per build: the dynamic loader hands back a library loaded before by its path
            target = directory / f"kernels-{secrets.token_hex(8)}.so"
            compile_library(compiler, code, target, flags, False, source.name)
            return target

        label = f"{source.name}_{source.precision}_host"
        self.path, self.compile_seconds = _cached(label, [source.code, compiler, *flags], build)
        self._run = ctypes.CDLL(str(self.path)).casrbd_host_run
        self._run.argtypes = [ctypes.POINTER(ctypes.c_void_p)] * 2 + [ctypes.c_longlong]

    def _launch(self, inputs, outputs, N):
        xs = (ctypes.c_void_p * max(1, len(inputs)))(*[a.ctypes.data for a in inputs])
        ys = (ctypes.c_void_p * max(1, len(outputs)))(*[a.ctypes.data for a in outputs])
        self._run(xs, ys, N)


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
