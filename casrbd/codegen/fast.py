"""Numeric evaluation at compiled-C speed from Python: single calls with sub-microsecond overhead and
batches over many states without copies.

    from casrbd import fast
    aba = fast.function(model, "aba")      # any casrbd.function name and options; compiled once
    a = aba(q, v, tau)                     # arguments checked and copied in, a new array out
    aba.q[:] = q; aba.evaluate(); aba.a    # preallocated arrays: the C code and little else
    aba.q = q                              # the same copy, checked (shape, dtype) as a call's arguments
    A = fast.batch(model, "aba")(Q, V, T)  # (N, nq), (N, nv), (N, nv) arrays -> (N, nv)

The Function is compiled by ``casrbd.codegen`` (cached on disk, so a second
process loads it without compiling) together with its casadi ``map`` over
``chunk`` states; the library is loaded once per model and options. Calls go
through casadi's ``Function.buffer()``: the inputs and outputs are numpy
arrays whose memory the compiled code reads and writes directly, and the
call itself adds next to nothing, where ``Function.__call__`` with numpy
arguments spends most of its time converting numpy to casadi's DM
(benchmarks/README.md, Fast numeric calls).

Layouts. A column input or output is a 1-D array, a matrix one an (m, n)
array (a view of casadi's column-major memory). In a batch, state k is row k:
a C-contiguous (N, n) float64 array is exactly the (n, N) column-major input
of the mapped Function, so the batch binds the caller's arrays chunk by
chunk without copying them (other arrays are converted once; matrix inputs
(N, m, n) are transposed once); matrix outputs are (N, m, n) views. States
beyond the last full chunk go through the single-state buffer.

What this layer checks, because ``FunctionBuffer`` itself does not (casadi
3.6-3.8 take raw pointers: no dtype check, strided views read as contiguous,
and on 3.8 a non-buffer argument corrupts memory): every array bound to a
buffer is a C-contiguous float64 array of exactly the right size, made or
checked here, and each buffer is kept alive with its trigger. Arguments of
the wrong shape or type raise ``ValueError`` naming the argument and the
shape expected. Values are not checked (NaN in, NaN out), nor quaternion
norms: ``casrbd.rnea`` and the like check them.

Assigning. The arrays are bound to the compiled code once, so an input is
set by writing into its array: ``f.q[:] = q``, or ``f.q = q`` and
``f.inputs["q"] = q``, which copy ``q`` in with the checks of a call (a
rebinding that the code would never see is impossible). Outputs are written
by ``evaluate()`` only: assigning ``f.a = ...`` or ``f.outputs["a"] = ...``
raises ``AttributeError``, and so does assigning an attribute that is no
argument (``f.Q = q``, a typo that would otherwise be silently ignored) or
replacing the mappings themselves (``f.inputs = {...}``).

Threads. ``__call__`` of a FastFunction or a BatchFunction holds a lock, so
one object may be shared by threads (they then take turns). ``evaluate()``
and the preallocated arrays belong to one thread at a time: ``clone()``
gives another object over the same library, with its own buffer and arrays;
from casadi 3.7 on the compiled code runs without the GIL, so clones in
different threads run in parallel. casadi's own threaded map (``"thread"``)
gave no speed-up on the machine this was written on (two shared cores), so
batches are serial.

Tested with casadi 3.6.1, 3.7.2 and 3.8.2 (``Function.buffer`` and its
Python typemaps as described above are those of 3.6-3.8). On 3.6/3.7 each
buffer of a compiled library holds one of its memory slots until the process
ends (fixed in 3.8), which is why buffers are made once per object and reused.
"""

import threading
from collections.abc import Mapping

import casadi as ca
import numpy as np

from ..functions import function as casrbd_function
from ..model import per_model
from .flags import DEFAULT_FLAGS
from .library import compile_functions, is_external

CHUNK = 128  # states per call of the compiled map in a batch
_FLOAT64 = np.dtype(np.float64)


def function(model, name, chunk=CHUNK, flags=DEFAULT_FLAGS, **options):
    """A ``FastFunction`` of ``casrbd.function(model, name, **options)`` (options such as ``f_ext``,
    ``method``, ``frame``), compiled with ``flags``; a new object (own arrays) over a cached library."""
    return FastFunction(_library(model, casrbd_function(model, name, **options), chunk, tuple(flags)))


