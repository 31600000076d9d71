"""The URDF loader: the example-robot-data corpus against Pinocchio, stripping, inertia rules, mimic joints.

Malformed input is in test_bad_input.py.
"""

import glob
import os
import warnings

import numpy as np
import pytest

import casrbd
from casrbd import URDFWarning
from casrbd.models import example_robot_data_dir

ROBOTS = example_robot_data_dir()
CORPUS = (
    sorted(os.path.relpath(f, ROBOTS) for f in glob.glob(os.path.join(ROBOTS, "**", "*.urdf"), recursive=True))
    if ROBOTS
    else []
)

# files Pinocchio loads and casrbd refuses on purpose: (why, what the message must contain)
REFUSED = {
    # links 'body' (principal moments -0.021, 0.052, 0.099) and 'LHipPitch_link' (-0.0027, 0.040, 0.054)
    # are far from any body, and so are the bodies they make
    "romeo_description/urdf/romeo_laas_small.urdf": ("has a negative principal moment", "and so does the body"),
    # the hands' mimic joints name 'index_q1', ..., but the joints are 'Left_index_q1', ... (Pinocchio
    # ignores mimic tags by default)
    "alex_description/urdf/alex_psyonic_hands.urdf": (
        "joint 'Left_index_q2' mimics joint 'index_q1', which does not exist",
    ),
}


def _load_quietly(path, floating_base):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", URDFWarning)
        return casrbd.load_urdf(path, floating_base=floating_base)


def _pin_model(pin, path, floating_base):
    return pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating_base else pin.buildModelFromUrdf(path)


def _continuous(model, i):
    """Joint i is a URDF continuous joint: a revolute joint without limits (Pinocchio's (cos, sin))."""
    return model.joints[i].type == "revolute" and np.isinf(model.lower[model.idx_q[i]])


def _to_pin(model, pmodel, q, v, a):
    """(q, v, a) of the casrbd model as Pinocchio's, joints matched by name; continuous q as (cos, sin)."""
    qp, vp, ap = np.zeros(pmodel.nq), np.zeros(pmodel.nv), np.zeros(pmodel.nv)
    for i, name in enumerate(model.names):
        pj = pmodel.joints[pmodel.getJointId(name)]
        part = q[model.q_slice(i)]
        if _continuous(model, i):
            part = [np.cos(part[0]), np.sin(part[0])]
        qp[pj.idx_q : pj.idx_q + pj.nq] = part
        vp[pj.idx_v : pj.idx_v + pj.nv] = v[model.v_slice(i)]
        ap[pj.idx_v : pj.idx_v + pj.nv] = a[model.v_slice(i)]
    return qp, vp, ap


def _v_permutation(model, pmodel):
    """perm with x_casrbd = x_pin[perm] for velocity-sized vectors."""
    perm = []
    for name in model.names:
        pj = pmodel.joints[pmodel.getJointId(name)]
        perm.extend(range(pj.idx_v, pj.idx_v + pj.nv))
    return np.array(perm, dtype=int)


def _close(x, ref, rtol=1e-10):
    return np.linalg.norm(x - ref) <= rtol * max(1.0, np.linalg.norm(ref))


def compare_with_pinocchio(pin, model, pmodel, seed=0):
    assert list(model.names) == list(pmodel.names)[1:]
    n_continuous = sum(_continuous(model, i) for i in range(model.njoints))
    assert (model.nq + n_continuous, model.nv) == (pmodel.nq, pmodel.nv)
    assert model.mass == pytest.approx(sum(Y.mass for Y in pmodel.inertias[1:]), rel=1e-12)

    rng = np.random.default_rng(seed)
    q = casrbd.random_configuration(model, rng)
    v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
    qp, vp, ap = _to_pin(model, pmodel, q, v, a)
    perm = _v_permutation(model, pmodel)
    data = pmodel.createData()
    tau_pin = pin.rnea(pmodel, data, qp, vp, ap)[perm]
    M_pin = pin.crba(pmodel, data, qp)
    M_pin = (np.triu(M_pin) + np.triu(M_pin, 1).T)[np.ix_(perm, perm)]
    assert _close(casrbd.rnea(model, q, v, a), tau_pin)
    assert _close(casrbd.crba(model, q), M_pin)


