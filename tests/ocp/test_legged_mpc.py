"""The gait clock of ``ocp.legged_mpc``: a trot's period, its swing phases and a bad gait's error."""

import numpy as np
import pytest

import casrbd
from casrbd.ocp.legged_mpc import GaitHorizon, _swing_phases, trot_gait

PAIRS = (("FL_FOOT", "HR_FOOT"), ("FR_FOOT", "HL_FOOT"))
FEET = ("FL_FOOT", "HR_FOOT", "FR_FOOT", "HL_FOOT")


def test_a_trot_swings_each_pair_once_a_period():
    gait = trot_gait(PAIRS, swing_knots=3, support_knots=1)
    assert len(gait) == 8
    assert gait[0] == gait[4] == FEET
    assert all(s == PAIRS[1] for s in gait[1:4]) and all(s == PAIRS[0] for s in gait[5:8])


def test_swing_progress_runs_from_liftoff_to_touchdown():
    gait = trot_gait(PAIRS, swing_knots=4, support_knots=1)
    phases = _swing_phases(gait, FEET)
    assert phases[0] == {}
    for k, j in enumerate(range(1, 5)):  # the first pair swings at knots 1 to 4, lands at knot 5
        assert phases[j] == dict.fromkeys(PAIRS[0], (k / 4, 4 - k))
    assert set(phases[6]) == set(PAIRS[1])


def test_a_gait_with_a_foot_not_among_the_feet_is_refused():
    model = casrbd.load_robot("solo12")
    with pytest.raises(ValueError, match="LF_FOOT"):
        GaitHorizon(model, np.zeros(model.nq), (("LF_FOOT",),), FEET)