def batch(model, name, chunk=CHUNK, flags=DEFAULT_FLAGS, **options):
    """A ``BatchFunction`` of ``casrbd.function(model, name, **options)``: one state per row."""
    return BatchFunction(_library(model, casrbd_function(model, name, **options), chunk, tuple(flags)))


@per_model
def _library(model, f, chunk, flags):
    # keyed by casrbd's cached Function, whose own key holds the options resolved (a contact list included)
    return compile_function(f, chunk, flags)


class Library:
    """A Function compiled with its map over ``chunk`` states: ``single`` and ``mapped`` are the loaded
    casadi Functions; ``shapes_in``/``shapes_out`` the shape of each argument for one state."""

    def __init__(self, f, single, mapped, chunk):
        self.name, self.chunk, self.single, self.mapped = f.name(), chunk, single, mapped
        self.names_in, self.names_out = f.name_in(), f.name_out()
        self.shapes_in = [_shape(f.sparsity_in(i)) for i in range(f.n_in())]
        self.shapes_out = [_shape(f.sparsity_out(i)) for i in range(f.n_out())]


def _shape(sparsity):
    rows, cols = sparsity.size()
    return (rows,) if cols == 1 else (rows, cols)


def compile_function(f, chunk=CHUNK, flags=DEFAULT_FLAGS):
    """The ``Library`` of any casadi Function (SX or MX): its outputs made dense (a buffer writes only
    the nonzeros) and its custom Jacobian left out, compiled with ``casrbd.codegen`` (cached on disk)."""
    if not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise ValueError(f"chunk must be a positive integer, got {chunk!r}")
    if is_external(f):
        raise ValueError(f"{f.name()} is already compiled (casadi.external): pass the Function it was compiled from")
    for i in range(f.n_in()):
        if not f.sparsity_in(i).is_dense():
            raise ValueError(f"{f.name()}: input {f.name_in(i)!r} is sparse; the fast path takes dense inputs")
    xs = f.sx_in() if f.is_a("SXFunction") else f.mx_in()
    g = ca.Function(f.name(), xs, [ca.densify(y) for y in f.call(xs)], f.name_in(), f.name_out())
    mapped = g.map(int(chunk))
    lib = compile_functions([g, mapped], name=f"{f.name()}_fast", flags=flags)
    return Library(f, lib[g.name()], lib[mapped.name()], int(chunk))


def _bind(buffer, index, array, output):
    """Bind a C-contiguous float64 array to a buffer slot (checked: casadi checks the size only)."""
    if not (type(array) is np.ndarray and array.dtype == np.float64 and array.flags.c_contiguous):
        raise AssertionError("only C-contiguous float64 arrays may be bound")  # never passes a list or a view
    (buffer.set_res if output else buffer.set_arg)(index, memoryview(array.reshape(-1)))


def _views(raw, shape, states=None):
    """The caller's view of raw column-major memory: (n,) or (m, n); (N, n) or (N, m, n) for N states."""
    if len(shape) == 1:
        return raw
    lead = () if states is None else (states,)
    return np.swapaxes(raw.reshape(lead + shape[::-1]), -1, -2)


def _float_array(fname, name, x):
    """x (array-like or DM) as a float64 array, refusing complex numbers and non-numbers by name."""
    if isinstance(x, ca.DM):
        x = x.full()
    try:
        complex_ = np.iscomplexobj(x)
        a = None if complex_ else np.asarray(x, dtype=np.float64)
    except OverflowError as e:  # an int beyond float range
        raise ValueError(f"{fname}: argument {name!r} holds a number beyond float64's range ({e})") from None
    except (TypeError, ValueError) as e:  # a string, a ragged list
        raise ValueError(f"{fname}: argument {name!r} must be numbers, got {type(x).__name__} ({e})") from None
    if complex_:
        raise ValueError(f"{fname}: argument {name!r} must be real numbers, got complex ones")
    return a


def _argument(fname, name, x, shape):
    """x as a float64 array of ``shape``; a column may come as (n, 1) or (1, n)."""
    a = _float_array(fname, name, x)
    if a.shape != shape and len(shape) == 1 and a.shape in ((shape[0], 1), (1, shape[0])):
        a = a.reshape(shape)
    if a.shape != shape:
        kind = "" if isinstance(x, np.ndarray) else f" ({type(x).__name__})"
        raise ValueError(f"{fname}: argument {name!r} must have shape {shape}, got shape {a.shape}{kind}")
    return a


