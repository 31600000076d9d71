"""Small helpers for optimal control with casrbd Functions in casadi Opti.

Only what every example in ``examples/`` would otherwise repeat: the
dynamics Function with analytical or AD Jacobians (optionally compiled to
C), explicit RK4 and implicit-Euler transcriptions of forward dynamics, the
Euler state update on the configuration manifold, a stage-wise declaration
order for Opti (``Stagewise``: what fatrop's structure detection needs), a
Gauss-Newton model of a Function's curvature (``gauss_newton``), IPOPT and
fatrop options and the solver statistics. The problems themselves stay plain
casadi.

The analytical Jacobian of ``casrbd.function(..., jacobian="analytical")``
takes effect where casadi differentiates a *call* of the Function, that is
inside MX graphs (Opti builds MX): build transcription Functions from MX
symbols, since an SX graph inlines the call and differentiates it by AD.
"""

import numbers
import re

import casadi as ca
import numpy as np

from . import codegen
from .expand import keep_analytical
from .functions import function
from .spec import choice

JACOBIANS = ("analytical", "ad")
SOLVERS = ("ipopt", "fatrop")
MAX_GRADIENT = 100.0  # IPOPT's nlp_scaling_max_gradient, which Stagewise applies for fatrop
HESSIANS = codegen.HESSIANS
DYNAMICS = ("aba", "rnea")
# -O1 for this CPU: second derivatives have 1e5 to 1e6 instructions and -O2 or -O3 take minutes on them;
# -march=native's fused multiply-adds make -O1 nearly -O3's speed (solo12's running stage of Crocoddyl's
# trot, 150k instructions: Gauss-Newton Hessian 70 us against 97 us at plain -O1 and 67 us at -O3;
# gcc 25 s against 46 s at -O3 and 150 s at -O2)
COMPILE_FLAGS = ("-O1", "-march=native")
# compile_stages' flags for a large stage library: COMPILE_FLAGS without -O1's redundancy eliminations,
# which take half of gcc's time on such code (solo12 trot's two-foot stage in 25 s against 51 s; talos'
# two-foot walking stage, matrix products, in 104 s against 110 s) and gain little at -O1
STAGE_FLAGS = (
    *COMPILE_FLAGS,
    "-fno-tree-dominator-opts",
    "-fno-tree-fre",
    "-fno-tree-forwprop",
    "-fno-dse",
    "-fno-tree-dse",
    "-fno-tree-pta",
    "-fno-forward-propagate",
)
# compile_stages' flags for a stage library of up to this many SX instructions (``codegen.sx_instructions``:
# solo12's, 16k to 170k) are codegen.DEFAULT_FLAGS (-O3): on an Intel Xeon (AVX-512) the trot's two-foot
# stage's Jacobian 7.4 against 11.2 us and its Gauss-Newton Hessian 22 against 30 us (at points already
# linearised; 32 against 40 us for the Jacobian at new points), at STAGE_FLAGS, for gcc's 37 s against
# 18 s; on an AMD EPYC as fast either way. A humanoid's (talos' walk, 300k to 400k) compile at
# STAGE_FLAGS, where -O3's time grows faster than the code.
STAGE_O3_MAX = 200_000
# above this many scalar instructions a Gauss-Newton stage's products are sparse matrix products (MX:
# loops) instead of scalar code: talos' two-foot stage wrote 210k lines of them, more than gcc -O1 had
# compiled in 16 minutes, where solo12's (25k for a two-foot knot) are fastest as scalar code
SX_PRODUCTS_MAX = 60_000
# the output of a stage Function that Stagewise.step closes the gap to (x_{k+1} - x_next = 0: fatrop's
# structure detection takes the gap with +I on x_{k+1}); compile_stages keeps it negated in the C
GAP_OUTPUT = "x_next"


