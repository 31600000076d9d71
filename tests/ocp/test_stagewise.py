"""casrbd.ocp's stage-wise transcription, Gauss-Newton model and compiled stages.

A pendulum swing-up with a nonlinear cost residual, declared stage by stage:
fatrop recognises the stages (its structure detection reports one per knot)
and reaches IPOPT's optimum; the Gauss-Newton model keeps a Function's value
and Jacobian and gives casadi's Hessians J^T phi'' J (checked against the
Jacobian computed by casadi's AD of the plain Function); compiled stages take
the same iterates as the VM.
"""

import secrets

import casadi as ca
import numpy as np
import pytest

from casrbd import codegen, ocp
from casrbd.ocp.compile import load_stages

N, DT = 20, 0.1


def pendulum():
    x, u = ca.SX.sym("x", 2), ca.SX.sym("u")
    step = ca.Function("step", [x, u], [ca.vertcat(x[0] + DT * x[1], x[1] + DT * (u - 9.81 * ca.sin(x[0])))])
    residual = ca.Function("residual", [x, u], [ca.vertcat(ca.cos(x[0]) + 1, 0.1 * x[1], 0.05 * u)])
    return step, residual


def swing_up(solver, step, residual, stage=None, weight=1.0, expand=False, **solver_args):
    """The swing-up stage by stage; ``stage``: a Function (x, u) -> (cost, x_next) used instead;
    ``weight`` multiplies the objective; ``expand``: the NLP as SX; ``solver_args`` go to
    ``Stagewise.solver``."""
    st = ocp.Stagewise()
    x = st.state(2)
    st.subject_to(x == [0, 0])
    cost = 0
    for _ in range(N):
        u = st.control(1)
        st.subject_to(st.opti.bounded(-6, u, 6), st.opti.bounded(-8, x[1], 8))
        c, x_next = stage(x, u) if stage else (ca.sumsqr(residual(x, u)), step(x, u))
        cost += c
        x = st.step(x_next)
    st.opti.minimize(weight * (cost + 10 * ca.sumsqr(x - [np.pi, 0])))
    st.subject_to(x[0] <= 1.5)
    for k, x in enumerate(st.x):
        st.opti.set_initial(x, [np.pi * k / N, 0])
    st.solver(solver, ocp.solver_options(solver=solver, expand=expand), **solver_args)
    stats = ocp.solve(st.opti)
    return stats, np.array([st.opti.value(x) for x in st.x]), st.opti.stats()


@pytest.fixture(scope="module")
def solutions():
    step, residual = pendulum()
    return {s: swing_up(s, step, residual) for s in ocp.SOLVERS}


def test_fatrop_detects_the_stages_and_reaches_ipopts_optimum(solutions):
    (a, xa, raw), (b, xb, _) = solutions["fatrop"], solutions["ipopt"]
    assert a["success"] and b["success"]
    assert a["status"] == b["status"] == "Solve_Succeeded" and a["solver_status"] == "fatrop: Success (return flag 0)"
    assert raw["N"] == N and raw["nx"] == [2] * (N + 1) and raw["nu"] == [1] * N + [0]
    assert raw["ng"][-1] == 1 and xa[-1, 0] == pytest.approx(1.5, abs=1e-6)  # the last stage's constraint
    assert a["cost"] == pytest.approx(b["cost"], rel=1e-8)
    np.testing.assert_allclose(xa, xb, atol=1e-6)


def test_fatrop_sees_the_objective_scaled_as_ipopt_scales_it():
    """Weights of 1e6 (Crocoddyl's) leave the optimum where it is; fatrop, which does not scale, then
    regularises its Riccati recursion and takes twice the iterations unless Stagewise scales the
    objective by its gradient at the guess. The cost reported is the unscaled one."""
    step, residual = pendulum()
    scaled, xs, _ = swing_up("fatrop", step, residual, weight=1e6)
    plain, xp, _ = swing_up("fatrop", step, residual, weight=1e6, max_gradient=None)
    assert scaled["success"] and plain["success"]
    assert scaled["iterations"] < 0.7 * plain["iterations"]
    assert scaled["cost"] == pytest.approx(plain["cost"], rel=1e-8) and scaled["cost"] > 1e7
    np.testing.assert_allclose(xs, xp, atol=1e-6)


