"""casrbd.ocp.Problem: the layer's solo12 trot equals the hand-built transcription of the example it
replaced (tests/ocp/handbuilt.py) knot by knot, for both Hessian models."""

import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import requires_example_robot_data

import casrbd
from casrbd.ocp import legged

sys.path.insert(0, str(Path(__file__).parent))
import handbuilt  # noqa: E402

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


@pytest.mark.parametrize("hessian", ["gauss-newton", "exact"])
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
