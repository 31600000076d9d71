"""Inertial parameters as Function inputs, physical consistency, the log-Cholesky parametrization
and the base parameters.

References: the numeric Functions (model constants) for the Functions built with pi as an input;
Pinocchio's LogCholeskyParameters and PseudoInertia for the parametrization; eigenvalues (numpy) for
the consistency test and its pivots; for the base parameters the classic counts of planar arms
(Khalil & Dombre, *Modeling, Identification and Control of Robots*, 2002: a planar revolute chain
under gravity in its plane has 3 per link, ZZ_R, MX_R, MY_R, and without gravity link 1 keeps
ZZ_R only) and the rank (numpy's SVD) of regressors stacked at states other than those used.
"""

import numpy as np
import pytest
from conftest import get_model

import casrbd
from casrbd import identification
from casrbd.joints import Revolute
from casrbd.models import ALL_JOINT_TYPES, random_inertia, random_tree
from casrbd.parameters import (
    body_parameters,
    inconsistent_bodies,
    log_cholesky_to_parameters,
    model_parameters,
    parameters_to_log_cholesky,
    pseudo_inertia,
    pseudo_inertia_pivots,
    with_parameters,
)
from casrbd.spatial import SE3, Inertia
from casrbd.testing import random_state, rel_err

UNIVERSAL = random_tree(7, ALL_JOINT_TYPES, branching=None, seed=73, name="every_type")

# (function, options, has f_ext); the derivative algorithms need constant motion subspaces
CORE = [
    ("rnea", {}, True),
    ("nonlinear_effects", {}, False),
    ("generalized_gravity", {}, False),
    ("crba", {}, False),
    ("aba", {}, True),
    ("minverse", {}, False),
]
DERIVATIVES = [
    ("rnea_derivatives", {"method": "idsva"}, True),
    ("rnea_derivatives", {"method": "chain_rule"}, True),
    ("aba_derivatives", {"method": "idsva", "minv_product": "ltdl"}, True),
    ("aba_derivatives", {"method": "chain_rule", "minv_product": "aza"}, True),
]


def _check_own_parameters(m, cases, seed):
    pi = model_parameters(m)
    rng = np.random.default_rng(seed)
    for fname, options, f_ext in cases:
        with_pi = casrbd.function(m, fname, f_ext=f_ext, parameters=True, **options)
        numeric = casrbd.function(m, fname, f_ext=f_ext, **options)
        assert with_pi.name_in()[-1] == "pi" and with_pi.size_in(with_pi.n_in() - 1) == (10 * m.njoints, 1)
        q, v, x, F = random_state(m, rng)
        args = [q, v, x][: numeric.n_in() - f_ext] + ([F] if f_ext else [])
        for a, b in zip(with_pi.call(args + [pi]), numeric.call(args)):
            assert rel_err(a.full(), b.full()) < 1e-12, (fname, options)


@pytest.mark.parametrize(
    "name, derivatives",
    [
        ("arm7", DERIVATIVES),
        ("random", DERIVATIVES[::2]),  # idsva
        ("solo12", DERIVATIVES[1::2]),  # chain rule
        pytest.param("random", DERIVATIVES[1::2], marks=pytest.mark.slow),
        pytest.param("solo12", DERIVATIVES[::2], marks=pytest.mark.slow),
    ],
)
def test_functions_with_parameters_equal_the_numeric_ones(name, derivatives):
    _check_own_parameters(get_model(name), CORE + derivatives, 19)


def test_functions_with_parameters_on_every_joint_type():
    _check_own_parameters(UNIVERSAL, CORE, 23)


def test_every_function_takes_parameters():
    """Every Function of casrbd.algorithms.SPECS (frames given by name; those that need a contact set are
    left to the modules that define contacts), built with pi and evaluated at the model's own pi, equals
    the numeric one, on arm7 with its tool frame."""
    from casrbd.algorithms import SPECS
    from casrbd.spec import REQUIRED

    m = get_model("arm7")
    pi, rng = model_parameters(m), np.random.default_rng(59)
    checked = []
    for name, s in SPECS.items():
        required = {k for k, o in s.options.items() if o.default is REQUIRED}
        if required - {"frame"}:
            continue
        options = {"frame": m.frames[-1].name} if required else {}
        with_pi = casrbd.function(m, name, parameters=True, **options)
        numeric = casrbd.function(m, name, **options)
        args = [
            casrbd.random_configuration(m, rng) if arg.kind == "configuration" else rng.normal(size=m.nv)
            for arg in s.inputs
        ]
        for a, b in zip(with_pi.call(args + [pi]), numeric.call(args)):
            assert rel_err(a.full(), b.full()) < 1e-12, name
        checked.append(name)
    assert {"rnea", "aba", "crba", "minverse", "joint_torque_regressor", "kinematics_derivatives"} <= set(checked)


