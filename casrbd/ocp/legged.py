"""Crocoddyl's gait problems on ``casrbd.ocp.Problem``: solo12's trot and jump (``SimpleQuadrupedalGaitProblem``,
Crocoddyl 3.2's ``utils/quadruped.py``) and talos' walk (``SimpleBipedGaitProblem``, ``utils/biped.py``).

A gait is a schedule of ``Step`` records (contact set, dt, CoM target, swing-foot targets; dt = 0 a
touchdown); ``quadruped_knots`` and ``biped_knots`` turn it into knots with Crocoddyl's terms: CoM and
swing-foot tracking, weighted state and control regularisation, the state bounds and each stance foot's
friction (wrench) cone as quadratic barriers, or, with ``hard=True``, the cones and torque limits as
hard constraints.
"""

import warnings
from typing import NamedTuple

import numpy as np

from ..api import center_of_mass, frame_jacobian, frame_placement, generalized_gravity
from .knots import Knot, contact_dynamics, free_dynamics, impulse
from .problem import Problem
from .residuals import (
    CoMPosition,
    Control,
    FramePlacement,
    FrameTranslation,
    FrictionCone,
    JointPosition,
    JointTorque,
    JointVelocity,
    State,
    WrenchCone,
)
from .terms import Constraint, Cost, QuadraticBarrier, WeightedQuadratic

SOLO_FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
SOLO_STANDING = np.r_[0, 0, 0.235, 0, 0, 0, 1, 0.1, 0.8, -1.6, -0.1, 0.8, -1.6, 0.1, -0.8, 1.6, -0.1, -0.8, 1.6]
SOLO_MU, SOLO_KD, SOLO_V_MAX = 0.7, 50.0, 1000.0  # friction, Baumgarte gain, joint velocity limit (its URDF)
TALOS_FEET = ("right_sole_link", "left_sole_link")
TALOS_MU, TALOS_SOLE, TALOS_KD = 0.7 / np.sqrt(2), (0.05, 0.025), 30.0  # inner pyramid; half length, width
# fatrop on the hard problems, started from the penalty problem's solution: a small initial barrier keeps
# the torques at their limits as the penalty solution has them; at a solution many cone facets (all four
# of a foot leaving the ground) and torque bounds are active at once, the barrier's Riccati recursion
# grows ill-conditioned as mu goes to zero and fatrop stalls just above its tolerance, so an acceptable
# point (dual infeasibility within tol_acceptable for acceptable_iter iterations) ends the solve
HARD_OPTIONS = {"fatrop": {"mu_init": 1e-4, "tol_acceptable": 1e-4, "acceptable_iter": 15}}


class Step(NamedTuple):
    """A knot of a gait: its feet in contact (the landing feet at a touchdown), dt (0: a touchdown), the
    CoM target (None: none) and the swing feet's targets ((foot, position), ...)."""

    feet: tuple
    dt: float
    com: object = None
    targets: tuple = ()


# ---- schedules ----
def footstep(feet, com, feet0, swing, length, height, dt, n):
    """Crocoddyl's createFootstepModels: n steps swinging ``swing`` (from ``feet0``, moved in place) by
    ``length`` and up to ``height``, the CoM (moved in place) following, then their touchdown."""
    steps, half = [], n / 2
    for k in range(n):
        lift = height * k / half if k < half else height * (1 - (k - half) / half)
        targets = tuple((f, p + [length * (k + 1) / n, 0, lift]) for f, p in zip(swing, feet0))
        stance = tuple(f for f in feet if f not in swing)
        steps.append(Step(stance, dt, com + [length * (k + 1) / n * len(swing) / len(feet), 0, 0], targets))
    com += [length * len(swing) / len(feet), 0, 0]
    for p in feet0:
        p += [length, 0, 0]
    return steps + [Step(tuple(swing), 0.0, None, targets)]


def feet_and_com(model, q0, feet):
    """({foot: its position}, the CoM above the feet's centre) at q0."""
    p = {f: frame_placement(model, q0, f)[:3, 3] for f in feet}
    com = np.mean(list(p.values()), axis=0)
    com[2] = center_of_mass(model, q0)[2]
    return p, com


def trot(model, q0, length=0.06, height=0.03, dt=1e-2, step_knots=25, support_knots=2):
    """createTrottingProblem's schedule for solo12 (the last step is the terminal one)."""
    p, com = feet_and_com(model, q0, SOLO_FEET)
    rest = [Step(SOLO_FEET, dt)] * support_knots
    pair1, pair2 = ("FR_FOOT", "HL_FOOT"), ("FL_FOOT", "HR_FOOT")
    first = footstep(SOLO_FEET, com, [p[f] for f in pair1], pair1, length / 2, height, dt, step_knots)
    second = footstep(SOLO_FEET, com, [p[f] for f in pair2], pair2, length, height, dt, step_knots)
    return rest + first + rest + second + rest[:1]


