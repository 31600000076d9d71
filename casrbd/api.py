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

from .algorithms import aba, ad, configuration, crba, idsva, kinematics, minverse, rnea
from .algorithms import aba_derivatives as fd_derivatives
from .algorithms import rnea_derivatives as chain_rule

ID_DERIVATIVES = {"chain_rule": chain_rule.rnea_derivatives, "idsva": idsva.idsva, "ad": ad.rnea_derivatives}
JACOBIANS = ("ad", "analytical")


def _rnea_derivatives(model, q, v, a, f_ext=None, method="idsva"):
    return ID_DERIVATIVES[method](model, q, v, a, f_ext)


def _aba_derivatives(model, q, v, tau, f_ext=None, method="idsva", minv_product="dmm"):
    if method == "ad":
        return ad.aba_derivatives(model, q, v, tau, f_ext)
    return fd_derivatives.aba_derivatives(model, q, v, tau, f_ext, ID_DERIVATIVES[method], minv_product)


class Spec(NamedTuple):
    impl: Callable
    inputs: tuple          # argument names; "q", "q0", "q1" have nq entries, the others nv
    outputs: tuple
    f_ext: bool = False    # takes external forces
    options: dict = {}     # keyword options selecting the Function (cache key) -> default (None: required)


SPECS = {
    "rnea": Spec(rnea.rnea, ("q", "v", "a"), ("tau",), f_ext=True),
    "nonlinear_effects": Spec(rnea.nonlinear_effects, ("q", "v"), ("nle",)),
    "generalized_gravity": Spec(rnea.generalized_gravity, ("q",), ("g",)),
    "crba": Spec(crba.crba, ("q",), ("M",)),
    "aba": Spec(aba.aba, ("q", "v", "tau"), ("a",), f_ext=True),
    "minverse": Spec(minverse.minverse, ("q",), ("Minv",)),
    "forward_kinematics": Spec(kinematics.forward_kinematics, ("q",), ("oMi",)),
    "frame_placement": Spec(kinematics.frame_placement, ("q",), ("oMf",), options={"frame": None}),
    "frame_jacobian": Spec(kinematics.frame_jacobian, ("q",), ("J",),
                           options={"frame": None, "reference": "local"}),
    "integrate": Spec(configuration.integrate, ("q", "v"), ("q_next",)),
    "difference": Spec(configuration.difference, ("q0", "q1"), ("dq",)),
    "rnea_derivatives": Spec(_rnea_derivatives, ("q", "v", "a"), ("dtau_dq", "dtau_dv", "dtau_da"), f_ext=True,
                             options={"method": "idsva"}),
    "aba_derivatives": Spec(_aba_derivatives, ("q", "v", "tau"), ("da_dq", "da_dv", "da_dtau"), f_ext=True,
                            options={"method": "idsva", "minv_product": "dmm"}),
    "kinematics_derivatives": Spec(chain_rule.kinematics_derivatives, ("q", "v", "a"),
                                   ("dv_dq", "dv_dv", "da_dq", "da_dv", "da_da"), options={"frame": None}),
}

CHOICES = {"method": tuple(ID_DERIVATIVES), "reference": kinematics.REFERENCES,
           "minv_product": fd_derivatives.PRODUCTS}
SYMBOLIC = ("SX", "MX")


def _choice(what, value, valid):
    if value not in valid:
        raise ValueError(f"unknown {what} {value!r}; valid: {', '.join(map(repr, valid))}")
    return value


def _options(model, name, spec, options):
    extra = set(options) - set(spec.options)
    if extra:
        raise TypeError(f"{name}: unknown options {sorted(extra)}; it takes {sorted(spec.options) or 'none'}")
    out = {k: options.get(k, default) for k, default in spec.options.items()}
    for k, value in out.items():
        if value is None:
            raise TypeError(f"{name}: option {k!r} is required")
        if k in CHOICES:
            _choice(k, value, CHOICES[k])
    if "frame" in out:
        out["frame"] = model.frame_index(out["frame"])
    return out


