"""casrbd.ocp.Problem: the layer's solo12 trot equals the hand-built transcription of the example it
replaced (tests/ocp/handbuilt.py) knot by knot, for both Hessian models; path constraints' Jacobians
against AD; hard friction cones and torque limits at a compiled solution; a warm compiled build in a
fresh process builds no stage."""

import json
import os
import subprocess
import sys
from pathlib import Path

import casadi as ca
import numpy as np
import pytest
from conftest import requires_example_robot_data

import casrbd
from casrbd import ocp
from casrbd.ocp import legged

sys.path.insert(0, str(Path(__file__).parent))
import handbuilt  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SHORT = {"step_knots": 2, "support_knots": 1}


@pytest.fixture(scope="module")
def solo():
    requires_example_robot_data("solo12")
    return casrbd.models.load_robot("solo12")


def random_state(model, rng):
    noise = np.r_[0.02 * rng.standard_normal(3), 0.1 * rng.standard_normal(4), 0.2 * rng.standard_normal(12)]
    q = legged.SOLO_STANDING + noise
    q[3:7] /= np.linalg.norm(q[3:7])
    return np.r_[q, rng.standard_normal(model.nv)]


@pytest.mark.parametrize("hessian", ["gauss-newton", pytest.param("exact", marks=pytest.mark.slow)])
def test_trot_equals_the_hand_built_stages(solo, hessian):
    rng = np.random.default_rng(0)
    steps = legged.trot(solo, legged.SOLO_STANDING, **SHORT)
    problem = legged.quadruped_problem("trot", solo, hessian=hessian, **SHORT)
    assert len(problem.stages) == len(steps)
    references = {}
    for step, kind, stage, p in zip(steps, handbuilt.kinds(steps), problem.stages, problem.parameters):
        key = (step.feet, kind, step.dt)
        if key not in references:
            references[key] = handbuilt.quadruped_stage(solo, step.feet, kind, step.dt, hessian)
        reference = references[key]
        p_hand = handbuilt.quadruped_parameters(step)
        for _ in range(2):
            x, u = random_state(solo, rng), 3 * rng.standard_normal(stage.function.numel_in(1))
            ours, theirs = stage.function(x, u, p), reference(x, u, p_hand)
            np.testing.assert_allclose(float(ours[0]), float(theirs[0]), rtol=1e-10, atol=1e-10)
            np.testing.assert_allclose(ours[1].full(), theirs[1].full(), rtol=1e-10, atol=1e-10)
    assert {k for _, k, _ in references} == {"running", "impulse", "terminal"}
    # knots of one type share one stage Function, as the hand-built ones do
    assert len({id(s.function) for s in problem.stages}) == len(references)


def stance_knot(model, com, mu, tau_max):
    """A solo12 knot on its four feet tracking ``com`` with hard friction cones, foot clearance and torque limits."""
    x0 = np.r_[legged.SOLO_STANDING, np.zeros(model.nv)]
    terms = [
        ocp.Cost(ocp.CoMPosition(), 1e4, reference=com),
        ocp.Cost(ocp.State(x0), 10.0, ocp.WeightedQuadratic(np.r_[[0.0] * 6, [1.0] * 12, [1.0] * 18])),
        ocp.Cost(ocp.Control(), 1.0),
        ocp.Constraint(ocp.JointTorque(), -tau_max, tau_max),
    ]
    terms += [ocp.Constraint(ocp.FrictionCone(f, mu)) for f in legged.SOLO_FEET]
    terms.append(ocp.Constraint(ocp.FrictionCone("FL_FOOT", mu, facets=None), name="smooth_FL_FOOT"))
    return ocp.Knot(ocp.contact_dynamics(legged.SOLO_FEET, kd=50.0), 0.02, terms)