class _Arrays(Mapping):
    """A FastFunction's inputs or outputs by name: the bound arrays; assigning an input copies into it
    (checked), assigning an output raises."""

    def __init__(self, owner, names, shapes, views, output):
        self._owner, self._shapes, self._output = owner, dict(zip(names, shapes)), output
        self._views = dict(zip(names, views))

    def __getitem__(self, name):
        return self._views[name]

    def __iter__(self):
        return iter(self._views)

    def __len__(self):
        return len(self._views)

    def __repr__(self):
        return repr(self._views)

    def __setitem__(self, name, value):
        fname = self._owner.name
        if self._output and name in self._views:
            raise AttributeError(
                f"{fname}: {name!r} is an output, written by evaluate(); read it, or copy it with {name}.copy()"
            )
        if name not in self._views:
            kind = "outputs" if self._output else "inputs"
            raise KeyError(f"{fname}: no {kind[:-1]} {name!r}; its {kind} are {list(self._views)}")
        self._views[name][...] = _argument(fname, name, value, self._shapes[name])


class FastFunction:
    """One state per call on preallocated arrays: ``f.inputs``/``f.outputs`` (mappings by name, also
    attributes: ``f.q``, ``f.a``), ``f.evaluate()`` and the checked call ``f(*args)``. Assigning
    ``f.q = q`` or ``f.inputs["q"] = q`` copies into the bound array (checked); outputs are read-only."""

    _OWN = frozenset(("library", "name", "inputs", "outputs"))  # attributes set once, in __init__

    def __init__(self, library):
        self.library, self.name = library, library.name
        self._buffer, self._trigger = library.single.buffer()  # keep both: the trigger does not own the buffer
        self._raw_in = [np.zeros(int(np.prod(s))) for s in library.shapes_in]
        self._raw_out = [np.zeros(int(np.prod(s))) for s in library.shapes_out]
        for i, raw in enumerate(self._raw_in):
            _bind(self._buffer, i, raw, False)
        for i, raw in enumerate(self._raw_out):
            _bind(self._buffer, i, raw, True)
        self._in = [_views(r, s) for r, s in zip(self._raw_in, library.shapes_in)]
        self._out = [_views(r, s) for r, s in zip(self._raw_out, library.shapes_out)]
        self.inputs = _Arrays(self, library.names_in, library.shapes_in, self._in, False)
        self.outputs = _Arrays(self, library.names_out, library.shapes_out, self._out, True)
        self._call = _checked_call(self, threading.Lock())

    def __getattr__(self, name):
        for arrays in (self.__dict__.get("inputs", {}), self.__dict__.get("outputs", {})):
            if name in arrays:
                return arrays[name]
        raise AttributeError(
            f"{type(self).__name__} {self.__dict__.get('name')!r} has no attribute or argument {name!r}"
        )

    def __setattr__(self, name, value):
        if name.startswith("_") or (name in self._OWN and name not in self.__dict__):
            object.__setattr__(self, name, value)
        elif name in self._OWN:
            raise AttributeError(
                f"{self.name}: {name!r} cannot be replaced: the arrays are bound to the compiled code; assign an "
                f"argument into them instead (f.inputs['q'] = q, f.q = q or f.q[:] = q)"
            )
        elif name in self.inputs:
            self.inputs[name] = value
        elif name in self.outputs:
            self.outputs[name] = value  # raises, saying why
        else:
            raise AttributeError(
                f"{self.name}: no argument {name!r} to assign; inputs {list(self.inputs)}, "
                f"outputs {list(self.outputs)} (read-only)"
            )

    def __repr__(self):
        return f"FastFunction({self.name!r}, inputs {list(self.inputs)}, outputs {list(self.outputs)})"

    def clone(self):
        """Another FastFunction over the same compiled library, with its own buffer and arrays."""
        return FastFunction(self.library)

    def evaluate(self):
        """Evaluate at the current ``inputs`` into ``outputs`` (no checks, no lock)."""
        self._trigger()

    def __call__(self, *args):
        """The outputs (new arrays; a tuple when there are several) at ``args`` (checked, copied in)."""
        return self._call(*args)