def jump(model, q0, height=0.15, span=(0.0, 0.3, 0.0), dt=1e-2, ground=10, flying=20):
    """createJumpingProblem's schedule for solo12 (the last step is the terminal one)."""
    p = {f: frame_placement(model, q0, f)[:3, 3] * [1, 1, 0] for f in SOLO_FEET}
    df = span[2] - frame_placement(model, q0, "FR_FOOT")[2, 3]
    com = np.mean(list(p.values()), axis=0)
    com[2] = center_of_mass(model, q0)[2]
    up = [Step((), dt, com + (np.array(span) / 2 + [0, 0, height]) * (k + 1) / flying) for k in range(flying)]
    landing = Step(SOLO_FEET, 0.0, None, tuple((f, p[f] + span) for f in SOLO_FEET))
    landed = [Step(SOLO_FEET, dt, com + [span[0], span[1], df])] * ground
    return [Step(SOLO_FEET, dt)] * ground + up + [Step((), dt)] * flying + [landing] + landed


def walk(model, q0, length=0.6, height=0.1, dt=0.03, step_knots=15, support_knots=4):
    """createWalkingProblem's schedule for talos (the first step a half one; the last is the terminal one)."""
    p, com = feet_and_com(model, q0, TALOS_FEET)
    rest = [Step(TALOS_FEET, dt)] * support_knots
    right = footstep(TALOS_FEET, com, [p[TALOS_FEET[0]]], TALOS_FEET[:1], length / 2, height, dt, step_knots)
    left = footstep(TALOS_FEET, com, [p[TALOS_FEET[1]]], TALOS_FEET[1:], length, height, dt, step_knots)
    return rest + right + rest + left


# ---- knots ----
def quasi_static(model, q, feet, rows=3):
    """Crocoddyl's quasiStatic: the least-norm (u, contact forces) with g(q) = [0; u] + J^T forces, J the
    feet's first ``rows`` rows of their world-aligned Jacobians (3: point feet, 6: soles)."""
    J = [frame_jacobian(model, q, f, "local_world_aligned")[:rows] for f in feet]
    B = np.hstack([np.vstack([np.zeros((6, model.nv - 6)), np.eye(model.nv - 6)])] + [j.T for j in J])
    return np.linalg.lstsq(B, generalized_gravity(model, q), rcond=None)[0][: model.nv - 6]


def quadruped_knots(model, steps, x0, hard=False, tau_max=None):
    """solo12's knots and terminal terms of a schedule (Crocoddyl's weights); ``hard``: friction cones as
    constraints (else barriers), and torque limits +-``tau_max`` (default the URDF's) where given."""
    nu, bound = model.nv - 6, np.r_[model.upper[7:]]
    running_w = np.r_[[0.0] * 3, [500.0] * 3, [0.01] * nu, [10.0] * 6, [1.0] * nu]
    bounds = [
        Cost(JointPosition(), 1e3, QuadraticBarrier(-bound, bound)),
        Cost(JointVelocity(), 1e3, QuadraticBarrier(-SOLO_V_MAX, SOLO_V_MAX)),
    ]

    def state(w):
        return Cost(State(x0), 10.0, WeightedQuadratic(w**2))

    knots = []
    for s in steps[:-1]:
        impulse_ = s.dt == 0
        weight = 1e7 if impulse_ else 1e6
        terms = [] if s.com is None else [Cost(CoMPosition(), weight, reference=s.com)]
        terms += [Cost(FrameTranslation(f), weight, reference=t, name=f"track_{f}") for f, t in s.targets]
        if impulse_:
            w = np.r_[[1.0] * 6, [10.0] * (model.nv + nu)]
            knots.append(Knot(impulse([(f, "3d") for f in s.feet]), 0.0, terms + [state(w)]))
            continue
        terms += [state(running_w), *bounds, Cost(Control(), 0.1)]
        for f in s.feet:
            cone = FrictionCone(f, SOLO_MU)
            terms.append(Constraint(cone) if hard else Cost(cone, 10.0, QuadraticBarrier()))
        if hard or tau_max is not None:
            limit = model.effort_limit[6:] if tau_max is None else tau_max
            terms.append(Constraint(JointTorque(), -np.asarray(limit), limit))
        guess = quasi_static(model, x0[: model.nq], s.feet)
        dynamics = contact_dynamics([(f, "3d") for f in s.feet], SOLO_KD) if s.feet else free_dynamics()
        knots.append(Knot(dynamics, s.dt, terms, guess=guess))
    # the terminal is Crocoddyl's last running knot at x alone: its tracking terms count (the jump's CoM)
    last = steps[-1]
    terminal = [] if last.com is None else [Cost(CoMPosition(), 1e6, reference=last.com)]
    terminal += [Cost(FrameTranslation(f), 1e6, reference=t, name=f"track_{f}") for f, t in last.targets]
    return knots, [*terminal, state(running_w), *bounds]