def dynamics(
    model,
    name="aba",
    jacobian="analytical",
    compiled=False,
    f_ext=False,
    hessian="exact",
    flags=COMPILE_FLAGS,
    second_order=None,
    **options,
):
    """The forward (``"aba"``) or inverse (``"rnea"``) dynamics Function for MX graphs.

    ``jacobian="analytical"``: casadi's Jacobian of a call is the analytical
    one (``options``, e.g. ``method="idsva"``, pick it); ``"ad"``: casadi
    differentiates the Function's graph. ``second_order`` (with the
    analytical Jacobian; default "analytical"): casadi's gradient and the exact
    Hessian's forward-over-reverse go through the analytical adjoint and
    contracted Hessian (``casrbd.function``'s ``hessian``); "ad": through AD of
    the dynamics graph.
    ``compiled=True``: ``casrbd.compiled``, the dynamics as a compiled,
    disk-cached library (the rest of the NLP stays in casadi's VM; to compile
    the whole NLP, pass ``compiled=True`` to ``solver_options`` instead). A
    compiled Function cannot be differentiated by casadi, so the library
    carries the derivatives casadi asks for: the Jacobian ``jac_<name>`` and,
    for ``hessian="exact"``, the adjoint and its Jacobian (``adj1_<name>``,
    ``jac_adj1_<name>``: analytical, or AD's with ``second_order="ad"``).
    ``flags``: the C compiler's (``COMPILE_FLAGS``: -O1 for this CPU, since
    second derivatives have 1e5 to 1e6 instructions and -O3 takes minutes on them).
    """
    choice("name", name, DYNAMICS)
    choice("jacobian", jacobian, JACOBIANS)
    choice("hessian", hessian, HESSIANS)
    if jacobian == "ad" and (options or second_order == "analytical"):
        raise TypeError(
            f"options {sorted(options)} and second_order='analytical' select analytical derivatives; "
            f"jacobian='ad' takes neither"
        )
    second_order = second_order or ("analytical" if jacobian == "analytical" else "ad")
    choice("second_order", second_order, JACOBIANS)
    if not compiled:
        return function(model, name, f_ext=f_ext, jacobian=jacobian, second_order=second_order, **options)
    return codegen.compiled(
        model, name, flags, hessian=hessian, f_ext=f_ext, jacobian=jacobian, second_order=second_order, **options
    )


def forward_dynamics_ode(model, fd):
    """(x, u) -> dx/dt = [v; fd(q, v, u)] for x = [q; v]; needs nq == nv (no quaternions),
    since then dq/dt = v. Use ``euler_step`` on a manifold."""
    if model.nq != model.nv:
        raise ValueError(
            f"model {model.name!r} has nq = {model.nq} != nv = {model.nv}: its configuration "
            f"is not a vector space; integrate it with euler_step"
        )
    nq = model.nq
    return lambda x, u: ca.vertcat(x[nq:], fd(x[:nq], x[nq:], u))


def _check_dt(dt):
    if isinstance(dt, numbers.Real) and not dt > 0:
        raise ValueError(f"dt must be positive, got {dt!r}")


def rk4(ode, x, u, dt):
    """One explicit Runge-Kutta-4 step of dx/dt = ode(x, u), u held over the step."""
    _check_dt(dt)
    k1 = ode(x, u)
    k2 = ode(x + dt / 2 * k1, u)
    k3 = ode(x + dt / 2 * k2, u)
    k4 = ode(x + dt * k3, u)
    return x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def implicit_euler_residual(ode, x0, x1, u, dt):
    """x1 - x0 - dt * ode(x1, u): zero exactly when x1 is the implicit-Euler step from x0."""
    _check_dt(dt)
    return x1 - x0 - dt * ode(x1, u)


def euler_step(model, q, v, a, dt):
    """(q (+) v dt, v + a dt): explicit Euler on the configuration manifold, so that the
    quaternions of q stay unit quaternions (``integrate`` normalises and rotates them)."""
    _check_dt(dt)
    return function(model, "integrate")(q, v * dt), v + a * dt