@pytest.mark.parametrize("floating_base", [False, True], ids=["fixed", "floating"])
@pytest.mark.parametrize("rel", CORPUS or [pytest.param(None, marks=pytest.mark.skip("no example-robot-data"))])
def test_corpus_matches_pinocchio(rel, floating_base, capfd, pin):
    path = os.path.join(ROBOTS, rel)
    try:
        pmodel = _pin_model(pin, path, floating_base)
    except (RuntimeError, ValueError) as e:
        capfd.readouterr()  # urdfdom's own complaint
        with pytest.raises(casrbd.URDFError):
            casrbd.load_urdf(path, floating_base=floating_base)
        pytest.skip(f"Pinocchio refuses it too: {str(e).splitlines()[0]}")
    capfd.readouterr()
    if rel in REFUSED:
        with pytest.raises(casrbd.URDFError) as err:
            _load_quietly(path, floating_base)
        for part in REFUSED[rel]:
            assert part in str(err.value)
        return
    model = _load_quietly(path, floating_base)
    assert capfd.readouterr().err == "", "urdf_parser_py must not print on stderr"
    compare_with_pinocchio(pin, model, pmodel)


FULL = """<robot name="full">
  <link name="base">
    <inertial><mass value="2"/><origin xyz="0.1 0 0.05" rpy="0.1 0.2 0.3"/>
      <inertia ixx="0.02" ixy="0.001" ixz="0" iyy="0.03" iyz="0.002" izz="0.04"/></inertial>
  </link>
  <link name="l1"><inertial><mass value="1"/><origin xyz="0 0.1 0"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <link name="l2"><inertial><mass value="1.5"/><origin xyz="0.05 0 0.1" rpy="0 0.4 0"/>
      <inertia ixx="0.02" ixy="0" ixz="0.001" iyy="0.015" iyz="0" izz="0.01"/></inertial></link>
  <link name="l3"><inertial><mass value="0.5"/>
      <inertia ixx="0.003" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.004"/></inertial></link>
  <link name="l4"><inertial><mass value="0.7"/><origin xyz="0 0 -0.1"/>
      <inertia ixx="0.003" ixy="0" ixz="0" iyy="0.003" iyz="0" izz="0.002"/></inertial></link>
  <link name="l5"><inertial><mass value="0.3"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial></link>
  <link name="tool"><inertial><mass value="0.2"/><origin xyz="0 0 0.02"/>
      <inertia ixx="0.0004" ixy="0" ixz="0" iyy="0.0004" iyz="0" izz="0.0002"/></inertial></link>
  <joint name="j_rev" type="revolute"><parent link="base"/><child link="l1"/>
    <origin xyz="0 0 0.3" rpy="0.3 -0.2 0.1"/><axis xyz="0.48 0.64 0.6"/>
    <limit lower="-2" upper="2" effort="10" velocity="3"/></joint>
  <joint name="j_cont" type="continuous"><parent link="l1"/><child link="l2"/>
    <origin xyz="0.2 0 0"/><axis xyz="0 1 0"/></joint>
  <joint name="j_pris" type="prismatic"><parent link="l2"/><child link="l3"/>
    <origin xyz="0 0 0.2" rpy="0 0.5 0"/><axis xyz="1 0 0"/>
    <limit lower="-0.3" upper="0.3" effort="10" velocity="1"/></joint>
  <joint name="j_planar" type="planar"><parent link="base"/><child link="l4"/>
    <origin xyz="0.3 0.1 0" rpy="0 0 0.7"/><axis xyz="0 0 1"/></joint>
  <joint name="j_float" type="floating"><parent link="l4"/><child link="l5"/>
    <origin xyz="0 0.2 0"/></joint>
  <joint name="j_fixed" type="fixed"><parent link="l3"/><child link="tool"/>
    <origin xyz="0.1 0 0" rpy="0.2 0 0"/></joint>
</robot>"""


