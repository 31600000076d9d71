"""Stage Functions with their derivatives written out: Gauss-Newton models and SX second orders."""

import casadi as ca

from .. import derivative_protocol as protocol

# above this many scalar instructions a Gauss-Newton stage's products are sparse matrix products (MX:
# loops) instead of scalar code: a humanoid's scalar products are more code than gcc compiles in
# reasonable time, where a quadruped's are fastest as scalar code (benchmarks/README.md, Crocoddyl's
# legged problems)
SX_PRODUCTS_MAX = 60_000


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
    args, outs, seeds = protocol.adjoint_symbols(ca.MX, f)
    adjoints = f.reverse(1)(*args, *outs, *seeds)
    adjoints = [adjoints] if isinstance(adjoints, ca.MX) else adjoints
    J = f.jacobian()(*args, *outs)
    J = [J] if isinstance(J, ca.MX) else J
    blocks = []  # d adj_x_i / d (inputs, outputs, seeds): zero, zero, J_ji^T
    for i, x in enumerate(args):
        blocks += [ca.MX(x.numel(), y.numel()) for y in args + outs]
        blocks += [J[j * f.n_in() + i].T for j in range(f.n_out())]
    name = "gn_" + f.name()
    adj = protocol.adjoint_function(name, names_in, names_out, args + outs + seeds, adjoints, blocks)
    outputs = f(*args)
    outputs = [outputs] if isinstance(outputs, ca.MX) else outputs
    return ca.Function(name, args, outputs, names_in, names_out, protocol.options(adjoint=adj))