def _checked_call(f, lock):
    """f's checked call, written out for its number of arguments: a loop over the arguments costs
    more than the compiled code of a small robot. An argument that is not a float64 array of the
    right shape goes through ``_argument`` (converted, or a ValueError)."""
    lib, n = f.library, len(f._in)
    names = {"ndarray": np.ndarray, "F64": _FLOAT64, "acquire": lock.acquire, "release": lock.release}
    names.update(trigger=f._trigger, argument=_argument, fname=f.name, nargs=n, arg_names=lib.names_in)
    lines = ["def call(*args):", "    if len(args) != nargs:"]
    lines.append("        raise TypeError(f'{fname}: takes {nargs} arguments {arg_names}, got {len(args)}')")
    if n:
        lines.append(f"    {''.join(f'x{i}, ' for i in range(n))}= args")
    for i, (shape, view) in enumerate(zip(lib.shapes_in, f._in)):
        names.update({f"s{i}": shape, f"d{i}": view, f"n{i}": lib.names_in[i]})
        lines.append(f"    if x{i}.__class__ is not ndarray or x{i}.shape != s{i} or x{i}.dtype is not F64:")
        lines.append(f"        x{i} = argument(fname, n{i}, x{i}, s{i})")
    lines += ["    acquire()", "    try:"] + [f"        d{i}[...] = x{i}" for i in range(n)] + ["        trigger()"]
    names.update({f"o{j}": view for j, view in enumerate(f._out)})
    copies = [f"o{j}.copy()" for j in range(len(f._out))]
    lines += ["        return " + (copies[0] if len(copies) == 1 else f"({''.join(c + ', ' for c in copies)})")]
    lines += ["    finally:", "        release()"]
    exec("\n".join(lines), names)  # the code above, written for this arity
    return names["call"]


class BatchFunction:
    """Many states per call: ``f(*args)`` with arguments of shape (N,) + the shape of one state, the
    outputs likewise; C-contiguous float64 arguments are read in place."""

    def __init__(self, library):
        if not library.shapes_in:
            raise ValueError(f"{library.name}: a batch needs a Function with inputs (one state per row)")
        self.library, self.name, self.chunk = library, library.name, library.chunk
        self._buffer, self._trigger = library.mapped.buffer()
        self._single = FastFunction(library)  # the states after the last full chunk
        self._lock = threading.Lock()

    def __repr__(self):
        return f"BatchFunction({self.name!r}, chunk {self.chunk})"

    def clone(self):
        return BatchFunction(self.library)

    def _arguments(self, args):
        lib = self.library
        if len(args) != len(lib.shapes_in):
            raise TypeError(f"{self.name}: takes {len(lib.shapes_in)} arguments {lib.names_in}, got {len(args)}")
        arrays, N = [], None
        for name, shape, x in zip(lib.names_in, lib.shapes_in, args):
            a = _float_array(self.name, name, x)
            N = a.shape[0] if N is None and a.ndim else N
            if a.shape != (N, *shape):
                raise ValueError(
                    f"{self.name}: argument {name!r} must have shape (N, {', '.join(map(str, shape))}), one state per "
                    f"row, with the same N for every argument; got shape {a.shape}" + (f" (N = {N})" if N else "")
                )
            # C order of (N, n), or of (N, n, m) for an (m, n) matrix: casadi's column-major (m, n N)
            arrays.append(np.ascontiguousarray(a if len(shape) == 1 else np.swapaxes(a, 1, 2)))
        return arrays, N

    def __call__(self, *args):
        """The outputs at every state (new arrays; a tuple when there are several)."""
        lib, C = self.library, self.chunk
        arrays, N = self._arguments(args)
        raw = [np.empty((N, *s[::-1])) for s in lib.shapes_out]
        full = N - N % C
        with self._lock:
            for k in range(0, full, C):
                for i, a in enumerate(arrays):
                    _bind(self._buffer, i, a[k : k + C], False)
                for i, r in enumerate(raw):
                    _bind(self._buffer, i, r[k : k + C], True)
                self._trigger()
            single = self._single
            for k in range(full, N):
                for a, dst in zip(arrays, single._raw_in):
                    dst[:] = a[k].reshape(-1)
                single.evaluate()
                for r, src in zip(raw, single._raw_out):
                    r[k] = src.reshape(r[k].shape)
        out = [_views(r, s, N) for r, s in zip(raw, lib.shapes_out)]
        return out[0] if len(out) == 1 else tuple(out)