def _c_name(text):
    name = re.sub(r"\W", "_", text)
    return name if re.match(r"[A-Za-z_]", name) else "m_" + name


def _size(model, arg):
    return model.nq if arg.startswith("q") else model.nv


def function(model, name, symbolic="SX", f_ext=False, jacobian="ad", **options):
    """The named casadi Function of an algorithm for ``model``, built once and cached.

    Inputs are named as the Python arguments (``q``, ``v``, ``a`` or ``tau``),
    plus ``f_ext`` (6 x njoints, one column per joint in ``model.joints``
    order) when ``f_ext=True``; outputs are named ``tau``, ``a``, ``M``,
    ``Minv``, ``dtau_dq``, ... (see ``SPECS``).

    ``jacobian="analytical"`` (rnea and aba): casadi's Jacobian of the
    Function, as taken inside MX graphs, Opti and nlpsol, is the analytical
    one (``method`` picks the ID-derivative algorithm), composed with the map
    from raw q to the tangent space, so it equals the AD Jacobian in every
    direction. SX callers inline an SX Function and differentiate its graph.
    """
    spec = SPECS.get(name)
    if spec is None:
        _choice("function", name, tuple(SPECS))
    _choice("symbolic type", symbolic, SYMBOLIC)
    _choice("jacobian", jacobian, JACOBIANS)
    if f_ext and not spec.f_ext:
        raise ValueError(f"{name} takes no external forces; f_ext=True is valid for "
                         f"{[n for n, s in SPECS.items() if s.f_ext]}")
    jac_options = {}
    if jacobian == "analytical":
        if name not in ("rnea", "aba"):
            raise ValueError(f"jacobian='analytical' is offered for 'rnea' and 'aba', not {name!r}")
        jac_options = _options(model, f"{name}_derivatives", SPECS[f"{name}_derivatives"], options)
        options = {}
    options = _options(model, name, spec, options)
    key = (name, symbolic, bool(f_ext), jacobian, tuple(sorted({**options, **jac_options}.items())))
    fun = model._cache.get(key)
    if fun is None:
        fun = _build(model, name, spec, symbolic, f_ext, options, jac_options if jacobian == "analytical" else None)
        model._cache[key] = fun
    return fun


def _build(model, name, spec, symbolic, f_ext, options, jac_options):
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
    # one common-subexpression pass over all outputs: they share kinematics
    outs = ca.cse(list(outs) if isinstance(outs, tuple) else [outs])
    suffix = "".join(f"_{v}" for _, v in sorted({**options, **(jac_options or {})}.items()))
    fname = _c_name(f"{model.name}_{name}{suffix}")
    fopts = {}
    if jac_options is not None:
        fopts = {"custom_jacobian": _custom_jacobian(model, name, fname, args, kwargs, outs[0], jac_options),
                 "jac_penalty": 0}
    return ca.Function(fname, args, outs, names, list(spec.outputs), fopts)


def _custom_jacobian(model, name, fname, args, kwargs, out, jac_options):
    """jac_<fname>: the analytical Jacobian of the output with respect to every input.

    d/dq is the tangent derivative times the tangent map of raw q; d/df_ext
    is -J_i^T (rnea) or M^-1 J_i^T (aba) per joint, with J_i the local
    Jacobian of joint i's body."""
    q = args[0]
    d_dq, d_dv, d_dx = SPECS[f"{name}_derivatives"].impl(model, *args[:3], f_ext=kwargs.get("f_ext"), **jac_options)
    blocks = [ca.mtimes(d_dq, configuration.tangent_map(model, q)), d_dv, d_dx]
    if "f_ext" in kwargs:
        JT = ca.vertcat(*kinematics.joint_jacobians(model, q)).T
        blocks.append(-JT if name == "rnea" else ca.mtimes(d_dx, JT))
    out_name = SPECS[name].outputs[0]
    in_names = list(SPECS[name].inputs) + (["f_ext"] if "f_ext" in kwargs else [])
    nominal = type(out).sym("out_" + out_name, out.shape)
    return ca.Function("jac_" + fname, args + [nominal], ca.cse(blocks),
                       in_names + ["out_" + out_name], [f"jac_{out_name}_{n}" for n in in_names])


