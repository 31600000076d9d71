"""Centroidal dynamics: ccrba (A_G, h_G), dccrba, the rate of centroidal momentum and its derivatives.

References:
- Pinocchio on 30 random states per robot, evaluated in one vectorised call:
  ccrba (A_G, data.hg), dccrba, computeCentroidalMomentumTimeVariation,
  computeCentroidalDynamicsDerivatives;
- casadi's AD of h_G and dh_G/dt (centroidal_momentum_time_variation) along
  q (+) delta at delta = 0, and central differences;
- identities: A_G v = h_G, A_G a + dA_G/dt v = dh_G/dt, A_G[:3] / m = Jcom,
  and the rate of centroidal momentum equals the sum of the external wrenches
  plus gravity about the centre of mass when a = aba(q, v, tau, f_ext) with
  an unactuated base.
"""

import casadi as ca
import numpy as np
import pytest
from conftest import get_model, motion_states

import casrbd
from casrbd.testing import central_differences, rel_err

TOL = 1e-9
N_STATES = 30
ROBOTS = ("solo12", "hyq", "talos_reduced", "panda", "chain", "binary", "random")
OUTPUTS = ("Ag", "hg", "dAg", "hg (rate)", "dhg", "dh_dq", "dhdot_dq", "dhdot_dv", "dhdot_da")


SALT = 29  # this module's random states


@pytest.fixture(scope="module", params=ROBOTS)
def case(request):
    return motion_states(request.param, N_STATES, SALT)


@pytest.fixture(scope="module")
def values(case):
    """Every output on every state, from one mapped Function of the API's symbolic results."""
    m = case.model
    q, v, a = ca.SX.sym("q", m.nq), ca.SX.sym("v", m.nv), ca.SX.sym("a", m.nv)
    outs = [
        *casrbd.ccrba(m, q, v),
        casrbd.dccrba(m, q, v),
        *casrbd.centroidal_momentum_time_variation(m, q, v, a),
        *casrbd.centroidal_dynamics_derivatives(m, q, v, a),
        casrbd.jacobian_center_of_mass(m, q),
    ]
    f = ca.Function("centroidal", [q, v, a], outs).map(N_STATES)
    res = f(*[np.column_stack([s[k] for s in case.states]) for k in range(3)])
    return [np.split(np.array(r), N_STATES, axis=1) for r in res]


def test_match_pinocchio(case, values, pin):
    from oracle import Oracle

    m = case.model
    o = Oracle.from_robot(case.name, m)
    pm, pd = o.pmodel, o.data
    worst = dict.fromkeys(OUTPUTS, 0.0)
    for k, (q, v, a) in enumerate(case.states):
        Ag = o.from_jacobian(pin.ccrba(pm, pd, o.q(q), o.v(v)))
        hg = pd.hg.vector.copy()
        dAg = o.from_jacobian(pin.dccrba(pm, pd, o.q(q), o.v(v)))
        dhg = pin.computeCentroidalMomentumTimeVariation(pm, pd, o.q(q), o.v(v), o.v(a)).vector.copy()
        derivatives = pin.computeCentroidalDynamicsDerivatives(pm, pd, o.q(q), o.v(v), o.v(a))
        expected = [Ag, hg, dAg, hg, dhg, *[o.from_jacobian(np.array(d)) for d in derivatives]]
        for label, got, exp in zip(OUTPUTS, values, expected):
            worst[label] = max(worst[label], rel_err(got[k].reshape(exp.shape), exp))
    bad = {n: e for n, e in worst.items() if not e < TOL}
    assert not bad, f"{case.name}: relative errors vs Pinocchio {bad}"


def test_identities(case, values):
    m = case.model
    mass = m.mass
    for k, (_, v, a) in enumerate(case.states):
        Ag, hg, dAg, hg2, dhg, _, _, _, dhdot_da, Jcom = (x[k] for x in values)
        assert rel_err(Ag @ v, hg.ravel()) < 1e-12
        assert rel_err(hg2, hg) < 1e-12
        assert rel_err(Ag @ a + dAg @ v, dhg.ravel()) < 1e-11
        assert rel_err(Ag[:3] / mass, Jcom) < 1e-12
        assert rel_err(dhdot_da, Ag) < 1e-12  # two algorithms: the tree frame and the algorithm frames


FEET = {
    "solo12": ("FL_FOOT", "HR_FOOT"),
    "talos_reduced": ("left_sole_link", "right_sole_link"),
    "random": ("tip5", "tip11"),
}


