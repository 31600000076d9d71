"""Argument checks and numeric/symbolic dispatch of the public entry points (``casrbd.api``).

Numbers are checked (shape, finite, bounded, unit quaternions) and evaluated through the model's
cached SX Function; symbols (SX or MX, not mixed) go through the algorithm itself. Results are
shaped as the spec's outputs say.
"""

import casadi as ca
import numpy as np

from .functions import function, require_defined, resolve_options, spec


def _is_symbolic(x):
    return isinstance(x, (ca.SX, ca.MX))


# numeric arguments beyond this magnitude are refused: no state or force of a robot comes near it,
# and below it the products the algorithms form (up to fourth powers of the state, times model
# constants the loaders bound by 1e9) stay far from float's range (v = 1e200 would give inf and NaN)
MAX_MAGNITUDE = 1e50


def _numbers(x):
    """x as a float array; a list holding casadi symbols raises TypeError (casadi's own conversion
    error differs between versions), a Python int beyond float's range ValueError (numpy raises
    OverflowError)."""
    if isinstance(x, (list, tuple)) and any(_is_symbolic(e) for e in x):
        raise TypeError("it holds casadi symbols: pass one symbol or expression of the whole shape")
    try:
        return np.array(x, dtype=float)
    except OverflowError as e:
        raise ValueError(f"a number beyond the range of floats: {e}") from None


def _bounded(what, a, where):
    """Refuse non-finite entries and entries beyond MAX_MAGNITUDE, naming them (``where`` turns the
    indices of the bad entries into words)."""
    for bad, text in (
        (~np.isfinite(a), "non-finite entries"),
        (np.isfinite(a) & (np.abs(a) > MAX_MAGNITUDE), f"entries beyond {MAX_MAGNITUDE:g} in magnitude"),
    ):
        if bad.any():
            raise ValueError(f"{what} has {text} at {where(bad)}")


def _vector(fname, arg, x, n):
    if _is_symbolic(x):
        if x.shape != (n, 1):
            raise ValueError(f"{fname}: argument {arg!r} must be a column of {n} entries, got shape {x.shape}")
        return x
    try:
        a = _numbers(x)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{fname}: argument {arg!r} must be {n} numbers, got {type(x).__name__} ({e})") from None
    if a.ndim == 2 and a.shape[1] == 1:
        a = a[:, 0]
    if a.shape != (n,):
        raise ValueError(f"{fname}: argument {arg!r} must have shape ({n},), got shape {a.shape}")
    _bounded(f"{fname}: argument {arg!r}", a, lambda bad: np.flatnonzero(bad).tolist())
    return a


def _check_configuration(model, fname, arg, q):
    for i, joint in enumerate(model.joints):
        part = q[model.q_slice(i)][joint.normalized]
        if part.size and np.linalg.norm(part) < 1e-12:
            raise ValueError(
                f"{fname}: argument {arg!r} has a zero quaternion (or cos, sin) "
                f"{part.tolist()} for joint {model.names[i]!r}"
            )


def external_forces(model, fname, f_ext):
    """f_ext checked: a 6 x njoints array, or a symbol of that shape (see ``casrbd.algorithms.passes.tree``)."""
    shape = (6, model.njoints)
    expected = (
        f"{fname}: f_ext must be a 6 x {model.njoints} matrix, column i the spatial force "
        f"[force; torque] on the body of joint i in its frame"
    )
    if _is_symbolic(f_ext):
        F = f_ext
    else:
        try:
            F = _numbers(f_ext)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{expected}; got {type(f_ext).__name__} ({e})") from None
    if F.shape != shape:
        hint = " (transpose it: one column per joint)" if F.shape == shape[::-1] else ""
        raise ValueError(f"{expected}; got shape {F.shape}{hint}")
    if _is_symbolic(F):
        return F
    _bounded(f"{fname}: f_ext", F, lambda bad: f"(component, joint) {np.argwhere(bad).tolist()}")
    return F


def _shaped(out, x):
    if isinstance(x, ca.DM):
        x = x.full()
        if out.kind == "vector":
            return x[:, 0]
    if out.kind == "placements":
        return [x[:, 4 * i : 4 * i + 4] for i in range(x.shape[1] // 4)]
    if out.kind == "tensor" and isinstance(x, np.ndarray):
        return x.reshape((x.shape[0],) * 3, order="F")
    return x


def evaluate(name, model, *args, f_ext=None, **options):
    """Check the arguments of algorithm ``name`` and evaluate it numerically or symbolically."""
    s = spec(name)
    args = [_vector(name, arg.name, x, arg.shape(model)[0]) for arg, x in zip(s.inputs, args)]
    if f_ext is not None:
        f_ext = external_forces(model, name, f_ext)
    values = args + ([] if f_ext is None else [f_ext])
    if not any(_is_symbolic(x) for x in values):
        for arg, x in zip(s.inputs, args):
            if arg.kind == "configuration":
                _check_configuration(model, name, arg.name, x)
        outs = function(model, name, f_ext=f_ext is not None, **options)(*values)
    else:
        types = {type(x) for x in values if _is_symbolic(x)}
        if len(types) > 1:
            raise TypeError(f"{name}: cannot mix SX and MX arguments")
        sym = types.pop()
        values = [x if _is_symbolic(x) else sym(ca.DM(x)) for x in values]
        require_defined(model, s)
        kwargs = resolve_options(model, name, s.options, options)
        if f_ext is not None:
            kwargs["f_ext"] = values.pop()
        outs = s.impl(model, *values, **kwargs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    outs = tuple(_shaped(o, x) for o, x in zip(s.outputs, outs) if f_ext is not None or not o.with_f_ext)
    return outs if len(outs) > 1 else outs[0]