def test_gauss_newton_keeps_the_jacobian_and_drops_the_curvature():
    _, residual = pendulum()
    gn = ocp.gauss_newton(residual)
    x, u = ca.MX.sym("x", 2), ca.MX.sym("u")
    w, lam = ca.vertcat(x, u), ca.MX.sym("lam", 3)
    point = {"x": [0.7, -1.3], "u": 0.4}
    values = [
        ca.Function("f", [x, u], [e]) for e in (gn(x, u), ca.jacobian(gn(x, u), w), ca.jacobian(residual(x, u), w))
    ]
    r, J, J_ad = (np.array(f(point["x"], point["u"])) for f in values)
    np.testing.assert_allclose(r, np.array(residual(point["x"], point["u"])), atol=1e-15)
    np.testing.assert_allclose(J, J_ad, atol=1e-14)
    weights = np.array([1.0, 2.0, 3.0])
    H = ca.Function("H", [x, u], [ca.hessian(ca.sumsqr(np.sqrt(weights) * gn(x, u)), w)[0]])
    np.testing.assert_allclose(np.array(H(point["x"], point["u"])), 2 * J.T @ np.diag(weights) @ J, atol=1e-13)
    # the curvature of a constraint lam^T r(w) (here cos x_0) is gone
    Hc = ca.Function("Hc", [x, u, lam], [ca.hessian(ca.dot(lam, gn(x, u)), w)[0]])
    assert np.abs(np.array(Hc(point["x"], point["u"], [1.0, 1.0, 1.0]))).max() == 0


@pytest.mark.parametrize("sx_products_max", [ocp.SX_PRODUCTS_MAX, 0], ids=["scalar products", "matrix products"])
def test_gauss_newton_stage_derivatives_equal_ad_and_the_wrapped_gauss_newton_model(sx_products_max):
    """gauss_newton_stage's written-out Jacobian (by x, u and p) equals casadi's AD of the plain stage, and
    the Hessian of a call (its jac_adj1_) by (x, u) equals the one casadi takes through gauss_newton(inner),
    with the products as scalar code (SX) and as sparse matrix products (MX, for large stages). Its blocks
    by p are structural zeros (the cost's p[0] * |y|^2 has curvature by (x, p) there), the first
    derivatives by p exact."""
    step, residual = pendulum()
    x, u, p, y = ca.SX.sym("x", 2), ca.SX.sym("u"), ca.SX.sym("p", 2), ca.SX.sym("y", 3)
    cost = ca.Function("c", [x, u, p, y], [p[0] * ca.sumsqr(y) + ca.fmax(y[2] - p[1], 0) ** 2 + ca.sin(x[0]) * u])
    X, U, P = ca.MX.sym("x", 2), ca.MX.sym("u"), ca.MX.sym("p", 2)
    inner = ca.Function("inner", [X, U], [step(X, U), residual(X, U)])
    stage = ocp.gauss_newton_stage("pendulum_gn", cost, inner, sx_products_max)
    products = stage.reverse(1).jacobian().find_function("pendulum_gn_hessian_products")
    assert products.is_a("MXFunction") == (sx_products_max == 0)
    reference = ocp.gauss_newton(inner)(X, U)
    plain = ca.vertcat(cost(X, U, P, reference[1]), reference[0])
    called = ca.vertcat(*stage(X, U, P))
    w, lam = ca.vertcat(X, U), ca.MX.sym("lam", 3)
    pair = ca.Function(
        "pair",
        [X, U, P, lam],
        [
            ca.jacobian(called, ca.vertcat(w, P)),
            ca.jacobian(plain, ca.vertcat(w, P)),
            ca.hessian(ca.dot(lam, called), w)[0],
            ca.hessian(ca.dot(lam, plain), w)[0],
        ],
    )
    by_p = ca.Function("by_p", [X, U, P, lam], [ca.hessian(ca.dot(lam, called), ca.vertcat(w, P))[0][:, 3:]])
    hessian = stage.reverse(1).jacobian()
    blocks = [f"jac_adj_{a}_{b}" for a in "xup" for b in "xup" if "p" in (a, b)]
    assert all(hessian.nnz_out(b) == 0 for b in blocks)  # the plain stage's (x, p) block is not zero
    # compile_stages ships the written-out derivatives, each once
    shipped = ocp.stage_derivatives(stage)
    assert [f.name() for f in shipped] == ["pendulum_gn", "jac_pendulum_gn", "adj1_pendulum_gn", "jac_adj1_pendulum_gn"]
    assert all(not f.cache() for f in shipped)
    for point in ([0.7, -1.3], 0.4, [2.0, 0.5], [1.5, -0.5, 2.0]), ([2.0, 0.1], -2.3, [0.5, -0.2], [0.3, 1.0, 0.0]):
        J, J_ad, H, H_gn = (np.array(m) for m in pair(*point))
        np.testing.assert_allclose(J, J_ad, atol=1e-13)
        np.testing.assert_allclose(H, H_gn, atol=1e-12)
        assert not np.array(by_p(*point)).any()


