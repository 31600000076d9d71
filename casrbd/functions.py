"""casadi Functions of the algorithms, built once per model and cached.

``SPECS`` names every algorithm's inputs, outputs and options; ``function``
builds its SX or MX Function (optionally with the analytical Jacobian as
casadi's ``custom_jacobian``) and caches it on the model.
"""
import re
from typing import Callable, NamedTuple

import casadi as ca

from .algorithms import aba, ad, configuration, crba, idsva, kinematics, minverse, rnea
from .algorithms import aba_derivatives as fd_derivatives
from .algorithms import rnea_derivatives as chain_rule

ID_DERIVATIVES = {"chain_rule": chain_rule.rnea_derivatives, "idsva": idsva.idsva, "ad": ad.rnea_derivatives}
JACOBIANS = ("ad", "analytical")


def _rnea_derivatives(model, q, v, a, f_ext=None, method="idsva"):
    return ID_DERIVATIVES[method](model, q, v, a, f_ext)


def _aba_derivatives(model, q, v, tau, f_ext=None, method="idsva", minv_product="ltdl"):
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
                            options={"method": "idsva", "minv_product": "ltdl"}),
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


def resolve_options(model, name, spec, options):
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


def input_size(model, arg):
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
        jac_options = resolve_options(model, f"{name}_derivatives", SPECS[f"{name}_derivatives"], options)
        options = {}
    options = resolve_options(model, name, spec, options)
    key = (name, symbolic, bool(f_ext), jacobian, tuple(sorted({**options, **jac_options}.items())))
    fun = model._cache.get(key)
    if fun is None:
        fun = _build(model, name, spec, symbolic, f_ext, options, jac_options if jacobian == "analytical" else None)
        model._cache[key] = fun
    return fun


def _build(model, name, spec, symbolic, f_ext, options, jac_options):
    sym = getattr(ca, symbolic)
    args = [sym.sym(arg, input_size(model, arg)) for arg in spec.inputs]
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
                 # it serves Jacobians and many directions; one adjoint (a gradient, and the exact
                 # Hessian's forward-over-reverse) goes through AD of the smaller rnea/aba graph
                 "jac_penalty": 0.5}
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
