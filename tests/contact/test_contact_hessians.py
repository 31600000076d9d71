"""Second order of constraint_dynamics and impulse_dynamics: the analytical second-order adjoint
(``casrbd/algorithms/contact/hessians.py``) that casadi's derivative cache holds as adj1/jac_adj1.

Reference: casadi's AD of the same Function built with jacobian="ad" (casadi differentiates its
graph): the Hessian of w1^T out1 + w2^T out2 (random multipliers) by all inputs, taken on MX
symbols as a user's graph takes it, with raw q whose quaternions have norm 1.3, so that the
composition with the tangent space (tangent maps and the curvature of the normalisation) is
checked in every direction; the gradient (adj1) too. The default run samples a few states of
solo12 (its 4 feet 3-D, kd = 50, both references), a small random tree under a free flyer (6-D
and 3-D contacts, kp, kd, damping) and impulses on solo12; the full matrix (30 states per case,
hyq, talos_reduced, the synthetic trees) is slow.
"""

import functools
from types import SimpleNamespace

import casadi as ca
import numpy as np
import pytest
from conftest import assert_exact_hessian_is_analytical, called, get_model, scale_normalized
from test_contact import HYQ, LWA, SOLO, anchored

import casrbd
from casrbd import ocp
from casrbd.models import random_tree
from casrbd.testing import rel_err

TOL = 1e-9
SCALE = 1.3
TALOS = ("left_sole_link", "right_sole_link")


def hessian_function(fun):
    """ca.Function (inputs, multipliers) -> (Hessian, gradient) of sum_k w_k^T out_k by all inputs."""
    syms = [ca.MX.sym(fun.name_in(i), fun.sparsity_in(i)) for i in range(fun.n_in())]
    ws = [ca.MX.sym("w_" + fun.name_out(k), fun.sparsity_out(k)) for k in range(fun.n_out())]
    phi = sum((ca.dot(w, o) for w, o in zip(ws, fun(*syms))), 0)
    H, g = ca.hessian(phi, ca.vertcat(*[ca.vec(s) for s in syms]))
    return ca.Function("hess_of_" + fun.name(), [*syms, *ws], [H, g])


@functools.cache
def small_tree():
    """A random tree of 6 bodies (nv 15) under a free flyer, one joint of each type."""
    return random_tree(
        6, ("floating", "spherical", "revolute", "planar", "prismatic", "helical"), None, 4, "small_tree"
    )


def check(robot, name, contacts, n_states, seed, **options):
    """Analytical (default with jacobian="analytical") against AD at n_states random states; robot: a
    name or a model."""
    model = get_model(robot) if isinstance(robot, str) else robot
    rng = np.random.default_rng(seed)
    q0 = np.asarray(casrbd.random_configuration(model, rng))
    anchors = any(len(c) == 3 for c in contacts)
    if anchors:  # near the frames at q0, for kp
        contacts = anchored(model, SimpleNamespace(contacts=[c[:2] for c in contacts]), q0, seed)[0]
    analytical = casrbd.function(model, name, jacobian="analytical", contacts=contacts, **options)
    reference = casrbd.function(model, name, jacobian="ad", contacts=contacts, **options)
    H, Href = hessian_function(analytical), hessian_function(reference)
    assert "jac_adj1_" + analytical.name() in called(H)
    n_x = analytical.n_in() - 1  # tangent inputs after q
    columns = []
    for _ in range(n_states):
        # with anchors, near them: log6 of the error is singular at a half turn
        q = (
            casrbd.integrate(model, q0, 0.5 * rng.normal(size=model.nv))
            if anchors
            else casrbd.random_configuration(model, rng)
        )
        q = scale_normalized(model, q, SCALE)
        xs = [rng.normal(size=model.nv) for _ in range(n_x)]
        ws = [rng.normal(size=analytical.size1_out(k)) for k in range(analytical.n_out())]
        columns.append([q, *xs, *ws])
    args = [np.column_stack(c) for c in zip(*columns)]
    (h, g), (h_ref, g_ref) = H.map(n_states)(*args), Href.map(n_states)(*args)
    n = H.size1_out(0)
    for k in range(n_states):
        block = slice(k * n, (k + 1) * n)
        assert rel_err(g[:, k], g_ref[:, k]) < TOL, k
        assert rel_err(h[:, block], h_ref[:, block]) < TOL, k
        assert rel_err(h[:, block], h[:, block].T) < TOL, k


# ---------------------------------------------------------------- default run: a sample


@pytest.mark.parametrize("reference", ["local", LWA])
def test_solo12_four_feet_constraint_dynamics_hessian_equals_ad(reference):
    check("solo12", "constraint_dynamics", [(f, "3d") for f in SOLO], 5, 1, reference=reference, kd=50.0)


def test_random_tree_6d_and_3d_with_gains_and_damping_hessian_equals_ad():
    contacts = [("tip4", "6d", None), ("tip3", "3d", None)]
    check(small_tree(), "constraint_dynamics", contacts, 5, 2, reference=LWA, kp=10.0, kd=3.0, damping=1e-2)


