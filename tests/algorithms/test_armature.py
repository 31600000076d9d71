"""Armature (rotor inertia reflected on each velocity) in every dynamics algorithm and derivative.

References: the identities rnea = (M + diag(armature)) a + nle and aba = rnea^-1,
Pinocchio with ``model.armature`` set (its crba, rnea, aba, computeMinverse and
both derivative algorithms include it), casadi's AD of the dynamics graphs,
and MuJoCo (tests/loaders/test_mjcf.py: its ``dof_armature`` in mj_fullM and
mj_inverse). Robots: synthetic trees with every constant-subspace joint type
(a free-flyer root in ``random``), arm7, panda and solo12 (a free flyer).
"""

import casadi as ca
import numpy as np
import pytest
from conftest import get_model

import casrbd
from casrbd.testing import random_state, rel_err

TOL = 1e-10
N_STATES = 5
ROBOTS = ("chain", "random", "arm7", "panda", "solo12")


def with_armature(name, root=True):
    """(model, the model with random armature); ``root``: on a free-flyer root too."""
    model = get_model(name)
    rng = np.random.default_rng(sum(map(ord, name)))
    armature = rng.uniform(0.05, 0.5, model.nv)
    for i, joint in enumerate(model.joints):
        if joint.full_motion and model.parents[i] < 0 and not root:
            armature[model.v_slice(i)] = 0.0
    return model, model.with_armature(armature)


def states(model, n=N_STATES):
    rng = np.random.default_rng(7)
    return [random_state(model, rng) for _ in range(n)]


@pytest.mark.parametrize("name", ("chain", "random", "arm7"))
def test_armature_adds_to_the_diagonal_of_m_only(name):
    plain, model = with_armature(name)
    for q, v, a, F in states(model):
        M = casrbd.crba(model, q)
        assert rel_err(M - casrbd.crba(plain, q), np.diag(model.armature)) < TOL
        assert rel_err(casrbd.rnea(model, q, v, a, F) - casrbd.rnea(plain, q, v, a, F), model.armature * a) < TOL
        assert rel_err(casrbd.rnea(model, q, v, a), M @ a + casrbd.nonlinear_effects(model, q, v)) < TOL
        assert rel_err(casrbd.nonlinear_effects(model, q, v), casrbd.nonlinear_effects(plain, q, v)) < TOL
        tau = casrbd.rnea(model, q, v, a, F)
        assert rel_err(casrbd.aba(model, q, v, tau, F), a) < TOL
        assert rel_err(casrbd.minverse(model, q) @ M, np.eye(model.nv)) < TOL


def test_with_armature_by_joint_name_and_bad_values():
    model = get_model("arm7")
    arm = model.with_armature({"joint2": 0.3})
    assert arm.armature[model.idx_v[model.joint_index("joint2")]] == 0.3 and arm.armature.sum() == 0.3
    assert not model.armature.any()  # the original model is unchanged
    with pytest.raises(ValueError, match=r"armature must have shape \(7,\)"):
        model.with_armature(np.ones(6))
    with pytest.raises(ValueError, match="joint 'joint1' has 1 velocities; its armature must be 1 finite numbers >= 0"):
        model.with_armature(-np.ones(7))
    with pytest.raises(KeyError, match="has no joint 'nope'"):
        model.with_armature({"nope": 1.0})


