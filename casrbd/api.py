"""Public entry points: argument checks, numeric/symbolic dispatch, cached Functions.

Every algorithm is written once over casadi types (``casrbd.algorithms``).
Called with symbols (SX or MX) it returns an expression of the same type;
called with numbers (lists, numpy, DM) it evaluates the model's cached SX
Function, built once, and returns numpy arrays.
"""
import re
from typing import Callable, NamedTuple

import casadi as ca
import numpy as np

from .algorithms import aba, configuration, crba, kinematics, minverse, rnea


class Spec(NamedTuple):
    impl: Callable
    inputs: tuple          # argument names; "q", "q0", "q1" have nq entries, the others nv
    outputs: tuple
    f_ext: bool = False    # takes external forces
    options: tuple = ()    # keyword options that select the Function (part of the cache key)


SPECS = {
    "rnea": Spec(rnea.rnea, ("q", "v", "a"), ("tau",), f_ext=True),
    "nonlinear_effects": Spec(rnea.nonlinear_effects, ("q", "v"), ("nle",)),
    "generalized_gravity": Spec(rnea.generalized_gravity, ("q",), ("g",)),
    "crba": Spec(crba.crba, ("q",), ("M",)),
    "aba": Spec(aba.aba, ("q", "v", "tau"), ("a",), f_ext=True),
    "minverse": Spec(minverse.minverse, ("q",), ("Minv",)),
    "forward_kinematics": Spec(kinematics.forward_kinematics, ("q",), ("oMi",)),
    "frame_placement": Spec(kinematics.frame_placement, ("q",), ("oMf",), options=("frame",)),
    "frame_jacobian": Spec(kinematics.frame_jacobian, ("q",), ("J",), options=("frame", "reference")),
    "integrate": Spec(configuration.integrate, ("q", "v"), ("q_next",)),
    "difference": Spec(configuration.difference, ("q0", "q1"), ("dq",)),
}

SYMBOLIC = ("SX", "MX")


def _choice(what, value, valid):
    if value not in valid:
        raise ValueError(f"unknown {what} {value!r}; valid: {', '.join(map(repr, valid))}")
    return value


def _options(model, name, spec, options):
    extra = set(options) - set(spec.options)
    missing = set(spec.options) - set(options)
    if extra or missing:
        raise TypeError(f"{name}: options {sorted(spec.options)} expected, got {sorted(options)}")
    out = dict(options)
    if "frame" in out:
        out["frame"] = model.frame_index(out["frame"])
    if "reference" in out:
        _choice("reference frame", out["reference"], kinematics.REFERENCES)
    return out


def _c_name(text):
    name = re.sub(r"\W", "_", text)
    return name if re.match(r"[A-Za-z_]", name) else "m_" + name


def _size(model, arg):
    return model.nq if arg.startswith("q") else model.nv


def function(model, name, symbolic="SX", f_ext=False, **options):
    """The named casadi Function of an algorithm for ``model``, built once and cached.

    Inputs are named as the Python arguments (``q``, ``v``, ``a`` or ``tau``),
    plus ``f_ext`` (6 x njoints, one column per joint in ``model.joints``
    order) when ``f_ext=True``; outputs are named ``tau``, ``a``, ``M``,
    ``Minv``, ... (see ``SPECS``).
    """
    spec = SPECS.get(name)
    if spec is None:
        _choice("function", name, tuple(SPECS))
    _choice("symbolic type", symbolic, SYMBOLIC)
    if f_ext and not spec.f_ext:
        raise ValueError(f"{name} takes no external forces; f_ext=True is valid for "
                         f"{[n for n, s in SPECS.items() if s.f_ext]}")
    options = _options(model, name, spec, options)
    key = (name, symbolic, bool(f_ext), tuple(sorted(options.items())))
    fun = model._cache.get(key)
    if fun is None:
        sym = getattr(ca, symbolic)
        args = [sym.sym(arg, _size(model, arg)) for arg in spec.inputs]
        names = list(spec.inputs)
        kwargs = dict(options)
        if f_ext:
            F = sym.sym("f_ext", 6, model.njoints)
            args.append(F)
            names.append("f_ext")
            kwargs["f_ext"] = [F[:, i] for i in range(model.njoints)]
        outs = spec.impl(model, *args[:len(spec.inputs)], **kwargs)
        outs = outs if isinstance(outs, tuple) else (outs,)
        suffix = "".join(f"_{v}" for _, v in sorted(options.items()))
        fun = ca.Function(_c_name(f"{model.name}_{name}{suffix}"), args, list(outs), names, list(spec.outputs))
        model._cache[key] = fun
    return fun


def _is_symbolic(x):
    return isinstance(x, (ca.SX, ca.MX))


def _vector(fname, arg, x, n):
    if _is_symbolic(x):
        if x.shape != (n, 1):
            raise ValueError(f"{fname}: argument {arg!r} must be a column of {n} entries, got shape {x.shape}")
        return x
    a = np.array(x, dtype=float)
    if a.ndim == 2 and a.shape[1] == 1:
        a = a[:, 0]
    if a.shape != (n,):
        raise ValueError(f"{fname}: argument {arg!r} must have shape ({n},), got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{fname}: argument {arg!r} has non-finite entries at {np.flatnonzero(~np.isfinite(a)).tolist()}")
    return a


