"""Bad input is refused with an error that names the culprit: URDF documents, then algorithm arguments."""

import re
import threading
import warnings

import casadi as ca
import numpy as np
import pytest

import casrbd
from casrbd import URDFError
from casrbd.models import serial_chain

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


def test_urdf_error_is_a_value_error():
    with pytest.raises(ValueError):
        casrbd.load_urdf(robot(link("a"), link("a")))
    assert issubclass(URDFError, ValueError)


# ---- the document ----


def test_malformed_xml_gives_line_and_column():
    refused('<robot name="r">\n  <link name="a">\n</robot>', "malformed XML at line 3, column")


def test_doctype_and_entities_are_refused():
    bomb = (
        '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]>'
        '<robot name="&b;"><link name="a"/></robot>'
    )
    refused(bomb, "DOCTYPE and ENTITY declarations are refused")
    refused('<!DOCTYPE robot SYSTEM "file:///etc/passwd"><robot name="r"><link name="a"/></robot>', "DOCTYPE")
    refused('<?xml version="1.0"?>\n<!-- x -->\n<!doctype robot>' + robot(link("a")), "line 3: DOCTYPE")


def test_the_parser_itself_stops_at_a_doctype(monkeypatch):
    """Second line of defence: the expat parser behind load_urdf refuses a DOCTYPE before its
    declarations (here with the text check before it switched off)."""
    from casrbd.loaders import xml

    monkeypatch.setattr(xml, "refuse_doctype", lambda *args: None)
    for text in ('<!DOCTYPE r [<!ENTITY a "x">]><robot name="&a;"/>', '<!DOCTYPE r SYSTEM "/etc/passwd"><robot/>'):
        with pytest.raises(URDFError, match="line 1: DOCTYPE and ENTITY declarations are refused"):
            xml.element_tree(text, "text", URDFError)


def test_an_undeclared_entity_is_malformed_and_predefined_ones_are_text():
    refused('<robot name="&xxe;"><link name="a"/></robot>', "malformed XML at line 1", "undefined entity")
    assert casrbd.load_urdf('<robot name="a&amp;b&#33;"><link name="a"/></robot>').name == "a&b!"


@pytest.mark.parametrize("kind", ["str", "bytes", "file"])
def test_a_document_over_max_bytes_is_refused_before_parsing(kind, tmp_path):
    urdf = robot(link("a"), link("b"), joint("j", "a", "b"))
    source = {"str": urdf, "bytes": urdf.encode(), "file": tmp_path / "r.urdf"}[kind]
    (tmp_path / "r.urdf").write_text(urdf)
    assert casrbd.load_urdf(source, max_bytes=len(urdf)).nq == 1
    with pytest.raises(URDFError, match=f"larger than the limit of {len(urdf) - 1} bytes"):
        casrbd.load_urdf(source, max_bytes=len(urdf) - 1)
    assert casrbd.loaders.xml.MAX_BYTES == 20_000_000


def test_text_that_is_not_utf8_names_the_offset():
    refused(b'<robot name="\xe9"/>', "URDF bytes: not UTF-8 text: byte 0xe9 at offset 13")
    refused('<robot name="\ud800"/>', "URDF string: not text: lone surrogate '\\ud800' at offset 13")


def test_bytes_are_always_a_document_and_a_byte_order_mark_is_allowed():
    refused(b"robot.urdf", "URDF bytes: malformed XML at line 1, column 0")
    urdf = robot(link("a"), link("b"), joint("j", "a", "b"))
    assert casrbd.load_urdf("\ufeff" + urdf).nq == casrbd.load_urdf(b"\xef\xbb\xbf" + urdf.encode()).nq == 1


def test_a_missing_file_raises_os_error():
    with pytest.raises(FileNotFoundError):
        casrbd.load_urdf("/nonexistent/robot.urdf")


def test_root_element_must_be_robot():
    refused('<sdf><link name="a"/></sdf>', "root element is <sdf>, expected <robot>")