def test_constraint_jacobians_equal_ad(solo):
    """The path constraints' Jacobian of a Gauss-Newton stage (from its one linearisation) equals casadi's AD
    of the same cones over contact dynamics differentiated by AD; they add no curvature."""
    knot = stance_knot(solo, np.zeros(3), 0.5, 1.0)
    function = ocp.problem.stage_function(solo, "running", knot, knot.terms, "gauss-newton")
    X, U, P = ca.MX.sym("x", solo.nq + solo.nv), ca.MX.sym("u", 12), ca.MX.sym("p", function.numel_in(2))
    contacts = [(f, "3d") for f in legged.SOLO_FEET]
    cd = casrbd.function(
        solo, "constraint_dynamics", contacts=contacts, kd=50.0, reference="local_world_aligned", jacobian="ad"
    )
    _, lam = cd(X[: solo.nq], X[solo.nq :], ca.vertcat(ca.MX.zeros(6), U))
    mu, f = 0.5, ca.reshape(lam, 3, 4)
    pyramid = [
        ca.vertcat(
            f[0, i] - mu * f[2, i], -f[0, i] - mu * f[2, i], f[1, i] - mu * f[2, i], -f[1, i] - mu * f[2, i], f[2, i]
        )
        for i in range(4)
    ]
    smooth = ca.vertcat(mu**2 * f[2, 0] ** 2 - f[0, 0] ** 2 - f[1, 0] ** 2, f[2, 0])
    h_ref = ca.vertcat(*pyramid, smooth)
    h = function(X, U, P)[2]
    w, seed = ca.vertcat(X, U), ca.MX.sym("seed", h.numel())
    check = ca.Function(
        "check",
        [X, U, P, seed],
        [ca.jacobian(h, w), ca.jacobian(h_ref, w), ca.hessian(ca.dot(seed, h), w)[0], h - h_ref],
    )
    rng = np.random.default_rng(1)
    for _ in range(2):
        J, J_ref, H, gap = check(
            random_state(solo, rng),
            rng.standard_normal(12),
            rng.standard_normal(P.numel()),
            rng.standard_normal(h.numel()),
        )
        np.testing.assert_allclose(gap.full(), 0, atol=1e-9)
        np.testing.assert_allclose(J.full(), J_ref.full(), rtol=1e-8, atol=1e-8 * np.abs(J_ref.full()).max())
        assert np.abs(H.full()).max() == 0


def test_hard_constraints_hold_at_the_compiled_solution(solo):
    """solo12 holding its pose with torques of at most 0.5 Nm on feet of friction 0.3 (8 knots, hard cones
    and torque limits, compiled at -O0, fatrop): the cones (checked on the forces of the uncompiled
    dynamics) and the limits hold, and both are active."""
    mu, tau_max = 0.3, 0.5
    _, com = legged.feet_and_com(solo, legged.SOLO_STANDING, legged.SOLO_FEET)
    x0 = np.r_[legged.SOLO_STANDING, np.zeros(solo.nv)]
    knots = [stance_knot(solo, com, mu, tau_max) for _ in range(8)]
    terminal = [ocp.Cost(ocp.CoMPosition(), 1e4, reference=com)]
    problem = ocp.Problem(solo, x0, knots, terminal, compiled=True, name="test_hard", flags=("-O0",))
    sol = problem.solve("fatrop")
    assert sol.stats["success"] and sol.violation < 1e-6
    torque, cone = [], []
    for u, forces in zip(sol.us, sol.forces):
        torque.append(tau_max - np.abs(u).max())
        for f in forces.values():
            cone += [mu * f[2] - abs(f[0]), mu * f[2] - abs(f[1]), f[2]]
    # the torque bounds as given, not as fatrop relaxes them (1e-8 of their magnitude, at least 1e-8)
    assert min(torque) > -1e-12 and min(cone) > -1e-6
    assert min(torque) < 1e-5 and min(cone) < 1e-5


WARM = """
import json
import numpy as np
from casrbd import ocp
from casrbd.models import serial_chain
from casrbd.ocp import problem as module

model = serial_chain(3)
x0 = np.r_[0.3, -0.2, 0.1, np.zeros(3)]
terms = [
    ocp.Cost(ocp.State(np.zeros(6)), 1.0),
    ocp.Cost(ocp.Control(), 1e-2),
    ocp.Constraint(ocp.JointPosition(), -0.25, 0.25),
    ocp.Constraint(ocp.JointTorque(), -20.0, 20.0),
]
knots = [ocp.Knot(ocp.free_dynamics(), 0.05, terms) for _ in range(3)]
problem = ocp.Problem(model, x0, knots, terms[:1], compiled=True, name="warm", flags=("-O0",))
u = np.r_[1.0, -2.0, 0.5]
out = [np.ravel(v).tolist() for v in problem.stages[0].function(x0, u, problem.parameters[0])]
print(json.dumps({"builds": sum(module.STAGE_BUILDS.values()), "out": out}))
"""


def arm(constrained, **options):
    """A 3-link arm towards rest in 3 knots: regularisation, and (``constrained``) hard joint and torque
    limits."""
    model = casrbd.models.serial_chain(3)
    x0 = np.r_[0.2, -0.2, 0.1, np.zeros(3)]
    terms = [ocp.Cost(ocp.State(np.zeros(6)), 1.0), ocp.Cost(ocp.Control(), 1e-2)]
    if constrained:
        terms += [ocp.Constraint(ocp.JointPosition(), -0.25, 0.25), ocp.Constraint(ocp.JointTorque(), -7.0, 7.0)]
    knots = [ocp.Knot(ocp.free_dynamics(), 0.05, terms) for _ in range(3)]
    return ocp.Problem(model, x0, knots, terms[:1], compiled=True, name="start", flags=("-O0",), **options)