class Stagewise:
    """Opti with the variables and constraints of an optimal control problem declared stage by stage.

    ``state(n)`` declares x_0; then per stage ``control(n)`` declares u_k,
    ``subject_to`` collects the stage's path constraints (on x_k and u_k) and
    ``step(x_next)`` declares x_{k+1}, the gap-closing constraint
    x_{k+1} == x_next, and then the collected path constraints; ``solver``
    declares the constraints of the last stage (on x_N) and picks the solver.
    In that order the NLP's variables are (x_0, u_0, x_1, u_1, ..., x_N) and
    each stage's path constraints follow its gap-closing constraint: the
    structure fatrop (``structure_detection="auto"``) recognises and solves by a
    Riccati recursion (a path constraint on x_k declared before u_k breaks it).
    IPOPT takes the same problem. Only the order is prescribed: costs,
    constraints and dynamics are casadi expressions, and the Opti is
    ``self.opti``."""

    def __init__(self, opti=None):
        self.opti = ca.Opti() if opti is None else opti
        self.x, self.u, self._path = [], [], []

    def state(self, n):
        """x_0: the first stage's state (the next ones come from ``step``)."""
        if self.x:
            raise RuntimeError("state() declares x_0 only; the next states come from step()")
        self.x.append(self.opti.variable(n))
        return self.x[-1]

    def control(self, n):
        """u_k of the current stage (n = 0: a stage without control, an impulse), before ``step``."""
        if len(self.u) != len(self.x) - 1 or not self.x:
            raise RuntimeError("control() comes once per stage, after state() or step()")
        self.u.append(self.opti.variable(n) if n else ca.MX(0, 1))
        return self.u[-1]

    def subject_to(self, *constraints):
        """Path constraints of the current stage, declared by the next ``step`` (or ``solver``)."""
        self._path.extend(constraints)

    def step(self, x_next):
        """x_{k+1}, declared with the gap-closing constraint x_{k+1} == x_next (an expression of x_k, u_k),
        then the stage's path constraints."""
        if len(self.u) != len(self.x):
            raise RuntimeError("step() closes a stage: declare its control first (control(0) for none)")
        x = self.opti.variable(*x_next.shape)
        self.opti.subject_to(x == x_next)
        self.x.append(x)
        self._declare_path()
        return x

    def solver(self, name, options=None, max_gradient=MAX_GRADIENT):
        """The last stage's path constraints, then ``opti.solver(name, options)``.

        For fatrop, the objective is first scaled as IPOPT scales it by default (its gradient-based
        scaling): the solver sees it divided by max(1, |grad f|_inf / ``max_gradient``) at the initial
        guess (Opti's ``linear_scale``: ``opti.f`` and the cost reported stay unscaled). fatrop does not
        scale, and with Crocoddyl's weights (1e6, a gradient of 1e5 at the guess) its Riccati recursion
        asks for a Hessian regularisation of 1e-2 at every iteration, ten times the controls' own
        curvature, and then converges linearly (the solo12 jump: 103 iterations unscaled, 19 scaled).
        As with IPOPT, the tolerance then holds for the scaled problem. ``max_gradient=None`` keeps the
        objective as declared."""
        self._declare_path()
        if name == "fatrop" and max_gradient is not None:
            opti = self.opti
            guess = opti.initial() + opti.value_parameters()
            gradient = np.abs(np.asarray(opti.debug.value(ca.gradient(opti.f, opti.x), guess)))
            opti.minimize(opti.f, max(1.0, float(gradient.max(initial=0.0)) / max_gradient))
        self.opti.solver(name, options or {})

    def _declare_path(self):
        for c in self._path:
            self.opti.subject_to(c)
        self._path = []


