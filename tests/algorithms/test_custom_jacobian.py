"""jacobian="analytical": rnea and aba Functions whose casadi Jacobian is the analytical one.

The reference is the default Function (jacobian="ad"), which casadi
differentiates by AD. Both are differentiated the way a user's graph would
be: called on MX symbols, ca.jacobian with respect to all inputs vectorised
(q, v, a or tau, and f_ext), wrapped in a ca.Function and evaluated. The
configurations have quaternions and planar (cos, sin) pairs of norm 1.3, so
that the q columns include the directions that change their norm: the
analytical d/dq (on the tangent space) composed with the tangent map of raw q
must still equal casadi's d/d(raw q).

Graph inspection shows the custom Jacobian is what casadi uses (the Jacobian
graph calls "jac_<name>"), and an Opti problem solved in both modes has the
same solution.
"""

import casadi as ca
import numpy as np
import pytest
from conftest import get_model, normalized_slices, scale_normalized

import casrbd
from casrbd.models import CONSTANT_SUBSPACE_TYPES, random_tree
from casrbd.testing import central_differences, random_state, rel_err

TOL = 1e-10
N_STATES = 5
SCALE = 1.3  # norm of every quaternion and planar (cos, sin) pair
ROBOTS = ("random", "solo12")  # every constant-subspace joint type (free-flyer root); a free-flyer URDF robot
METHODS = ("chain_rule", "idsva")
PRODUCTS = ("dmm", "aza", "ltdl")

# (function, jacobian options): rnea with each method, aba with IDSVA and each product and with the
# chain rule and the default product
VARIANTS = (
    [("rnea", {"method": m}) for m in METHODS]
    + [("aba", {"method": "idsva", "minv_product": p}) for p in PRODUCTS]
    + [("aba", {"method": "chain_rule", "minv_product": "ltdl"})]
)
VARIANT_IDS = [f"{f}-{'-'.join(o.values())}" for f, o in VARIANTS]