def gauss_newton_stage(name, cost, inner, sx_products_max=SX_PRODUCTS_MAX, constraint=None):
    """The stage Function (x, u, p) -> (cost(x, u, p, y), x_next), with (x_next, y) = inner(x, u), and
    its derivatives written out once: casadi's AD of a stage's graph evaluates the inner Jacobian once
    per chunk of 64 directions (several times per knot and iteration), this evaluates it once
    per derivative call.

    ``cost``: an SX Function (x, u, p, y) -> scalar; ``inner``: a Function (x, u) -> (x_next, y) (the
    dynamics and the cost's residuals: kinematics, contact forces). With T = d(x, u, p, y)/d(x, u, p)
    the Jacobian (``jac_``) is [T^T grad c; d x_next/d(x, u, p)]; the reverse mode (``adj1_``) uses the
    same blocks, and its Jacobian (``jac_adj1_``) is the Gauss-Newton Hessian adj_c T^T (Hessian of c) T:
    no curvature of inner, as ``gauss_newton``, and none by p: that Hessian is by the decision variables
    (x, u), its blocks by p structural zeros (p is the NLP's parameter, outside every solver's Hessian; a
    p made of decision variables gets no curvature through it), the first derivatives by p exact. Two
    Functions carry the work: the linearisation (x_next, y and inner's Jacobian, one SX graph with
    inner's calls inlined) and the products with the cost's derivatives: scalar SX code that skips the
    structural zeros of T, or, where that code would exceed ``sx_products_max`` instructions, sparse
    matrix products (MX), whose C is loops that gcc compiles in seconds. The derivative Functions only
    call them. Build the NLP from calls of it, or compile it (``compile_stages``).

    ``constraint``: an SX Function (x, u, p, y) -> h, a stage's path constraints, adds the output ``h``
    from the same linearisation (its Jacobian dh/d(x, u, p, y) T); it adds no curvature (Gauss-Newton).
    A cost, inner or constraint whose inputs do not fit one another raises a ``ValueError`` naming the
    stage and the input."""
    _check_signatures(name, cost, inner, constraint)
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
    out_names = ["cost", "x_next"] + (["h"] if constraint else [])
    nominal_out = [cost(x, u, p, y), x_next] + ([constraint(x, u, p, y)] if constraint else [])
    nominal = ca.Function(f"{name}_nominal", [x, u, p], nominal_out).expand()
    nh = constraint.numel_out(0) if constraint else 0
    w_sx = [ca.SX.sym(n, cost.sparsity_in(i)) for i, n in enumerate(cost.name_in())]
    w_all = ca.vertcat(*[ca.vec(v) for v in w_sx])
    decision = ca.vertcat(*[ca.vec(w_sx[i]) for i in (0, 1, 3)])  # (x, u, y): the curvature's variables
    c_sx = cost(*w_sx)
    curvature = ca.Function(
        f"{name}_cost_derivatives",
        w_sx,
        [
            ca.hessian(c_sx, decision)[0],
            ca.gradient(c_sx, w_all),
            ca.jacobian(constraint(*w_sx), w_all) if constraint else ca.SX(0, 1),
        ],
    )
    parts = [(0, nx), (nx, nx + nu), (nx + nu, nx + nu + np_)]

    def write_products(S):
        """The products, one graph per derivative, in S (SX: scalar code that skips T's structural
        zeros; MX: sparse matrix products); T = [I; dy 0] by (x, u, p), T_xu its columns by (x, u)."""
        w = [S.sym(n, cost.sparsity_in(i)) for i, n in enumerate(cost.name_in())]
        dxn_s, dy_s = S.sym("dx_next", linearised.sparsity_out(2)), S.sym("dy", linearised.sparsity_out(3))
        H, g, Jh_w = curvature(*w)  # H by (x, u, y), g and Jh_w by (x, u, p, y)
        T = ca.vertcat(S.eye(nx + nu + np_), ca.horzcat(dy_s, S(dy_s.size1(), np_)))
        G, dxn = ca.mtimes(T.T, g), ca.horzcat(dxn_s, S(nx, np_))
        Jh = ca.mtimes(Jh_w, T) if constraint else S(0, nx + nu + np_)
        adj_c_s, adj_xn_s, adj_h_s = S.sym("adj_cost"), S.sym("adj_x_next", nx), S.sym("adj_h", nh)
        T_xu = ca.vertcat(S.eye(nx + nu), dy_s)  # d(x, u, y)/d(x, u): the curvature's rows of T
        upper = ca.triu(ca.mtimes(T_xu.T, ca.mtimes(H, T_xu)))  # symmetric: each entry once
        HS = adj_c_s * (upper + ca.tril(upper.T, False))
        point = [*w, dxn_s, dy_s]
        h_seed = [adj_h_s] if constraint else []

        def products(suffix, seeds, outputs):
            return ca.Function(f"{name}_{suffix}", point + seeds, ca.cse(outputs) if S is ca.SX else outputs)

        jacobians = [G[a:b].T for a, b in parts] + [dxn[:, a:b] for a, b in parts]
        jac = products("jac_products", [], jacobians + ([Jh[:, a:b] for a, b in parts] if constraint else []))
        adjoint = adj_c_s * G + ca.mtimes(dxn.T, adj_xn_s) + (ca.mtimes(Jh.T, adj_h_s) if constraint else 0)
        adj = products("adj_products", [adj_c_s, adj_xn_s, *h_seed], [adjoint[a:b] for a, b in parts])
        blocks = []
        for a, b in parts:  # d adj_a / d (x, u, p, out_*, adj_cost, adj_x_next[, adj_h])
            blocks += [HS[a:b, c:d] if max(b, d) <= nx + nu else S(b - a, d - c) for c, d in parts]
            blocks += [S(b - a, 1), S(b - a, nx)] + ([S(b - a, nh)] if constraint else [])
            blocks += [G[a:b], dxn[:, a:b].T] + ([Jh[:, a:b].T] if constraint else [])
        return jac, adj, products("hessian_products", [adj_c_s], blocks)

    jac_products, adj_products, hess_products = write_products(ca.SX)
    if hess_products.n_instructions() > sx_products_max:
        jac_products, adj_products, hess_products = write_products(ca.MX)

    inputs, names = [x, u, p], ["x", "u", "p"]
    outs = protocol.symbols(ca.MX, out_names, [(1, 1), (nx, 1), (nh, 1)], protocol.NOMINAL)
    adjs = protocol.symbols(ca.MX, out_names, [(1, 1), (nx, 1), (nh, 1)], protocol.SEED)
    _, y_at, dxn_at, dy_at = linearised(x, u)
    at = [x, u, p, y_at, dxn_at, dy_at]
    jac = ca.Function(
        protocol.jacobian_name(name), inputs + outs, jac_products(*at), *protocol.jacobian_io(names, out_names)
    )
    adj = protocol.adjoint_function(
        name, names, out_names, inputs + outs + adjs, adj_products(*at, *adjs), hess_products(*at, adjs[0])
    )
    return ca.Function(name, inputs, nominal(x, u, p), names, out_names, protocol.options(jac, adj))