@pytest.mark.parametrize("floating_base", [False, True], ids=["fixed", "floating"])
def test_every_urdf_joint_type_matches_pinocchio(floating_base, pin):
    model = casrbd.load_urdf(FULL, floating_base=floating_base)
    assert {j.type for j in model.joints} >= {"revolute", "prismatic", "planar", "floating"}
    assert _continuous(model, model.joint_index("j_cont")) and not _continuous(model, model.joint_index("j_rev"))
    pmodel = pin.buildModelFromXML(FULL, pin.JointModelFreeFlyer()) if floating_base else pin.buildModelFromXML(FULL)
    for seed in range(3):
        compare_with_pinocchio(pin, model, pmodel, seed)


NON_DYNAMICS = """<robot name="decorated" version="1.0" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <material name="blue"><color rgba="0 0 1 1"/></material>
  <link name="base" type="laser">
    <visual><geometry><mesh filename="base.dae"/></geometry>
      <material name="chest"><texture/></material></visual>
    <collision><geometry><box size="1 1 1"/></geometry></collision>
    <sensor name="imu" type="imu"/>
  </link>
  <link name="arm">
    <inertial vendor="x"><origin xyz="0 0 0.1" frame="odd"/><mass value="1" unit="kg"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01" note="cad"/></inertial>
    <visual><geometry><cylinder radius="0.1"/></geometry></visual>
  </link>
  <joint name="j" type="revolute" dont_collapse="true">
    <parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1" command_effort="2"/>
    <dynamics damping="0.1"/><safety_controller k_velocity="1"/><calibration rising="0"/>
  </joint>
  <transmission name="t"><type>SimpleTransmission</type></transmission>
  <gazebo reference="arm"><material>Gazebo/Blue</material></gazebo>
  <xacro:property name="unused" value="1"/>
</robot>"""


def test_non_dynamics_elements_and_attributes_are_stripped_silently(capfd):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = casrbd.load_urdf(NON_DYNAMICS)
    assert capfd.readouterr().err == ""
    assert model.names == ("j",)
    assert model.mass == pytest.approx(1.0)
    assert model.upper == pytest.approx([1.0])


def test_an_undeclared_namespace_prefix_and_a_default_namespace_are_accepted():
    """As urdfdom, which does not process namespaces: prefixed tags are stripped like any other."""
    urdf = """<robot name="r" xmlns="http://example.org/urdf"><xacro:property name="p" value="1"/>
      <link name="a"/><link name="b"><inertial><mass value="1"/>
      <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
      <joint name="j" type="continuous"><parent link="a"/><child link="b"/></joint></robot>"""
    assert casrbd.load_urdf(urdf).names == ("j",)


def test_a_file_path_and_bytes_load_like_a_string(tmp_path):
    path = tmp_path / "robot.urdf"
    path.write_text(FULL)
    for source in (str(path), path, FULL.encode()):
        model = casrbd.load_urdf(source)
        assert model.nq == casrbd.load_urdf(FULL).nq


def test_children_follow_joint_names_as_in_urdfdom():
    urdf = """<robot name="r"><link name="a"/>
      <link name="b"><inertial><mass value="1"/>
        <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
      <link name="c"><inertial><mass value="1"/>
        <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
      <joint name="z" type="continuous"><parent link="a"/><child link="b"/></joint>
      <joint name="y" type="continuous"><parent link="a"/><child link="c"/></joint></robot>"""
    assert casrbd.load_urdf(urdf).names == ("y", "z")


def test_fixed_children_merge_into_the_moving_body():
    model = casrbd.load_urdf(FULL)
    assert model.mass == pytest.approx(1 + 1.5 + 0.5 + 0.2 + 0.7 + 0.3)  # base is fixed to the world
    assert model.frames[model.frame_index("tool")].joint == model.joint_index("j_pris")
    assert casrbd.load_urdf(FULL, floating_base=True).mass == pytest.approx(model.mass + 2)


# ---- inertia rules: refuse the non-physical, warn on the questionable ----


def _one_body(inertia, mass="1", extra_link="", extra_joint=""):
    return f"""<robot name="r"><link name="base"/>
      <link name="body"><inertial><mass value="{mass}"/><inertia {inertia}/></inertial></link>{extra_link}
      <joint name="j" type="continuous"><parent link="base"/><child link="body"/><axis xyz="0 0 1"/></joint>
      {extra_joint}</robot>"""


