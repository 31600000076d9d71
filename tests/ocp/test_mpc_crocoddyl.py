"""GaitHorizon's trot against Crocoddyl's action models of it (benchmarks/mpc_crocoddyl.py): the same cost and next
state at every knot, and FDDP's plan a rollout of casrbd's stage transitions. Skipped without Crocoddyl."""

from types import SimpleNamespace

import numpy as np
import pytest

import casrbd
from casrbd.models import example_robot_data_dir
from casrbd.ocp.legged_mpc import GaitHorizon, trot_gait
from casrbd.ocp.residuals import FootClearance
from casrbd.ocp.terms import Cost, QuadraticBarrier

pytest.importorskip("crocoddyl")
if example_robot_data_dir() is None:
    pytest.skip("example-robot-data is not installed", allow_module_level=True)

from benchmarks.mpc_crocoddyl import CrocoddylHorizon, action_model, same_problem  # noqa: E402

PAIRS = (("FL_FOOT", "HR_FOOT"), ("FR_FOOT", "HL_FOOT"))
FEET = tuple(f for pair in PAIRS for f in pair)


@pytest.fixture(scope="module")
def horizon():
    """A short trot horizon (period 6 knots, 4 nodes) in casadi's VM, and Crocoddyl's models of it."""
    model = casrbd.load_robot("solo12")
    q0 = np.r_[0, 0, 0, 0, 0, 0, 1, np.tile([0.0, 0.8, -1.6], 2), np.tile([0.0, -0.8, 1.6], 2)]
    q0[2] = 0.02 - min(casrbd.frame_placement(model, q0, f)[2, 3] for f in FEET)
    gait = GaitHorizon(model, q0, trot_gait(PAIRS, swing_knots=2), FEET, nodes=4, yaw_rate=0.3, foot_height=0.02)
    return CrocoddylHorizon(gait, "solo12", iterations=1)


@pytest.mark.parametrize("seed", [0, 1])
def test_every_knot_has_casrbds_cost_and_next_state(horizon, seed):
    cost, x_next = same_problem(horizon, seed, rotations=range(len(horizon.gait.gait)))
    assert cost < 1e-9 and x_next < 1e-9


def test_fddps_plan_is_a_rollout_of_casrbds_transitions(horizon):
    g = horizon.gait
    x0 = np.r_[g.q_standing, np.zeros(g.model.nv)]
    x0[g.model.nq] = 0.2  # moving forward
    plan = horizon.solve(x0)
    assert plan.status == "converged"
    stages = g.sequence(0)
    for k, stage in enumerate(stages):
        step = np.asarray(stage.transition(plan.xs[k], plan.us[k])[0]).ravel()
        assert np.abs(step - plan.xs[k + 1]).max() < 1e-8, f"knot {k}"
    horizon.reset()


def test_a_term_without_a_crocoddyl_counterpart_is_refused_by_name(horizon):
    stage = SimpleNamespace(terms=[Cost(FootClearance("FL_FOOT"), 1.0, QuadraticBarrier(), name="lift")], knot=None)
    with pytest.raises(ValueError, match="'lift'.*FootClearance"):
        action_model(horizon.state, stage)