def gauss_newton(f):
    """f with casadi's second derivatives through it dropped: a Gauss-Newton model of its curvature.

    The returned Function evaluates f and differentiates it once as f does
    (its Jacobian, analytical where f's is); its reverse mode (``adj1_``) has
    a custom Jacobian with the blocks by f's inputs set to zero and the block
    by the adjoint seed J^T. In the exact Hessian of the Lagrangian (IPOPT's and
    fatrop's forward-over-reverse) a cost phi(f(x)) then contributes
    J^T phi'' J and a constraint f(x) = 0 nothing: the model of Crocoddyl's
    DDP and of a Gauss-Newton SQP, positive semi-definite for convex phi."""
    names_in, names_out = f.name_in(), f.name_out()
    args = [ca.MX.sym(n, f.sparsity_in(i)) for i, n in enumerate(names_in)]
    outs = [ca.MX.sym("out_" + n, f.sparsity_out(i)) for i, n in enumerate(names_out)]
    seeds = [ca.MX.sym("adj_" + n, f.sparsity_out(i)) for i, n in enumerate(names_out)]
    adjoints = f.reverse(1)(*args, *outs, *seeds)
    adjoints = [adjoints] if isinstance(adjoints, ca.MX) else adjoints
    J = f.jacobian()(*args, *outs)
    J = [J] if isinstance(J, ca.MX) else J
    blocks = []  # d adj_x_i / d (inputs, outputs, seeds): zero, zero, J_ji^T
    for i, x in enumerate(args):
        blocks += [ca.MX(x.numel(), y.numel()) for y in args + outs]
        blocks += [J[j * f.n_in() + i].T for j in range(f.n_out())]
    inputs = args + outs + seeds
    input_names = [*names_in, *("out_" + n for n in names_out), *("adj_" + n for n in names_out)]
    adjoint_names = ["adj_" + n for n in names_in]
    name = "gn_" + f.name()
    jac = ca.Function(
        "jac_adj1_" + name,
        inputs + [ca.MX.sym("out_" + n, x.sparsity()) for n, x in zip(adjoint_names, args)],
        blocks,
        input_names + ["out_" + n for n in adjoint_names],
        [f"jac_{n}_{m}" for n in adjoint_names for m in input_names],
    )
    adj = ca.Function(
        "adj1_" + name, inputs, adjoints, input_names, adjoint_names, {"custom_jacobian": jac, "jac_penalty": 0}
    )
    outputs = f(*args)
    outputs = [outputs] if isinstance(outputs, ca.MX) else outputs
    return ca.Function(name, args, outputs, names_in, names_out, {"cache": {adj.name(): adj}})


