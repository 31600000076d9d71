"""casadi's protocol for the derivatives a Function carries, written once.

casadi asks a Function ``f`` for its derivatives by name and finds them in f's derivative cache:

- ``jac_<f>`` (``jacobian_name``), the Jacobian: inputs f's inputs and its nominal outputs
  ``out_<o>``; outputs ``jac_<o>_<i>``, one block per (output, input), output-major
  (``jacobian_io``). Installed with the options ``custom_jacobian`` and ``jac_penalty``.
- ``adj1_<f>`` (``adjoint_name``), one adjoint (reverse mode): inputs f's inputs, ``out_<o>`` and the
  seeds ``adj_<o>``; outputs ``adj_<i>`` (``adjoint_io``). Installed through the option ``cache``.
- ``jac_adj1_<f>`` (``hessian_name``), the adjoint's Jacobian (the forward half of an exact
  Hessian's forward-over-reverse): the adjoint's own ``jac_`` (``hessian_io``), installed on the
  adjoint with ``custom_jacobian`` and ``jac_penalty`` 0 (``adjoint_options``).

``options`` gives the options of a Function carrying them, ``symbols`` the symbols of a derivative's
inputs, ``adjoint_function`` an adjoint written out with its Jacobian, ``derivatives`` the three as
casadi hands them, ``shipped`` those a Function carries itself and ``solver_set`` f with the ones a
solver asks of its calls.
"""

import casadi as ca

JACOBIAN, ADJOINT, HESSIAN = "jac_", "adj1_", "jac_adj1_"
NOMINAL, SEED = "out_", "adj_"
# a custom Jacobian serves Jacobians and many directions; casadi takes one adjoint (a gradient) through the
# reverse mode where the Jacobian's penalty makes that cheaper: the Function's adjoint, analytical or AD
JAC_PENALTY = 0.5


def jacobian_name(name):
    return JACOBIAN + name


def adjoint_name(name):
    return ADJOINT + name


def hessian_name(name):
    return HESSIAN + name


def nominal(name):
    """The name of the input that carries the nominal output ``name`` into a derivative."""
    return NOMINAL + name


def seed(name):
    """The name of the adjoint seed of output ``name`` (an adjoint's input), or of input ``name``'s adjoint
    (an adjoint's output)."""
    return SEED + name


def jacobian_io(names_in, names_out):
    """(input names, output names) of the Jacobian of a Function with those inputs and outputs."""
    return [*names_in, *map(nominal, names_out)], [f"jac_{o}_{i}" for o in names_out for i in names_in]


def adjoint_io(names_in, names_out):
    """(input names, output names) of the adjoint of a Function with those inputs and outputs."""
    return [*names_in, *map(nominal, names_out), *map(seed, names_out)], list(map(seed, names_in))


def hessian_io(names_in, names_out):
    """(input names, output names) of the adjoint's Jacobian."""
    return jacobian_io(*adjoint_io(names_in, names_out))


def symbols(sym, names, sparsities, prefix=""):
    """Symbols (``sym``: ``ca.SX`` or ``ca.MX``) named ``prefix + name`` of the given sparsities (or shapes)."""
    return [
        sym.sym(prefix + n, s) if isinstance(s, ca.Sparsity) else sym.sym(prefix + n, *s)
        for n, s in zip(names, sparsities)
    ]


def sparsities(f):
    """(input sparsities, output sparsities) of f."""
    return [f.sparsity_in(i) for i in range(f.n_in())], [f.sparsity_out(i) for i in range(f.n_out())]


def adjoint_symbols(sym, f):
    """The symbols of an adjoint's inputs by part: f's inputs, its nominal outputs, their seeds."""
    sp_in, sp_out = sparsities(f)
    args = symbols(sym, f.name_in(), sp_in)
    return args, symbols(sym, f.name_out(), sp_out, NOMINAL), symbols(sym, f.name_out(), sp_out, SEED)


def options(jacobian=None, adjoint=None, jac_penalty=JAC_PENALTY):
    """The Function options that install a custom ``jacobian`` and an ``adjoint`` (either may be None)."""
    opts = {} if jacobian is None else {"custom_jacobian": jacobian, "jac_penalty": jac_penalty}
    if adjoint is not None:
        opts["cache"] = {adjoint.name(): adjoint}
    return opts


def adjoint_options(hessian):
    """The options of an adjoint that carries its Jacobian ``hessian`` (always used: the forward sweep asks)."""
    return options(hessian, jac_penalty=0)


def adjoint_function(name, names_in, names_out, inputs, adjoints, hessian):
    """``adj1_<name>`` carrying its Jacobian ``jac_adj1_<name>`` (``adjoint_options``), for a Function
    ``name`` with inputs ``names_in`` and outputs ``names_out``: ``inputs`` the adjoint's input symbols
    (f's inputs, nominal outputs, seeds: ``adjoint_io``), ``adjoints`` its outputs (one per input of f),
    ``hessian`` the Jacobian's blocks d adjoint / d input in ``hessian_io``'s order."""
    names = adjoint_io(names_in, names_out)
    own = symbols(type(inputs[0]), names[1], [x.sparsity() for x in inputs[: len(names_in)]], NOMINAL)
    jac = ca.Function(hessian_name(name), inputs + own, hessian, *jacobian_io(*names))
    return ca.Function(adjoint_name(name), inputs, adjoints, *names, adjoint_options(jac))


def with_options(g, opts):
    """The SX Function g again, with Function options (which a Function cannot be given once built)."""
    xs = g.sx_in()
    return ca.Function(g.name(), xs, g.call(xs), g.name_in(), g.name_out(), opts)


def shipped(f):
    """The derivative Functions that are part of ``f``: its custom Jacobian ``jac_<f>``, and an adjoint
    ``adj1_<f>`` that carries its own custom Jacobian ``jac_adj1_<f>`` (with it).

    ``f.cache()`` also lists any derivative casadi built on request while someone holds it, which must
    not change what is shipped. A custom Jacobian survives serialization, so it is taken from there; the
    ``cache`` option does not (casadi 3.8), so the adjoint is taken from the live cache, where only an
    adjoint written out (not casadi's AD) carries a custom Jacobian of its own."""
    if not f.cache():  # a custom Jacobian or adjoint is in the live cache from the start
        return []
    found = list(ca.Function.deserialize(f.serialize()).cache().values())
    adjoint = f.cache().get(adjoint_name(f.name()))
    own = [] if adjoint is None else shipped(adjoint)
    return found + ([adjoint, *own] if own else [])


def is_nominal(name):
    """Whether an input name is a nominal output's (``out_<o>``)."""
    return name.startswith(NOMINAL)


def derivatives(f):
    """(jacobian, adjoint, hessian): the Functions casadi hands for ``jac_<f>``, ``adj1_<f>``, ``jac_adj1_<f>``."""
    adjoint = f.reverse(1)
    return f.jacobian(), adjoint, adjoint.jacobian()


def solver_set(f, second_order=True):
    """f and the derivatives a solver asks of its calls that f does not ship (``shipped``): the Jacobian,
    and with ``second_order`` one adjoint and the adjoint's Jacobian (casadi's AD)."""
    carried = {g.name() for g in shipped(f)}
    extra = [] if jacobian_name(f.name()) in carried else [f.jacobian()]
    if second_order and adjoint_name(f.name()) not in carried:
        adjoint = f.reverse(1)
        extra += [adjoint, adjoint.jacobian()]
    return [f, *extra]