@pytest.mark.parametrize("name", tuple(FEET))
def test_rate_of_momentum_is_the_sum_of_external_wrenches_and_gravity(name):
    """With a = aba(q, v, tau, f_ext) and tau zero on the free-flyer base, dh_G/dt = m g + the external
    wrenches about the centre of mass; wrenches given at frames in their axes, moved to the world with
    frame_placement (not the algorithm's path)."""
    m = get_model(name)
    rng = np.random.default_rng(7)
    for _ in range(3):
        q, v = casrbd.random_configuration(m, rng), rng.normal(size=m.nv)
        tau = rng.normal(size=m.nv)
        tau[:6] = 0
        f_ext = np.zeros((6, m.njoints))
        total = np.zeros(6)  # about the world origin, world axes
        for f in FEET[name]:
            frame = m.frames[m.frame_index(f)]
            w = 20 * rng.normal(size=6)  # at the frame, in its axes
            X = frame.placement
            R, p = np.asarray(X.R), np.asarray(X.p).ravel()
            f_ext[:, frame.joint] += np.r_[R @ w[:3], R @ w[3:] + np.cross(p, R @ w[:3])]
            oMf = casrbd.frame_placement(m, q, f)
            fw = oMf[:3, :3] @ w[:3]
            total += np.r_[fw, oMf[:3, :3] @ w[3:] + np.cross(oMf[:3, 3], fw)]
        a = casrbd.aba(m, q, v, tau, f_ext)
        _, dhg = casrbd.centroidal_momentum_time_variation(m, q, v, a)
        c = casrbd.center_of_mass(m, q)
        expected = np.r_[m.mass * m.gravity + total[:3], total[3:] - np.cross(c, total[:3])]
        assert rel_err(dhg, expected) < 1e-10


@pytest.mark.parametrize("name", ("solo12", "random", "binary"))
def test_derivatives_match_casadi_ad_and_finite_differences(name):
    m = get_model(name)
    states = motion_states(name, N_STATES, SALT).states
    q, v, a, d = (ca.SX.sym(s, n) for s, n in (("q", m.nq), ("v", m.nv), ("a", m.nv), ("d", m.nv)))
    hg, dhg = casrbd.centroidal_momentum_time_variation(m, casrbd.integrate(m, q, d), v, a)
    jac = [ca.jacobian(hg, d), ca.jacobian(dhg, d), ca.jacobian(dhg, v), ca.jacobian(dhg, a)]
    ad = ca.Function("ad", [q, v, a], [ca.substitute(x, d, ca.DM.zeros(m.nv)) for x in jac])
    f = casrbd.function(m, "centroidal_dynamics_derivatives")
    for s in states[:3]:
        for x, y in zip(f(*s), ad(*s)):
            assert rel_err(x.full(), y.full()) < 1e-10
    rate = casrbd.function(m, "centroidal_momentum_time_variation")
    got = [x.full() for x in f(*states[3])]
    dh = central_differences(m, lambda *x: rate(*x)[0].full().ravel(), *states[3], vectors=())
    dr = central_differences(m, lambda *x: rate(*x)[1].full().ravel(), *states[3])
    for x, y in zip(got, (*dh, *dr)):
        assert rel_err(x, y) < 1e-6


def test_dccrba_is_the_time_derivative_of_ccrba():
    """dA_G/dt by central differences along q (+) v t."""
    m = get_model("random")
    q, v, _ = motion_states("random", N_STATES, SALT).states[0]
    h = 1e-6
    fd = (casrbd.ccrba(m, casrbd.integrate(m, q, h * v)) - casrbd.ccrba(m, casrbd.integrate(m, q, -h * v))) / (2 * h)
    assert rel_err(casrbd.dccrba(m, q, v), fd) < 1e-7


def test_api_forms():
    m = get_model("solo12")
    q, v, _ = motion_states("solo12", N_STATES, SALT).states[0]
    Ag, hg = casrbd.ccrba(m, q, v)
    assert np.array_equal(casrbd.ccrba(m, q), Ag)
    assert Ag.shape == (6, m.nv) and hg.shape == (6,)
    with pytest.raises(ValueError, match="'v'"):
        casrbd.dccrba(m, q, v[:-1])


def test_centroidal_momentum_analytical_jacobian_is_installed():
    """casadi's Jacobian of a call of centroidal_momentum (jacobian="analytical") in an MX graph is the
    analytical one and equals AD's, also along directions that change the quaternions' norm."""
    from conftest import scale_normalized

    m = get_model("random")
    q, v, _ = motion_states("random", N_STATES, SALT).states[1]
    q = scale_normalized(m, q, 1.3)
    Q, V = ca.MX.sym("q", m.nq), ca.MX.sym("v", m.nv)
    jacs = []
    for mode in ("analytical", "ad"):
        f = casrbd.function(m, "centroidal_momentum", jacobian=mode)
        J = ca.Function("J", [Q, V], [ca.jacobian(f(Q, V), ca.vertcat(Q, V))])
        assert any(g.name().startswith("jac_") for g in J.find_functions()) == (mode == "analytical")
        jacs.append(J(q, v).full())
    assert rel_err(jacs[0], jacs[1]) < 1e-10
    assert rel_err(casrbd.centroidal_momentum(m, q, v), casrbd.ccrba(m, q, v)[1]) < 1e-14