def test_sx_second_order_gives_casadis_hessian():
    """The Hessian of a cost through sx_second_order's compact adjoint equals casadi's own (AD of the plain
    Function), and jac_adj1_<name> sits in the adjoint's derivative cache, where casadi looks first."""
    _, residual = pendulum()
    x, u = ca.SX.sym("x", 2), ca.SX.sym("u")
    plain = ca.Function("cost", [x, u], [ca.sumsqr(residual(x, u)) * ca.exp(x[1]) + ca.fmax(u - 1, 0) ** 2])
    compact = ocp.sx_second_order(plain)
    X, U = ca.MX.sym("x", 2), ca.MX.sym("u")
    w = ca.vertcat(X, U)
    hessians = [ca.Function("H", [X, U], [ca.hessian(f(X, U), w)[0]]) for f in (plain, compact)]
    for point in ([0.7, -1.3], 1.4), ([2.0, 0.1], -0.3):
        H, H_compact = (np.array(h(*point)) for h in hessians)
        np.testing.assert_allclose(H_compact, H, rtol=1e-12, atol=1e-12)
    assert "jac_adj1_cost" in compact.cache()["adj1_cost"].cache()
    with pytest.raises(TypeError, match="SX Function"):
        ocp.sx_second_order(ocp.gauss_newton(plain))


def test_gauss_newton_stages_compiled_take_the_vm_iterates(solutions):
    step, residual = pendulum()
    x, u = ca.MX.sym("x", 2), ca.MX.sym("u")
    stage = ca.Function(
        "pendulum_stage", [x, u], [ca.sumsqr(ocp.gauss_newton(residual)(x, u)), ocp.gauss_newton(step)(x, u)]
    )
    (compiled,) = ocp.compile_stages([stage], "test_stagewise_pendulum")
    vm, x_vm, _ = swing_up("fatrop", None, None, stage)
    c, x_c, _ = swing_up("fatrop", None, None, compiled)
    assert vm["success"] and c["iterations"] == vm["iterations"]
    np.testing.assert_allclose(x_c, x_vm, atol=1e-10)
    # the same optimum as the exact Hessian's, in more iterations (a residual that does not vanish)
    assert vm["cost"] == pytest.approx(solutions["fatrop"][0]["cost"], rel=1e-6)


