"""The gait clock of ``ocp.legged_mpc``: a trot's period, its swing phases, a bad gait's error, and the horizon's
references by term name and warm start (what another solver of its problem reads)."""

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


def test_references_guess_and_keep_are_the_horizons_by_name():
    model = casrbd.load_robot("solo12")
    q0 = np.r_[0, 0, 0.3, 0, 0, 0, 1, np.tile([0.0, 0.8, -1.6], 2), np.tile([0.0, -0.8, 1.6], 2)]
    gait = trot_gait(PAIRS, swing_knots=2)
    h = GaitHorizon(model, q0, gait, FEET, nodes=4, dt=0.02, yaw_rate=0.5)
    yaw = 0.7
    x0 = np.r_[q0, np.zeros(model.nv)]
    x0[3:7] = 0, 0, np.sin(yaw / 2), np.cos(yaw / 2)
    assert h.cold and np.isclose(h.heading(x0), yaw)
    rotation, knots = h.references(x0)
    assert rotation == 0 and len(knots) == h.nodes + 1
    for k, terms in enumerate(knots):
        assert terms["base_velocity"][1] == h.weights["base_velocity"]
        c, s = np.cos(yaw + 0.5 * 0.02 * k), np.sin(yaw + 0.5 * 0.02 * k)
        assert np.allclose(terms["base_pose"][0][3:], [c, s, 0, -s, c, 0, 0, 0, 1])  # Rz column-major
        if k < h.nodes:
            stance = gait[k]
            assert np.array_equal(terms["control"][0], h.u_ref[stance])
            assert {n for n, (_, w) in terms.items() if n.startswith("swing_") and w > 0} == {
                f"swing_{f}" for f in FEET if f not in stance
            }
    xs, us = np.arange(5.0)[:, None] * np.ones(h.nx), np.arange(4.0)[:, None] * np.ones(h.nu)
    h.keep(xs, us)
    assert not h.cold
    h.shift(1.0)
    moved_xs, moved_us = h.guess(x0)
    assert np.array_equal(moved_xs[:, 0], [1, 2, 3, 4, 4]) and np.array_equal(moved_us[:, 0], [1, 2, 3, 3])
    h.reset()
    assert h.cold and h.yaw_ref is None