def test_robot_needs_a_name():
    refused('<robot><link name="a"/></robot>', "/robot", "name")


def test_robot_needs_a_link():
    refused('<robot name="r"/>', "URDF string: no link")


# ---- the elements ----


def test_unknown_joint_type_names_joint_and_type():
    refused(
        robot(link("a"), link("b"), joint("hinge", "a", "b", jtype="ball")),
        "joint 'hinge' has unknown type 'ball'",
        "revolute",
    )


def test_duplicate_link_name():
    refused(robot(link("a"), link("b"), link("b"), joint("j", "a", "b")), "duplicate link name 'b'")


def test_duplicate_joint_name():
    refused(
        robot(link("a"), link("b"), link("c"), joint("j", "a", "b"), joint("j", "b", "c")), "duplicate joint name 'j'"
    )


def test_nameless_link():
    refused(robot("<link/>"), "a <link> has no name")


def test_joint_without_child():
    refused(
        robot(link("a"), '<joint name="j" type="fixed"><parent link="a"/></joint>'), "joint 'j' has no <child link=...>"
    )


def test_a_repeated_scalar_element_is_refused():
    # urdf_parser_py would keep the first and print a line; which one was meant is unknown
    refused(
        robot(link("a"), link("b"), joint("j", "a", "b", body='<origin xyz="0 0 1"/><origin xyz="0 0 2"/>')),
        "joint 'j' has 2 <origin> elements in <joint>",
    )
    two_masses = (
        '<inertial><mass value="1"/><mass value="2"/>'
        '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>'
    )
    refused(
        robot(link("a"), link("b", two_masses), joint("j", "a", "b")), "link 'b' has 2 <mass> elements in <inertial>"
    )


@pytest.mark.parametrize(
    "origin, shown",
    [
        ('xyz="0 nan 1"', 'xyz="0 nan 1"'),
        ('rpy="0 0 inf"', 'rpy="0 0 inf"'),
        ('xyz="1 2"', 'xyz="1 2"'),
        ('xyz="a b c"', 'xyz="a b c"'),
    ],
)
def test_joint_origin_must_be_three_finite_numbers(origin, shown):
    refused(
        robot(link("a"), link("b"), joint("j", "a", "b", body=f"<origin {origin}/>")),
        f"joint 'j' has <origin {shown}>",
        "3 finite numbers expected",
    )


# ---- the tree ----


def test_joint_naming_a_missing_link():
    refused(robot(link("a"), joint("j", "a", "ghost")), "joint 'j' names child link 'ghost', which does not exist")
    refused(robot(link("b"), joint("j", "ghost", "b")), "joint 'j' names parent link 'ghost', which does not exist")


def test_a_mimic_of_a_missing_joint_names_both_joints():
    """Ignored or not, a mimic tag naming no joint is a broken file (a typo, a renamed joint)."""
    mimic = '<axis xyz="0 0 1"/><mimic joint="ghost" multiplier="1" offset="0"/>'
    refused(
        robot(link("a"), link("b"), link("c"), joint("lead", "a", "b"), joint("follow", "a", "c", body=mimic)),
        "joint 'follow' mimics joint 'ghost', which does not exist",
    )


def test_link_with_two_parents_names_link_and_both_joints():
    refused(
        robot(link("a"), link("b"), link("c"), joint("j1", "a", "c"), joint("j2", "b", "c")),
        "link 'c' has two parents",
        "'j1'",
        "'j2'",
    )


def test_several_roots():
    refused(robot(link("a"), link("b"), link("c"), joint("j", "a", "b")), "several root links ['a', 'c']")


def test_a_cycle_without_root_is_refused_without_hanging():
    urdf = robot(link("a"), link("b"), joint("ab", "a", "b"), joint("ba", "b", "a"))
    error = within(10, casrbd.load_urdf, urdf)
    assert isinstance(error, URDFError)
    assert "no root link" in str(error) and "form a cycle" in str(error)
    assert "'ab'" in str(error) and "'ba'" in str(error)


