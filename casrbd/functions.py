"""casadi Functions of the algorithms, built once per model from their specs and cached.

``function(model, name)`` builds the SX or MX Function of any algorithm of
``casrbd.algorithms.SPECS``, with inputs and outputs named as its spec
declares, optionally with the analytical Jacobian the spec carries as
casadi's ``custom_jacobian``. Functions are cached per model for the model's
lifetime (models are immutable, so a cached Function never goes stale).
"""

import re

import casadi as ca

from .algorithms import SPECS
from .algorithms.articulated import singular_joints
from .algorithms.configuration import tangent_map
from .model import per_model
from .spatial import Inertia
from .spec import F_EXT, PI, REQUIRED

JACOBIANS = ("ad", "analytical")
SYMBOLIC = ("SX", "MX")


class SingularMassMatrixError(ValueError):
    """The model's mass matrix is singular, so what was asked for is undefined."""


def choice(what, value, valid):
    if value not in valid:
        raise ValueError(f"unknown {what} {value!r}; valid: {', '.join(map(repr, valid))}")
    return value


def spec(name):
    if name not in SPECS:
        choice("function", name, tuple(SPECS))
    return SPECS[name]


def resolve_options(model, name, declared, options):
    """The options of a Function by name, with defaults, checked against their choices."""
    extra = set(options) - set(declared)
    if extra:
        raise TypeError(f"{name}: unknown options {sorted(extra)}; it takes {sorted(declared) or 'none'}")
    out = {}
    for key, option in declared.items():
        value = options.get(key, option.default)
        if value is REQUIRED:
            raise TypeError(f"{name}: option {key!r} is required")
        if option.choices is not None:
            choice(key, value, option.choices)
        out[key] = value if option.resolve is None else option.resolve(model, value)
    return out


def require_defined(model, s):
    """Refuse an algorithm that the model cannot define (``Spec.regular_mass``)."""
    if s.regular_mass:
        idle = singular_joints(model)
        if idle:
            raise SingularMassMatrixError(
                f"{s.name} is undefined for model {model.name!r}: its mass matrix is singular, as joints "
                f"{list(idle)} have a motion that moves no mass or inertia with the joints below them free "
                f"(links without inertia? a massless root link under a free flyer?)"
            )


def _c_name(text):
    name = re.sub(r"\W", "_", text)
    return name if re.match(r"[A-Za-z_]", name) else "m_" + name


def function(model, name, symbolic="SX", f_ext=False, jacobian="ad", parameters=False, **options):
    """The named casadi Function of an algorithm for ``model``, built once and cached.

    Inputs are named as the algorithm's arguments (``q``, ``v``, ``a`` or ``tau``),
    plus ``f_ext`` (6 x njoints, one spatial force per joint in its frame) when
    ``f_ext=True``, plus ``pi`` (10 per body, the inertial parameters in
    ``model.joints`` order, as ``Inertia.from_dynamic_parameters``) when
    ``parameters=True``, in which case the model's own inertias are not used;
    outputs as its spec declares (``tau``, ``a``, ``M``, ...).

    ``jacobian="analytical"``, for Functions whose spec carries an analytical
    Jacobian (rnea, aba): casadi's Jacobian of the Function, as taken inside MX
    graphs, Opti and nlpsol, is the analytical one (``options`` such as
    ``method`` pick it), composed with the map from raw q to the tangent space,
    so it equals the AD Jacobian in every direction. SX callers inline an SX
    Function and differentiate its graph.
    """
    s = spec(name)
    choice("symbolic type", symbolic, SYMBOLIC)
    choice("jacobian", jacobian, JACOBIANS)
    if f_ext and not s.f_ext:
        raise ValueError(
            f"{name} takes no external forces; f_ext=True is valid for {[n for n, t in SPECS.items() if t.f_ext]}"
        )
    jac_options = None
    if jacobian == "analytical":
        if s.jacobian is None:
            raise ValueError(
                f"jacobian='analytical' is offered for {[n for n, t in SPECS.items() if t.jacobian]}, not {name!r}"
            )
        jac_options = resolve_options(model, f"{name} (jacobian='analytical')", s.jacobian.options, options)
        options = {}
    options = resolve_options(model, name, s.options, options)
    if not parameters:  # with parameters as inputs, M depends on them
        require_defined(model, s)
    key = (
        name,
        symbolic,
        bool(f_ext),
        bool(parameters),
        tuple(sorted(options.items())),
        None if jac_options is None else tuple(sorted(jac_options.items())),
    )
    return _cached(model, key)


