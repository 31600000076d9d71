"""second_order="analytical": rnea and aba Functions whose reverse mode and exact Hessian are the analytical ones.

casadi differentiates a call of such a Function through ``adj1_<name>`` (the
adjoint lam^T d out / d inputs) and the adjoint's Jacobian ``jac_adj1_<name>``
(the contracted Hessian and the d/dlam blocks). The reference is the same
Function with second_order="ad", which casadi differentiates by AD of its graph.
Hessians are taken as a user's graph takes them: on MX symbols, with respect to
every input, at configurations whose quaternions and (cos, sin) pairs have norm
1.3, so that the raw-q composition (tangent maps and the curvature of the
normalisation) is checked in every direction.
"""

import ctypes

import casadi as ca
import numpy as np
import pytest
from conftest import assert_exact_hessian_is_analytical, called, get_model, scale_normalized

import casrbd
from casrbd import codegen, ocp
from casrbd.testing import random_state, rel_err

TOL = 1e-10
SCALE = 1.3


def hessian_function(fun, with_f_ext):
    """ca.Function (inputs, lam) -> (Hessian of lam^T fun, its gradient), w.r.t. all inputs vectorised."""
    syms = [ca.MX.sym(fun.name_in(i), fun.sparsity_in(i)) for i in range(fun.n_in())]
    lam = ca.MX.sym("lam", fun.sparsity_out(0))
    phi = ca.dot(lam, fun(*syms))
    z = ca.vertcat(*[ca.vec(s) for s in syms])
    H, g = ca.hessian(phi, z)
    return ca.Function("hess_of_" + fun.name(), [*syms, lam], [H, g])


def state(model, seed, with_f_ext):
    rng = np.random.default_rng(seed)
    q, v, x, F = random_state(model, rng)
    args = [scale_normalized(model, q, SCALE), v, x] + ([F] if with_f_ext else [])
    return args + [rng.normal(size=model.nv)]


@pytest.mark.parametrize("with_f_ext", [False, True], ids=["no_f_ext", "f_ext"])
@pytest.mark.parametrize("dynamics", ["rnea", "aba"])
@pytest.mark.parametrize("robot", ["random", "arm7"])
def test_hessian_of_a_call_is_the_analytical_one_and_equals_ad(robot, dynamics, with_f_ext):
    model = get_model(robot)
    analytical = casrbd.function(model, dynamics, jacobian="analytical", second_order="analytical", f_ext=with_f_ext)
    reference = casrbd.function(model, dynamics, jacobian="analytical", second_order="ad", f_ext=with_f_ext)
    H, Href = hessian_function(analytical, with_f_ext), hessian_function(reference, with_f_ext)
    assert "jac_adj1_" + analytical.name() in called(H)
    assert not {"adj1_" + analytical.name(), "jac_adj1_" + analytical.name()} & called(Href)
    for seed in range(3):
        args = state(model, seed, with_f_ext)
        (h, g), (h_ref, g_ref) = H(*args), Href(*args)
        assert rel_err(g, g_ref) < TOL
        assert rel_err(h, h_ref) < TOL
        assert rel_err(h, h.T) < TOL


def test_second_order_options_are_checked():
    model = get_model("arm7")
    with pytest.raises(ValueError, match="needs jacobian='analytical'"):
        casrbd.function(model, "rnea", second_order="analytical")
    with pytest.raises(ValueError, match="offered for"):
        casrbd.function(model, "crba", jacobian="ad", second_order="analytical")
    with pytest.raises(ValueError, match="unknown second_order 'exact'; valid: 'ad', 'analytical'"):
        casrbd.function(model, "aba", jacobian="analytical", second_order="exact")


def test_old_spellings_warn_and_keep_working():
    """hessian= (now the solver's word) and method="analytical" (a method names its algorithm) are
    accepted for one release with a DeprecationWarning, and give the same Functions."""
    model = get_model("arm7")
    new = casrbd.function(model, "rnea", jacobian="analytical", second_order="ad")
    with pytest.warns(DeprecationWarning, match="second_order"):
        assert casrbd.function(model, "rnea", jacobian="analytical", hessian="ad") is new
    with pytest.warns(DeprecationWarning, match="method='second_order_adjoint'"):
        old = casrbd.function(model, "rnea_hessian", method="analytical")
    assert old is casrbd.function(model, "rnea_hessian", method="second_order_adjoint")