def gauss_newton_stage(name, cost, inner, sx_products_max=SX_PRODUCTS_MAX):
    """The stage Function (x, u, p) -> (cost(x, u, p, y), x_next), with (x_next, y) = inner(x, u), and
    its derivatives written out once: casadi's AD of a stage's graph evaluates the inner Jacobian once
    per chunk of 64 directions (three to four times per knot and iteration), this evaluates it once
    per derivative call.

    ``cost``: an SX Function (x, u, p, y) -> scalar; ``inner``: a Function (x, u) -> (x_next, y) (the
    dynamics and the cost's residuals: kinematics, contact forces). With T = d(x, u, p, y)/d(x, u, p)
    the Jacobian (``jac_``) is [T^T grad c; d x_next/d(x, u, p)]; the reverse mode (``adj1_``) uses the
    same blocks, and its Jacobian (``jac_adj1_``) is the Gauss-Newton Hessian adj_c T^T (Hessian of c) T:
    no curvature of inner, as ``gauss_newton``. Two Functions carry the work: the linearisation
    (x_next, y and inner's Jacobian, one SX graph with inner's calls inlined) and the products with the
    cost's derivatives: scalar SX code that skips the structural zeros of T, or, where that code
    would exceed ``sx_products_max`` instructions, sparse matrix products (MX), whose C is loops
    that gcc compiles in seconds. The derivative Functions only call them. Build the NLP from calls
    of it, or compile it (``compile_stages``)."""
    x, u = ca.MX.sym("x", inner.sparsity_in(0)), ca.MX.sym("u", inner.sparsity_in(1))
    p = ca.MX.sym("p", cost.sparsity_in(2))
    nx, nu, np_ = x.numel(), u.numel(), p.numel()
    x_next, y = inner(x, u)
    J = inner.jacobian()(x, u, x_next, y)
    linearised = ca.Function(
        f"{name}_linearised",
        [x, u],
        [x_next, y, ca.horzcat(J[0], J[1]), ca.horzcat(J[2], J[3])],
        ["x", "u"],
        ["x_next", "y", "dx_next", "dy"],
    ).expand()
    nominal = ca.Function(f"{name}_nominal", [x, u, p], [cost(x, u, p, y), x_next]).expand()
    w_sx = [ca.SX.sym(n, cost.sparsity_in(i)) for i, n in enumerate(cost.name_in())]
    curvature = ca.Function(
        f"{name}_cost_derivatives", w_sx, ca.hessian(cost(*w_sx), ca.vertcat(*[ca.vec(v) for v in w_sx]))
    )
    parts = [(0, nx), (nx, nx + nu), (nx + nu, nx + nu + np_)]

    def write_products(S):
        """The products, one graph per derivative, in S (SX: scalar code that skips T's structural
        zeros; MX: sparse matrix products); T = [I; dy 0] by (x, u, p)."""
        w = [S.sym(n, cost.sparsity_in(i)) for i, n in enumerate(cost.name_in())]
        dxn_s, dy_s = S.sym("dx_next", linearised.sparsity_out(2)), S.sym("dy", linearised.sparsity_out(3))
        H, g = curvature(*w)
        T = ca.vertcat(S.eye(nx + nu + np_), ca.horzcat(dy_s, S(dy_s.size1(), np_)))
        G, dxn = ca.mtimes(T.T, g), ca.horzcat(dxn_s, S(nx, np_))
        adj_c_s, adj_xn_s = S.sym("adj_cost"), S.sym("adj_x_next", nx)
        upper = ca.triu(ca.mtimes(T.T, ca.mtimes(H, T)))  # symmetric: each entry once
        HS = adj_c_s * (upper + ca.tril(upper.T, False))
        point = [*w, dxn_s, dy_s]

        def products(suffix, seeds, outputs):
            return ca.Function(f"{name}_{suffix}", point + seeds, ca.cse(outputs) if S is ca.SX else outputs)

        jac = products("jac_products", [], [G[a:b].T for a, b in parts] + [dxn[:, a:b] for a, b in parts])
        adjoint = adj_c_s * G + ca.mtimes(dxn.T, adj_xn_s)
        adj = products("adj_products", [adj_c_s, adj_xn_s], [adjoint[a:b] for a, b in parts])
        blocks = []
        for a, b in parts:
            blocks += [HS[a:b, c:d] for c, d in parts]
            blocks += [S(b - a, 1), S(b - a, nx), G[a:b], dxn[:, a:b].T]
        return jac, adj, products("hessian_products", [adj_c_s], blocks)

    jac_products, adj_products, hess_products = write_products(ca.SX)
    if hess_products.n_instructions() > sx_products_max:
        jac_products, adj_products, hess_products = write_products(ca.MX)

    out_c, out_xn = ca.MX.sym("out_cost"), ca.MX.sym("out_x_next", nx)
    adj_c, adj_xn = ca.MX.sym("adj_cost"), ca.MX.sym("adj_x_next", nx)
    inputs, names = [x, u, p], ["x", "u", "p"]
    _, y_at, dxn_at, dy_at = linearised(x, u)
    at = [x, u, p, y_at, dxn_at, dy_at]
    jac = ca.Function(
        "jac_" + name,
        inputs + [out_c, out_xn],
        jac_products(*at),
        names + ["out_cost", "out_x_next"],
        [f"jac_{o}_{n}" for o in ("cost", "x_next") for n in names],
    )
    seeds = [out_c, out_xn, adj_c, adj_xn]
    seed_names = ["out_cost", "out_x_next", "adj_cost", "adj_x_next"]
    adj_names = ["adj_" + n for n in names]
    out_adj = [ca.MX.sym("out_" + n, v.sparsity()) for n, v in zip(adj_names, inputs)]
    jac_adj = ca.Function(
        "jac_adj1_" + name,
        inputs + seeds + out_adj,
        hess_products(*at, adj_c),
        names + seed_names + ["out_" + n for n in adj_names],
        [f"jac_{n}_{m}" for n in adj_names for m in names + seed_names],
    )
    adj = ca.Function(
        "adj1_" + name,
        inputs + seeds,
        adj_products(*at, adj_c, adj_xn),
        names + seed_names,
        adj_names,
        {"custom_jacobian": jac_adj, "jac_penalty": 0},
    )
    return ca.Function(
        name,
        inputs,
        nominal(x, u, p),
        names,
        ["cost", "x_next"],
        {"custom_jacobian": jac, "jac_penalty": 0.5, "cache": {adj.name(): adj}},
    )


