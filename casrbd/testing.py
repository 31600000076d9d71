"""Numeric helpers for checking results: relative errors, central differences on the
configuration manifold, random states. Used by the tests, the command line and the benchmarks."""

import numpy as np

from .api import integrate, random_configuration


def rel_err(x, ref):
    """max |x - ref| / max(1, max |ref|) of two arrays of the same shape (ref the reference)."""
    x, ref = np.asarray(x, dtype=float), np.asarray(ref, dtype=float)
    if x.shape != ref.shape:
        raise ValueError(f"shape {x.shape} != reference shape {ref.shape}")
    if ref.size == 0:
        return 0.0
    return float(np.max(np.abs(x - ref)) / max(1.0, np.max(np.abs(ref))))


def random_state(model, rng):
    """(q, v, a_or_tau, f_ext): a random configuration, normal velocities and accelerations
    and normal external forces (6 x njoints)."""
    q = np.asarray(random_configuration(model, rng))
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv), rng.normal(size=(6, model.njoints))


def mapped(fun, args):
    """The outputs of the casadi Function ``fun`` at every argument tuple of ``args``, from one call of
    ``fun.map``: a list over outputs of lists over the tuples (vectors may be 1-D arrays)."""
    n = len(args)
    stacked = [
        np.hstack([np.reshape(a[i], (-1, 1)) if np.ndim(a[i]) == 1 else a[i] for a in args])
        for i in range(len(args[0]))
    ]
    outs = fun.map(n)(*stacked)
    outs = outs if isinstance(outs, tuple) else (outs,)
    return [np.split(np.array(o), n, axis=1) for o in outs]


def central_differences(model, fun, q, *args, h=1e-6, tangent=(0,), vectors=(1, 2)):
    """Derivatives of ``fun(q, *args)`` (an array) by central differences: with respect to the
    arguments at positions ``tangent`` along the manifold (q (+) e, nv columns) and to those at
    positions ``vectors`` entry by entry. Returns one matrix per position, in that order."""
    args = [np.asarray(q, dtype=float)] + [np.asarray(a, dtype=float) for a in args]
    out = []
    for k in (*tangent, *vectors):
        cols = []
        for j in range(model.nv if k in tangent else args[k].size):
            hi, lo = list(args), list(args)
            if k in tangent:
                e = np.zeros(model.nv)
                e[j] = h
                hi[k], lo[k] = integrate(model, args[k], e), integrate(model, args[k], -e)
            else:
                e = np.zeros(args[k].size)
                e[j] = h
                hi[k], lo[k] = args[k] + e.reshape(args[k].shape), args[k] - e.reshape(args[k].shape)
            cols.append((np.asarray(fun(*hi), dtype=float) - np.asarray(fun(*lo), dtype=float)).ravel() / (2 * h))
        out.append(np.column_stack(cols))
    return tuple(out)
