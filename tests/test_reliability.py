"""Hostile input on the newer surfaces (docs/reliability.md): every refusal is checked for its error
type and for naming the culprit; what is accepted is checked against an independent reference
(MuJoCo's compiled model, Pinocchio, numpy).

Classes: MJCF numbers after MuJoCo's compiler; MJCF documents and their includes; contact and
parameter options; conversion errors of the numeric API; models without joints. (FastFunction
assignments: test_fast.py; the base parameters' rule: test_parameters.py.)
"""

import os
import re
import warnings

import numpy as np
import pytest
from conftest import get_model, mujoco_full_m

import casrbd
from casrbd.loaders.mjcf import MJCFError, MJCFWarning, load_mjcf
from casrbd.parameters import (
    log_cholesky_to_parameters,
    model_parameters,
    parameters_to_log_cholesky,
    require_consistent,
    with_parameters,
)
from casrbd.testing import random_state, rel_err


@pytest.fixture
def mujoco():
    """MuJoCo, an optional dependency: the MJCF tests alone are skipped without it."""
    return pytest.importorskip("mujoco")


def mjcf(
    body='pos="0 0 1"',
    joint='type="hinge" axis="0 0 1"',
    inertial='pos="0 0 0" mass="1" diaginertia="1 1 1"',
    extra="",
    option="",
):
    """One body on one joint, with a site and an actuator: every place a number may sit."""
    return (
        f'<mujoco model="m"><option {option}/><worldbody><body name="b" {body}>'
        f'<joint name="j" {joint}/><inertial {inertial}/><site name="s" {extra}/>'
        f'</body></worldbody><actuator><motor name="u" joint="j"/></actuator></mujoco>'
    )


# (document, the culprit the message must name, what it must say)
BAD_NUMBERS = [
    (mjcf(body='quat="1e-300 0 0 0"'), "body 'b'", "quat .* of norm 0"),
    (mjcf(body='quat="1e300 1e300 0 0"'), "body 'b'", "quat .* of norm 0"),
    (mjcf(body='quat="nan 0 0 1"'), "body 'b'", "quat .* of norm nan"),
    (mjcf(body='euler="nan 0 0"'), "body 'b'", "quat"),
    (mjcf(body='pos="inf 0 0"'), "body 'b'", r"pos \[inf"),
    (mjcf(body='pos="1e300 0 0"'), "body 'b'", r"pos \[1e\+300"),
    (mjcf(inertial='pos="0 0 0" mass="inf" diaginertia="1 1 1"'), "body 'b'", r"mass \[inf\]"),
    (mjcf(inertial='pos="0 0 0" mass="1e300" diaginertia="1 1 1"'), "body 'b'", "mass"),
    (mjcf(inertial='pos="0 0 0" mass="1" diaginertia="1e300 1e300 1e300"'), "body 'b'", "principal moments of inertia"),
    (mjcf(inertial='pos="0 0 0" mass="1" diaginertia="1 1 1" quat="1e-300 0 0 0"'), "body 'b'", "iquat"),
    (mjcf(inertial='pos="0 0 inf" mass="1" diaginertia="1 1 1"'), "body 'b'", r"inertial pos \(ipos\)"),
    (mjcf(joint='type="hinge" axis="nan 0 1"'), "joint 'j'", "axis .* of norm nan"),
    (mjcf(joint='type="slide" axis="1e300 1e300 0"'), "joint 'j'", "axis .* of norm 0"),
    (mjcf(joint='type="hinge" axis="0 0 1" pos="nan 0 0"'), "joint 'j'", r"pos \[nan"),
    (mjcf(joint='type="slide" axis="0 0 1" ref="1e300"'), "joint 'j'", r"ref \[1e\+300\]"),
    (mjcf(joint='type="hinge" axis="0 0 1" range="nan 1" limited="true"'), "joint 'j'", r"range \[nan"),
    (mjcf(joint='type="hinge" axis="0 0 1" armature="inf"'), "joint 'j'", "armature"),
    (mjcf(extra='pos="0 inf 0"'), "site 's'", r"pos \[0.0, inf"),
    (mjcf(extra='quat="1e-300 0 0 0"'), "site 's'", "quat"),
    (mjcf(option='gravity="0 0 nan"'), "option 'gravity'", "nan"),
    (mjcf(option='gravity="0 0 -inf"'), "option 'gravity'", "-inf"),
    (mjcf(option='gravity="0 0 -1e300"'), "option 'gravity'", "1e\\+300"),
    # a geom inertia that overflows (a LinAlgError in the inertia checks before)
    (mjcf().replace('<inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/>', '<geom size="1e200 1 1" type="box"/>'),
     "body 'b'", "mass"),
]  # fmt: skip


