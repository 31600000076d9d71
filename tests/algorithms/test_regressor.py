"""Regressors: tau = Y(q, v, a) pi, kinetic and potential energy rows, and the pi-blocks of the
analytical Jacobians (d tau / d pi = Y, d a / d pi = -M^-1 Y).

References: Pinocchio's computeJointTorqueRegressor / computeKineticEnergyRegressor /
computePotentialEnergyRegressor (through tests/oracle.py, columns mapped by joint name), rnea
evaluated at random parameters through casrbd.function(..., parameters=True), and casadi's AD of
the dynamics graphs with respect to pi. The corpus: every robot of conftest.py and a tree with
every joint type including the universal joint (whose S depends on q).
"""

import casadi as ca
import numpy as np
import pytest
from conftest import ALL_ROBOTS, get_model

import casrbd
from casrbd.models import ALL_JOINT_TYPES, random_tree
from casrbd.parameters import log_cholesky_to_parameters, model_parameters, parameters_to_log_cholesky, with_parameters
from casrbd.testing import random_state, rel_err

TOL = 1e-10
UNIVERSAL = random_tree(9, ALL_JOINT_TYPES, branching=None, seed=71, name="every_type")
ROBOTS = ALL_ROBOTS + ("every_type",)


def robot(name):
    return UNIVERSAL if name == "every_type" else get_model(name)


def oracle(pin, name, model):
    from oracle import Oracle

    return Oracle.from_model(model) if name == "every_type" else Oracle.from_robot(name, model)


def pin_columns(o):
    """Columns of Pinocchio's regressors in casrbd's body order (Pinocchio: 10 per joint id)."""
    return np.concatenate([np.arange(10 * (jid - 1), 10 * jid) for jid in o.joint_ids])


def test_every_joint_type_is_in_the_corpus():
    assert {j.type for j in UNIVERSAL.joints} == set(ALL_JOINT_TYPES)


@pytest.mark.parametrize("name", ROBOTS)
def test_regressors_equal_pinocchios(pin, name):
    m = robot(name)
    o = oracle(pin, name, m)
    cols = pin_columns(o)
    rng = np.random.default_rng(3)
    for _ in range(2):
        q, v, a, _ = random_state(m, rng)
        pq, pv, pa = o.q(q), o.v(v), o.v(a)
        Y = casrbd.joint_torque_regressor(m, q, v, a)
        Y_pin = np.asarray(pin.computeJointTorqueRegressor(o.pmodel, o.data, pq, pv, pa))[o.v_index][:, cols]
        assert Y.shape == (m.nv, 10 * m.njoints)
        assert rel_err(Y, Y_pin) < TOL
        T = casrbd.kinetic_energy_regressor(m, q, v)
        T_pin = np.asarray(pin.computeKineticEnergyRegressor(o.pmodel, o.data, pq, pv)).reshape(-1)[cols]
        assert T.shape == (1, 10 * m.njoints) and rel_err(T[0], T_pin) < TOL
        V = casrbd.potential_energy_regressor(m, q)
        V_pin = np.asarray(pin.computePotentialEnergyRegressor(o.pmodel, o.data, pq)).reshape(-1)[cols]
        assert rel_err(V[0], V_pin) < TOL


@pytest.mark.parametrize("name", ROBOTS)
def test_regressor_times_parameters_is_rnea(name):
    """Y pi = rnea at random parameters (rnea built with pi as an input), and at the model's own."""
    m = robot(name)
    rnea_pi = casrbd.function(m, "rnea", parameters=True)
    Y = casrbd.function(m, "joint_torque_regressor")
    own = model_parameters(m)
    rng = np.random.default_rng(5)
    for _ in range(3):
        q, v, a, _ = random_state(m, rng)
        Yx = Y(q, v, a).full()
        assert rel_err(Yx @ own, casrbd.rnea(m, q, v, a)) < 1e-12
        for pi in (own * rng.uniform(0.5, 1.5, own.size), rng.normal(size=own.size)):
            tau = rnea_pi(q, v, a, pi).full()[:, 0]
            assert rel_err(Yx @ pi, tau) < 1e-12


@pytest.mark.parametrize("name", ("random", "every_type", "panda"))
def test_energy_regressors_give_the_energies(name):
    """Y_T pi = 1/2 v^T M v (crba), and the gradient of Y_V pi on the tangent space (casadi AD through
    integrate) is the generalized gravity."""
    m = robot(name)
    pi = model_parameters(m)
    q_sym, d = ca.SX.sym("q", m.nq), ca.SX.sym("d", m.nv)
    V = ca.mtimes(casrbd.potential_energy_regressor(m, casrbd.integrate(m, q_sym, d)), ca.DM(pi))
    # at d = 0 substituted in the expression, as casrbd.algorithms.ad does (exp's series at 0)
    gradient = ca.Function("dV", [q_sym], [ca.substitute(ca.jacobian(V, d).T, d, ca.DM.zeros(m.nv))])
    rng = np.random.default_rng(7)
    for _ in range(2):
        q, v, _, _ = random_state(m, rng)
        T = casrbd.kinetic_energy_regressor(m, q, v) @ pi
        assert rel_err(T, [0.5 * v @ casrbd.crba(m, q) @ v]) < 1e-12
        g = gradient(q).full()[:, 0]
        assert rel_err(g, casrbd.generalized_gravity(m, q)) < 1e-12