def _check_signatures(name, cost, inner, constraint):
    """gauss_newton_stage's inputs fit: cost and constraint take (x, u, p, y) of inner's (x, u) -> (x_next, y)."""

    def fail(what):
        raise ValueError(f"gauss_newton_stage {name!r}: {what}")

    if inner.n_in() != 2 or inner.n_out() != 2:
        fail(
            f"inner {inner.name()!r} must be (x, u) -> (x_next, y), got {inner.n_in()} inputs, {inner.n_out()} outputs"
        )
    sizes = {"x": inner.numel_in(0), "u": inner.numel_in(1), "y": inner.numel_out(1)}
    if inner.numel_out(0) != sizes["x"]:
        fail(f"inner {inner.name()!r}'s x_next has {inner.numel_out(0)} entries, its input x {sizes['x']}")
    for label, f in (("cost", cost), ("constraint", constraint)):
        if f is None:
            continue
        if f.n_in() != 4 or f.n_out() != 1:
            fail(
                f"the {label} {f.name()!r} must be (x, u, p, y) -> one output, "
                f"got {f.n_in()} inputs, {f.n_out()} outputs"
            )
        if label == "cost" and f.numel_out(0) != 1:
            fail(f"the cost {f.name()!r} must be a scalar, got {f.size_out(0)}")
        for i, arg in ((0, "x"), (1, "u"), (3, "y")):
            if f.numel_in(i) != sizes[arg]:
                fail(
                    f"the {label} {f.name()!r}'s input {arg} ({f.name_in(i)!r}, #{i}) has {f.numel_in(i)} entries, "
                    f"inner {inner.name()!r}'s {arg} {sizes[arg]}"
                )
        if f.numel_in(2) != cost.numel_in(2):
            fail(f"the {label} {f.name()!r}'s input p has {f.numel_in(2)} entries, the cost's {cost.numel_in(2)}")


def sx_second_order(f):
    """The SX Function f with its reverse mode (``adj1_``) and that adjoint's Jacobian (``jac_adj1_``)
    as SX graphs of their own, in f's derivative cache: casadi's exact Hessian of a call of f then
    evaluates one compact sparse Hessian (AD of the SX adjoint) instead of forward-over-reverse with
    one copy of the adjoint per direction, which is what the code for a small cost with many inputs
    is otherwise made of."""
    if not f.is_a("SXFunction"):
        raise TypeError(f"sx_second_order takes an SX Function, got {f.name()!r} ({f.class_name()})")
    args, outs = f.sx_in(), f(*f.sx_in()) if f.n_out() > 1 else [f(*f.sx_in())]
    _, nominal, seeds = protocol.adjoint_symbols(ca.SX, f)
    inner = sum(ca.dot(o, s) for o, s in zip(outs, seeds))
    adjoints = [ca.reshape(ca.gradient(inner, x), x.shape) for x in args]
    inputs = args + nominal + seeds
    hessian = ca.cse([ca.jacobian(a, y) for a in adjoints for y in inputs])
    adj = protocol.adjoint_function(f.name(), f.name_in(), f.name_out(), inputs, adjoints, hessian)
    return ca.Function(f.name(), args, outs, f.name_in(), f.name_out(), protocol.options(adjoint=adj))