def sx_second_order(f):
    """The SX Function f with its reverse mode (``adj1_``) and that adjoint's Jacobian (``jac_adj1_``)
    as SX graphs of their own, in f's derivative cache: casadi's exact Hessian of a call of f then
    evaluates one compact sparse Hessian (AD of the SX adjoint) instead of forward-over-reverse with
    one copy of the adjoint per direction, which is what the code for a small cost with many inputs
    is otherwise made of."""
    if not f.is_a("SXFunction"):
        raise TypeError(f"sx_second_order takes an SX Function, got {f.name()!r} ({f.class_name()})")
    args, outs = f.sx_in(), f(*f.sx_in()) if f.n_out() > 1 else [f(*f.sx_in())]
    nominal = [ca.SX.sym("out_" + n, f.sparsity_out(i)) for i, n in enumerate(f.name_out())]
    seeds = [ca.SX.sym("adj_" + n, f.sparsity_out(i)) for i, n in enumerate(f.name_out())]
    inner = sum(ca.dot(o, s) for o, s in zip(outs, seeds))
    adjoints = [ca.reshape(ca.gradient(inner, x), x.shape) for x in args]
    inputs = args + nominal + seeds
    input_names = [*f.name_in(), *("out_" + n for n in f.name_out()), *("adj_" + n for n in f.name_out())]
    adjoint_names = ["adj_" + n for n in f.name_in()]
    jac = ca.Function(
        "jac_adj1_" + f.name(),
        inputs + [ca.SX.sym("out_" + n, x.sparsity()) for n, x in zip(adjoint_names, args)],
        ca.cse([ca.jacobian(a, y) for a in adjoints for y in inputs]),
        input_names + ["out_" + n for n in adjoint_names],
        [f"jac_{n}_{m}" for n in adjoint_names for m in input_names],
    )
    adj = ca.Function(
        "adj1_" + f.name(), inputs, adjoints, input_names, adjoint_names, {"custom_jacobian": jac, "jac_penalty": 0}
    )
    return ca.Function(f.name(), args, outs, f.name_in(), f.name_out(), {"cache": {adj.name(): adj}})


def stage_derivatives(f):
    """f and the derivatives an NLP solver asks of its calls: ``jac_<f>`` (the constraint Jacobian and
    the gradient), ``adj1_<f>`` and ``jac_adj1_<f>`` (the exact Hessian's forward-over-reverse), the
    custom ones where f carries them; each as a plain graph of its own (no derivative options, calls
    inlined one level), so that C code generation writes the Functions they call once. A derivative's
    inputs of f's nominal outputs (``out_*``) that none of its outputs depends on are declared
    structurally empty: casadi then passes them nothing, and an NLP's derivative evaluation no longer
    calls f (or the adjoint, for the Hessian) to produce them (solo12 trot's ``nlp_grad_f``: one call per
    knot instead of two)."""
    adjoint = f.reverse(1)
    return [_plain(f)] + [_plain(g, nominal=True) for g in (f.jacobian(), adjoint, adjoint.jacobian())]


def _plain(g, nominal=False):
    """g as a plain graph; ``nominal``: with its unused ``out_*`` inputs empty (``stage_derivatives``)."""
    args = g.mx_in()
    outs = g.call(args, True, False)
    if nominal:
        every = ca.veccat(*outs)
        args = [
            ca.MX.sym(n, ca.Sparsity(*a.shape)) if n.startswith("out_") and not ca.depends_on(every, a) else a
            for n, a in zip(g.name_in(), args)
        ]
        outs = g.call(args, True, False)
    return ca.Function(g.name(), args, outs, g.name_in(), g.name_out())


