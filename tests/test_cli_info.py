"""`casrbd info`: the SRDF's reference configurations (checked against Pinocchio's reader of the same
file), limits that look like placeholders (the documented rule of ``Model.placeholder_limits``), and
bad options named."""

import re
import warnings

import numpy as np
import pytest

import casrbd
from casrbd.cli import main
from casrbd.models import example_robot_data_dir, robot_path, srdf_path


@pytest.mark.skipif(example_robot_data_dir() is None, reason="example-robot-data is not installed")
def test_info_shows_solo12s_standing_pose_and_its_placeholder_limits(pin, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", casrbd.URDFWarning)
        assert main(["info", "solo12"]) == 0
    out = capsys.readouterr().out
    pm = pin.buildModelFromUrdf(robot_path("solo12")[0], pin.JointModelFreeFlyer())
    pin.loadReferenceConfigurations(pm, srdf_path("solo12"), False)
    theirs = {entry.key(): np.array(entry.data()) for entry in pm.referenceConfigurations}
    shown = dict(re.findall(r"\n  (\w+) +\[([-\d. e]+)\]", out.split("reference configurations")[1]))
    assert set(shown) == set(theirs) and "standing" in shown
    for pose, q in theirs.items():
        np.testing.assert_allclose([float(x) for x in shown[pose].split()], q, rtol=1e-4, err_msg=pose)
    flagged = re.findall(r"\n  (\w+) .*placeholder\? position, velocity, effort", out)
    assert flagged == list(pm.names[2:])  # every leg joint: +-10 rad, 1000 rad/s, 1000 N m


def test_the_placeholder_rule_as_documented():
    """On revolute joints only: |position limit| beyond 2 pi (the rounding of 2 pi written as UR's
    6.28318530718 is not), velocity or effort of 1000 or more; infinite (no limit) never."""
    cases = {
        ("revolute", -6.28318530718, 6.28318530718, 999, 999): [],
        ("revolute", -6.3, 1, 1, 1): ["position"],
        ("revolute", -1, 1, 1000, 1): ["velocity"],
        ("revolute", -1, 1, 1, 1000): ["effort"],
        ("prismatic", -10, 10, 1000, 5000): [],
        ("continuous", 0, 0, 1, 1): [],
    }
    inertial = '<inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>'
    joints, links = "", '<link name="base"/>'
    for k, (kind, lower, upper, velocity, effort) in enumerate(cases):
        joints += (
            f'<joint name="j{k}" type="{kind}"><parent link="base"/><child link="l{k}"/>'
            f'<limit lower="{lower}" upper="{upper}" velocity="{velocity}" effort="{effort}"/></joint>'
        )
        links += f'<link name="l{k}">{inertial}</link>'
    model = casrbd.load_urdf(f'<robot name="r">{links}{joints}</robot>')
    flagged = model.placeholder_limits()
    for k, expected in enumerate(cases.values()):
        assert flagged.get(f"j{k}", []) == expected, list(cases)[k]


@pytest.mark.parametrize("command", ["info", "compare"])
@pytest.mark.parametrize("seed", ["-1", "x", "1.5"])
def test_a_bad_seed_is_named(capsys, command, seed):
    with pytest.raises(SystemExit) as e:
        main([command, "--seed", seed])
    assert e.value.code == 2
    assert f"argument --seed: an integer >= 0 expected, got '{seed}'" in capsys.readouterr().err