@pytest.mark.parametrize("sx_products_max", [ocp.SX_PRODUCTS_MAX, 0], ids=["scalar products", "matrix products"])
def test_gauss_newton_stage_compiled_with_its_linearisation_kept_takes_the_vm_iterates(sx_products_max):
    """compile_stages keeps a Gauss-Newton stage's linearisation and its cost and next state per knot
    point (codegen.memoize): its Jacobian, gradient and Hessian calls share them, and fatrop takes the
    iterates of the Gauss-Newton model that casadi's AD gives (``gauss_newton`` of the plain inner
    Function), in casadi's MX and SX."""
    step, residual = pendulum()
    x, u, p, y = ca.SX.sym("x", 2), ca.SX.sym("u"), ca.SX.sym("p"), ca.SX.sym("y", 3)
    cost = ca.Function("c", [x, u, p, y], [p * ca.sumsqr(y)])
    X, U = ca.MX.sym("x", 2), ca.MX.sym("u")
    inner = ca.Function("inner", [X, U], [step(X, U), residual(X, U)])
    stage = ocp.gauss_newton_stage("pendulum_kept", cost, inner, sx_products_max)
    library = f"test_stagewise_kept{sx_products_max}"
    (compiled,) = ocp.compile_stages([stage], library)
    sources = codegen.cache_dir().glob(f"libraries/{library}_pendulum_kept-*/*.c")
    text = "".join(s.read_text() for s in sources)
    assert "casrbd.codegen.memoize: pendulum_kept_linearised" in text
    assert "casrbd.codegen.memoize: pendulum_kept_nominal" in text
    model = ocp.gauss_newton(inner)

    def reference(x, u):
        x_next, r = model(x, u)
        return cost(x, u, 1.0, r), x_next

    vm, x_vm, _ = swing_up("fatrop", None, None, reference)
    for expand in (False, True):
        c, x_c, _ = swing_up("fatrop", None, None, lambda x, u: compiled(x, u, 1.0), expand=expand)
        assert vm["success"] and c["iterations"] == vm["iterations"], expand
        np.testing.assert_allclose(x_c, x_vm, atol=1e-10)
    # the library holds the next state negated: in SX, the gap x_{k+1} - x_next folds the two signs
    assert compiled.find_function("pendulum_kept_negated").name_out() == ["cost", "x_next"]
    st = ocp.Stagewise()
    x = st.state(2)
    u = st.control(1)
    st.step(compiled(x, u, 1.0)[1])
    jac_g = ca.Function("g", [st.opti.x], [st.opti.g]).expand().jacobian()
    ops = [jac_g.instruction_id(k) for k in range(jac_g.n_instructions())]
    assert ops.count(ca.OP_CALL) >= 1 and ops.count(ca.OP_NEG) == 0
    # the library's derivatives take no nominal outputs (out_*): the gradient evaluates the stage's adjoint
    # alone, the Hessian of the Lagrangian the adjoint's Jacobian alone (not the stage nor its adjoint)
    core = compiled.find_function("pendulum_kept_negated")
    for g in (core.jacobian(), core.reverse(1), core.reverse(1).jacobian()):
        nominal = [i for i, n in enumerate(g.name_in()) if n.startswith("out_")]
        assert nominal and all(g.nnz_in(i) == 0 for i in nominal), g.name()
    z, lam = ca.MX.sym("z", 3), ca.MX.sym("lam", 2)
    cost_k, x_next = compiled(z[:2], z[2], 1.0)
    lagrangian = cost_k + ca.dot(lam, x_next)
    derivatives = {"gradient": [ca.gradient(cost_k, z)], "hessian": [ca.hessian(lagrangian, z)[0]]}
    for label, expected in (("gradient", 1), ("hessian", 1)):
        g = ca.Function(label, [z, lam], derivatives[label]).expand()
        calls = [g.instruction_id(k) for k in range(g.n_instructions())].count(ca.OP_CALL)
        assert calls == expected, (label, calls)


def test_negated_stage_derivatives_follow_the_chain_rule():
    """``negated``: the stage with its next state negated; its value, Jacobian and adjoint equal casadi's
    AD of -x_next through the stage's derivatives, and its Gauss-Newton Hessian has the stage's
    curvature blocks (which no seed of x_next enters) and, by the seeds, the negated Jacobian's blocks."""
    step, residual = pendulum()
    x, u, p, y = ca.SX.sym("x", 2), ca.SX.sym("u"), ca.SX.sym("p"), ca.SX.sym("y", 3)
    cost = ca.Function("c", [x, u, p, y], [p * ca.sumsqr(y) + x[0] * u])
    X, U, P = ca.MX.sym("x", 2), ca.MX.sym("u"), ca.MX.sym("p")
    stage = ocp.gauss_newton_stage("pendulum_neg", cost, ca.Function("inner", [X, U], [step(X, U), residual(X, U)]))
    assert ocp.negated(stage, "nothing") is stage
    neg = ocp.negated(stage, "x_next")
    assert neg.name() == "pendulum_neg_negated" and neg.name_out() == stage.name_out()
    c, x_next = stage(X, U, P)
    reference = ca.Function("reference", [X, U, P], [c, -x_next], ["x", "u", "p"], ["cost", "x_next"])
    rng = np.random.default_rng(3)

    def dense(values):
        return [np.array(ca.densify(v)) for v in values]

    def point(g):
        return [rng.standard_normal(g.sparsity_in(i).shape) for i in range(g.n_in())]

    for got, want in [(neg, reference), (neg.jacobian(), reference.jacobian()), (neg.reverse(1), reference.reverse(1))]:
        assert got.name_in() == want.name_in() and got.name_out() == want.name_out()
        for _ in range(3):
            args = point(want)
            for a, b in zip(dense(got.call(args)), dense(want.call(args))):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    hessian, curvature = neg.reverse(1).jacobian(), stage.reverse(1).jacobian()
    assert hessian.name_out() == curvature.name_out()
    for _ in range(3):
        args = point(hessian)
        jac = dict(zip(reference.jacobian().name_out(), dense(reference.jacobian()(*args[:5]))))
        got = dict(zip(hessian.name_out(), dense(hessian.call(args))))
        for name, want in zip(curvature.name_out(), dense(curvature.call(args))):
            adjoint, by = name.removeprefix("jac_adj_").split("_", 1)  # jac_adj_<input>_<by>
            if by.startswith("adj_"):  # d adj_<input> / d adj_<output> = d <output> / d <input>, transposed
                want = jac[f"jac_{by[4:]}_{adjoint}"].T
            np.testing.assert_allclose(got[name], want, rtol=1e-12, atol=1e-12, err_msg=name)


