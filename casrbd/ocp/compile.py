"""Stage compilation: the stage Functions with their derivatives as cached C libraries."""

import casadi as ca

from .. import codegen
from .. import derivative_protocol as protocol
from ..codegen.flags import STAGE_FLAGS, stage_flags

# the output of a stage Function that Stagewise.step closes the gap to (x_{k+1} - x_next = 0: fatrop's
# structure detection takes the gap with +I on x_{k+1}); compile_stages keeps it negated in the C
GAP_OUTPUT = "x_next"


def stage_derivatives(f):
    """f and the derivatives an NLP solver asks of its calls: ``jac_<f>`` (the constraint Jacobian and
    the gradient), ``adj1_<f>`` and ``jac_adj1_<f>`` (the exact Hessian's forward-over-reverse), the
    custom ones where f carries them; each as a plain graph of its own (no derivative options, calls
    inlined one level), so that C code generation writes the Functions they call once. A derivative's
    inputs of f's nominal outputs (``out_*``) that none of its outputs depends on are declared
    structurally empty: casadi then passes them nothing, and an NLP's derivative evaluation no longer
    calls f (or the adjoint, for the Hessian) to produce them."""
    return [_plain(f)] + [_plain(g, nominal=True) for g in protocol.derivatives(f)]


def _plain(g, nominal=False):
    """g as a plain graph; ``nominal``: with its unused ``out_*`` inputs empty (``stage_derivatives``)."""
    args = g.mx_in()
    outs = g.call(args, True, False)
    if nominal:
        every = ca.veccat(*outs)
        args = [
            ca.MX.sym(n, ca.Sparsity(*a.shape)) if protocol.is_nominal(n) and not ca.depends_on(every, a) else a
            for n, a in zip(g.name_in(), args)
        ]
        outs = g.call(args, True, False)
    return ca.Function(g.name(), args, outs, g.name_in(), g.name_out())


def compile_stages(functions, name, flags=None, verbose=None, keys=None):
    """The stage Functions of an optimal control problem (each called at many knots) compiled to C
    with their derivatives (``stage_derivatives``), one library per stage Function (``<name>_<stage>``,
    cached on disk by ``casrbd.codegen`` and compiled side by side, one compiler per CPU), and loaded
    back: an NLP built from calls of them evaluates compiled code in every iteration, and casadi finds
    each derivative in the library by its name. Use Gauss-Newton stages (``gauss_newton_stage``,
    ``gauss_newton``) unless their second derivatives are small: casadi's AD of the contact dynamics
    writes megabytes of C. The linearisation of a Gauss-Newton stage (``<stage>_linearised``) is
    evaluated once per knot point and shared by the Jacobian, gradient and Hessian evaluations of an
    iteration (``codegen.memoize``), as Crocoddyl's ``calcDiff`` computes a knot's derivatives once;
    so is its cost and next state (``<stage>_nominal``), which the solvers ask again with the gradient
    and the constraint Jacobian at the point their line search accepted.
    Solve an NLP of their calls with ``solver_options(expand=True)``: casadi's SX then assembles the
    Jacobian and Hessian from the stages' blocks (its MX multiplies each block by a matrix of seed
    directions, which costs more than the stages' own derivatives on solo12's trot). The library holds
    each stage with its next state negated (``negated``) and the Function returned negates it back:
    in the gap x_{k+1} - x_next, casadi's SX folds the two signs, where it would otherwise negate each
    entry of the Jacobian in its VM (benchmarks/README.md, Crocoddyl's legged problems).
    ``flags``: the compiler's for every library, by default each library's by its size and whether its
    stage has controls (input 1, u, not empty: ``stage_flags``).
    ``keys``: ``{stage name: description}``, strings that determine the stages (their model, terms,
    versions): their libraries are cached by them (``codegen.compile_libraries``' keys), and
    ``load_stages`` loads them from the descriptions alone.
    Returns the loaded Functions in the given order, with the names, inputs and outputs given."""
    names = [f.name() for f in functions]
    if len(set(names)) != len(names):
        raise ValueError(f"compile_stages: the stage Functions need distinct names, got {names}")
    cores = [negated(f, GAP_OUTPUT) for f in functions]
    libraries = {f"{name}_{f.name()}": stage_derivatives(core) for f, core in zip(functions, cores)}
    memo = {
        library: [
            g for g in (f"{f.name()}_linearised", f"{f.name()}_nominal") if any(_calls(d, g) for d in derivatives)
        ]
        for (library, derivatives), f in zip(libraries.items(), functions)
    }
    if flags is None:  # by the library's size, and whether its stage has controls (impulses do not)
        flags = {
            n: stage_flags(codegen.sx_instructions(derivatives), f.n_in() < 2 or f.numel_in(1) > 0)
            for (n, derivatives), f in zip(libraries.items(), functions)
        }
    keys = {f"{name}_{stage}": key for stage, key in (keys or {}).items()}
    libraries = codegen.compile_libraries(libraries, flags=flags, verbose=verbose, memo=memo, keys=keys)
    return [_unnegated(lib[core.name()], f) for lib, core, f in zip(libraries, cores, functions)]


