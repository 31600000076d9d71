"""Bad input is refused with an error that names the culprit: URDF documents, then algorithm arguments."""
import threading

import casadi as ca
import numpy as np
import pytest

import casrbd
from casrbd import URDFError

BOX = '<inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>'


def link(name, inertial=BOX):
    return f'<link name="{name}">{inertial}</link>'


def joint(name, parent, child, jtype="revolute", body='<axis xyz="0 0 1"/>'):
    return f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>{body}</joint>'


def robot(*parts):
    return '<robot name="r">' + "".join(parts) + "</robot>"


def refused(urdf, *parts):
    """Load ``urdf``, expect a URDFError and return its message after checking it holds every part."""
    with pytest.raises(URDFError) as err:
        casrbd.load_urdf(urdf)
    for part in parts:
        assert part in str(err.value), f"{part!r} not in {str(err.value)!r}"
    return str(err.value)


def within(seconds, fn, *args):
    """fn(*args) in a thread that must finish within ``seconds``; its exception, if any, is returned."""
    outcome = []

    def run():
        try:
            fn(*args)
        except Exception as e:  # handed to the test
            outcome.append(e)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{fn.__name__} hangs"
    return outcome[0] if outcome else None


def test_a_valid_base_loads():
    model = casrbd.load_urdf(robot(link("a"), link("b"), joint("j", "a", "b")))
    assert model.nq == 1


# ---- the document ----

def test_malformed_xml_gives_line_and_column():
    refused('<robot name="r">\n  <link name="a">\n</robot>', "malformed XML at line 3, column")


def test_doctype_and_entities_are_refused():
    bomb = '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]>' \
           '<robot name="&b;"><link name="a"/></robot>'
    refused(bomb, "DOCTYPE and ENTITY declarations are refused")
    refused('<!DOCTYPE robot SYSTEM "file:///etc/passwd"><robot name="r"><link name="a"/></robot>', "DOCTYPE")


def test_root_element_must_be_robot():
    refused('<sdf><link name="a"/></sdf>', "root element is <sdf>, expected <robot>")


def test_robot_needs_a_name():
    refused('<robot><link name="a"/></robot>', "/robot", "name")


# ---- the elements ----

def test_unknown_joint_type_names_joint_and_type():
    refused(robot(link("a"), link("b"), joint("hinge", "a", "b", jtype="ball")),
            "joint 'hinge' has unknown type 'ball'", "revolute")


def test_duplicate_link_name():
    refused(robot(link("a"), link("b"), link("b"), joint("j", "a", "b")), "duplicate link name 'b'")


def test_duplicate_joint_name():
    refused(robot(link("a"), link("b"), link("c"), joint("j", "a", "b"), joint("j", "b", "c")),
            "duplicate joint name 'j'")


def test_nameless_link():
    refused(robot('<link/>'), "a <link> has no name")


def test_joint_without_child():
    refused(robot(link("a"), '<joint name="j" type="fixed"><parent link="a"/></joint>'),
            "joint 'j' has no <child link=...>")


def test_a_repeated_scalar_element_is_refused():
    # urdf_parser_py would keep the first and print a line; which one was meant is unknown
    refused(robot(link("a"), link("b"), joint("j", "a", "b", body='<origin xyz="0 0 1"/><origin xyz="0 0 2"/>')),
            "joint 'j' has 2 <origin> elements in <joint>")
    two_masses = '<inertial><mass value="1"/><mass value="2"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>'
    refused(robot(link("a"), link("b", two_masses), joint("j", "a", "b")),
            "link 'b' has 2 <mass> elements in <inertial>")


@pytest.mark.parametrize("origin, shown", [('xyz="0 nan 1"', 'xyz="0 nan 1"'), ('rpy="0 0 inf"', 'rpy="0 0 inf"'),
                                           ('xyz="1 2"', 'xyz="1 2"'), ('xyz="a b c"', 'xyz="a b c"')])