def _inertia(ixx, iyy, izz, ixy=0.0):
    return f'ixx="{ixx}" ixy="{ixy}" ixz="0" iyy="{iyy}" iyz="0" izz="{izz}"'


def test_a_physical_inertia_loads_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        casrbd.load_urdf(_one_body(_inertia(0.02, 0.03, 0.04)))


def test_a_negative_principal_moment_is_refused_naming_the_link():
    with pytest.raises(casrbd.URDFError, match=r"link 'body' has a negative principal moment"):
        casrbd.load_urdf(_one_body(_inertia(0.01, 0.01, 0.01, ixy=0.02)))


def test_a_rounding_negative_principal_moment_warns():
    # principal moments 1 - 1.000001 < 0 (rounding), 2.000001, 2: kept
    with pytest.warns(URDFWarning, match=r"link 'body' has a slightly negative principal moment"):
        casrbd.load_urdf(_one_body(_inertia(1.0, 1.0, 2.0, ixy=1.000001)))


def test_exporter_noise_on_a_zero_inertia_passes_silently():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        casrbd.load_urdf(_one_body(_inertia(-5.42101e-20, 0.01, 0.01)))  # a rod along x


def test_a_triangle_inequality_violation_warns():
    with pytest.warns(URDFWarning, match=r"link 'body' has principal moments .* violate the triangle inequality"):
        casrbd.load_urdf(_one_body(_inertia(0.001, 0.001, 0.01)))


ANTENNA = (
    '<link name="antenna"><inertial><mass value="0.000001"/>'
    '<inertia ixx="2.371e-8" ixy="6.119e-8" ixz="1.179e-8" iyy="2.833e-8" iyz="7.74e-9" izz="3.849e-8"/>'
    "</inertial></link>"
)
ANTENNA_JOINT = '<joint name="mount" type="fixed"><parent link="body"/><child link="antenna"/></joint>'


def test_a_non_physical_link_merged_into_a_physical_body_warns():
    # tiago's antennas: a microgram with a non-PSD inertia, welded to a kilogram
    with pytest.warns(URDFWarning, match=r"link 'antenna' has a negative principal moment.*body of joint 'j'"):
        model = casrbd.load_urdf(_one_body(_inertia(0.02, 0.03, 0.04), extra_link=ANTENNA, extra_joint=ANTENNA_JOINT))
    assert model.mass == pytest.approx(1.000001)


def test_a_non_physical_link_fixed_to_the_world_warns():
    mount = '<joint name="mount" type="fixed"><parent link="base"/><child link="antenna"/></joint>'
    urdf = _one_body(_inertia(0.02, 0.03, 0.04), extra_link=ANTENNA, extra_joint=mount)
    with pytest.warns(URDFWarning, match=r"link 'antenna' .*fixed to the world"):
        casrbd.load_urdf(urdf)


def test_a_non_physical_link_in_a_non_physical_body_is_refused():
    with pytest.raises(casrbd.URDFError, match=r"link 'antenna' has a negative principal moment.*joint 'j'"):
        casrbd.load_urdf(_one_body(_inertia(0, 0, 0), mass="0.000001", extra_link=ANTENNA, extra_joint=ANTENNA_JOINT))


def test_a_massless_link_with_rotational_inertia_warns():
    with pytest.warns(URDFWarning, match=r"link 'body' has mass 0 but principal moments .* which no body has"):
        model = casrbd.load_urdf(_one_body(_inertia(0.01, 0.01, 0.01), mass="0"))
    assert model.inertias[0].mass == 0 and np.allclose(model.inertias[0].I, 0.01 * np.eye(3))


def test_a_massless_link_without_inertia_passes_silently():
    # the usual virtual link (a tool frame), welded to a physical body: it changes nothing
    tool = f'<link name="tool"><inertial><mass value="0"/><inertia {_inertia(0, 0, 0)}/></inertial></link>'
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        casrbd.load_urdf(
            _one_body(_inertia(0.02, 0.03, 0.04), extra_link=tool, extra_joint=ANTENNA_JOINT.replace("antenna", "tool"))
        )


# ---- axes ----


