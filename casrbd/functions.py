"""casadi Functions of the algorithms, built once per model from their specs and cached.

``function(model, name)`` builds the SX or MX Function of any algorithm of
``casrbd.algorithms.SPECS``, with inputs and outputs named as its spec
declares, optionally with the analytical Jacobian the spec carries as
casadi's ``custom_jacobian``. Functions are cached per model for the model's
lifetime (models are immutable, so a cached Function never goes stale).

SX Functions that take a while to build are also kept on disk, in
``casrbd.cache`` (kind "function"): another process (or another model object of
the same robot) deserializes in a fraction of a second what took seconds to
build. An entry's key hashes casrbd's own source, casadi's version, the
pickled model and the Function's options, so that any change builds anew; the
store checks its key and SHA-256 before it is deserialized, and the Functions'
names are checked after; an entry that fails is rebuilt with a
``casrbd.CacheWarning`` naming the file. casadi's serialization keeps a
Function's ``custom_jacobian`` but not its derivative cache, so the analytical
adjoint is stored beside the Function and installed again on loading.
``CASRBD_FUNCTION_CACHE=off`` neither reads nor writes these entries.
"""

import hashlib
import itertools
import json
import os
import pickle
import time
import warnings
from typing import NamedTuple

import casadi as ca

from . import cache
from . import derivative_protocol as protocol
from .algorithms import SPECS
from .algorithms.configuration import tangent_map
from .algorithms.passes.articulated import singular_joints
from .algorithms.passes.memo import sharing
from .model import per_model
from .naming import identifier
from .spatial import Inertia
from .spec import F_EXT, JACOBIANS, PI, REQUIRED, SYMBOLIC, Arg, choice


class SingularMassMatrixError(ValueError):
    """The model's mass matrix is singular, so what was asked for is undefined."""


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
            value = choice(key, value, option.choices, option.deprecated)
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