def test_default_functions_do_not_take_parameters():
    m = get_model("arm7")
    assert casrbd.function(m, "rnea").name_in() == ["q", "v", "a"]
    assert casrbd.function(m, "rnea", jacobian="analytical").jacobian().n_out() == 3


# ---------------------------------------------------------------- consistency and log-Cholesky


def test_log_cholesky_equals_pinocchios(pin):
    rng = np.random.default_rng(29)
    thetas = rng.normal(size=(20, 10))
    pis = log_cholesky_to_parameters(thetas.reshape(-1)).reshape(20, 10)
    for theta, pi in zip(thetas, pis):
        reference = pin.LogCholeskyParameters(theta).toDynamicParameters()
        assert rel_err(pi, reference) < 1e-12
        assert rel_err(pseudo_inertia(pi), pin.PseudoInertia.FromDynamicParameters(pi).toMatrix()) < 1e-12
        assert np.linalg.eigvalsh(pseudo_inertia(pi)).min() > 0


def test_log_cholesky_is_smooth_casadi_and_inverts():
    import casadi as ca

    theta = ca.SX.sym("theta", 20)
    pi = log_cholesky_to_parameters(theta)
    f = ca.Function("pi", [theta], [pi, ca.jacobian(pi, theta)])
    rng = np.random.default_rng(31)
    x = rng.normal(size=20)
    value, J = f(x)
    assert rel_err(value.full()[:, 0], log_cholesky_to_parameters(x)) < 1e-14
    assert np.linalg.matrix_rank(J.full()) == 20  # a local diffeomorphism onto consistent parameters
    m = random_tree(2, ("revolute",), seed=1)
    assert rel_err(parameters_to_log_cholesky(m, log_cholesky_to_parameters(x)), x) < 1e-12
    for name in ("panda", "solo12"):  # real robots' bodies round-trip
        m = get_model(name)
        pi = model_parameters(m)
        assert rel_err(log_cholesky_to_parameters(parameters_to_log_cholesky(m, pi)), pi) < 1e-12


def random_pseudo_inertia_parameters(rng, definite):
    """pi of a random symmetric J: positive definite, or with one negative eigenvalue."""
    Q, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    eig = rng.uniform(0.01, 1.0, 4) * (1 if definite else np.array([1, 1, 1, -1])[rng.permutation(4)])
    J = Q @ np.diag(eig) @ Q.T
    Sigma = J[:3, :3]
    I = np.trace(Sigma) * np.eye(3) - Sigma
    return np.r_[J[3, 3], J[:3, 3], I[0, 0], I[0, 1], I[1, 1], I[0, 2], I[1, 2], I[2, 2]]


def test_pivots_are_positive_exactly_when_pseudo_inertia_is_definite():
    rng = np.random.default_rng(37)
    for k in range(200):
        pi = random_pseudo_inertia_parameters(rng, definite=k % 2 == 0)
        J = pseudo_inertia(pi)
        pivots = pseudo_inertia_pivots(pi)
        assert np.isclose(np.prod(pivots), np.linalg.det(J), rtol=1e-9, atol=1e-15)
        if pi[0] > 0:  # a negative mass is the first pivot
            assert (np.linalg.eigvalsh(J).min() > 0) == (pivots.min() > 0)
        else:
            assert pivots[0] <= 0


def test_physical_bodies_are_consistent_and_bad_ones_are_not():
    rng = np.random.default_rng(41)
    m = random_tree(3, seed=2)
    assert not inconsistent_bodies(m, np.concatenate([random_inertia(rng).dynamic_parameters() for _ in range(3)]))
    # a body whose principal moments violate the triangle inequality: 1 + 1 < 3
    bad = Inertia.from_com(1.0, [0.1, 0, 0], np.diag([1.0, 1.0, 3.0])).dynamic_parameters()
    pi = np.concatenate([random_inertia(rng).dynamic_parameters(), bad, random_inertia(rng).dynamic_parameters()])
    assert [name for name, _ in inconsistent_bodies(m, pi)] == [m.names[1]]
    with pytest.raises(ValueError, match=f"body '{m.names[1]}' of model .* is not physically consistent"):
        with_parameters(m, pi)
    with_parameters(m, pi, consistent=False)  # allowed when asked for


def test_bad_parameters_name_the_body():
    m = random_tree(3, seed=3)
    pi = model_parameters(m)
    with pytest.raises(ValueError, match=f"got 27: body '{m.names[2]}' \\(number 2\\) gets 7 of its 10"):
        with_parameters(m, pi[:-3])
    with pytest.raises(ValueError, match=f"got 32: 2 entries are left after the last body '{m.names[2]}'"):
        with_parameters(m, np.r_[pi, 1.0, 2.0])
    groups = [pi[:10], pi[10:19], pi[20:]]
    with pytest.raises(ValueError, match=f"body '{m.names[1]}' has 9 parameters, expected 10"):
        body_parameters(m, groups)
    pi_nan = pi.copy()
    pi_nan[13] = np.nan
    with pytest.raises(ValueError, match=f"body '{m.names[1]}' has non-finite parameters \\['mc_z'\\]"):
        with_parameters(m, pi_nan)
    pi_neg = pi.copy()
    pi_neg[20] = -1.0
    with pytest.raises(ValueError, match=f"body '{m.names[2]}' .* not physically consistent"):
        parameters_to_log_cholesky(m, pi_neg)
    import casadi as ca

    with pytest.raises(ValueError, match="a column of 30 for its 3 bodies; got shape \\(20, 1\\)"):
        with_parameters(m, ca.SX.sym("pi", 20))