def _is_symbolic(x):
    return isinstance(x, (ca.SX, ca.MX))


def _vector(fname, arg, x, n):
    if _is_symbolic(x):
        if x.shape != (n, 1):
            raise ValueError(f"{fname}: argument {arg!r} must be a column of {n} entries, got shape {x.shape}")
        return x
    try:
        a = np.array(x, dtype=float)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{fname}: argument {arg!r} must be {n} numbers, got {type(x).__name__} ({e})") from None
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
    expected = f"{fname}: f_ext must be {model.njoints} spatial forces, one per joint (shape ({model.njoints}, 6))"
    if _is_symbolic(f_ext):
        if f_ext.shape != (model.njoints, 6):
            raise ValueError(f"{expected}, got shape {f_ext.shape}")
        return [f_ext[i, :].T for i in range(model.njoints)]
    if isinstance(f_ext, (list, tuple)) and any(_is_symbolic(f) for f in f_ext):
        if len(f_ext) != model.njoints:
            raise ValueError(f"{expected}, got {len(f_ext)} entries")
        forces = [f if _is_symbolic(f) else ca.DM(f) for f in f_ext]
        for i, f in enumerate(forces):
            if f.numel() != 6:
                raise ValueError(f"{expected}; entry {i} (joint {model.joints[i].name!r}) has shape {f.shape}")
        return [ca.reshape(f, 6, 1) for f in forces]
    try:
        F = np.array(f_ext, dtype=float)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{expected}, got {type(f_ext).__name__} ({e})") from None
    if F.shape != (model.njoints, 6):
        raise ValueError(f"{expected}, got shape {F.shape}")
    bad = np.argwhere(~np.isfinite(F))
    if bad.size:
        raise ValueError(f"{fname}: f_ext has non-finite entries at (joint, component) {bad.tolist()}")
    return F


VECTORS = ("tau", "nle", "g", "a", "q_next", "dq")  # outputs returned as 1-D arrays


def _numeric(x, name):
    a = np.array(x.full() if isinstance(x, ca.DM) else x)
    return a[:, 0] if name in VECTORS else a


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
        outs = tuple(_numeric(o, n) for o, n in zip(outs, spec.outputs))
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


def rnea_derivatives(model, q, v, a, f_ext=None, method="idsva"):
    """(dtau/dq, dtau/dv, dtau/da = M); d/dq on the tangent space (as Pinocchio).

    ``method``: "chain_rule" (seed 003 Algorithms 2-3), "idsva" (seed 004
    Algorithm 1) or "ad" (casadi's AD of the rnea graph)."""
    return evaluate("rnea_derivatives", model, q, v, a, f_ext=f_ext, method=method)


def aba_derivatives(model, q, v, tau, f_ext=None, method="idsva", minv_product="dmm"):
    """(da/dq, da/dv, da/dtau = M^-1) from the ID derivatives at a = aba(q, v, tau).

    ``method`` picks the ID derivatives ("ad": AD of the aba graph);
    ``minv_product``: "dmm" multiplies by M^-1, "aza" runs ABA with zero
    velocity and gravity on the columns (seed 004 section IV-E)."""
    return evaluate("aba_derivatives", model, q, v, tau, f_ext=f_ext, method=method, minv_product=minv_product)


def kinematics_derivatives(model, q, v, a, frame):
    """Derivatives of ``frame``'s spatial velocity and acceleration (no gravity), local axes:
    (dv/dq, dv/dv, da/dq, da/dv, da/da)."""
    return evaluate("kinematics_derivatives", model, q, v, a, frame=frame)


neutral = configuration.neutral
random_configuration = configuration.random_configuration