def _axis_model(axis):
    urdf = _one_body(_inertia(0.02, 0.03, 0.04))
    return casrbd.load_urdf(urdf.replace('<axis xyz="0 0 1"/>', f'<axis xyz="{axis}"/>'))


def test_an_axis_of_norm_one_up_to_exporter_digits_is_normalised_silently():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        axis = _axis_model("0.0401398 0.155542 0.987014").joints[0].axis  # romeo's, norm 1 + 6e-7
    assert np.linalg.norm(axis) == pytest.approx(1.0, abs=1e-15)


def test_a_non_unit_axis_warns_and_is_normalised():
    with pytest.warns(URDFWarning, match=r"joint 'j' has axis \[0.0, 0.0, 2.0\] of norm 2; normalised"):
        model = _axis_model("0 0 2")
    assert model.joints[0].axis.tolist() == [0.0, 0.0, 1.0]
    assert np.array_equal(casrbd.crba(model, [0.3]), casrbd.crba(_axis_model("0 0 1"), [0.3]))


# ---- deep trees ----


def test_a_chain_of_200_bodies_loads_and_builds_without_recursion_limits():
    """URDF to model and rnea/aba Functions, free-flyer root and revolute, prismatic and continuous
    joints in turn; Python's default recursion limit is 1000."""
    types = ("revolute", "prismatic", "continuous")
    inertial = """<inertial><origin xyz="0.05 0 0"/><mass value="0.5"/>
      <inertia ixx="1e-3" ixy="0" ixz="0" iyy="2e-3" iyz="0" izz="2e-3"/></inertial>"""
    parts = [f'<robot name="chain"><link name="l0">{inertial}</link>']
    for k in range(1, 201):
        limit = '<limit lower="-1" upper="1" effort="1" velocity="1"/>' if types[k % 3] != "continuous" else ""
        parts.append(f"""<link name="l{k}">{inertial}</link>
          <joint name="j{k}" type="{types[k % 3]}"><parent link="l{k - 1}"/><child link="l{k}"/>
          <origin xyz="0.1 0 0" rpy="0 0.3 0"/><axis xyz="{"0 0 1" if k % 2 else "0 1 0"}"/>{limit}</joint>""")
    model = casrbd.load_urdf("".join(parts) + "</robot>", floating_base=True)
    assert (model.njoints, model.nv) == (201, 206)
    assert model.parents == tuple(range(-1, 200))
    rng = np.random.default_rng(0)
    q, v, tau = casrbd.random_configuration(model, rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
    a = casrbd.aba(model, q, v, tau)
    assert np.max(np.abs(casrbd.rnea(model, q, v, a) - tau)) <= 1e-9 * max(1.0, np.max(np.abs(tau)))


# ---- mimic joints ----

MIMIC = """<robot name="gripper">
  <link name="palm"/>
  <link name="left"><inertial><mass value="0.1"/>
    <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial></link>
  <link name="right"><inertial><mass value="0.1"/>
    <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial></link>
  <joint name="finger1" type="prismatic"><parent link="palm"/><child link="left"/><axis xyz="0 1 0"/>
    <limit lower="0" upper="0.04" effort="20" velocity="0.2"/></joint>
  <joint name="finger2" type="prismatic"><parent link="palm"/><child link="right"/><axis xyz="0 -1 0"/>
    <limit lower="0" upper="0.04" effort="20" velocity="0.2"/><mimic joint="finger1" multiplier="1" offset="0"/></joint>
</robot>"""


def test_mimic_joints_warn_and_stay_independent():
    with pytest.warns(URDFWarning, match=r"mimic constraints are ignored.*'finger2' \(mimics 'finger1'\)") as record:
        model = casrbd.load_urdf(MIMIC)
    assert len(record) == 1
    assert record[0].filename == __file__, "the warning points at the caller of load_urdf"
    assert (model.nq, model.nv) == (2, 2)
    assert model.names == ("finger1", "finger2")


def test_mimic_joints_match_pinocchio_default(pin):
    with pytest.warns(URDFWarning):
        model = casrbd.load_urdf(MIMIC)
    compare_with_pinocchio(pin, model, pin.buildModelFromXML(MIMIC))
