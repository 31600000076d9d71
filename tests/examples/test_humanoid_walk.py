"""Crocoddyl's biped walk on talos_reduced (``casrbd.ocp.legged``, as examples/humanoid_walk.py builds it),
checked with code that does not share its transcription: its knots' steps against Pinocchio (constraintDynamics with 6-D
LOCAL_WORLD_ALIGNED sole contacts and the Baumgarte gain kd, impulseDynamics, integrate, the SRDF's
armature), and its wrench cone against the wrenches that forces at the sole's corners generate
(Caron et al. 2015). Slow: a short walk solved, every step of the solution checked the same way.
"""

import numpy as np
import pytest
from conftest import requires_example_robot_data

import casrbd
from casrbd import ocp
from casrbd.ocp import legged
from casrbd.ocp.residuals import WrenchCone


@pytest.fixture(scope="module")
def walk(pin):
    requires_example_robot_data("talos_reduced")
    from oracle import Oracle

    model, x0 = legged.load_talos()
    o = Oracle.from_robot("talos_reduced", model)
    o.pmodel.armature = o.v(model.armature)
    return model, x0, o


def step_function(model, feet, dt):
    """The library's (x, u) -> (x_next, wrenches) of a knot on ``feet`` (an impulse at dt = 0)."""
    contacts = [(f, "6d") for f in feet]
    dynamics = ocp.impulse(contacts) if dt == 0 else ocp.contact_dynamics(contacts, legged.TALOS_KD)
    return ocp.knots.transition(model, dynamics, dt, "semi-implicit", "ad")


def pinocchio_step(pin, o, feet, dt, x, u, kd):
    """The next state by Pinocchio: semi-implicit Euler over its constraint dynamics, or its impulse (dt 0)."""
    q, v = o.q(x[: o.model.nq]), o.v(x[o.model.nq :])
    cms = pin.StdVec_RigidConstraintModel()
    for f in feet:
        frame = o.pmodel.frames[o.frame_ids[o.model.frame_index(f)]]
        cm = pin.RigidConstraintModel(
            pin.ContactType.CONTACT_6D, o.pmodel, frame.parentJoint, frame.placement, pin.LOCAL_WORLD_ALIGNED
        )
        cm.m_baumgarte_parameters.Kd = kd
        cms.append(cm)
    cds = pin.StdVec_RigidConstraintData()
    for cm in cms:
        cds.append(cm.createData())
    data, prox = o.pmodel.createData(), pin.ProximalSettings(1e-14, 0.0, 1)
    pin.initConstraintDynamics(o.pmodel, data, cms, cds)
    if dt == 0:
        v_next = pin.impulseDynamics(o.pmodel, data, q, v, cms, cds, 0.0, prox)
        return np.r_[x[: o.model.nq], o.from_v(v_next)]
    tau = np.r_[np.zeros(6), u]
    v_next = v + dt * pin.constraintDynamics(o.pmodel, data, q, v, o.v(tau), cms, cds, prox)
    return np.r_[o.from_q(pin.integrate(o.pmodel, q, v_next * dt)), o.from_v(v_next)]


def test_steps_match_pinocchio(walk, pin):
    """A single-support step and a touchdown of the example, from a state off the guess, against Pinocchio
    (the slow test checks every knot type of a solution)."""
    model, x0, o = walk
    rng = np.random.default_rng(3)
    x = x0 + np.r_[np.zeros(model.nq), 0.3 * rng.standard_normal(model.nv)]
    u = 20 * rng.standard_normal(model.nv - 6)
    for feet, dt in ((legged.TALOS_FEET[1:], 0.03), (legged.TALOS_FEET[:1], 0.0)):
        x_next = step_function(model, feet, dt)(x, u if dt else np.zeros(0))[0].full().ravel()
        np.testing.assert_allclose(x_next, pinocchio_step(pin, o, feet, dt, x, u, legged.TALOS_KD), atol=1e-8)


def test_wrench_cone_holds_the_corner_forces(walk):
    """Caron's cone: the wrenches (about the sole's centre) of forces in the friction pyramids at the sole's
    four corners satisfy every row, and every row is tight for one of them (a supporting plane)."""
    (X, Y), mu = legged.TALOS_SOLE, legged.TALOS_MU
    cone = WrenchCone("sole", mu, X, Y)
    lower, upper = cone.bounds(None)
    generators = [
        np.r_[f, np.cross([sx * X, sy * Y, 0], f)]
        for sx in (-1, 1)
        for sy in (-1, 1)
        for f in ([mu, 0, 1], [-mu, 0, 1], [0, mu, 1], [0, -mu, 1])
    ]
    r = cone.A @ np.array(generators).T
    assert np.all((r <= upper[:, None] + 1e-12) & (r >= lower[:, None] - 1e-12))
    np.testing.assert_allclose(r[upper == 0].max(axis=1), 0, atol=1e-12)


@pytest.mark.slow
def test_short_walk_is_solved_and_physical(walk, pin):
    """Two short steps (8 cm, 4 knots each): IPOPT and fatrop reach the same optimum, every step of the
    solution is Pinocchio's, the stance soles stay put and the swing sole lands where it was asked to."""
    model, x0, o = walk
    sizes = {"length": 0.08, "height": 0.02, "step_knots": 4, "support_knots": 2}
    knots = legged.walk(model, x0[: model.nq], **sizes)
    problem = legged.biped_problem(model, x0, **sizes)
    r, other = problem.solve("ipopt"), problem.solve("fatrop")
    r = {"stats": r.stats, "xs": r.xs, "us": r.us, "knots": knots}
    other = {"stats": other.stats}
    assert r["stats"]["success"] and other["stats"]["success"]
    assert abs(other["stats"]["cost"] - r["stats"]["cost"]) <= 1e-7 * r["stats"]["cost"]
    xs, nq = r["xs"], model.nq
    for k, (knot, u) in enumerate(zip(r["knots"], r["us"])):
        step = pinocchio_step(pin, o, knot.feet, knot.dt, xs[k], u, legged.TALOS_KD)
        np.testing.assert_allclose(xs[k + 1], step, atol=1e-6)
    place = [{f: casrbd.frame_placement(model, x[:nq], f) for f in legged.TALOS_FEET} for x in xs]
    for k, knot in enumerate(r["knots"][:-1]):
        for f in knot.feet:  # a stance sole stays put; a landing sole lands on its target
            if knot.dt:
                np.testing.assert_allclose(place[k + 1][f], place[k][f], atol=1e-4)
            else:
                np.testing.assert_allclose(place[k][f][:3, 3], dict(knot.targets)[f], atol=1e-3)