def test_joint_origin_must_be_three_finite_numbers(origin, shown):
    refused(robot(link("a"), link("b"), joint("j", "a", "b", body=f"<origin {origin}/>")),
            f"joint 'j' has <origin {shown}>", "3 finite numbers expected")


# ---- the tree ----

def test_joint_naming_a_missing_link():
    refused(robot(link("a"), joint("j", "a", "ghost")), "joint 'j' names child link 'ghost', which does not exist")
    refused(robot(link("b"), joint("j", "ghost", "b")), "joint 'j' names parent link 'ghost', which does not exist")


def test_link_with_two_parents_names_link_and_both_joints():
    refused(robot(link("a"), link("b"), link("c"), joint("j1", "a", "c"), joint("j2", "b", "c")),
            "link 'c' has two parents", "'j1'", "'j2'")


def test_several_roots():
    refused(robot(link("a"), link("b"), link("c"), joint("j", "a", "b")), "several root links ['a', 'c']")


def test_a_cycle_without_root_is_refused_without_hanging():
    urdf = robot(link("a"), link("b"), joint("ab", "a", "b"), joint("ba", "b", "a"))
    error = within(10, casrbd.load_urdf, urdf)
    assert isinstance(error, URDFError)
    assert "no root link" in str(error) and "form a cycle" in str(error)
    assert "'ab'" in str(error) and "'ba'" in str(error)


def test_a_cycle_detached_from_a_rooted_tree_is_refused_without_hanging():
    urdf = robot(link("root"), link("arm"), link("x"), link("y"), joint("shoulder", "root", "arm"),
                 joint("xy", "x", "y"), joint("yx", "y", "x"))
    error = within(10, casrbd.load_urdf, urdf)
    assert isinstance(error, URDFError)
    assert "links ['x', 'y'] are not reachable from the root link 'root'" in str(error)
    assert "'xy'" in str(error) and "'yx'" in str(error)


def test_a_self_loop_is_a_cycle():
    refused(robot(link("a"), link("b"), joint("j", "a", "b"), joint("loop", "b", "b")), "two parents")
    refused(robot(link("a"), joint("loop", "a", "a")), "no root link", "'loop'")


# ---- the numbers ----

def _inertial(mass='<mass value="1"/>', inertia='ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"'):
    return f'<inertial>{mass}<inertia {inertia}/></inertial>'


@pytest.mark.parametrize("mass, problem", [('<mass value="-1"/>', "has mass -1.0"),
                                           ('<mass value="nan"/>', '<mass value="nan">'),
                                           ('<mass value="inf"/>', '<mass value="inf">'),
                                           ('<mass value="heavy"/>', '<mass value="heavy">'),
                                           ('<mass/>', "<inertial> without <mass value=...>"),
                                           ('', "<inertial> without <mass value=...>")])
def test_mass_must_be_a_finite_non_negative_number(mass, problem):
    refused(robot(link("a"), link("b", _inertial(mass=mass)), joint("j", "a", "b")), "link 'b'", problem)


def test_an_inertial_needs_an_inertia():
    refused(robot(link("a"), link("b", '<inertial><mass value="1"/></inertial>'), joint("j", "a", "b")),
            "link 'b' has an <inertial> without", "<inertia")


def test_inertia_entries_must_be_finite():
    refused(robot(link("a"), link("b", _inertial(inertia='ixx="nan" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"')),
                  joint("j", "a", "b")), "link 'b'", '<inertia ixx="nan">')


def test_inertia_with_a_missing_entry_names_the_link():
    refused(robot(link("a"), link("b", _inertial(inertia='ixx="1" ixy="0" ixz="0" iyy="1" iyz="0"')),
                  joint("j", "a", "b")), "link[@name='b']", "izz")