@pytest.mark.parametrize("name", ROBOTS)
def test_armature_matches_pinocchio(name, pin):
    from oracle import Oracle, symmetrize_upper

    _, model = with_armature(name)
    o = Oracle.from_robot(name, model)
    armature = np.empty(model.nv)
    armature[o.v_index] = model.armature
    o.pmodel.armature = armature
    pm, pd = o.pmodel, o.data
    for q, v, a, _ in states(model):
        pq, pv, pa = o.q(q), o.v(v), o.v(a)
        tau = casrbd.rnea(model, q, v, a)
        assert rel_err(tau, o.from_v(pin.rnea(pm, pd, pq, pv, pa))) < TOL
        assert rel_err(casrbd.crba(model, q), o.from_upper(pin.crba(pm, pd, pq))) < TOL
        assert rel_err(casrbd.aba(model, q, v, tau), o.from_v(pin.aba(pm, pd, pq, pv, o.v(tau)))) < TOL
        assert rel_err(casrbd.minverse(model, q), o.from_upper(pin.computeMinverse(pm, pd, pq))) < TOL
        ours = casrbd.rnea_derivatives(model, q, v, a)
        theirs = pin.computeRNEADerivatives(pm, pd, pq, pv, pa)
        for x, y in zip(ours, (o.from_vv(theirs[0]), o.from_vv(theirs[1]), o.from_vv(symmetrize_upper(theirs[2])))):
            assert rel_err(x, y) < TOL
        ours = casrbd.aba_derivatives(model, q, v, tau)
        theirs = pin.computeABADerivatives(pm, pd, pq, pv, o.v(tau))
        for x, y in zip(ours, (o.from_vv(theirs[0]), o.from_vv(theirs[1]), o.from_vv(symmetrize_upper(theirs[2])))):
            assert rel_err(x, y) < TOL


DERIVATIVES = [
    ("rnea_derivatives", {"method": "chain_rule"}),
    ("rnea_derivatives", {"method": "idsva"}),
    ("aba_derivatives", {"method": "chain_rule", "minv_product": "dmm"}),
    ("aba_derivatives", {"method": "idsva", "minv_product": "aza"}),
    ("aba_derivatives", {"method": "idsva", "minv_product": "ltdl"}),
]


@pytest.mark.parametrize("name", ("random", "arm7"))
@pytest.mark.parametrize("kind, options", DERIVATIVES)
def test_analytical_derivatives_with_armature_agree_with_ad(name, kind, options):
    _, model = with_armature(name)
    ours = casrbd.function(model, kind, f_ext=True, **options)
    ad = casrbd.function(model, kind, f_ext=True, method="ad")
    for q, v, x, F in states(model):
        for mine, ref in zip(ours(q, v, x, F), ad(q, v, x, F)):
            assert rel_err(np.array(mine), np.array(ref)) < TOL


@pytest.mark.parametrize("name, dynamics", [("random", "rnea"), ("arm7", "rnea"), ("arm7", "aba")])
def test_analytical_jacobian_and_its_second_derivatives_with_armature(name, dynamics):
    """The custom Jacobian of jacobian="analytical" (first order), and second derivatives through it
    (casadi's Jacobian of the Jacobian, as IPOPT's exact Hessian takes), against AD of the plain graph.
    Second derivatives only on arm7: through the custom Jacobian they are NaN at trees with planar or
    non-root free-flyer joints, armature or not (reported, not armature's doing)."""
    _, model = with_armature(name)
    f = casrbd.function(model, dynamics, symbolic="MX", jacobian="analytical")
    g = casrbd.function(model, dynamics, symbolic="MX")
    q, v, x = (ca.MX.sym(s, n) for s, n in (("q", model.nq), ("v", model.nv), ("x", model.nv)))
    w = ca.MX.sym("w", model.nv)
    outs = []
    for fun in (f, g):
        y = fun(q, v, x)
        u = ca.vertcat(q, v, x)
        second = [ca.hessian(ca.dot(w, y), u)[0]] if name == "arm7" else []
        outs.append(ca.Function("d", [q, v, x, w], [ca.jacobian(y, u), *second]))
    for q0, v0, x0, _ in states(model, 3):
        w0 = np.random.default_rng(0).normal(size=model.nv)
        for mine, ref in zip(outs[0].call([q0, v0, x0, w0]), outs[1].call([q0, v0, x0, w0])):
            assert rel_err(np.array(mine), np.array(ref)) < 1e-9


def test_idsva_with_armature_on_a_free_flyer_root():
    """The closed-form base columns of IDSVA's dtau/dq take M without the rotors' armature."""
    _, model = with_armature("random", root=True)
    q, v, a, _ = states(model, 1)[0]
    ours = casrbd.rnea_derivatives(model, q, v, a, method="idsva")
    ad = casrbd.rnea_derivatives(model, q, v, a, method="ad")
    assert rel_err(ours[0], ad[0]) < TOL