def compile_stages(functions, name, flags=None, verbose=None):
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
    entry of the Jacobian in its VM (93k of the 195k instructions of the trot's constraint Jacobian).
    ``flags``: the compiler's for every library, by default each library's by its size (``stage_flags``).
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
    if flags is None:  # by the library's size
        flags = {n: stage_flags(codegen.sx_instructions(derivatives)) for n, derivatives in libraries.items()}
    libraries = codegen.compile_libraries(libraries, flags=flags, verbose=verbose, memo=memo)
    # the Functions as given: their gap output negated back, which casadi's SX folds into Stagewise's
    # x_{k+1} - x_next (x_{k+1} + m), so that the Jacobian's entries reach the solver as the C wrote them
    loaded = []
    for lib, core, f in zip(libraries, cores, functions):
        args, flip = core.mx_in(), core is not f
        outs = [-v if flip and n == GAP_OUTPUT else v for v, n in zip(lib[core.name()].call(args), f.name_out())]
        loaded.append(ca.Function(f.name(), args, outs, f.name_in(), f.name_out()))
    return loaded


def stage_flags(instructions):
    """The compiler flags of a stage library of that many SX instructions (``STAGE_O3_MAX``)."""
    return codegen.DEFAULT_FLAGS if instructions <= STAGE_O3_MAX else STAGE_FLAGS


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

    adjoint = f.reverse(1)
    seeds = [1] * n_in + sign + sign  # adj1's inputs: f's inputs, its outputs, their seeds
    jac_rows = [s for s in sign for _ in range(n_in)]  # jac_: a block per (output, input), output-major
    hessian = function(
        adjoint.jacobian(), "jac_adj1_" + name, seeds + [1] * n_in, [s for _ in range(n_in) for s in seeds]
    )
    adj = function(adjoint, "adj1_" + name, seeds, [1] * n_in, {"custom_jacobian": hessian, "jac_penalty": 0})
    jac = function(f.jacobian(), "jac_" + name, [1] * n_in + sign, jac_rows)
    options = {"custom_jacobian": jac, "jac_penalty": 0, "cache": {adj.name(): adj}}
    return function(f, name, [1] * n_in, sign, options)


def _calls(f, name):
    try:
        f.find_function(name)
        return True
    except RuntimeError:
        return False


def solver_options(
    hessian="exact",
    warm_start=False,
    verbose=False,
    compiled=False,
    flags=COMPILE_FLAGS,
    solver="ipopt",
    expand=False,
    **extra,
):
    """Options for ``opti.solver(solver, ...)``, ``solver`` "ipopt" or "fatrop" (``SOLVERS``);
    ``extra`` adds the solver's own options by name.

    fatrop takes the structure of a problem declared with ``Stagewise``
    (``structure_detection="auto"``) and exact Hessians only; without that
    structure use IPOPT.
    ``warm_start`` (IPOPT): start from the given primal and dual values (for MPC).
    ``compiled``: casadi generates C for the NLP's functions (objective,
    constraints, their Jacobian, the Hessian of the Lagrangian, with the
    dynamics Functions and their derivatives inside) and compiles them with
    the system C compiler and ``flags`` when the solver is created (casadi's
    ``jit``); the derivatives are the ones the dynamics Functions carry.
    ``expand``: casadi turns the NLP into SX, with ``postpone_expand`` so that
    the analytical derivatives are taken first and kept (``casrbd.keep_analytical``)."""
    choice("hessian", hessian, HESSIANS)
    choice("solver", solver, SOLVERS)
    opts = keep_analytical({"record_time": True, "print_time": False, "expand": expand})
    if solver == "fatrop":
        if hessian != "exact" or warm_start:
            raise ValueError("fatrop takes hessian='exact' and no warm_start; use solver='ipopt' for those")
        opts.update({"structure_detection": "auto", "fatrop.print_level": 10 if verbose else 0})
    else:
        opts.update(
            {"ipopt.hessian_approximation": hessian, "ipopt.print_level": 5 if verbose else 0, "ipopt.sb": "yes"}
        )
    if compiled:
        opts.update(
            {
                "jit": True,
                "compiler": "shell",
                "jit_options": {"compiler": codegen.find_compiler(), "flags": list(flags), "verbose": verbose},
            }
        )
    if warm_start:
        # small pushes off the bounds keep the warm start where the last solution was
        opts.update(
            {
                "ipopt.warm_start_init_point": "yes",
                "ipopt.mu_init": 1e-6,
                "ipopt.warm_start_bound_push": 1e-9,
                "ipopt.warm_start_bound_frac": 1e-9,
                "ipopt.warm_start_slack_bound_push": 1e-9,
                "ipopt.warm_start_slack_bound_frac": 1e-9,
                "ipopt.warm_start_mult_bound_push": 1e-9,
            }
        )
    opts.update({f"{solver}.{k}": v for k, v in extra.items()})
    return opts


STAT_FIELDS = {  # name -> key of casadi's nlpsol stats: wall times (t_) and the process's CPU times (cpu_), in s
    "t_total": "t_wall_total",
    "t_f": "t_wall_nlp_f",
    "t_g": "t_wall_nlp_g",
    "t_grad_f": "t_wall_nlp_grad_f",
    "t_jac_g": "t_wall_nlp_jac_g",
    "t_hess_l": "t_wall_nlp_hess_l",
    "cpu_total": "t_proc_total",
    "cpu_jac_g": "t_proc_nlp_jac_g",
    "cpu_hess_l": "t_proc_nlp_hess_l",
}


def solve(opti):
    """Solve and return the solver statistics: status, success, iterations, cost and wall times.

    A failed solve does not raise: its status says so, and ``opti.debug.value``
    gives the last iterate (as it gives the solution after a success). A
    compiled Function without the derivatives the solver asks for raises a
    ``RuntimeError`` that says how to build it."""
    try:
        opti.solve_limited()
    except RuntimeError as e:
        missing = re.search(r"Derivatives cannot be calculated for (\S+)", str(e))
        if missing:
            raise RuntimeError(
                f"the compiled Function {missing.group(1)!r} carries no derivatives for this solver: build it "
                f"with casrbd.compiled(model, name, ...) (its library ships the Jacobian, adjoint and Hessian), "
                f"or hessian='limited-memory' in casrbd.compiled and solver_options when there is no exact "
                f"Hessian\n(casadi: {str(e).splitlines()[-1]})"
            ) from None
        if "return_status" not in str(e):  # not IPOPT failing, but building or calling the problem
            raise
    s = opti.stats()
    status = s["return_status"]
    if not isinstance(status, str):  # fatrop's: a number
        status = f"{'Solve_Succeeded' if s['success'] else 'Solve_Failed'} (return code {status})"
    out = {
        "status": status,
        "success": bool(s["success"]),
        "iterations": int(s["iter_count"]),
        "cost": float(opti.debug.value(opti.f)),
    }
    out.update({k: float(s.get(key, float("nan"))) for k, key in STAT_FIELDS.items()})
    out["t_per_iter"] = out["t_total"] / max(out["iterations"], 1)
    out["cpu_per_iter"] = out["cpu_total"] / max(out["iterations"], 1)
    return out


def format_stats(stats):
    return (
        f"{stats['status']}: {stats['iterations']} iterations, cost {stats['cost']:.10g}, "
        f"total {stats['t_total']:.3f} s ({1e3 * stats['t_per_iter']:.1f} ms/iter), "
        f"jac_g {stats['t_jac_g']:.3f} s, hess_l {stats['t_hess_l']:.3f} s, grad_f {stats['t_grad_f']:.3f} s, "
        f"g {stats['t_g']:.3f} s"
    )