def states(model, seed):
    """N_STATES random (q, v, x, f_ext) with every normalised part of q of norm SCALE."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(N_STATES):
        q, v, x, F = random_state(model, rng)
        out.append((scale_normalized(model, q, SCALE), v, x, F))
    return out


def mx_jacobian(fun):
    """ca.Function of the Jacobian casadi takes of ``fun`` inside an MX graph, w.r.t. all inputs."""
    syms = [ca.MX.sym(fun.name_in(i), fun.sparsity_in(i)) for i in range(fun.n_in())]
    out = fun(*syms)
    J = ca.jacobian(out, ca.vertcat(*[ca.vec(s) for s in syms]))
    return ca.Function("jac_of_" + fun.name(), syms, [J])


def inputs(state, with_f_ext):
    q, v, x, F = state
    return [q, v, x] + ([F] if with_f_ext else [])


def called_function_names(fun):
    return {f.name() for f in fun.find_functions()}


@pytest.fixture(scope="module", params=ROBOTS)
def robot(request):
    return request.param


def test_configurations_are_not_normalized():
    """The states really have non-unit quaternions and (cos, sin) pairs, on both robots."""
    for name in ROBOTS:
        m = get_model(name)
        q = states(m, 0)[0][0]
        norms = [np.linalg.norm(q[s]) for _, s in normalized_slices(m)]
        assert norms and np.allclose(norms, SCALE, rtol=1e-14, atol=0)
    assert set(CONSTANT_SUBSPACE_TYPES) <= {j.type for j in get_model("random").joints}


@pytest.mark.parametrize("with_f_ext", [False, True], ids=["no_f_ext", "f_ext"])
@pytest.mark.parametrize("fname, options", VARIANTS, ids=VARIANT_IDS)
def test_analytical_jacobian_equals_ad_jacobian(robot, fname, options, with_f_ext):
    m = get_model(robot)
    # the first derivatives alone (the analytical Hessian: test_second_order_wiring.py)
    analytical = casrbd.function(m, fname, f_ext=with_f_ext, jacobian="analytical", second_order="ad", **options)
    default = casrbd.function(m, fname, f_ext=with_f_ext)
    J_analytical, J_ad = mx_jacobian(analytical), mx_jacobian(default)

    # the analytical Function's Jacobian graph calls its custom Jacobian, the default one's does not
    assert f"jac_{analytical.name()}" in called_function_names(J_analytical)
    assert not any(n.startswith("jac_") for n in called_function_names(J_ad))

    n_in = m.nq + 2 * m.nv + (6 * m.njoints if with_f_ext else 0)
    for k, state in enumerate(states(m, 31)):
        args = inputs(state, with_f_ext)
        # the same value
        assert rel_err(analytical(*args).full(), default(*args).full()) < 1e-12
        A, D = J_analytical(*args).full(), J_ad(*args).full()
        assert A.shape == D.shape == (m.nv, n_in)
        err = rel_err(A, D)
        assert err < TOL, f"{fname} {options} state {k}: Jacobian relative error {err:.3g}"


@pytest.mark.parametrize("with_f_ext", [False, True], ids=["no_f_ext", "f_ext"])
@pytest.mark.parametrize("fname", ["rnea", "aba"])
def test_jacobian_columns_of_each_input(fname, with_f_ext):
    """Block by block on the random tree (chain_rule): d/dq, d/dv, d/dx and d/df_ext, with the
    analytical blocks read from their own definitions: d/dv, d/dx from rnea_/aba_derivatives,
    d/dq through the tangent map (zero along every normalised part's own direction)."""
    m = get_model("random")
    analytical = casrbd.function(m, fname, f_ext=with_f_ext, jacobian="analytical", method="chain_rule")
    J = mx_jacobian(analytical)
    derivatives = casrbd.rnea_derivatives if fname == "rnea" else casrbd.aba_derivatives
    for q, v, x, F in states(m, 37)[:2]:
        A = J(*inputs((q, v, x, F), with_f_ext)).full()
        d_dq, d_dv, d_dx = derivatives(m, q, v, x, F if with_f_ext else None, method="chain_rule")
        assert rel_err(A[:, m.nq : m.nq + m.nv], d_dv) < TOL
        assert rel_err(A[:, m.nq + m.nv : m.nq + 2 * m.nv], d_dx) < TOL
        # moving q along itself on a normalised part (scaling its norm) changes nothing
        for _, s in normalized_slices(m):
            assert np.max(np.abs(A[:, s] @ q[s])) < 1e-10 * max(1, np.abs(A).max())
        # the q columns along the tangent: with p(delta) = q (+) delta with its normalised parts
        # scaled back to norm SCALE (integrate returns unit ones), p(0) = q and f(p(delta)) =
        # f(q (+) delta), so d/d(raw q) p'(0) = d/d delta, the tangent derivative d_dq.
        # p'(0) by central differences of casrbd.integrate (independent of casadi's AD)
        (dp,) = central_differences(
            m, lambda q, d: casrbd.integrate(m, q, d), q, np.zeros(m.nv), h=1e-7, tangent=(), vectors=(1,)
        )
        for _, s in normalized_slices(m):
            dp[s] *= SCALE
        assert rel_err(A[:, : m.nq] @ dp, d_dq) < 1e-6
        if with_f_ext:
            assert A.shape[1] == m.nq + 2 * m.nv + 6 * m.njoints


def test_custom_jacobian_is_the_functions_jacobian():
    """casadi's Function.jacobian() of the analytical Function is jac_<name>, and its outputs
    are the blocks with respect to each input."""
    m = get_model("random")
    for fname in ("rnea", "aba"):
        F = casrbd.function(m, fname, f_ext=True, jacobian="analytical", method="idsva")
        jac = F.jacobian()
        assert jac.name() == f"jac_{F.name()}"
        assert jac.n_out() == 4
        assert [jac.size_out(i) for i in range(4)] == [(m.nv, m.nq), (m.nv, m.nv), (m.nv, m.nv), (m.nv, 6 * m.njoints)]


@pytest.mark.parametrize("fname", ["rnea", "aba"])
def test_analytical_hessian_equals_ad_hessian(fname):
    """Second derivatives (casadi differentiates the custom Jacobian): the Hessian of
    |f(q, v, x, f_ext)|^2 with respect to all inputs, at non-unit quaternions, on a
    6-body tree with every constant-subspace joint type."""
    m = random_tree(6, CONSTANT_SUBSPACE_TYPES, branching=None, seed=59)  # small: the aba Hessian graph is big
    analytical = casrbd.function(m, fname, f_ext=True, jacobian="analytical", method="idsva")
    default = casrbd.function(m, fname, f_ext=True)
    hessians = []
    for fun in (analytical, default):
        syms = [ca.MX.sym(fun.name_in(i), fun.sparsity_in(i)) for i in range(fun.n_in())]
        x = ca.vertcat(*[ca.vec(s) for s in syms])
        H, _ = ca.hessian(ca.sumsqr(fun(*syms)), x)
        hessians.append(ca.Function("H", syms, [H]))
    assert f"jac_{analytical.name()}" in called_function_names(hessians[0])
    for state in states(m, 41)[:2]:
        args = inputs(state, True)
        assert rel_err(hessians[0](*args).full(), hessians[1](*args).full()) < 1e-9


def test_sx_callers_get_the_ad_jacobian():
    """Called on SX symbols the analytical Function is inlined: its SX Jacobian is AD's."""
    m = get_model("random")
    analytical = casrbd.function(m, "rnea", f_ext=True, jacobian="analytical", method="idsva")
    default = casrbd.function(m, "rnea", f_ext=True)
    jacobians = []
    for fun in (analytical, default):
        syms = [ca.SX.sym(fun.name_in(i), fun.sparsity_in(i)) for i in range(fun.n_in())]
        jacobians.append(ca.Function("J", syms, [ca.jacobian(fun(*syms), ca.vertcat(*[ca.vec(s) for s in syms]))]))
    assert not any(n.startswith("jac_") for n in called_function_names(jacobians[0]))
    for state in states(m, 43)[:2]:
        args = inputs(state, True)
        assert rel_err(jacobians[0](*args).full(), jacobians[1](*args).full()) < 1e-12


def test_mx_symbolic_analytical_function():
    """symbolic="MX" with jacobian="analytical" works the same."""
    m = get_model("random")
    analytical = casrbd.function(m, "aba", symbolic="MX", f_ext=True, jacobian="analytical", method="idsva")
    default = casrbd.function(m, "aba", f_ext=True)
    assert analytical.is_a("MXFunction")
    J_analytical, J_ad = mx_jacobian(analytical), mx_jacobian(default)
    assert f"jac_{analytical.name()}" in called_function_names(J_analytical)
    for state in states(m, 47)[:2]:
        args = inputs(state, True)
        assert rel_err(J_analytical(*args).full(), J_ad(*args).full()) < TOL


# ---------------------------------------------------------------- in an optimisation problem


def _solve(opti, x):
    opti.solver(
        "ipopt",
        {"print_time": False},
        {"print_level": 0, "tol": 1e-12, "acceptable_tol": 1e-12, "max_iter": 200, "sb": "yes"},
    )
    sol = opti.solve()
    stats = opti.stats()
    assert stats["success"], stats["return_status"]
    return sol.value(x), opti.debug.casadi_solver


def inverse_dynamics_trajectory(jacobian):
    """ur5: a 3-step trajectory from rest at q_start to q_goal minimising the squared torques."""
    m = get_model("ur5")
    F = casrbd.function(m, "rnea", jacobian=jacobian, **({"method": "idsva"} if jacobian == "analytical" else {}))
    dt, N = 0.2, 3
    q_start = np.array([0.1, -0.8, 1.2, -0.3, 0.5, 0.2])
    q_goal = np.array([0.4, -0.6, 1.0, 0.1, 0.3, -0.2])
    opti = ca.Opti()
    Q = opti.variable(m.nq, N + 1)
    opti.set_initial(Q, np.linspace(q_start, q_goal, N + 1).T)
    V = [(Q[:, k + 1] - Q[:, k]) / dt for k in range(N)]
    cost = 0
    for k in range(N):
        v_prev = V[k - 1] if k else ca.DM.zeros(m.nv)
        cost += ca.sumsqr(F(Q[:, k], v_prev, (V[k] - v_prev) / dt))
    opti.minimize(cost + 1e-3 * ca.sumsqr(Q))
    opti.subject_to(Q[:, 0] == q_start)
    opti.subject_to(Q[:, N] == q_goal)
    return _solve(opti, Q)


def forward_dynamics_with_forces(jacobian):
    """arm7 with external forces: the smallest torques and configuration change reaching a
    wanted acceleration, aba(q, v, tau, f_ext) = a_ref as a constraint."""
    m = get_model("arm7")
    F = casrbd.function(
        m,
        "aba",
        f_ext=True,
        jacobian=jacobian,
        **({"method": "chain_rule", "minv_product": "aza"} if jacobian == "analytical" else {}),
    )
    q_ref, v, a_ref, f_ext = random_state(m, np.random.default_rng(53))
    opti = ca.Opti()
    q, tau = opti.variable(m.nq), opti.variable(m.nv)
    opti.set_initial(q, q_ref)
    opti.minimize(ca.sumsqr(tau) + 100 * ca.sumsqr(q - q_ref))
    opti.subject_to(F(q, v, tau, 0.1 * f_ext) == a_ref)
    return _solve(opti, ca.vertcat(q, tau))


@pytest.mark.parametrize("problem", [inverse_dynamics_trajectory, forward_dynamics_with_forces])
def test_opti_gives_the_same_solution_in_both_modes(problem):
    x_ad, solver_ad = problem("ad")
    x_analytical, solver_analytical = problem("analytical")
    # the solver of the analytical problem evaluates the custom Jacobian (gradient, Jacobian of
    # the constraints, Hessian of the Lagrangian), that of the default problem never does
    names = set()
    for n in ("nlp_grad_f", "nlp_jac_g", "nlp_hess_l"):
        names |= called_function_names(solver_analytical.get_function(n))
        assert not any(f.startswith("jac_") for f in called_function_names(solver_ad.get_function(n)))
    assert any(f.startswith("jac_") for f in names), names
    err = np.max(np.abs(np.asarray(x_analytical) - np.asarray(x_ad)))
    assert err < 1e-6, f"solutions differ by {err:.3g}"


# ---------------------------------------------------------------- options


def test_unknown_jacobian_option_raises_listing_valid_ones():
    m = get_model("arm7")
    with pytest.raises(ValueError, match="exact") as info:
        casrbd.function(m, "rnea", jacobian="exact")
    assert "'ad'" in str(info.value) and "'analytical'" in str(info.value)


@pytest.mark.parametrize(
    "fname", ["crba", "minverse", "nonlinear_effects", "rnea_derivatives", "aba_derivatives", "frame_jacobian"]
)
def test_analytical_jacobian_only_for_rnea_and_aba(fname):
    m = get_model("arm7")
    options = {"frame": 0} if fname == "frame_jacobian" else {}
    with pytest.raises(ValueError, match="analytical") as info:
        casrbd.function(m, fname, jacobian="analytical", **options)
    assert "'rnea'" in str(info.value) and "'aba'" in str(info.value)


@pytest.mark.parametrize("fname", ["rnea", "aba"])
def test_analytical_jacobian_unknown_method_raises(fname):
    m = get_model("arm7")
    with pytest.raises(ValueError, match="newton") as info:
        casrbd.function(m, fname, jacobian="analytical", method="newton")
    for valid in ("chain_rule", "idsva", "ad"):
        assert repr(valid) in str(info.value)


def test_analytical_jacobian_unknown_minv_product_raises():
    m = get_model("arm7")
    with pytest.raises(ValueError, match="cholesky") as info:
        casrbd.function(m, "aba", jacobian="analytical", minv_product="cholesky")
    assert "'dmm'" in str(info.value) and "'aza'" in str(info.value)


def test_analytical_jacobian_default_method_and_caching():
    m = get_model("random")
    F = casrbd.function(m, "rnea", jacobian="analytical")
    assert F is casrbd.function(m, "rnea", jacobian="analytical", method="idsva")
    assert F is not casrbd.function(m, "rnea")
    assert F is not casrbd.function(m, "rnea", jacobian="analytical", method="chain_rule")