def test_compiled_library_ships_the_adjoint_and_its_jacobian(tmp_path, monkeypatch):
    monkeypatch.setenv("CASRBD_CACHE", str(tmp_path))
    model = get_model("arm7")
    f = casrbd.function(model, "rnea", jacobian="analytical", second_order="analytical")
    lib = codegen.compile_functions(f, flags=("-O0",))
    exported = ctypes.CDLL(str(lib.path))
    for prefix in ("", "jac_", "adj1_", "jac_adj1_"):
        assert hasattr(exported, prefix + f.name()), prefix
    H, Href = hessian_function(lib[f.name()], False), hessian_function(casrbd.function(model, "rnea"), False)
    assert {"adj1_" + f.name(), "jac_adj1_" + f.name()} <= called(H)
    args = state(model, 7, False)
    assert rel_err(H(*args)[0], Href(*args)[0]) < TOL


def swingup(model, hessian, record):
    """A small Opti problem on arm7: reach a configuration with minimum effort, explicit Euler on aba."""
    opti = ca.Opti()
    nodes, dt = 6, 0.05
    fd = casrbd.function(model, "aba", jacobian="analytical", second_order=hessian)
    Q, V, T = opti.variable(model.nv, nodes + 1), opti.variable(model.nv, nodes + 1), opti.variable(model.nv, nodes)
    opti.subject_to([Q[:, 0] == 0, V[:, 0] == 0, Q[:, -1] == 0.3, V[:, -1] == 0])
    for k in range(nodes):
        opti.subject_to(Q[:, k + 1] == Q[:, k] + dt * V[:, k])
        opti.subject_to(V[:, k + 1] == V[:, k] + dt * fd(Q[:, k], V[:, k], T[:, k]))
    opti.minimize(ca.sumsqr(T) + ca.sumsqr(V))
    opti.solver("ipopt", ocp.solver_options("exact"))
    opti.callback(lambda i: record.append(np.array(opti.debug.value(ca.vertcat(ca.vec(Q), ca.vec(T))))))
    stats = ocp.solve(opti)
    return opti, stats


def test_opti_exact_hessian_calls_the_analytical_second_order_function_and_takes_the_same_iterates():
    model = get_model("arm7")
    iterates = {}
    hess_l = {}
    for hessian in ("analytical", "ad"):
        iterates[hessian] = []
        opti, stats = swingup(model, hessian, iterates[hessian])
        assert stats["success"], stats["status"]
        hess_l[hessian] = opti.debug.casadi_solver.get_function("nlp_hess_l")
    name = casrbd.function(model, "aba", jacobian="analytical", second_order="analytical").name()
    assert_exact_hessian_is_analytical(hess_l, iterates, name, TOL)


def test_expand_drops_custom_second_derivatives_unless_postponed():
    """What the README says of expand: casadi's nlpsol with expand=True differentiates the expanded SX
    graph (a deliberately wrong custom Hessian changes nothing), with postpone_expand=True it keeps the
    custom derivatives (the wrong Hessian shows). A toy Function, so that the Hessian can be wrong."""
    n = 12
    x, out, lam = ca.SX.sym("x", n), ca.SX.sym("out_y", n), ca.SX.sym("adj_y", n)
    y = ca.vertcat(*[ca.sin(x[i]) * x[(i + 1) % n] ** 2 for i in range(n)])
    J = ca.jacobian(y, x)
    g = ca.mtimes(J.T, lam)

    def hess_l(scale, opts):
        jac = ca.Function("jac_adj1_f", [x, out, lam, ca.SX.sym("o", n)], [scale * ca.jacobian(g, x), ca.SX(n, n), J.T])
        adjoint = ca.Function("adj1_f", [x, out, lam], [g], {"custom_jacobian": jac, "jac_penalty": 0})
        f = ca.Function("f", [x], [y], {"cache": {"adj1_f": adjoint}, "jac_penalty": 0.5})
        X = ca.MX.sym("X", n)
        solver = ca.nlpsol("S", "ipopt", {"x": X, "f": ca.sumsqr(X), "g": f(X)}, {"print_time": False, **opts})
        return np.array(solver.get_function("nlp_hess_l")(np.linspace(0.3, 3.6, n), [], 1.0, np.ones(n)))

    assert rel_err(hess_l(3.0, {}), hess_l(1.0, {})) > 1e-3
    assert rel_err(hess_l(3.0, {"expand": True}), hess_l(1.0, {"expand": True})) == 0
    postponed = {"expand": True, "postpone_expand": True}
    assert rel_err(hess_l(3.0, postponed), hess_l(1.0, postponed)) > 1e-3
