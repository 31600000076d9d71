"""casrbd.derivative_protocol names and lays out derivatives exactly as casadi does: its names and input and
output lists equal those of the Jacobian, reverse mode and reverse mode's Jacobian that casadi builds itself,
and a Function given derivatives through ``options`` hands them back to casadi by those names."""

import casadi as ca
import numpy as np

from casrbd import derivative_protocol as protocol


def user_function(sym=ca.SX):
    x, y = sym.sym("x", 3), sym.sym("y", 2, 2)
    return ca.Function("f", [x, y], [ca.sin(x) * y[0, 1], y @ y.T, ca.dot(x, x)], ["x", "y"], ["a", "M", "s"])


def test_names_and_layouts_are_casadis():
    for sym in (ca.SX, ca.MX):
        f = user_function(sym)
        jac, adj, hess = protocol.derivatives(f)
        assert jac.name() == protocol.jacobian_name("f") and adj.name() == protocol.adjoint_name("f")
        assert hess.name() == protocol.hessian_name("f")
        assert (jac.name_in(), jac.name_out()) == tuple(protocol.jacobian_io(f.name_in(), f.name_out()))
        assert (adj.name_in(), adj.name_out()) == tuple(protocol.adjoint_io(f.name_in(), f.name_out()))
        assert (hess.name_in(), hess.name_out()) == tuple(protocol.hessian_io(f.name_in(), f.name_out()))
        args, nominal, seeds = protocol.adjoint_symbols(sym, f)
        # shapes: casadi declares a nominal output that its adjoint does not use with no nonzeros
        assert [s.size() for s in args + nominal + seeds] == [adj.size_in(i) for i in range(adj.n_in())]
        assert all(protocol.is_nominal(n) for n in jac.name_in()[f.n_in() :])


def test_derivatives_installed_through_options_are_the_ones_casadi_uses():
    """A Function whose Jacobian and adjoint (with its own Jacobian) are written out as doubled casadi AD:
    casadi's Jacobian, gradient and Hessian of a call are then twice AD's, so they went through them."""
    f = user_function()
    jac, adj, hess = protocol.derivatives(f)

    def doubled(g):
        xs = g.sx_in()
        return ca.Function(g.name(), xs, [2 * y for y in g.call(xs)], g.name_in(), g.name_out())

    adjoint = doubled(adj)
    adjoint = protocol.with_options(adjoint, protocol.adjoint_options(doubled(hess)))
    g = protocol.with_options(f, protocol.options(doubled(jac), adjoint))
    assert {h.name() for h in protocol.shipped(g)} == {"jac_f", "adj1_f", "jac_adj1_f"}
    assert protocol.solver_set(g) == [g]
    assert [h.name() for h in protocol.solver_set(f)] == ["f", "jac_f", "adj1_f", "jac_adj1_f"]
    x, y = ca.MX.sym("x", 3), ca.MX.sym("y", 2, 2)
    s_f, s_g = f(x, y)[2] + ca.sum1(f(x, y)[0]), g(x, y)[2] + ca.sum1(g(x, y)[0])
    point = [np.array([0.3, -0.2, 0.7]), np.array([[0.5, 1.5], [-0.4, 0.9]])]
    for derivative in (ca.jacobian, ca.gradient):
        want, got = (ca.Function("d", [x, y], [derivative(s, x)])(*point) for s in (s_f, s_g))
        assert np.allclose(np.array(got), 2 * np.array(want), rtol=1e-14, atol=1e-14)
    want, got = (ca.Function("h", [x, y], [ca.hessian(s, x)[0]])(*point) for s in (s_f, s_g))
    assert np.allclose(np.array(got), 2 * np.array(want), rtol=1e-14, atol=1e-14)