def test_non_psd_inertia_names_the_link():
    refused(robot(link("a"), link("b", _inertial(inertia='ixx="0.01" ixy="0.05" ixz="0" iyy="0.01" iyz="0" izz="0.01"')),
                  joint("j", "a", "b")), "link 'b' has a negative principal moment")


def test_a_joint_moving_no_mass_warns_naming_the_joint():
    with pytest.warns(casrbd.URDFWarning, match=r"joints \['j'\] move no mass or inertia.*singular"):
        casrbd.load_urdf(robot(link("a"), link("b", ""), link("c", ""), joint("j", "a", "b"),
                               joint("tip", "b", "c", "fixed", "")))


def test_a_joint_moving_only_a_point_mass_on_its_axis_warns_naming_the_joint():
    point = _inertial(inertia='ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"')
    with pytest.warns(casrbd.URDFWarning, match=r"joints \['spin'\] move no mass"):
        casrbd.load_urdf(robot(link("a"), link("b", point), joint("spin", "a", "b")))


def test_zero_axis():
    refused(robot(link("a"), link("b"), joint("j", "a", "b", body='<axis xyz="0 0 0"/>')),
            "joint 'j' has axis [0.0, 0.0, 0.0], which has no direction")


def test_non_finite_axis():
    refused(robot(link("a"), link("b"), joint("j", "a", "b", body='<axis xyz="0 nan 1"/>')),
            "joint 'j' has <axis xyz=\"0 nan 1\">")


def test_lower_limit_above_upper():
    limit = '<axis xyz="0 0 1"/><limit lower="1" upper="-1" effort="1" velocity="1"/>'
    refused(robot(link("a"), link("b"), joint("j", "a", "b", body=limit)), "joint 'j' has lower limit 1.0 > upper limit -1.0")


def test_limit_without_effort_names_the_joint():
    limit = '<limit lower="-1" upper="1" velocity="1"/>'
    refused(robot(link("a"), link("b"), joint("j", "a", "b", body=limit)), "joint[@name='j']/limit", "effort")


def test_planar_joint_with_a_normal_other_than_z():
    refused(robot(link("a"), link("b"), joint("slide", "a", "b", "planar", '<axis xyz="1 0 0"/>')),
            "planar joint 'slide' has normal [1.0, 0.0, 0.0]")


# ---- algorithm arguments (checked in casrbd/api.py) ----

FLYER = robot(link("base"), link("arm"), joint("elbow", "base", "arm"))


@pytest.fixture(scope="module")
def flyer():
    return casrbd.load_urdf(FLYER, floating_base=True)  # nq = 8, nv = 7, two joints


def _state(model):
    return casrbd.neutral(model), np.zeros(model.nv), np.zeros(model.nv)


def test_q_of_wrong_length_names_q_and_its_shape(flyer):
    _, v, a = _state(flyer)
    with pytest.raises(ValueError, match=r"rnea: argument 'q' must have shape \(8,\), got shape \(7,\)"):
        casrbd.rnea(flyer, np.zeros(7), v, a)
    with pytest.raises(ValueError, match=r"crba: argument 'q' must have shape \(8,\), got shape \(9,\)"):
        casrbd.crba(flyer, np.zeros(9))


def test_v_of_wrong_2d_shape_names_v_and_its_shape(flyer):
    q, _, tau = _state(flyer)
    with pytest.raises(ValueError, match=r"aba: argument 'v' must have shape \(7,\), got shape \(7, 2\)"):
        casrbd.aba(flyer, q, np.zeros((7, 2)), tau)
    with pytest.raises(ValueError, match=r"argument 'v' must have shape \(7,\), got shape \(1, 7\)"):
        casrbd.rnea(flyer, q, np.zeros((1, 7)), tau)


def test_symbolic_argument_of_wrong_shape(flyer):
    q, _, a = _state(flyer)
    with pytest.raises(ValueError, match=r"argument 'v' must be a column of 7 entries, got shape \(6, 1\)"):
        casrbd.rnea(flyer, q, ca.SX.sym("v", 6), a)