@pytest.mark.parametrize("xml, culprit, what", BAD_NUMBERS)
def test_mjcf_numbers_are_checked_after_mujoco_naming_the_element_and_the_file(mujoco, tmp_path, xml, culprit, what):
    path = tmp_path / "robot (1).xml"
    path.write_text(xml)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MJCFWarning)  # MuJoCo's own "XML contains a 'NaN'"
        with pytest.raises(MJCFError, match=rf"{re.escape(str(path))}: {culprit} has .*{what}"):
            load_mjcf(str(path))
        with pytest.raises(MJCFError, match=rf"MJCF string: {culprit} has .*{what}"):
            load_mjcf(xml)


def mujoco_mass_matrix(mujoco, xml, qpos):
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qpos[:] = qpos
    mujoco.mj_forward(m, d)
    return mujoco_full_m(m, d)


def test_numbers_at_the_limits_load_and_agree_with_mujoco(mujoco):
    """Unnormalised quaternions and axes, masses and lengths up to the bound: MuJoCo's mass matrix."""
    for xml in (
        mjcf(body='quat="3 1 0 2"', joint='type="hinge" axis="0 2 2" pos="1e3 0 0"'),
        mjcf(
            inertial='pos="0 0 0" mass="1e9" diaginertia="1e9 1e9 1e9" quat="1e-3 2e-3 0 0"',
            joint='type="slide" axis="1 1 0"',
        ),
        mjcf(body='pos="1e9 0 0"', inertial='pos="0 0 0" mass="1e-6" diaginertia="1e-9 2e-9 2e-9"'),
    ):
        model = load_mjcf(xml)
        for q in ([0.3], [-1.2]):
            assert rel_err(casrbd.crba(model, q), mujoco_mass_matrix(mujoco, xml, q)) < 1e-12


def test_strict_turns_mujocos_warnings_into_errors(mujoco):
    deprecated = mjcf().replace("<option />", '<compiler settotalmass="2"/>')
    for xml, message in (
        (mjcf(body='pos="nan 0 0"'), "XML contains a 'NaN'"),
        (deprecated, "settotalmass' is deprecated"),
    ):
        with pytest.raises(MJCFError, match=f"MJCF string: MuJoCo: .*{message}"):
            load_mjcf(xml, strict=True)
    with pytest.warns(MJCFWarning, match="settotalmass' is deprecated"):
        assert load_mjcf(deprecated).mass == pytest.approx(2.0)


INCLUDED = '<mujoco><body name="inc"><joint name="k"/><geom size=".1"/>{}</body></mujoco>'


def write_main(tmp_path, included, name="part.xml"):
    (tmp_path / "main.xml").write_text(
        f'<mujoco><worldbody><body name="b"><joint name="j"/><geom size=".1"/><include file="{name}"/>'
        "</body></worldbody></mujoco>"
    )
    if included is not None:
        (tmp_path / name).write_bytes(included if isinstance(included, bytes) else included.encode())
    return str(tmp_path / "main.xml")