def test_a_cycle_detached_from_a_rooted_tree_is_refused_without_hanging():
    urdf = robot(
        link("root"),
        link("arm"),
        link("x"),
        link("y"),
        joint("shoulder", "root", "arm"),
        joint("xy", "x", "y"),
        joint("yx", "y", "x"),
    )
    error = within(10, casrbd.load_urdf, urdf)
    assert isinstance(error, URDFError)
    assert "links ['x', 'y'] are not reachable from the root link 'root'" in str(error)
    assert "'xy'" in str(error) and "'yx'" in str(error)


def test_a_self_loop_is_a_cycle():
    refused(robot(link("a"), link("b"), joint("j", "a", "b"), joint("loop", "b", "b")), "two parents")
    refused(robot(link("a"), joint("loop", "a", "a")), "no root link", "'loop'")


# ---- the numbers ----


def _inertial(mass='<mass value="1"/>', inertia='ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"'):
    return f"<inertial>{mass}<inertia {inertia}/></inertial>"


@pytest.mark.parametrize(
    "mass, problem",
    [
        ('<mass value="-1"/>', "has mass -1.0"),
        ('<mass value="nan"/>', '<mass value="nan">'),
        ('<mass value="inf"/>', '<mass value="inf">'),
        ('<mass value="heavy"/>', '<mass value="heavy">'),
        ("<mass/>", "<inertial> without <mass value=...>"),
        ("", "<inertial> without <mass value=...>"),
    ],
)
def test_mass_must_be_a_finite_non_negative_number(mass, problem):
    refused(robot(link("a"), link("b", _inertial(mass=mass)), joint("j", "a", "b")), "link 'b'", problem)


def test_an_inertial_needs_an_inertia():
    refused(
        robot(link("a"), link("b", '<inertial><mass value="1"/></inertial>'), joint("j", "a", "b")),
        "link 'b' has an <inertial> without",
        "<inertia",
    )


@pytest.mark.parametrize(
    "inertial, axis, shown",
    [
        (_inertial(mass='<mass value="1e10"/>'), "0 0 1", "link 'b' has <mass value=\"1e10\">"),
        (
            _inertial(inertia='ixx="1e300" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"'),
            "0 0 1",
            "link 'b' has <inertia ixx=\"1e300\">",
        ),
        (
            '<inertial><origin xyz="0 -2e9 0"/><mass value="1"/>'
            '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>',
            "0 0 1",
            "link 'b' has <origin xyz=\"0 -2e9 0\">",
        ),
        (BOX, "1e308 1e308 0", "joint 'j' has <axis xyz=\"1e308 1e308 0\">"),
    ],
)
def test_dynamics_numbers_beyond_a_billion_are_refused(inertial, axis, shown):
    """Products of a few such numbers in the algorithms would approach overflow (1e308)."""
    refused(
        robot(link("a"), link("b", inertial), joint("j", "a", "b", body=f'<axis xyz="{axis}"/>')),
        shown,
        "none beyond 1e+09 in magnitude",
    )


def test_limits_far_beyond_a_billion_load():
    """Exporters write 1e16 for "unlimited" (example-robot-data does); limits do not enter the dynamics."""
    limit = '<axis xyz="0 0 1"/><limit lower="-1e16" upper="1e16" effort="1e30" velocity="1e30"/>'
    assert casrbd.load_urdf(robot(link("a"), link("b"), joint("j", "a", "b", body=limit))).upper == [1e16]


def test_inertia_entries_must_be_finite():
    refused(
        robot(
            link("a"),
            link("b", _inertial(inertia='ixx="nan" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"')),
            joint("j", "a", "b"),
        ),
        "link 'b'",
        '<inertia ixx="nan">',
    )