@pytest.mark.parametrize("shape", [(6, 2), (2, 7), (12,)])
def test_f_ext_of_wrong_shape(flyer, shape):
    q, v, a = _state(flyer)
    with pytest.raises(ValueError, match=r"f_ext must be 2 spatial forces, one per joint \(shape \(2, 6\)\), got shape"):
        casrbd.rnea(flyer, q, v, a, f_ext=np.zeros(shape))
    with pytest.raises(ValueError, match=r"f_ext must be 2 spatial forces"):
        casrbd.aba(flyer, q, v, a, f_ext=np.zeros(shape))


@pytest.mark.parametrize("bad", ["abc", [[0.0, 1.0], [2.0]]])
def test_non_numeric_argument_names_the_argument(flyer, bad):
    _, v, a = _state(flyer)
    with pytest.raises(ValueError, match=r"rnea: argument 'q' must be 8 numbers, got"):
        casrbd.rnea(flyer, bad, v, a)


def test_f_ext_entry_of_wrong_size_names_the_entry(flyer):
    q, v, a = _state(flyer)
    with pytest.raises(ValueError, match=r"entry 1 \(joint 'elbow'\) has shape \(2, 1\)"):
        casrbd.rnea(flyer, q, v, a, f_ext=[ca.SX.sym("f", 6), np.zeros(2)])


def test_non_finite_f_ext_names_the_entries(flyer):
    q, v, a = _state(flyer)
    F = np.zeros((2, 6))
    F[1, 4] = np.nan
    with pytest.raises(ValueError, match=r"f_ext has non-finite entries at \(joint, component\) \[\[1, 4\]\]"):
        casrbd.rnea(flyer, q, v, a, f_ext=F)


def test_unknown_frame_name_lists_the_frames(flyer):
    with pytest.raises(KeyError, match=r"no frame 'hand'; frames: \['base', 'arm'\]"):
        casrbd.frame_jacobian(flyer, casrbd.neutral(flyer), "hand")
    with pytest.raises(IndexError, match=r"has 2 frames, no frame 5"):
        casrbd.frame_jacobian(flyer, casrbd.neutral(flyer), 5)


def test_unknown_reference_lists_the_references(flyer):
    with pytest.raises(ValueError, match=r"unknown reference( frame)? 'global'; valid: 'local', 'world', 'local_world_aligned'"):
        casrbd.frame_jacobian(flyer, casrbd.neutral(flyer), "arm", reference="global")


def test_zero_quaternion_names_q_and_the_joint(flyer):
    q, v, a = _state(flyer)
    q[3:7] = 0
    with pytest.raises(ValueError, match=r"rnea: argument 'q' has a zero quaternion .* for joint 'root_joint'"):
        casrbd.rnea(flyer, q, v, a)


def test_nan_in_q_names_q_and_the_entries(flyer):
    q, v, a = _state(flyer)
    q[[1, 7]] = np.nan
    with pytest.raises(ValueError, match=r"crba: argument 'q' has non-finite entries at \[1, 7\]"):
        casrbd.crba(flyer, q)
    with pytest.raises(ValueError, match=r"rnea: argument 'a' has non-finite entries at \[0\]"):
        casrbd.rnea(flyer, casrbd.neutral(flyer), v, np.r_[np.inf, a[1:]])


def test_unknown_function_name_lists_the_functions(flyer):
    with pytest.raises(ValueError, match=r"unknown function 'rnea2'; valid: 'rnea', .*'crba'.*'aba'"):
        casrbd.function(flyer, "rnea2")


def test_unknown_symbolic_type_lists_the_types(flyer):
    with pytest.raises(ValueError, match=r"unknown symbolic type 'DM'; valid: 'SX', 'MX'"):
        casrbd.function(flyer, "rnea", symbolic="DM")
