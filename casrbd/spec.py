"""What each algorithm takes and returns, declared beside its code.

An algorithm module lists ``SPECS``: the algorithm's name (its public and
``casrbd.function`` name), the function that builds it over casadi types,
its inputs with their sizes as functions of the model, its outputs with
their kinds, its options, and what it needs of the model. ``casrbd.functions``
builds and caches Functions from a spec, ``casrbd.api`` checks arguments
and shapes results from it. A derivative module attaches an analytical
Jacobian to any spec by a ``Jacobian`` entry (``casrbd.algorithms`` joins them).
"""

import warnings
from typing import Callable, NamedTuple, Optional

# the vocabulary of the public choices, each once (``choice`` lists them in this order in its errors)
SYMBOLIC = ("SX", "MX")  # casrbd.function's symbolic type
JACOBIANS = ("ad", "analytical")  # how a Function's derivatives are taken: jacobian=, second_order=
DYNAMICS = ("aba", "rnea")  # ocp.dynamics: forward or inverse dynamics
HESSIANS = ("exact", "limited-memory")  # the solver's word for its Hessian: second derivatives or none
HESSIAN_MODELS = ("gauss-newton", "exact")  # ocp.Problem's model of the curvature
SOLVERS = ("ipopt", "fatrop")
INTEGRATORS = ("semi-implicit", "euler", "rk4")  # a Knot's (Crocoddyl's semi-implicit Euler first)
EXPLICIT_INTEGRATORS = ("rk4", "euler")  # of x' = f(x, u) on a vector state (ocp.reach)


def choice(what, value, valid, deprecated=None):
    """``value`` if it is one of ``valid``; an old spelling in ``deprecated`` ({old: new}) is mapped
    to its new name with a DeprecationWarning (kept for one release); anything else raises a
    ValueError that lists the valid values."""
    if deprecated and isinstance(value, str) and value in deprecated:
        new = deprecated[value]
        warnings.warn(f"{what}={value!r} is deprecated; use {what}={new!r}", DeprecationWarning, stacklevel=3)
        value = new
    if value not in valid:
        raise ValueError(f"unknown {what} {value!r}; valid: {', '.join(map(repr, valid))}")
    return value


class Arg(NamedTuple):
    """An input: ``kind`` "configuration" (nq entries), "tangent" (nv entries), "forces"
    (6 x njoints: one spatial force per joint, ``casrbd.algorithms.passes.tree``) or "parameters"
    (10 per body: the inertial parameters, ``casrbd.Inertia.from_dynamic_parameters``)."""

    name: str
    kind: str

    def shape(self, model):
        return {
            "configuration": (model.nq, 1),
            "tangent": (model.nv, 1),
            "forces": (6, model.njoints),
            "parameters": (10 * model.njoints, 1),
        }[self.kind]


def configuration(name="q"):
    return Arg(name, "configuration")


def tangent(name):
    return Arg(name, "tangent")


F_EXT = Arg("f_ext", "forces")
PI = Arg("pi", "parameters")


class Out(NamedTuple):
    """An output: ``kind`` "vector" (a column, returned as a 1-D array), "matrix", "placements"
    (4 x 4k homogeneous matrices side by side, returned as a list of k) or "tensor" (T[i, j, k] of
    an n x n x n tensor at (i, j + n k), returned as an (n, n, n) array). ``with_f_ext``: an output
    by the external forces, which the Function without them keeps empty and the API leaves out."""

    name: str
    kind: str = "matrix"
    with_f_ext: bool = False


REQUIRED = object()


class Option(NamedTuple):
    """A keyword option that selects the Function (part of its cache key and its name).

    ``choices``: the valid values, ``deprecated``: old spellings {old: new} still accepted with a
    DeprecationWarning; ``resolve(model, value)``: checks a value and returns its canonical,
    hashable form (``FRAME``: a frame name or index, resolved to the index)."""

    default: object = REQUIRED
    choices: Optional[tuple] = None
    resolve: Optional[Callable] = None
    deprecated: Optional[dict] = None


def _frame_index(model, frame):
    return model.frame_index(frame)


FRAME = Option(resolve=_frame_index)


class Spec(NamedTuple):
    name: str
    impl: Callable  # impl(model, *inputs, f_ext=None, **options) -> output or tuple of outputs
    inputs: tuple
    outputs: tuple
    f_ext: bool = False  # takes external forces (an optional last input)
    options: dict = {}
    regular_mass: bool = False  # undefined when the mass matrix is singular
    jacobian: object = None  # a Jacobian, attached by a derivative module
    second_order: object = None  # a SecondOrderAdjoint, attached by a second-order module


class Jacobian(NamedTuple):
    """An analytical Jacobian of the Function ``of``.

    ``impl(model, *inputs, f_ext=None, out=None, **options)`` returns a dict {(output name, input
    name): block}, d output / d input with configuration inputs on the tangent space (nv columns);
    missing blocks are zero. ``out`` maps each output name to its nominal value, which casadi hands
    the Jacobian (use it rather than computing the output again). ``options`` select the method,
    as a spec's."""

    of: str
    impl: Callable
    options: dict = {}


class SecondOrderAdjoint(NamedTuple):
    """The second-order adjoint of the Function ``of``, for casadi's reverse mode and the exact
    Hessians built on it (``casrbd.functions`` installs it as ``adj1_<name>``).

    ``impl(model, *inputs, lam, f_ext=None, out=None, **options)`` returns (gradient, jacobian)
    (``out``: the nominal outputs by name, as for ``Jacobian``): gradient
    {input name: lam^T d output / d input} (configuration inputs on the tangent space, nv
    entries); jacobian {(input name, wrt): d gradient[input] / d wrt} for wrt an input name or
    "lam", configuration inputs moved along q (+) delta; missing blocks are zero. With several
    outputs, ``lam`` is the tuple of their multipliers (the gradient is that of sum_k lam_k^T
    output_k) and wrt "lam_<output name>" names each multiplier.
    ``options`` are the spec's options and those of its Jacobian."""

    of: str
    impl: Callable