def test_inertia_with_a_missing_entry_names_the_link():
    refused(
        robot(link("a"), link("b", _inertial(inertia='ixx="1" ixy="0" ixz="0" iyy="1" iyz="0"')), joint("j", "a", "b")),
        "link[@name='b']",
        "izz",
    )


def test_non_psd_inertia_names_the_link():
    non_psd = 'ixx="0.01" ixy="0.05" ixz="0" iyy="0.01" iyz="0" izz="0.01"'
    refused(
        robot(link("a"), link("b", _inertial(inertia=non_psd)), joint("j", "a", "b")),
        "link 'b' has a negative principal moment",
    )


def test_a_joint_moving_no_mass_warns_naming_the_joint():
    with pytest.warns(casrbd.URDFWarning, match=r"joints \['j'\] have a motion that moves no mass.*singular"):
        casrbd.load_urdf(
            robot(link("a"), link("b", ""), link("c", ""), joint("j", "a", "b"), joint("tip", "b", "c", "fixed", ""))
        )


def test_a_joint_moving_only_a_point_mass_on_its_axis_warns_naming_the_joint():
    point = _inertial(inertia='ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"')
    with pytest.warns(casrbd.URDFWarning, match=r"joints \[.spin.\] have a motion that moves no mass"):
        casrbd.load_urdf(robot(link("a"), link("b", point), joint("spin", "a", "b")))