def test_armature_is_not_a_parameter():
    m = get_model("arm7").with_armature(np.linspace(0.1, 0.7, 7))
    rng = np.random.default_rng(9)
    q, v, a, _ = random_state(m, rng)
    Y = casrbd.joint_torque_regressor(m, q, v, a)
    assert rel_err(Y @ model_parameters(m) + m.armature * a, casrbd.rnea(m, q, v, a)) < 1e-12


def test_regressors_on_symbols():
    """Symbolic inputs give symbolic regressors, equal to the numeric ones where evaluated."""
    m = get_model("random")
    q, v, a = ca.SX.sym("q", m.nq), ca.SX.sym("v", m.nv), ca.SX.sym("a", m.nv)
    Y = casrbd.joint_torque_regressor(m, q, v, a)
    assert isinstance(Y, ca.SX) and Y.shape == (m.nv, 10 * m.njoints)
    x = random_state(m, np.random.default_rng(11))[:3]
    assert rel_err(ca.Function("Y", [q, v, a], [Y])(*x).full(), casrbd.joint_torque_regressor(m, *x)) < 1e-12


def test_regressor_bad_input_names_the_argument():
    m = get_model("arm7")
    with pytest.raises(ValueError, match="joint_torque_regressor: argument 'v' must have shape \\(7,\\)"):
        casrbd.joint_torque_regressor(m, np.zeros(7), np.zeros(6), np.zeros(7))
    with pytest.raises(ValueError, match="argument 'q' has non-finite entries at \\[2\\]"):
        casrbd.potential_energy_regressor(m, [0, 0, np.nan, 0, 0, 0, 0])


# ---------------------------------------------------------------- d / d pi in the analytical Jacobians

JACOBIAN_ROBOTS = ("random", "arm7", "solo12")  # every constant-subspace joint type; URDF arm; free flyer
VARIANTS = [
    ("rnea", {"method": "idsva"}),
    ("rnea", {"method": "chain_rule"}),
    ("aba", {"method": "idsva", "minv_product": "ltdl"}),
    ("aba", {"method": "chain_rule", "minv_product": "dmm"}),
]


def mx_jacobian(fun):
    """The Jacobian casadi takes of a call of ``fun`` in an MX graph, w.r.t. all inputs, as a Function."""
    syms = [ca.MX.sym(fun.name_in(i), fun.sparsity_in(i)) for i in range(fun.n_in())]
    J = ca.jacobian(fun(*syms), ca.vertcat(*[ca.vec(s) for s in syms]))
    return ca.Function("jac_of_" + fun.name(), syms, [J])


# every variant on arm7, the others split between the random tree and solo12; the rest with -m slow
FAST = {("random", 0), ("random", 2), ("solo12", 1), ("solo12", 3)} | {("arm7", k) for k in range(4)}
CASES = [
    pytest.param(
        name, f, o, id=f"{name}-{f}-{'-'.join(o.values())}", marks=() if (name, k) in FAST else pytest.mark.slow
    )
    for name in JACOBIAN_ROBOTS
    for k, (f, o) in enumerate(VARIANTS)
]


@pytest.mark.parametrize("name, fname, options", CASES)
def test_parameter_jacobians_equal_ad(name, fname, options):
    """jacobian="analytical" with parameters=True: the whole Jacobian (q, v, a or tau, f_ext, pi) that
    casadi takes in an MX graph is the analytical one and equals AD's; its pi block is Y (rnea) or
    -M^-1 Y at a = aba (aba)."""
    m = get_model(name)
    analytical = casrbd.function(m, fname, f_ext=True, jacobian="analytical", parameters=True, **options)
    default = casrbd.function(m, fname, f_ext=True, parameters=True)
    J_an, J_ad = mx_jacobian(analytical), mx_jacobian(default)
    assert f"jac_{analytical.name()}" in {f.name() for f in J_an.find_functions()}
    pi_block = analytical.jacobian()  # the custom Jacobian itself: blocks per input
    k_pi = [pi_block.name_out(i) for i in range(pi_block.n_out())].index(f"jac_{analytical.name_out(0)}_pi")
    theta = parameters_to_log_cholesky(m, model_parameters(m))
    rng = np.random.default_rng(13)
    for _ in range(2):
        q, v, x, F = random_state(m, rng)
        pi = log_cholesky_to_parameters(theta + rng.normal(scale=0.2, size=theta.size))  # other bodies
        args = (q, v, x, F, pi)
        assert rel_err(J_an(*args).full(), J_ad(*args).full()) < TOL
        block = pi_block(*args, default(*args))[k_pi].full()
        model = with_parameters(m, pi)
        if fname == "rnea":
            expected = casrbd.joint_torque_regressor(m, q, v, x)
        else:
            a = casrbd.aba(model, q, v, x, F)
            expected = -casrbd.minverse(model, q) @ casrbd.joint_torque_regressor(m, q, v, a)
        assert rel_err(block, expected) < TOL


def test_parameter_jacobian_without_f_ext_and_in_mx():
    """symbolic="MX", no external forces: d a / d pi still equals AD's."""
    m = get_model("arm7")
    analytical = casrbd.function(m, "aba", symbolic="MX", jacobian="analytical", parameters=True)
    default = casrbd.function(m, "aba", parameters=True)
    J_an, J_ad = mx_jacobian(analytical), mx_jacobian(default)
    rng = np.random.default_rng(17)
    q, v, tau, _ = random_state(m, rng)
    pi = model_parameters(m) * rng.uniform(0.7, 1.3, 10 * m.njoints)
    assert rel_err(J_an(q, v, tau, pi).full(), J_ad(q, v, tau, pi).full()) < TOL