def biped_knots(model, steps, x0, hard=False):
    """talos' knots and terminal terms of a schedule (Crocoddyl's weights, 6-D sole contacts, wrench
    cones); the last step is the terminal one, with an impulse's costs after its touchdown; ``hard``: the
    wrench cones as constraints (else barriers) and the torques within the URDF's efforts."""
    nu, (X, Y) = model.nv - 6, TALOS_SOLE
    knots = []
    for n, s in enumerate(steps):
        impulse_ = s.dt == 0
        terms = [] if s.com is None else [Cost(CoMPosition(), 1e6, reference=s.com)]
        weight = 1e8 if impulse_ else 1e6
        terms += [Cost(FramePlacement(f), weight, reference=t, name=f"track_{f}") for f, t in s.targets]
        w = np.r_[[1.0] * 6, [0.1] * nu] if impulse_ else np.r_[[0.0] * 3, [500.0] * 3, [0.01] * nu]
        terms.append(Cost(State(x0), 10.0, WeightedQuadratic(np.r_[w, [10.0] * model.nv] ** 2)))
        if n == len(steps) - 1:
            return knots, terms
        if impulse_:
            knots.append(Knot(impulse([(f, "6d") for f in s.feet]), 0.0, terms))
            continue
        for f in s.feet:
            cone = WrenchCone(f, TALOS_MU, X, Y)
            terms.append(Constraint(cone) if hard else Cost(cone, 10.0, QuadraticBarrier()))
        terms.append(Cost(Control(), 0.1))
        if hard:
            terms.append(Constraint(JointTorque()))
        guess = quasi_static(model, x0[: model.nq], s.feet, rows=6)
        knots.append(Knot(contact_dynamics([(f, "6d") for f in s.feet], TALOS_KD), s.dt, terms, guess=guess))
    raise ValueError("a schedule needs at least one step")


# ---- the robots and their problems ----
def load_talos():
    """talos_reduced with its SRDF's rotor inertias (armature: rotor inertia times gear ratio squared)
    and x0 = (the SRDF's half-sitting pose, zero velocity), as example-robot-data loads it for Crocoddyl."""
    from ..loaders.srdf import load_srdf
    from ..models import load_robot, srdf_path

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the grippers' mimic joints are loaded as independent joints
        model = load_robot("talos_reduced", rotors=True)
    q = load_srdf(srdf_path("talos_reduced"), model, strict=False).reference_configurations["half_sitting"]
    return model, np.r_[q, np.zeros(model.nv)]


def quadruped_problem(gait="trot", model=None, hard=False, tau_max=None, **options):
    """solo12's Crocoddyl ``gait`` ("trot", "jump") from standing as a ``Problem``; ``options``: the
    gait's sizes (``trot``, ``jump``) and ``Problem``'s (hessian, compiled, name, flags, verbose). With
    ``hard``, the penalty problem (cones as barriers, no torque limits) is its ``start`` and
    ``HARD_OPTIONS`` its solver options."""
    from ..models import load_robot

    model = model or load_robot("solo12")
    schedule = {"trot": trot, "jump": jump}[gait]
    sizes = {k: options.pop(k) for k in list(options) if k in schedule.__code__.co_varnames}
    x0, steps = np.r_[SOLO_STANDING, np.zeros(model.nv)], schedule(model, SOLO_STANDING, **sizes)
    knots, terminal = quadruped_knots(model, steps, x0, hard, tau_max)
    if hard:
        start = Problem(model, x0, *quadruped_knots(model, steps, x0), **options)
        options.update(start=start, options=HARD_OPTIONS)
    return Problem(model, x0, knots, terminal, **options)


def biped_problem(model=None, x0=None, hard=False, **options):
    """talos' Crocoddyl walk from half-sitting as a ``Problem``; ``options``: ``walk``'s sizes and
    ``Problem``'s. With ``hard``, the penalty problem is its ``start`` (as ``quadruped_problem``)."""
    if model is None:
        model, x0 = load_talos()
    sizes = {k: options.pop(k) for k in list(options) if k in walk.__code__.co_varnames}
    steps = walk(model, x0[: model.nq], **sizes)
    knots, terminal = biped_knots(model, steps, x0, hard)
    if hard:
        start = Problem(model, x0, *biped_knots(model, steps, x0), **options)
        options.update(start=start, options=HARD_OPTIONS)
    return Problem(model, x0, knots, terminal, **options)