@pytest.mark.parametrize(
    "included, message",
    [
        ('<!DOCTYPE m [<!ENTITY e "x">]>' + INCLUDED.format(""), r"part.xml: line 1: DOCTYPE and ENTITY"),
        (INCLUDED.format("").encode() + b"\xff", r"part.xml: not UTF-8 text: byte 0xff"),
        (INCLUDED.format("<body>"), r"part.xml: malformed XML"),
        (INCLUDED.format("x" * 3000), r"part.xml: larger than the limit of 2000 bytes"),
        (INCLUDED.format("x" * 1900), r"main.xml: with the files it includes, larger than the limit of 2000 bytes"),
        (None, r"main.xml: <include file='part.xml'> cannot be read: .*No such file"),
    ],
)
def test_included_files_are_read_as_safely_as_the_main_one(mujoco, tmp_path, included, message):
    with pytest.raises(MJCFError, match=message):
        load_mjcf(write_main(tmp_path, included), max_bytes=2000)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_or_a_directory_is_refused_without_hanging(mujoco, tmp_path):
    main = write_main(tmp_path, None)
    os.mkfifo(tmp_path / "part.xml")  # opened for reading, it would block until a writer appears
    with pytest.raises(MJCFError, match=r"part.xml: not a regular file \(a FIFO\)"):
        load_mjcf(main)
    with pytest.raises(MJCFError, match=r"not a regular file \(a FIFO\)"):
        load_mjcf(str(tmp_path / "part.xml"))
    with pytest.raises(casrbd.URDFError, match=r"not a regular file \(a directory\)"):
        casrbd.load_urdf(str(tmp_path))


def test_nested_includes_resolve_as_mujoco_resolves_them(mujoco, tmp_path, monkeypatch):
    """Relative to the main file's folder (a string: the current directory), nested ones too."""
    (tmp_path / "sub").mkdir()
    main = write_main(tmp_path, INCLUDED.format('<include file="leaf.xml"/>'), "sub/part.xml")
    (tmp_path / "leaf.xml").write_text('<mujoco><body name="leaf"><joint name="l"/><geom size=".1"/></body></mujoco>')
    m = mujoco.MjModel.from_xml_path(main)
    assert load_mjcf(main).names == tuple(m.joint(j).name for j in range(m.njnt)) == ("j", "k", "l")
    monkeypatch.chdir(tmp_path)
    assert load_mjcf((tmp_path / "main.xml").read_text()).names == ("j", "k", "l")


# ---------------------------------------------------------------- options


ARM = "arm7"
TOOL = (("tool", "3d", [0.0, 0.0, 0.5]),)


@pytest.mark.parametrize("option", ["kp", "kd", "damping"])
@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan, -1.0, 1e300, 10**400, [1.0], "fast"])
def test_contact_gains_must_be_finite_and_in_range(option, value):
    m = get_model(ARM)
    q = np.zeros(m.nv)
    with pytest.raises(ValueError, match=rf"^{option}( \(.*\))? must be a( finite)? number"):
        casrbd.constraint_dynamics(m, q, q, q, TOOL, **{option: value})


@pytest.mark.parametrize("value", [np.nan, np.inf, -0.1, 1.5, "one"])
def test_restitution_must_be_in_zero_one(value):
    m = get_model(ARM)
    q = np.zeros(m.nv)
    with pytest.raises(ValueError, match=r"^restitution must be a( finite)? number"):
        casrbd.impulse_dynamics(m, q, q, (("tool", "3d"),), restitution=value)


@pytest.mark.parametrize(
    "contacts, error, message",
    [
        ((("tool", ["3d"]),), ValueError, r"contact \('tool', \['3d'\]\): unknown type \['3d'\]"),
        ((("tool", {"3d"}),), ValueError, "unknown type"),
        ((([1], "3d"),), TypeError, r"contact \(\[1\], '3d'\): the frame must be a name or an index, got list"),
        (((1.5, "3d"),), TypeError, "the frame must be a name or an index, got float"),
        (({"frame": "tool", "type": "3d"},), ValueError, r"expected \(frame, '3d' \| '6d'\)"),
        (({"tool", "3d"},), ValueError, r"expected \(frame, '3d' \| '6d'\)"),
        ((("tool", "3d", [10**400, 0, 0]),), ValueError, "the anchor of a 3d contact must be a world point"),
        ((("tool", "3d", [np.nan, 0, 0]),), ValueError, "the anchor of a 3d contact must be a world point"),
    ],
)
def test_contact_entries_of_any_kind_are_refused_by_name(contacts, error, message):
    m = get_model(ARM)
    q = np.zeros(m.nv)
    with pytest.raises(error, match=message):
        casrbd.constraint_dynamics(m, q, q, q, contacts)


