"""SRDF: reference configurations and rotor armature against Pinocchio's own SRDF reader on the same file
(``loadReferenceConfigurations``, ``loadRotorParameters``), and hostile SRDFs refused naming the file,
the pose and the joint."""

import os
import warnings

import numpy as np
import pytest

import casrbd
from casrbd.loaders import SRDFError, load_srdf
from casrbd.models import EXAMPLE_SRDFS, example_robot_data_dir, reference_configurations, robot_path, srdf_path

pytestmark = pytest.mark.skipif(example_robot_data_dir() is None, reason="example-robot-data is not installed")


def _robot(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", casrbd.URDFWarning)
        return casrbd.load_robot(name)


def _pinocchio(pin, name):
    path, floating = robot_path(name)
    return pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)


@pytest.mark.parametrize("name, pose", [("talos_reduced", "half_sitting"), ("solo12", "standing")])
def test_reference_configurations_are_pinocchios(pin, name, pose):
    """Every pose of the file, joints in the same order in both models (no continuous joints here)."""
    pm = _pinocchio(pin, name)
    pin.loadReferenceConfigurations(pm, srdf_path(name), False)
    theirs = {entry.key(): np.array(entry.data()) for entry in pm.referenceConfigurations}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", casrbd.URDFWarning)
        ours = reference_configurations(name)
    assert pose in ours and set(ours) == set(theirs)
    for key, q in ours.items():
        np.testing.assert_array_equal(q, theirs[key], err_msg=key)
        assert q.shape == (pm.nq,) and not q.flags.writeable