def load_stages(names, name, keys, flags=None):
    """The Gauss-Newton stages ``names`` as ``compile_stages(..., name, flags, keys=keys)`` compiled and
    cached them, loaded by their descriptions ``keys`` without building them (None for each not cached);
    ``flags`` None: either of the flags ``stage_flags`` picks."""
    out = []
    for stage in names:
        memo = (f"{stage}_linearised", f"{stage}_nominal")
        for f in [codegen.DEFAULT_FLAGS, STAGE_FLAGS] if flags is None else [flags]:
            lib = codegen.load_library(f"{name}_{stage}", keys[stage], [f"{stage}_negated"], f, memo=memo)
            if lib is not None:
                break
        out.append(None if lib is None else _unnegated(lib[f"{stage}_negated"], stage))
    return out


def _unnegated(core, f):
    """The library's Function ``core`` as the stage ``f`` (a Function or its name): its gap output negated
    back, which casadi's SX folds into Stagewise's x_{k+1} - x_next (x_{k+1} + m), so that the Jacobian's
    entries reach the solver as the C wrote them."""
    name = f if isinstance(f, str) else f.name()
    flip = core.name() != name
    args = core.mx_in()
    outs = [-v if flip and n == GAP_OUTPUT else v for v, n in zip(core.call(args), core.name_out())]
    return ca.Function(name, args, outs, core.name_in(), core.name_out())


def negated(f, output, name=None):
    """f with its output named ``output`` negated (f unchanged if it has none), named ``name`` (default
    ``<f>_negated``), with its derivatives (``jac_``, ``adj1_``, ``jac_adj1_``) f's, negated where they
    involve that output: compiled, the negations are instructions of the C, where casadi's SX would
    otherwise negate each entry of a stage's Jacobian in its VM (``compile_stages``)."""
    if output not in f.name_out():
        return f
    name = name or f"{f.name()}_negated"
    n_in, sign = f.n_in(), [-1 if n == output else 1 for n in f.name_out()]

    def flip(values, signs):
        return [-v if s < 0 else v for v, s in zip(values, signs)]

    def function(g, label, flip_in, flip_out, options=None):
        """g under the name ``label``: g at its inputs flipped by ``flip_in``, its outputs by ``flip_out``."""
        args = g.mx_in()
        out = flip(g.call(flip(args, flip_in), True, False), flip_out)
        return ca.Function(label, args, out, g.name_in(), g.name_out(), options or {})

    seeds = [1] * n_in + sign + sign  # adj1's inputs: f's inputs, its outputs, their seeds
    jac_rows = [s for s in sign for _ in range(n_in)]  # jac_: a block per (output, input), output-major
    jacobian, adjoint, hessian = protocol.derivatives(f)
    hessian_rows = [s for _ in range(n_in) for s in seeds]
    hessian = function(hessian, protocol.hessian_name(name), seeds + [1] * n_in, hessian_rows)
    adj = function(adjoint, protocol.adjoint_name(name), seeds, [1] * n_in, protocol.adjoint_options(hessian))
    jac = function(jacobian, protocol.jacobian_name(name), [1] * n_in + sign, jac_rows)
    return function(f, name, [1] * n_in, sign, protocol.options(jac, adj, jac_penalty=0))


def _calls(f, name):
    try:
        f.find_function(name)
        return True
    except RuntimeError:
        return False