def test_a_massless_floating_root_over_a_revolute_joint_warns():
    """The free flyer can turn about the joint's axis while the joint turns back, moving no mass."""
    urdf = robot(link("a", ""), link("b"), joint("j", "a", "b"))
    with pytest.warns(casrbd.URDFWarning, match=r"joints \['root_joint'\] have a motion that moves no mass"):
        model = casrbd.load_urdf(urdf, floating_base=True)
    M = casrbd.crba(model, casrbd.random_configuration(model, np.random.default_rng(1)))
    assert np.linalg.eigvalsh(M)[0] < 1e-14 * np.linalg.eigvalsh(M)[-1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        casrbd.load_urdf(urdf.replace('<link name="a"></link>', link("a")), floating_base=True)


def test_zero_axis():
    refused(
        robot(link("a"), link("b"), joint("j", "a", "b", body='<axis xyz="0 0 0"/>')),
        "joint 'j' has axis [0.0, 0.0, 0.0], which has no direction",
    )


def test_non_finite_axis():
    refused(
        robot(link("a"), link("b"), joint("j", "a", "b", body='<axis xyz="0 nan 1"/>')),
        "joint 'j' has <axis xyz=\"0 nan 1\">",
    )


def test_lower_limit_above_upper():
    limit = '<axis xyz="0 0 1"/><limit lower="1" upper="-1" effort="1" velocity="1"/>'
    refused(
        robot(link("a"), link("b"), joint("j", "a", "b", body=limit)),
        "joint 'j' has lower limit 1.0 > upper limit -1.0",
    )


def test_limit_without_effort_names_the_joint():
    limit = '<limit lower="-1" upper="1" velocity="1"/>'
    refused(robot(link("a"), link("b"), joint("j", "a", "b", body=limit)), "joint[@name='j']/limit", "effort")


def test_planar_joint_with_a_normal_other_than_z():
    refused(
        robot(link("a"), link("b"), joint("slide", "a", "b", "planar", '<axis xyz="1 0 0"/>')),
        "planar joint 'slide' has normal [1.0, 0.0, 0.0]",
    )


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


@pytest.mark.parametrize("shape", [(2, 6), (6, 3), (12,)])
def test_f_ext_of_wrong_shape(flyer, shape):
    """One layout everywhere: 6 x njoints, one spatial force per column; the njoints x 6 array of
    older casrbd versions is refused (with a hint to transpose it), not silently reinterpreted."""
    q, v, a = _state(flyer)
    expected = r"f_ext must be a 6 x 2 matrix, column i the spatial force .* got shape " + re.escape(str(shape))
    with pytest.raises(ValueError, match=expected) as info:
        casrbd.rnea(flyer, q, v, a, f_ext=np.zeros(shape))
    assert ("transpose" in str(info.value)) == (shape == (2, 6))
    with pytest.raises(ValueError, match=expected):
        casrbd.aba(flyer, q, v, a, f_ext=np.zeros(shape))
    with pytest.raises(ValueError, match=r"f_ext must be a 6 x 2 matrix"):
        casrbd.aba_derivatives(flyer, q, v, a, f_ext=np.zeros(shape))


def test_symbolic_f_ext_of_wrong_shape(flyer):
    q, v, a = _state(flyer)
    with pytest.raises(ValueError, match=r"f_ext must be a 6 x 2 matrix.* got shape \(2, 6\)"):
        casrbd.rnea(flyer, q, v, a, f_ext=ca.SX.sym("f", 2, 6))


@pytest.mark.parametrize("bad", ["abc", [[0.0, 1.0], [2.0]]])
def test_non_numeric_argument_names_the_argument(flyer, bad):
    _, v, a = _state(flyer)
    with pytest.raises(ValueError, match=r"rnea: argument 'q' must be 8 numbers, got"):
        casrbd.rnea(flyer, bad, v, a)


def test_f_ext_as_a_list_of_symbolic_columns_is_refused(flyer):
    """Symbolic forces are one 6 x njoints symbol (or expression), not a list of columns."""
    q, v, a = _state(flyer)
    with pytest.raises(ValueError, match=r"f_ext must be a 6 x 2 matrix.*got list"):
        casrbd.rnea(flyer, q, v, a, f_ext=[ca.SX.sym("f", 6), ca.SX.sym("g", 6)])


def test_non_finite_f_ext_names_the_entries(flyer):
    q, v, a = _state(flyer)
    F = np.zeros((6, 2))
    F[4, 1] = np.nan
    with pytest.raises(ValueError, match=r"f_ext has non-finite entries at \(component, joint\) \[\[4, 1\]\]"):
        casrbd.rnea(flyer, q, v, a, f_ext=F)


def test_unknown_frame_name_lists_the_frames(flyer):
    with pytest.raises(KeyError, match=r"no frame 'hand'; frames: \['base', 'arm'\]"):
        casrbd.frame_jacobian(flyer, casrbd.neutral(flyer), "hand")
    with pytest.raises(IndexError, match=r"has 2 frames, no frame 5"):
        casrbd.frame_jacobian(flyer, casrbd.neutral(flyer), 5)


def test_unknown_reference_lists_the_references(flyer):
    with pytest.raises(
        ValueError, match=r"unknown reference( frame)? 'global'; valid: 'local', 'world', 'local_world_aligned'"
    ):
        casrbd.frame_jacobian(flyer, casrbd.neutral(flyer), "arm", reference="global")


def test_zero_quaternion_names_q_and_the_joint(flyer):
    q, v, a = _state(flyer)
    q[3:7] = 0
    with pytest.raises(ValueError, match=r"rnea: argument 'q' has a zero quaternion .* for joint 'root_joint'"):
        casrbd.rnea(flyer, q, v, a)


@pytest.mark.parametrize("joint_type", ["spherical", "planar", "floating"])
def test_zero_quaternion_or_cos_sin_pair_is_refused_for_every_normalised_joint(joint_type):
    model = serial_chain(2, joint_type)
    q = casrbd.neutral(model)
    q[model.nq // 2 :] = 0  # the second joint's configuration, normalised part included
    with pytest.raises(
        ValueError,
        match=rf"aba: argument 'q' has a zero quaternion \(or cos, sin\) .* "
        rf"for joint 'j1_{joint_type}'",
    ):
        casrbd.aba(model, q, np.zeros(model.nv), np.zeros(model.nv))


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