def test_solo12_impulse_hessian_equals_ad():
    contacts = [(f, "3d") for f in SOLO[:3]]
    check("solo12", "impulse_dynamics", contacts, 5, 3, reference=LWA, restitution=0.3, damping=1e-3)


# ---------------------------------------------------------------- the full matrix

SLOW_CASES = (
    ("solo12", [(SOLO[0], "3d")], {"kd": 2.0}),
    ("solo12", [(f, "3d", None) for f in SOLO[:2]], {"reference": LWA, "kp": 10.0, "kd": 3.0}),
    ("solo12", [(f, "3d", None) for f in SOLO], {"kp": 10.0, "kd": 50.0, "damping": 1e-2}),
    ("hyq", [(f, "3d") for f in HYQ], {"reference": LWA, "kd": 50.0}),
    ("hyq", [(f, "3d", None) for f in HYQ[:3]], {"kp": 5.0, "kd": 1.0, "damping": 1e-3}),
    ("talos_reduced", [(f, "6d", None) for f in TALOS], {"kp": 10.0, "kd": 3.0}),
    ("talos_reduced", [(f, "6d") for f in TALOS], {"reference": LWA, "kd": 50.0, "damping": 1e-2}),
    ("talos_reduced", [(TALOS[0], "6d", None), ("gripper_left_base_link", "3d", None)], {"reference": LWA, "kp": 4.0}),
    ("chain", [("tip9", "3d")], {"kd": 1.0}),
    ("binary", [("tip10", "3d", None), ("tip5", "6d", None)], {"kp": 3.0, "damping": 1e-2}),
    ("random", [("tip5", "3d"), ("tip11", "6d"), ("tip9", "3d")], {"reference": LWA, "kd": 3.0}),
    ("random", [("tip5", "3d", None), ("tip11", "6d", None), ("tip9", "3d", None)], {"kp": 10.0, "damping": 1e-2}),
)


def _id(case):
    robot, contacts, options = case
    kinds = "+".join(c[1] for c in contacts)
    return f"{robot}-{kinds}-" + "-".join(f"{k}{v}" for k, v in sorted(options.items()))


@pytest.mark.slow
@pytest.mark.parametrize("case", SLOW_CASES, ids=_id)
def test_constraint_dynamics_hessian_equals_ad(case):
    robot, contacts, options = case
    check(robot, "constraint_dynamics", contacts, 30, 11, **options)


@pytest.mark.slow
@pytest.mark.parametrize("case", SLOW_CASES, ids=_id)
def test_impulse_dynamics_hessian_equals_ad(case):
    robot, contacts, options = case
    options = {k: v for k, v in options.items() if k in ("reference", "damping")}
    check(robot, "impulse_dynamics", [c[:2] for c in contacts], 30, 12, restitution=0.4, **options)


# ---------------------------------------------------------------- inside IPOPT


def stance(model, hessian, record):
    """solo12 on its four feet (3-D, kd = 50): a few semi-implicit Euler steps from a random velocity
    to rest with least torque and contact force; q integrated on the manifold."""
    contacts = [(f, "3d") for f in SOLO]
    fd = casrbd.function(
        model, "constraint_dynamics", jacobian="analytical", second_order=hessian, contacts=contacts, kd=50.0
    )
    rng = np.random.default_rng(5)
    q0, v0 = np.asarray(casrbd.random_configuration(model, rng)), 0.3 * rng.normal(size=model.nv)
    opti, nodes, dt = ca.Opti(), 3, 0.02
    Q, V = opti.variable(model.nq, nodes + 1), opti.variable(model.nv, nodes + 1)
    U = opti.variable(model.nv - 6, nodes)
    opti.subject_to([Q[:, 0] == q0, V[:, 0] == v0])
    cost = 0
    for k in range(nodes):
        ddq, lam = fd(Q[:, k], V[:, k], ca.vertcat(ca.DM.zeros(6), U[:, k]))
        opti.subject_to(V[:, k + 1] == V[:, k] + dt * ddq)
        opti.subject_to(Q[:, k + 1] == casrbd.integrate(model, Q[:, k], dt * V[:, k + 1]))
        cost += ca.sumsqr(U[:, k]) + 1e-3 * ca.sumsqr(lam) + 10 * ca.sumsqr(V[:, k + 1])
    opti.minimize(cost)
    opti.set_initial(Q, np.tile(q0[:, None], nodes + 1))
    opti.solver("ipopt", ocp.solver_options("exact"))
    opti.callback(lambda i: record.append(np.array(opti.debug.value(ca.vertcat(ca.vec(V), ca.vec(U))))))
    return opti, ocp.solve(opti), fd.name()


def test_opti_exact_hessian_calls_the_analytical_contact_hessian_and_takes_the_same_iterates():
    model = get_model("solo12")
    iterates, hess_l, names = {}, {}, {}
    for hessian in ("analytical", "ad"):
        iterates[hessian] = []
        opti, stats, names[hessian] = stance(model, hessian, iterates[hessian])
        assert stats["success"], stats["status"]
        hess_l[hessian] = opti.debug.casadi_solver.get_function("nlp_hess_l")
    assert_exact_hessian_is_analytical(hess_l, iterates, names["analytical"], TOL)