def test_a_start_problem_starts_the_solve():
    """A problem with a ``start`` (itself without the limits) solves it first and reaches the solution of a
    solve without it; ``options`` are solve's defaults, overridden by its arguments; a start of other
    knots is refused."""
    plain = arm(True).solve("fatrop")
    assert plain.stats["success"] and np.abs(np.r_[plain.us]).max() > 7.0 - 1e-4  # the limits active
    problem = arm(True, start=arm(False), options={"fatrop": {"max_iter": 1}})
    cut = problem.solve("fatrop").stats  # fatrop counts the iteration that stops it
    assert not cut["success"] and cut["iterations"] <= 2
    sol = problem.solve("fatrop", max_iter=100)
    assert sol.stats["success"] and sol.stats["start"]["success"] and sol.stats["start"]["iterations"] >= 1
    np.testing.assert_allclose(sol.xs, plain.xs, atol=1e-6)
    assert "start" not in problem.solve("fatrop", start=False, max_iter=100).stats
    model = casrbd.models.serial_chain(3)
    short = ocp.Problem(model, np.zeros(6), problem.knots[:2], compiled=True, name="start", flags=("-O0",))
    with pytest.raises(ValueError, match="start"):
        ocp.Problem(model, np.zeros(6), problem.knots, start=short)


def test_a_warm_build_in_a_fresh_process_builds_no_stage(tmp_path):
    """A second process with the same cache loads the compiled stages by their description: it builds no
    stage Function (``STAGE_BUILDS``), and its stages evaluate as the first process' did."""
    env = {**os.environ, "CASRBD_CACHE": str(tmp_path), "PYTHONPATH": str(ROOT)}

    def run():
        done = subprocess.run([sys.executable, "-c", WARM], env=env, cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.splitlines()[-1])

    cold, warm = run(), run()
    assert cold["builds"] == 2 and warm["builds"] == 0
    assert warm["out"] == cold["out"] and len(cold["out"]) == 3


@pytest.mark.parametrize("integrator", ocp.INTEGRATORS)
def test_arm_solution_warm_starts_and_steps_as_its_integrator(integrator):
    """A 2-link arm (aba) to a joint target: the solution's states step by the integrator (checked with the
    numeric aba and integrate), and IPOPT warm-started at it stops at once, where it was."""
    model = casrbd.models.serial_chain(2)
    x0, dt = np.r_[0.5, -0.3, 0.0, 0.0], 0.05
    terms = [ocp.Cost(ocp.State(np.zeros(4)), 1.0), ocp.Cost(ocp.Control(), 1e-3)]
    problem = ocp.Problem(model, x0, [ocp.Knot(ocp.free_dynamics(), dt, terms, integrator)] * 4, terms[:1])
    sol = problem.solve("ipopt")
    assert sol.stats["success"] and sol.violation < 1e-8

    def acc(x, u):
        return casrbd.aba(model, x[:2], x[2:], u)

    for x, u, x_next in zip(sol.xs, sol.us, sol.xs[1:]):
        if integrator == "semi-implicit":
            v = x[2:] + dt * acc(x, u)
            expected = np.r_[x[:2] + dt * v, v]
        elif integrator == "euler":
            expected = np.r_[x[:2] + dt * x[2:], x[2:] + dt * acc(x, u)]
        else:
            k1 = np.r_[x[2:], acc(x, u)]
            k2 = np.r_[x[2:] + dt / 2 * k1[2:], acc(x + dt / 2 * k1, u)]
            k3 = np.r_[x[2:] + dt / 2 * k2[2:], acc(x + dt / 2 * k2, u)]
            k4 = np.r_[x[2:] + dt * k3[2:], acc(x + dt * k3, u)]
            expected = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        np.testing.assert_allclose(x_next, expected, atol=1e-9)
    again = problem.solve("ipopt", warm_start=sol)
    assert again.stats["success"] and again.stats["iterations"] <= 2
    np.testing.assert_allclose(again.xs, sol.xs, atol=1e-7)


@pytest.mark.slow
def test_the_hard_trot_starts_from_its_penalty_problem(solo):
    """A short hard trot (cones and torque limits as constraints, compiled at -O0): its start is the penalty
    problem, without hard constraints; fatrop solves it from the start's solution, the running knots' cones
    (on the forces of the uncompiled dynamics) and the torque limits as given hold."""
    tau_max = 1.0
    options = {"compiled": True, "name": "test_hard_trot", "flags": ("-O0",), **SHORT}
    problem = legged.quadruped_problem("trot", solo, hard=True, tau_max=tau_max, **options)
    assert not [t for k in problem.start.knots for t in k.terms if isinstance(t, ocp.Constraint)]
    sol = problem.solve("fatrop")
    assert sol.stats["success"] and sol.stats["start"]["success"] and sol.violation < 1e-6
    assert max(np.abs(u).max() for u in sol.us if u.size) <= tau_max
    for knot, forces in zip(problem.knots, sol.forces):
        for f in forces.values() if knot.kind == "running" else ():  # no cones on the touchdowns' impulses
            assert min(legged.SOLO_MU * f[2] - abs(f[0]), legged.SOLO_MU * f[2] - abs(f[1]), f[2]) > -1e-6