def test_talos_rotor_armature_is_pinocchios(pin):
    """load_robot(rotors=True): mass * gear_ratio**2 on the joints of <rotor_params>, as Pinocchio's
    loadRotorParameters (starting from no armature) and example-robot-data set it."""
    pm = _pinocchio(pin, "talos_reduced")
    pin.loadRotorParameters(pm, srdf_path("talos_reduced"), False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", casrbd.URDFWarning)
        model = casrbd.load_robot("talos_reduced", rotors=True)
    assert np.any(pm.armature > 0)
    np.testing.assert_allclose(model.armature, pm.armature, rtol=1e-15)
    np.testing.assert_allclose(model.armature, pm.rotorInertia * pm.rotorGearRatio**2, rtol=1e-15)


def test_rotors_need_rotor_params_and_load_robot_is_unchanged_without():
    with pytest.raises(LookupError, match=r"robot 'solo12': its SRDF .*solo.srdf has no <rotor_params>"):
        casrbd.load_robot("solo12", rotors=True)
    with pytest.raises(LookupError, match=r"robot 'arm7': no SRDF known for it"):
        casrbd.load_robot("arm7", rotors=True)
    assert not np.any(_robot("talos_reduced").armature)


INERTIAL = '<inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>'
MODEL_URDF = f"""<robot name="r">
  <link name="base">{INERTIAL}</link><link name="a">{INERTIAL}</link><link name="b">{INERTIAL}</link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="a"/><limit effort="1" velocity="1"/></joint>
  <joint name="j2" type="prismatic"><parent link="a"/><child link="b"/><limit effort="1" velocity="1"/></joint>
</robot>"""


def srdf(body):
    return f'<robot name="r">{body}</robot>'


def test_a_small_srdf_against_its_meaning():
    """Unnamed joints keep the neutral value, the free flyer its seven numbers as written."""
    model = casrbd.load_urdf(MODEL_URDF, floating_base=True)
    text = srdf(
        '<group_state name="up" group="all"><joint name="j2" value="0.25"/>'
        '<joint name="root_joint" value="1 2 3 0 0 0.6 0.8"/></group_state>'
        '<rotor_params><joint name="j1" mass="2e-4" gear_ratio="50"/></rotor_params>'
    )
    read = load_srdf(text, model)
    np.testing.assert_array_equal(read.reference_configurations["up"], [1, 2, 3, 0, 0, 0.6, 0.8, 0, 0.25])
    assert read.armature == {"j1": pytest.approx(2e-4 * 50**2)}


# one hostile class per case: the culprit named (file, pose or rotor_params, joint)
@pytest.mark.parametrize(
    "body, message",
    [
        ('<group_state name="p"><joint name="elbow" value="1"/></group_state>',
         r"SRDF string: pose 'p': joint 'elbow' is not a joint of model 'r'"),
        ('<group_state name="p"><joint name="j1" value="1 2"/></group_state>',
         r"pose 'p': joint 'j1': value=\"1 2\"; 1 finite number expected"),
        ('<group_state name="p"><joint name="root_joint" value="0 0 0 0 0 1"/></group_state>',
         r"pose 'p': joint 'root_joint': .*7 finite numbers expected"),
        ('<group_state name="p"><joint name="j1" value="nan"/></group_state>', r"pose 'p': joint 'j1': value=\"nan\""),
        ('<group_state name="p"><joint name="j1" value="1e999"/></group_state>', r"joint 'j1': value=\"1e999\""),
        ('<group_state name="p"><joint name="j1" value="x"/></group_state>', r"joint 'j1': value=\"x\""),
        ('<group_state name="p"/><group_state name="p"/>', r"pose 'p' is defined twice"),
        ('<group_state><joint name="j1" value="1"/></group_state>', r"a <group_state> has no name"),
        ('<rotor_params><joint name="j1" mass="inf" gear_ratio="2"/></rotor_params>',
         r"rotor_params: joint 'j1': mass=\"inf\""),
        ('<rotor_params><joint name="j1" mass="1" /></rotor_params>', r"rotor_params: joint 'j1': gear_ratio=\"None\""),
        ('<rotor_params><joint name="j1" mass="-1" gear_ratio="2"/></rotor_params>',
         r"rotor inertia \(mass\) -1.0 < 0"),
        ('<rotor_params><joint name="root_joint" mass="1" gear_ratio="2"/></rotor_params>',
         r"joint 'root_joint' has 6 velocities; one expected"),
        ('<rotor_params><joint name="hip" mass="1" gear_ratio="2"/></rotor_params>', r"joint 'hip' is not a joint"),
    ],
)  # fmt: skip
def test_hostile_srdfs_are_refused_naming_the_culprit(body, message):
    model = casrbd.load_urdf(MODEL_URDF, floating_base=True)
    with pytest.raises(SRDFError, match=message):
        load_srdf(srdf(body), model)


def test_the_document_is_read_safely(tmp_path):
    model = casrbd.load_urdf(MODEL_URDF)
    with pytest.raises(SRDFError, match="DOCTYPE and ENTITY"):
        load_srdf('<!DOCTYPE r [<!ENTITY e "x">]><robot name="r"/>', model)
    with pytest.raises(SRDFError, match=r"root element is <mujoco>, expected <robot>"):
        load_srdf("<mujoco/>", model)
    path = tmp_path / "r.srdf"
    if hasattr(os, "mkfifo"):
        os.mkfifo(path)
        with pytest.raises(SRDFError, match=r"r.srdf: not a regular file \(a FIFO\)"):
            load_srdf(str(path), model)


def test_other_variants_joints_are_skipped_only_when_not_strict():
    """talos.srdf serves the arm alone too: its legs are not the arm's joints."""
    arm = _robot("talos_arm")
    with pytest.raises(SRDFError, match=r"talos.srdf: pose 'half_sitting': joint '\w+' is not a joint of model"):
        load_srdf(srdf_path("talos_arm"), arm)
    q = load_srdf(srdf_path("talos_arm"), arm, strict=False).reference_configurations["half_sitting"]
    assert q[arm.idx_q[arm.joint_index("arm_left_4_joint")]] == -0.525366


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXAMPLE_SRDFS))
def test_every_listed_srdf_reads_as_pinocchio_reads_it(pin, name):
    """The whole table (kinova's continuous joints are (cos, sin) in Pinocchio: its poses are compared
    through the angles)."""
    model = _robot(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", casrbd.URDFWarning)
        ours = reference_configurations(name)
    pm = _pinocchio(pin, name)
    pin.loadReferenceConfigurations(pm, srdf_path(name), False)
    theirs = {entry.key(): np.array(entry.data()) for entry in pm.referenceConfigurations}
    assert set(ours) == set(theirs)
    for pose, q in ours.items():
        for i, joint in enumerate(model.names):
            pj = pm.joints[pm.getJointId(joint)]
            expected = theirs[pose][pj.idx_q : pj.idx_q + pj.nq]
            if pj.nq == 2 and model.joints[i].nq == 1:
                expected = [np.arctan2(expected[1], expected[0])]
            np.testing.assert_allclose(q[model.q_slice(i)], expected, atol=1e-12, err_msg=f"{pose}: {joint}")