@pytest.mark.parametrize(
    "pi, message",
    [
        ("abc", r"with_parameters: expected 10 numbers per body of model 'arm7' \(70 numbers, or 7 groups of 10\)"),
        ([10**400] * 70, "expected 10 numbers per body .*int too large"),
        ([[1.0] * 10] * 6 + [[1.0] * 9], "body 'joint7' has 9 parameters, expected 10"),
        ([[1.0] * 10] * 6 + [["a"] * 10], "body 'joint7': expected 10 numbers"),
        ([[1.0, 2.0]] * 7, "body 'joint1' has 2 parameters"),
        (np.r_[np.ones(69), np.nan], r"body 'joint7' has non-finite parameters \['I_zz'\]"),
        (np.r_[np.inf, np.ones(69)], r"body 'joint1' has non-finite parameters \['m'\]"),
    ],
)
def test_parameter_inputs_are_refused_by_name(pi, message):
    with pytest.raises(ValueError, match=message):
        with_parameters(get_model(ARM), pi)


def log_cholesky_by_hand(theta):
    """pi of one body's theta with numpy: J = U U^T, U as in Rucker & Wensing (eq. 11)."""
    a, d1, d2, d3, s12, s23, s13, t1, t2, t3 = theta
    U = np.exp(a) * np.array(
        [[np.exp(d1), s12, s13, t1], [0, np.exp(d2), s23, t2], [0, 0, np.exp(d3), t3], [0, 0, 0, 1]]
    )
    J = U @ U.T
    S = J[:3, :3]
    I = np.trace(S) * np.eye(3) - S
    return np.array([J[3, 3], *J[:3, 3], I[0, 0], I[0, 1], I[1, 1], I[0, 2], I[1, 2], I[2, 2]])


@pytest.mark.parametrize(
    "k, value",
    [(0, 400.0), (0, -101.0), (2, 1e3), (3, np.nan), (4, 1e30), (9, -np.inf), (7, np.nan)],
)
def test_log_cholesky_coordinates_out_of_range_are_refused_naming_the_coordinate(k, value):
    names = ("alpha", "d1", "d2", "d3", "s12", "s23", "s13", "t1", "t2", "t3")
    theta = np.zeros(20)
    theta[10 + k] = value
    expected = rf"body 1 has {names[k]} = {re.escape(repr(value))} \(entry {10 + k}\); expected a finite"
    with pytest.raises(ValueError, match=expected):
        log_cholesky_to_parameters(theta)


def test_log_cholesky_at_the_edges_of_its_range_is_finite_and_exact():
    """The bounds of the range: every entry finite, the mass positive, and equal to numpy's U U^T."""
    for theta in (
        [100, 100, 100, 100, 1e20, 1e20, 1e20, 1e20, 1e20, 1e20],
        [-100, -100, -100, -100, 1e20, -1e20, 1e20, -1e20, 1e20, -1e20],
        [-100, 100, -100, 100, 0, 0, 0, 0, 0, 0],
        [100, -100, -100, -100, 0, 0, 0, 0, 0, 0],
    ):
        pi = log_cholesky_to_parameters(theta)
        assert np.all(np.isfinite(pi)) and pi[0] > 0
        assert rel_err(pi, log_cholesky_by_hand(theta)) < 1e-14
    m = get_model(ARM)
    heavy = model_parameters(m) * np.exp(250.0)  # consistent, but theta's alpha = 125 > 100
    with pytest.raises(ValueError, match=r"parameters_to_log_cholesky: body 0 has alpha = 125\.\d+"):
        parameters_to_log_cholesky(m, heavy)