def test_with_parameters_round_trip():
    m = get_model("arm7")
    same = with_parameters(m, model_parameters(m))
    q, v, a, _ = random_state(m, np.random.default_rng(43))
    assert rel_err(casrbd.rnea(same, q, v, a), casrbd.rnea(m, q, v, a)) < 1e-13


# ---------------------------------------------------------------- base parameters


def planar_chain(n, gravity):
    """n revolute joints about z, links 0.5 m along x, gravity in the plane or along the axes."""
    rng = np.random.default_rng(n)
    bodies = [
        casrbd.Body(f"j{i}", Revolute([0, 0, 1]), i - 1, SE3(np.eye(3), [0.5 if i else 0.0, 0, 0]), random_inertia(rng))
        for i in range(n)
    ]
    return casrbd.Model(f"planar{n}", bodies, gravity=gravity)


def check_first_independent_columns(base, W):
    """The rule that makes the choice reproducible: parameter k is independent exactly when column k of
    W raises the rank (numpy's SVD, columns scaled to a largest entry of one) of the columns before it."""
    scale = np.abs(W).max(axis=0)
    W = W / np.where(scale > 1e-12 * scale.max(), scale, np.inf)
    ranks = [np.linalg.matrix_rank(W[:, :k]) for k in range(W.shape[1] + 1)]
    assert base.independent == tuple(k for k in range(W.shape[1]) if ranks[k + 1] > ranks[k])


@pytest.mark.parametrize("n", (1, 2, 3))
def test_base_parameter_counts_of_planar_arms(n):
    vertical = identification.base_parameters(planar_chain(n, (0, -9.81, 0)))
    assert vertical.count == 3 * n
    # Khalil & Dombre's grouping keeps link 1's ZZ_R, MX_R, MY_R (the masses grouped into them); the
    # rule (first independent columns) keeps the same ones by name
    assert vertical.names[:3] == ("j0.mc_x", "j0.mc_y", "j0.I_zz")
    horizontal = identification.base_parameters(planar_chain(n, (0, 0, -9.81)))
    assert horizontal.count == 3 * n - 2 and horizontal.names[0] == "j0.I_zz"
    for base, m in ((vertical, planar_chain(n, (0, -9.81, 0))), (horizontal, planar_chain(n, (0, 0, -9.81)))):
        rng = np.random.default_rng(5)
        states = [random_state(m, rng)[:3] for _ in range(6 * n)]
        check_first_independent_columns(base, identification.stacked_regressor(m, *zip(*states)))


@pytest.mark.parametrize("name", ("arm7", pytest.param("random", marks=pytest.mark.slow)))
def test_the_choice_of_base_parameters_does_not_depend_on_the_states(name):
    """The rule is a property of the regressor, not of the states or the arithmetic: other random
    states (seeds) and more of them choose the same parameters."""
    m = get_model(name)
    chosen = {identification.base_parameters(m, seed=seed).names for seed in (0, 1, 2)}
    chosen.add(identification.base_parameters(m, samples=2 * max(3, -(-30 * m.njoints // m.nv))).names)
    assert len(chosen) == 1


@pytest.mark.parametrize("name", ("arm7", "panda", "solo12", "random", "every_type"))
def test_base_parameters_reproduce_the_regressor(name):
    m = UNIVERSAL if name == "every_type" else get_model(name)
    base = identification.base_parameters(m)
    rng = np.random.default_rng(47)
    n_states = 3 * base.count // m.nv + 2
    states = [random_state(m, rng)[:3] for _ in range(n_states)]
    W = identification.stacked_regressor(m, *zip(*states))
    # the count is the rank of the regressor at other states; the selected columns have it
    assert np.linalg.matrix_rank(W) == base.count
    sv = np.linalg.svd(base.regressor(W), compute_uv=False)
    assert sv[-1] > 1e-8 * sv[0]
    for _ in range(3):
        pi = rng.normal(size=10 * m.njoints)
        assert rel_err(base.regressor(W) @ base.of(pi), W @ pi) < 1e-11
    check_first_independent_columns(base, W)
    assert base.B.shape == (base.count, 10 * m.njoints)
    assert np.array_equal(base.B[:, list(base.independent)], np.eye(base.count))
