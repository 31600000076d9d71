"""What a new user meets first: expand keeping the analytical derivatives, robots by name, limits on
the model, the messages and the command line."""

import casadi as ca
import numpy as np
import pytest

import casrbd
from casrbd.algorithms import SPECS
from casrbd.expand import keep_analytical
from casrbd.models import serial_chain
from casrbd.testing import rel_err

# --- expand ------------------------------------------------------------------------------------------


@pytest.fixture
def wrong_aba_jacobian(monkeypatch):
    """aba's analytical Jacobian, deliberately doubled: where the NLP's Jacobian shows the doubling,
    it calls casrbd's derivative Function; where it does not, casadi took its own AD."""
    spec = SPECS["aba"]

    def doubled(*args, **kwargs):
        return {k: 2 * block for k, block in spec.jacobian.impl(*args, **kwargs).items()}

    monkeypatch.setitem(SPECS, "aba", spec._replace(jacobian=spec.jacobian._replace(impl=doubled)))


def _opti_jacobian(options):
    """The constraint Jacobian of one Opti problem (a fresh model: nothing cached) at a fixed point,
    solved under ``options`` (no iteration), and the Opti."""
    model = serial_chain(3, seed=5)
    aba = casrbd.function(model, "aba", jacobian="analytical", hessian="ad")
    opti = ca.Opti()
    q, v, tau = (opti.variable(model.nv) for _ in range(3))
    opti.subject_to(aba(q, v, tau) == 0)
    opti.minimize(ca.sumsqr(tau))
    options = keep_analytical(options, opti)
    opti.solver("ipopt", {**options, "print_time": False, "ipopt.print_level": 0, "ipopt.max_iter": 0})
    opti.solve_limited()
    jac_g = opti.debug.casadi_solver.get_function("nlp_jac_g")
    x = np.linspace(0.2, 1.4, 3 * model.nv)
    plain = casrbd.function(model, "aba")  # the AD reference
    X = ca.SX.sym("x", 3 * model.nv)
    ref = ca.Function("j", [X], [ca.jacobian(plain(X[:3], X[3:6], X[6:]), X)])(x)
    return rel_err(np.array(jac_g(x, [])[1]), np.array(ref)), options


def test_expand_keeps_the_analytical_jacobian_through_keep_analytical(wrong_aba_jacobian, recwarn, monkeypatch):
    """The same Opti problem: in MX and with expand through keep_analytical the NLP calls casrbd's
    (doubled) Jacobian; with postpone_expand=False, expand drops it for AD, with a warning naming it."""
    monkeypatch.setattr("casrbd.expand._warned", set())
    err, _ = _opti_jacobian({})
    assert err > 0.1
    err, options = _opti_jacobian({"expand": True})
    assert options["postpone_expand"] is True and err > 0.1
    assert not recwarn.list
    with pytest.warns(UserWarning, match=r"chain3_revolute_aba.*postpone_expand=True"):
        err, _ = _opti_jacobian({"expand": True, "postpone_expand": False})
    assert err < 1e-12