def _check_configuration(model, fname, arg, q):
    for i, joint in enumerate(model.joints):
        part = q[model.q_slice(i)][joint.normalized]
        if part.size and np.linalg.norm(part) < 1e-12:
            raise ValueError(f"{fname}: argument {arg!r} has a zero quaternion (or cos, sin) "
                             f"{part.tolist()} for joint {joint.name!r}")


def _external_forces(model, fname, f_ext):
    """f_ext as a list of 6 x 1 columns (symbolic) or an njoints x 6 array (numeric)."""
    shape_msg = f"{fname}: f_ext must be {model.njoints} spatial forces (an array of shape ({model.njoints}, 6))"
    if _is_symbolic(f_ext):
        if f_ext.shape != (model.njoints, 6):
            raise ValueError(f"{shape_msg}, got shape {f_ext.shape}")
        return [f_ext[i, :].T for i in range(model.njoints)]
    if isinstance(f_ext, (list, tuple)) and any(_is_symbolic(f) for f in f_ext):
        if len(f_ext) != model.njoints or any(ca.DM(f).numel() != 6 if not _is_symbolic(f) else f.numel() != 6
                                              for f in f_ext):
            raise ValueError(f"{shape_msg}, got {len(f_ext)} entries")
        return [ca.reshape(f if _is_symbolic(f) else ca.DM(f), 6, 1) for f in f_ext]
    F = np.array(f_ext, dtype=float)
    if F.shape != (model.njoints, 6):
        raise ValueError(f"{shape_msg}, got shape {F.shape}")
    if not np.all(np.isfinite(F)):
        raise ValueError(f"{fname}: f_ext has non-finite entries")
    return F


def _numeric(x):
    a = np.array(x.full() if isinstance(x, ca.DM) else x)
    return a[:, 0] if a.ndim == 2 and a.shape[1] == 1 else a


def evaluate(name, model, *args, f_ext=None, **options):
    """Check the arguments of algorithm ``name`` and evaluate it numerically or symbolically."""
    spec = SPECS[name]
    args = [_vector(name, arg, x, _size(model, arg)) for arg, x in zip(spec.inputs, args)]
    if f_ext is not None:
        f_ext = _external_forces(model, name, f_ext)
    if not any(_is_symbolic(x) for x in args) and not isinstance(f_ext, list):
        for arg, x in zip(spec.inputs, args):
            if arg.startswith("q"):
                _check_configuration(model, name, arg, x)
        fun = function(model, name, f_ext=f_ext is not None, **options)
        outs = fun(*args, *([] if f_ext is None else [f_ext.T]))
        outs = outs if isinstance(outs, tuple) else (outs,)
        outs = tuple(_numeric(o) for o in outs)
        return outs if len(outs) > 1 else outs[0]
    types = {type(x) for x in args if _is_symbolic(x)} | {type(f) for f in (f_ext or []) if _is_symbolic(f)}
    if len(types) > 1:
        raise TypeError(f"{name}: cannot mix SX and MX arguments")
    sym = types.pop()
    args = [x if _is_symbolic(x) else sym(ca.DM(x)) for x in args]
    if isinstance(f_ext, np.ndarray):
        f_ext = [sym(ca.DM(row)) for row in f_ext]
    elif f_ext is not None:
        f_ext = [f if _is_symbolic(f) else sym(f) for f in f_ext]
    kwargs = _options(model, name, spec, options)
    if f_ext is not None:
        kwargs["f_ext"] = f_ext
    return spec.impl(model, *args, **kwargs)


def rnea(model, q, v, a, f_ext=None):
    """Inverse dynamics tau(q, v, a, f_ext) by the recursive Newton-Euler algorithm.

    ``f_ext``: one spatial force [force; torque] per joint of ``model.joints``,
    in that joint's frame (Pinocchio's convention), as njoints 6-vectors."""
    return evaluate("rnea", model, q, v, a, f_ext=f_ext)


def nonlinear_effects(model, q, v):
    """C(q, v) v + g(q)."""
    return evaluate("nonlinear_effects", model, q, v)


def generalized_gravity(model, q):
    """g(q)."""
    return evaluate("generalized_gravity", model, q)


def crba(model, q):
    """The full symmetric joint-space inertia matrix M(q)."""
    return evaluate("crba", model, q)


def aba(model, q, v, tau, f_ext=None):
    """Forward dynamics a(q, v, tau, f_ext) by the articulated-body algorithm."""
    return evaluate("aba", model, q, v, tau, f_ext=f_ext)


def minverse(model, q):
    """M(q)^-1 by the dedicated recursive algorithm (no M, no factorisation)."""
    return evaluate("minverse", model, q)


def forward_kinematics(model, q):
    """World placements of all joints: a list of 4 x 4 homogeneous matrices."""
    oMi = evaluate("forward_kinematics", model, q)
    return [oMi[:, 4 * i:4 * i + 4] for i in range(model.njoints)]


def frame_placement(model, q, frame):
    """4 x 4 homogeneous placement of ``frame`` (name or index) in the world."""
    return evaluate("frame_placement", model, q, frame=frame)


def frame_jacobian(model, q, frame, reference="local"):
    """6 x nv Jacobian of ``frame``; ``reference``: local, world or local_world_aligned."""
    return evaluate("frame_jacobian", model, q, frame=frame, reference=reference)


def integrate(model, q, v):
    """q (+) v on the configuration manifold."""
    return evaluate("integrate", model, q, v)


def difference(model, q0, q1):
    """q1 (-) q0, the tangent vector from q0 to q1."""
    return evaluate("difference", model, q0, q1)


neutral = configuration.neutral
random_configuration = configuration.random_configuration