def function(
    model, name, symbolic="SX", f_ext=False, jacobian="ad", parameters=False, second_order=None, hessian=None, **options
):
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
    Function and differentiate its graph. With ``parameters=True`` it includes
    d tau / d pi = Y and d a / d pi = -M^-1 Y (``algorithms/regressor.py``).
    Where the model's mass matrix is checked (aba, minverse, the contact
    dynamics, ...), one built with ``parameters=True`` checks its numeric
    calls instead, and those of its derivatives: at a pi where M(pi) is
    singular (a massless leaf body, pi = 0) they raise casadi's RuntimeError
    ("nan detected for output a") rather than return NaN or inf;
    ``parameters.require_consistent`` names the body beforehand.

    ``second_order``, with ``jacobian="analytical"`` (default: "analytical" where the
    spec carries a second-order adjoint, rnea and aba): casadi's reverse mode of
    the Function (a gradient) is the analytical adjoint, and its Jacobian (the
    forward-over-reverse of IPOPT's exact Hessian) the analytical contracted
    Hessian, composed with the raw-q maps so that they equal AD's in every
    direction (``adj1_<name>`` and ``jac_adj1_<name>`` in casadi's derivative
    cache); "ad": casadi differentiates the Function's graph for those.
    """
    s = spec(name)
    choice("symbolic type", symbolic, SYMBOLIC)
    choice("jacobian", jacobian, JACOBIANS)
    if f_ext and not s.f_ext:
        raise ValueError(
            f"{name} takes no external forces; f_ext=True is valid for {[n for n, t in SPECS.items() if t.f_ext]}"
        )
    if hessian is not None:  # the old spelling: "hessian" is the solver's word (exact | limited-memory)
        warnings.warn("casrbd.function(hessian=...) is deprecated; use second_order=...", DeprecationWarning, 2)
        second_order = second_order or hessian
    if second_order is None:
        # analytical where it is offered; the second-order adjoint has no blocks for the parameters
        offered = jacobian == "analytical" and s.second_order is not None and not parameters
        second_order = "analytical" if offered else "ad"
    choice("second_order", second_order, JACOBIANS)
    if second_order == "analytical" and (jacobian != "analytical" or s.second_order is None):
        raise ValueError(
            f"second_order='analytical' needs jacobian='analytical' and is offered for "
            f"{[n for n, t in SPECS.items() if t.second_order]}, not {name!r} with jacobian={jacobian!r}"
        )
    jac_options = None
    if jacobian == "analytical":
        if s.jacobian is None:
            raise ValueError(
                f"jacobian='analytical' is offered for {[n for n, t in SPECS.items() if t.jacobian]}, not {name!r}"
            )
        # the spec's own options (a contact set) select the Function, the others its Jacobian's method
        own = {k: x for k, x in options.items() if k in s.options}
        rest = {k: x for k, x in options.items() if k not in s.options}
        jac_options = resolve_options(model, f"{name} (jacobian='analytical')", s.jacobian.options, rest)
        options = own
    options = resolve_options(model, name, s.options, options)
    if not parameters:  # with parameters as inputs, M depends on them
        require_defined(model, s)
    key = (
        name,
        symbolic,
        bool(f_ext),
        bool(parameters),
        second_order,
        tuple(sorted(options.items())),
        None if jac_options is None else tuple(sorted(jac_options.items())),
    )
    return _cached(model, key)


@per_model
def _cached(model, key):
    name, symbolic, f_ext, parameters, second_order, options, jac_options = key
    entry = _disk_entry(model, key)
    if entry is not None:
        f = _load(*entry, _checked(SPECS[name], parameters))
        if f is not None:
            return f
    start = time.process_time()
    f = _build(
        model,
        SPECS[name],
        getattr(ca, symbolic),
        f_ext,
        parameters,
        second_order == "analytical",
        dict(options),
        None if jac_options is None else dict(jac_options),
    )
    if entry is not None and time.process_time() - start >= DISK_MIN_SECONDS:
        _store(*entry, f)
    return f


DISK_LAYOUT = "casrbd-functions-2"
FUNCTIONS = cache.register("function", "functions", "Function")
PAYLOAD = "functions.json"
DISK_MIN_SECONDS = 0.3  # a Function that builds faster than this loads no faster than it builds


def _disk_entry(model, key):
    """(stem, key digest, has an analytical Jacobian, has an analytical adjoint) of a Function's disk
    entry, or None: MX Functions are not stored (their graphs call others), nor a model that does not
    pickle (symbolic inertias), nor anything with CASRBD_FUNCTION_CACHE=off."""
    if key[1] != "SX" or os.environ.get("CASRBD_FUNCTION_CACHE") == "off":
        return None
    try:
        pickled = pickle.dumps(model)
    except (pickle.PicklingError, TypeError, AttributeError):
        return None
    digest = hashlib.sha256()
    for part in (DISK_LAYOUT.encode(), ca.__version__.encode(), cache.source_digest(), pickled, repr(key).encode()):
        digest.update(hashlib.sha256(part).digest())
    analytical = key[6] is not None
    return identifier(f"{model.name}_{key[0]}"), digest.hexdigest(), analytical, analytical and key[4] == "analytical"


def _store(stem, key, analytical, adjoint, f):
    functions = [f] + ([f.reverse(1)] if adjoint else [])
    payload = json.dumps([g.serialize() for g in functions]).encode()
    cache.store(FUNCTIONS, stem, key, lambda directory: (directory / PAYLOAD).write_bytes(payload))


def _load(stem, key, analytical, adjoint, checked):
    """The Function of a disk entry, or None: none stored, or (with a CacheWarning) one that fails a check."""

    def use(entry):
        try:
            return _deserialize(json.loads(entry.read(PAYLOAD)), analytical, adjoint, checked)
        except (ValueError, KeyError, TypeError, RuntimeError) as e:
            raise cache.BadEntry(entry.file(PAYLOAD), f"not loaded: {e}") from None

    return cache.load(FUNCTIONS, stem, key, use, stacklevel=4)


def _deserialize(texts, analytical, adjoint, checked):
    """The Function of serialized ones, its analytical derivatives installed again (names checked)."""
    if not isinstance(texts, list) or len(texts) != 1 + adjoint or not all(isinstance(t, str) for t in texts):
        raise ValueError(f"it holds no list of {1 + adjoint} serialized Functions")
    f, *rest = [ca.Function.deserialize(text) for text in texts]
    if not analytical:
        return protocol.with_options(f, checked) if checked else f
    jac = f.jacobian()  # the custom Jacobian: casadi's serialization keeps it
    adj1 = None
    if rest:
        adj1 = protocol.with_options(rest[0], protocol.adjoint_options(rest[0].jacobian()))
    expected = [(jac, protocol.jacobian_name(f.name()))]
    if adj1 is not None:
        expected += [(adj1, protocol.adjoint_name(f.name())), (adj1.jacobian(), protocol.hessian_name(f.name()))]
    for g, name in expected:
        if g.name() != name:
            raise ValueError(f"{g.name()!r} is not the derivative {name!r}")
    return protocol.with_options(f, {**protocol.options(jac, adj1), **checked})


def _checked(s, parameters):
    """Function options for a Function that needs a regular M, built with parameters as inputs: M(pi)
    may be singular, and a numeric call (its own, its derivatives') raises where its outputs hold NaN or
    inf (casadi's regularity check), as the model's own singular M is refused (``require_defined``)."""
    if not (parameters and s.regular_mass):
        return {}
    return {"regularity_check": True, "der_options": {"regularity_check": True}}


def _build(model, s, sym, f_ext, parameters, second_order, options, jac_options):
    with sharing():  # one memo serves the Function and its derivative Functions
        return _build_shared(model, s, sym, f_ext, parameters, second_order, options, jac_options)


def _build_shared(model, s, sym, f_ext, parameters, second_order, options, jac_options):
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
    outs = list(outs) if isinstance(outs, tuple) else [outs]
    suffix = "".join(f"_{v}" for _, v in sorted({**options, **(jac_options or {})}.items()))
    # with second_order="ad" casadi builds adj1_<name> by AD: a name of its own keeps the two apart
    suffix += "_pi" * parameters + "_adhessian" * (
        jac_options is not None and s.second_order is not None and not second_order
    )
    # robot, frame and contact names may hold anything: a valid, collision-free identifier for casadi and C
    fname = identifier(f"{model.name}_{s.name}{suffix}")
    names = [a.name for a in inputs], [o.name for o in s.outputs]
    checked = _checked(s, parameters)
    if jac_options is None:
        # one common-subexpression pass over all outputs: they share kinematics
        return ca.Function(fname, args, ca.cse(outs), *names, checked)
    # casadi hands its derivative Functions the nominal outputs: they use them, not a second solve
    nominal = protocol.symbols(sym, names[1], [o.shape for o in outs], protocol.NOMINAL)
    out = {o.name: x for o, x in zip(s.outputs, nominal)}
    blocks = s.jacobian.impl(model, *args[: len(s.inputs)], **extra, **options, **jac_options, out=out)
    drafts = [_Draft(fname, args, outs, *names), _custom_jacobian(model, s, fname, inputs, args, outs, nominal, blocks)]
    if second_order:
        drafts += _second_order_adjoint(model, s, fname, inputs, args, nominal, extra, {**options, **jac_options})
    # one common-subexpression pass over the outputs of every Function: the derivative Functions share
    # the passes of the memo (and each other's blocks), which separate passes would hash again each
    f, jac, *adjoint = _cse(drafts)
    adj1 = None
    if adjoint:
        # the Jacobian always: it is the contracted Hessian, which the forward sweep asks for
        adj1 = adjoint[0].function(protocol.adjoint_options(adjoint[1].function()))
    return f.function({**protocol.options(jac.function(checked), adj1), **checked})


class _Draft(NamedTuple):
    """A Function to build: its name, input symbols, output expressions and their names."""

    name: str
    args: list
    outs: list
    names_in: list
    names_out: list

    def function(self, opts=None):
        return ca.Function(self.name, self.args, self.outs, self.names_in, self.names_out, opts or {})


def _cse(drafts):
    """The drafts with one common-subexpression pass over all their outputs."""
    outs = ca.cse([o for d in drafts for o in d.outs])
    ends = list(itertools.accumulate(len(d.outs) for d in drafts))
    return [d._replace(outs=outs[end - len(d.outs) : end]) for d, end in zip(drafts, ends)]


def _custom_jacobian(model, s, fname, inputs, args, outs, nominal, blocks):
    """jac_<fname>: the analytical Jacobian ``blocks`` of every output with respect to every input,
    in casadi's layout (output-major blocks; inputs: the Function's inputs, then its nominal outputs,
    the symbols ``nominal`` that the blocks may use).
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
    names = protocol.jacobian_io([a.name for a in inputs], [out.name for out in s.outputs])
    return _Draft(protocol.jacobian_name(fname), args + nominal, jac, *names)


def _second_order_adjoint(model, s, fname, inputs, args, nominal, extra, options):
    """adj1_<fname> and its Jacobian jac_adj1_<fname>: sum_k lam_k^T d out_k / d inputs in raw
    coordinates, and the blocks (casadi's layout: d adj_x / d (inputs, outs, lams), then the nominal
    adjoints as inputs) from the spec's second-order adjoint, which gets the nominal outputs
    ``nominal`` (symbols that casadi fills) as ``out``. For a configuration x with tangent map
    T(x): adj_x = T^T g_x, d adj_x / d x = T^T D_xx T + d(T(x)^T g)/dx at fixed g (the curvature of
    the normalisation inside the joints; AD of T's few joint-local entries). A spec of several
    outputs gets their multipliers as a tuple (``spec.SecondOrderAdjoint``)."""
    sym = type(nominal[0])
    lams = protocol.symbols(sym, [out.name for out in s.outputs], [n.shape for n in nominal], protocol.SEED)
    out = {o.name: n for o, n in zip(s.outputs, nominal)}
    lam, lam_keys = (lams[0], ["lam"]) if len(lams) == 1 else (tuple(lams), ["lam_" + o.name for o in s.outputs])
    gradient, jacobian = s.second_order.impl(model, *args[: len(s.inputs)], lam=lam, **extra, **options, out=out)
    config = {a.name: tangent_map(model, x) for a, x in zip(inputs, args) if a.kind == "configuration"}
    wrts = (
        list(zip(inputs, args))
        + [(None, n) for n in nominal]
        + [(Arg(k, "tangent"), m) for k, m in zip(lam_keys, lams)]
    )
    adjoints, blocks = [], []
    for a, x in zip(inputs, args):
        if a.name not in gradient and a.kind == "parameters":
            raise NotImplementedError(f"{s.name}: no second-order adjoint for the parameters; use second_order='ad'")
        g = ca.vec(gradient.get(a.name, ca.DM(x.numel(), 1)))
        adjoints.append(ca.reshape(ca.mtimes(config[a.name].T, g) if a.name in config else g, x.shape))
        for b, y in wrts:
            block = None if b is None else jacobian.get((a.name, b.name))
            if block is None:
                block = ca.DM(x.numel(), y.numel())
            else:
                block = ca.mtimes(config[a.name].T, block) if a.name in config else block
                block = ca.mtimes(block, config[b.name]) if b.name in config else block
            if a.name in config and b is a:
                G = sym.sym("g", g.shape)
                curvature = ca.jacobian(ca.mtimes(config[a.name].T, G), x)
                block = block + ca.substitute(curvature, G, g)
            blocks.append(block)
    names_in, names_out = protocol.adjoint_io([a.name for a in inputs], [out.name for out in s.outputs])
    out_adjoints = protocol.symbols(sym, names_out, [x.shape for x in args], protocol.NOMINAL)
    return [
        _Draft(protocol.adjoint_name(fname), args + nominal + lams, adjoints, names_in, names_out),
        _Draft(
            protocol.hessian_name(fname),
            args + nominal + lams + out_adjoints,
            blocks,
            *protocol.jacobian_io(names_in, names_out),
        ),
    ]