def test_a_massless_pi_is_refused_by_the_checks_and_by_the_functions():
    """The documented contract: casadi Functions with parameters=True that invert M(pi) raise where it is
    singular, never returning NaN; require_consistent and with_parameters name the body first."""
    m = get_model(ARM)
    pi = model_parameters(m).copy()
    pi[60:70] = 0.0  # the last body massless: joint7 moves nothing, M is singular
    for check in (lambda: require_consistent(m, pi), lambda: with_parameters(m, pi)):
        with pytest.raises(ValueError, match="body 'joint7' of model 'arm7' is not physically consistent"):
            check()
    q, v, tau, _ = random_state(m, np.random.default_rng(1))
    with pytest.raises(RuntimeError, match="nan detected for output a"):
        casrbd.function(m, "aba", parameters=True)(q, v, tau, pi)
    assert np.all(np.isfinite(casrbd.function(m, "rnea", parameters=True)(q, v, tau, pi).full()))  # M not inverted


# ---------------------------------------------------------------- conversions of the numeric API


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda m, q: casrbd.rnea(m, [[1, 2], [3]], q, q), r"rnea: argument 'q' must be 7 numbers, got list"),
        (lambda m, q: casrbd.rnea(m, q, [10**400] * 7, q), r"'v' must be 7 numbers, got list .*range of floats"),
        (lambda m, q: casrbd.aba(m, q, q, {"tau": 1}), r"aba: argument 'tau' must be 7 numbers, got dict"),
        (lambda m, q: casrbd.crba(m, "q"), r"crba: argument 'q' must be 7 numbers, got str"),
        (lambda m, q: casrbd.rnea(m, q, np.full(7, 1e200), q), r"argument 'v' has entries beyond 1e\+50 .* at \[0, 1"),
        (lambda m, q: casrbd.aba(m, q, q, np.r_[np.zeros(6), -1e60]), r"argument 'tau' has entries beyond .* at \[6\]"),
        (lambda m, q: casrbd.rnea_derivatives(m, np.r_[1e51, q[1:]], q, q), r"argument 'q' has entries beyond"),
        (lambda m, q: casrbd.rnea(m, q, q, q, [[10**400] * 7] * 6), r"f_ext must be a 6 x 7 matrix.*range of floats"),
        (lambda m, q: casrbd.rnea(m, q, q, q, [[0] * 7] * 5 + [[0] * 6]), r"f_ext must be a 6 x 7 matrix"),
        (lambda m, q: casrbd.rnea(m, q, q, q, np.full((6, 7), 1e99)), r"f_ext has entries beyond 1e\+50 .* \[\[0, 0\]"),
    ],
)  # fmt: skip
def test_conversion_errors_name_the_argument_and_the_shape(call, message):
    m = get_model(ARM)
    with pytest.raises(ValueError, match=message):
        call(m, np.zeros(m.nv))


def test_arguments_at_the_magnitude_bound_match_pinocchio(pin):
    from oracle import Oracle

    m = get_model(ARM)
    o = Oracle.from_robot(ARM, m)
    rng = np.random.default_rng(4)
    q, v, a = rng.uniform(-1, 1, m.nv), 1e50 * rng.uniform(-1, 1, m.nv), 1e50 * rng.uniform(-1, 1, m.nv)
    tau = casrbd.rnea(m, q, v, a)
    assert np.all(np.isfinite(tau))
    assert rel_err(tau, o.from_v(pin.rnea(o.pmodel, o.data, o.q(q), o.v(v), o.v(a)))) < 1e-12


# ---------------------------------------------------------------- models without joints


def test_a_model_without_joints_gives_empty_results_of_the_specs_shapes():
    empty = casrbd.Model("empty", [])
    for name, shapes in (
        ("minverse", [(0, 0)]),
        ("aba_derivatives", [(0, 0)] * 3),
        ("rnea_derivatives", [(0, 0)] * 3),
        ("aba_hessian", [(0, 0)] * 5),
        ("rnea_second_order_derivatives", [(0, 0)] * 4),
    ):
        for method in ("idsva", "chain_rule") if name.endswith("_derivatives") and "second" not in name else (None,):
            f = casrbd.function(empty, name, **({"method": method} if method else {}))
            assert [f.size_out(i) for i in range(f.n_out())] == shapes, (name, method)
    assert casrbd.minverse(empty, []).shape == (0, 0)
    assert [x.shape for x in casrbd.aba_derivatives(empty, [], [], [], method="chain_rule")] == [(0, 0)] * 3
    assert casrbd.aba(empty, [], [], []).shape == (0,)