@per_model
def _cached(model, key):
    name, symbolic, f_ext, parameters, options, jac_options = key
    return _build(
        model,
        SPECS[name],
        getattr(ca, symbolic),
        f_ext,
        parameters,
        dict(options),
        None if jac_options is None else dict(jac_options),
    )


def _build(model, s, sym, f_ext, parameters, options, jac_options):
    inputs = s.inputs + ((F_EXT,) if f_ext else ()) + ((PI,) if parameters else ())
    args = [sym.sym(arg.name, *arg.shape(model)) for arg in inputs]
    named = {arg.name: x for arg, x in zip(inputs, args)}
    if parameters:
        pi = named["pi"]
        model = model.with_inertias(
            [Inertia.from_dynamic_parameters(pi[10 * i : 10 * i + 10]) for i in range(model.njoints)]
        )
    extra = {"f_ext": named["f_ext"]} if f_ext else {}
    outs = s.impl(model, *args[: len(s.inputs)], **extra, **options)
    # one common-subexpression pass over all outputs: they share kinematics
    outs = ca.cse(list(outs) if isinstance(outs, tuple) else [outs])
    suffix = "".join(f"_{v}" for _, v in sorted({**options, **(jac_options or {})}.items()))
    fname = _c_name(f"{model.name}_{s.name}{suffix}" + ("_pi" if parameters else ""))
    fopts = {}
    if jac_options is not None:
        blocks = s.jacobian.impl(model, *args[: len(s.inputs)], **extra, **jac_options)
        fopts = {
            "custom_jacobian": _custom_jacobian(model, s, fname, inputs, args, outs, blocks),
            # it serves Jacobians and many directions; one adjoint (a gradient, and the exact
            # Hessian's forward-over-reverse) goes through AD of the smaller dynamics graph
            "jac_penalty": 0.5,
        }
    return ca.Function(fname, args, outs, [a.name for a in inputs], [o.name for o in s.outputs], fopts)


def _custom_jacobian(model, s, fname, inputs, args, outs, blocks):
    """jac_<fname>: the analytical Jacobian ``blocks`` of every output with respect to every input,
    in casadi's layout (output-major blocks; inputs: the Function's inputs, then its nominal outputs).
    Blocks of configuration inputs are the tangent derivative times the tangent map of raw q; a
    missing block is zero, but for the parameters, which every analytical Jacobian must cover."""
    jac = []
    for out, o in zip(s.outputs, outs):
        for arg, x in zip(inputs, args):
            block = blocks.get((out.name, arg.name))
            if block is None:
                if arg.kind == "parameters":
                    raise NotImplementedError(f"{s.name}: no analytical derivative of {out.name} by the parameters")
                block = ca.DM(o.numel(), x.numel())
            elif arg.kind == "configuration":
                block = ca.mtimes(block, tangent_map(model, x))
            jac.append(block)
    nominal = [type(o).sym("out_" + out.name, o.shape) for out, o in zip(s.outputs, outs)]
    return ca.Function(
        "jac_" + fname,
        args + nominal,
        ca.cse(jac),
        [a.name for a in inputs] + ["out_" + out.name for out in s.outputs],
        [f"jac_{out.name}_{arg.name}" for out in s.outputs for arg in inputs],
    )