def test_stages_in_order_and_solver_choices():
    st = ocp.Stagewise()
    with pytest.raises(RuntimeError, match="once per stage"):
        st.control(1)
    x = st.state(2)
    with pytest.raises(RuntimeError, match="declare its control first"):
        st.step(x)
    st.control(0)
    st.step(x)
    with pytest.raises(RuntimeError, match="x_0 only"):
        st.state(2)
    with pytest.raises(ValueError, match="unknown solver .snopt.; valid: .ipopt., .fatrop."):
        ocp.solver_options(solver="snopt")
    with pytest.raises(ValueError, match="fatrop takes"):
        ocp.solver_options(hessian="limited-memory", solver="fatrop")
    with pytest.raises(ValueError, match="distinct names"):
        ocp.compile_stages([pendulum()[0]] * 2, "twice")


def test_fatrop_status_says_whether_it_solved():
    """fatrop reports a number: the stats say what it means in IPOPT's words and in fatrop's, with the number."""
    st = ocp.Stagewise()
    x = st.state(1)
    st.subject_to(x == 1)
    for _ in range(3):
        u = st.control(1)
        x = st.step(ca.sin(x) + u)
    st.opti.minimize(ca.sumsqr(ca.vertcat(*st.x)) + ca.sumsqr(ca.vertcat(*st.u)) + x**4)
    st.solver("fatrop", ocp.solver_options(solver="fatrop", max_iter=1))
    stats = ocp.solve(st.opti)
    assert not stats["success"] and stats["status"] == "Maximum_Iterations_Exceeded"
    assert stats["solver_status"] == "fatrop: MaxIterExceeded (return flag 1)"


def test_compile_stages_compiles_a_stage_without_controls_lean():
    """A stage without controls (an impulse, a terminal cost: a few knots of a problem) is compiled with
    ``STAGE_FLAGS`` whatever its size, a small stage with controls at -O3 (``DEFAULT_FLAGS``): the cache
    holds each library under those flags only, and each computes its next state."""
    step, residual = pendulum()
    x, p, y = ca.SX.sym("x", 2), ca.SX.sym("p"), ca.SX.sym("y", 3)
    stages = []
    for n_u, name in ((1, "pendulum_driven"), (0, "pendulum_free")):
        u = ca.SX.sym("u", n_u)
        cost = ca.Function("c", [x, u, p, y], [p * ca.sumsqr(y)])
        X, U = ca.MX.sym("x", 2), ca.MX.sym("u", n_u)
        torque = U if n_u else 0
        inner = ca.Function("inner", [X, U], [step(X, torque), residual(X, torque)])
        stages.append(ocp.gauss_newton_stage(name, cost, inner))
    keys = {f.name(): f"test_stagewise flags {f.name()} {secrets.token_hex(8)}" for f in stages}
    ocp.compile_stages(stages, "test_stagewise_flags", keys=keys)
    lean = {"pendulum_driven": False, "pendulum_free": True}
    for name, is_lean in lean.items():
        flags, other = (ocp.STAGE_FLAGS, codegen.DEFAULT_FLAGS)[:: 1 if is_lean else -1]
        (found,) = load_stages([name], "test_stagewise_flags", keys, flags=flags)
        (missing,) = load_stages([name], "test_stagewise_flags", keys, flags=other)
        assert found is not None and missing is None, name
        u = [0.5] if is_lean is False else []
        _, x_next = found([0.4, -0.2], u, 2.0)
        np.testing.assert_allclose(x_next.full(), step([0.4, -0.2], u[0] if u else 0).full(), atol=1e-14)
