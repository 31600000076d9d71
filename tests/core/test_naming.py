"""Function names from any user name: casrbd.naming, and models whose names casadi and C refuse.

References: casadi's own check of Function names (``ca.Function`` raises on an
invalid one), ``codegen.check_names`` (C symbols), and the same model with
plain ASCII names, whose Functions must compute exactly the same numbers.
"""

import re
import shutil

import casadi as ca
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import casrbd
from casrbd import codegen
from casrbd.naming import c_problem, identifier, is_valid
from casrbd.testing import rel_err

HOSTILE = {
    "robot": "Roboter Müller (1)_",
    "base": "base (1)",
    "hip": "hüfte_",
    "thigh": "Oberschenkel links",
    "knee": "knie (2)",
    "foot": "Fuß_",
    "toe": "Zeh (toe)_",
    "heel": "ферзь pied ",
}
PLAIN = {k: k for k in HOSTILE}


def accepted_by_casadi(name):
    x = ca.SX.sym("x")
    try:
        ca.Function(name, [x], [x])
    except RuntimeError:
        return False
    return True


@pytest.mark.parametrize("name", ["arm7_rnea", "solo_constraint_dynamics_FL_FOOT_3d_local", "a_b1"])
def test_valid_names_are_kept(name):
    assert identifier(name) == name


@pytest.mark.parametrize(
    "name",
    ["robot_", "humanoid (1)", "Müller", "ферзь", "a  b", "a__b", "_a", "1robot", "int", "casadi_x", "jac", "", "___"],
)
def test_invalid_names_become_readable_valid_identifiers(name):
    ident = identifier(name)
    assert is_valid(ident) and accepted_by_casadi(ident) and c_problem(ident) is None
    codegen.check_names([ca.Function(ident, [ca.SX.sym("x")], [1])], ident + "_lib")
    assert all(word in ident for word in re.findall("[A-Za-z0-9]+", name))  # readable: its ASCII words stay


def test_names_that_clean_up_alike_stay_distinct():
    names = ["a b", "a(b", "a_b_", "a  b", "a\tb", "á b", "a b ", "a_b"]
    assert len({identifier(n) for n in names}) == len(names)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=30), min_size=2, max_size=2, unique=True))
def test_any_text_gives_a_valid_distinct_identifier(pair):
    a, b = (identifier(t) for t in pair)
    assert accepted_by_casadi(a) and c_problem(a) is None and not a.endswith("_")
    assert a != b


def urdf(names):
    def inertial(mass):
        return (
            f'<inertial><mass value="{mass}"/><origin xyz="0 0 0.1"/>'
            '<inertia ixx="0.02" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.01"/></inertial>'
        )

    def joint(name, kind, parent, child, xyz, axis="0 1 0"):
        return (
            f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}"/><axis xyz="{axis}"/><limit effort="1" velocity="1" lower="-3" upper="3"/></joint>'
        )

    n = names
    return f"""<?xml version="1.0" encoding="utf-8"?>
<robot name="{n["robot"]}">
  <link name="{n["base"]}">{inertial(3.0)}</link>
  <link name="{n["thigh"]}">{inertial(1.0)}</link>
  <link name="{n["foot"]}">{inertial(0.5)}</link>
  <link name="{n["toe"]}"/>
  <link name="{n["heel"]}"/>
  {joint(n["hip"], "revolute", n["base"], n["thigh"], "0 0 -0.1", "1 0 0")}
  {joint(n["knee"], "revolute", n["thigh"], n["foot"], "0 0 -0.3")}
  {joint("toe_joint", "fixed", n["foot"], n["toe"], "0.1 0 -0.05")}
  {joint("heel_joint", "fixed", n["foot"], n["heel"], "-0.05 0 -0.05")}
</robot>"""


def every_function(model, names):
    """Every kind of Function, with the hostile frames as frames and contacts."""
    toe, heel = names["toe"], names["heel"]
    return [
        casrbd.function(model, "rnea"),
        casrbd.function(model, "aba"),
        casrbd.function(model, "crba"),
        casrbd.function(model, "frame_placement", frame=toe),
        casrbd.function(model, "frame_placement", frame=heel),
        casrbd.function(model, "constraint_dynamics", contacts=[(toe, "3d")]),
        casrbd.function(model, "constraint_dynamics", contacts=[(heel, "3d")], jacobian="analytical"),
        casrbd.function(model, "aba", jacobian="analytical"),  # with its analytical second order
        casrbd.function(model, "rnea", jacobian="analytical", second_order="ad"),
    ]


def evaluate(f, model, seed):
    rng = np.random.default_rng(seed)
    args = [np.asarray(casrbd.random_configuration(model, rng))]
    args += [rng.normal(size=f.size_in(i)) for i in range(1, f.n_in())]
    return [np.array(y) for y in f(*args)] if f.n_out() > 1 else [np.array(f(*args))]


def test_a_model_with_hostile_names_builds_every_function_as_the_plain_model_does():
    model = casrbd.load_urdf(urdf(HOSTILE), floating_base=True)
    plain = casrbd.load_urdf(urdf(PLAIN), floating_base=True)
    assert model.name == HOSTILE["robot"]  # the original name stays with the model
    functions, reference = every_function(model, HOSTILE), every_function(plain, PLAIN)
    names = [f.name() for f in functions]
    assert len(set(names)) == len(names)
    codegen.check_names(functions)
    analytical = [f for f in functions if "jac_" + f.name() in f.cache()]
    assert len(analytical) == 3
    for f, g in zip(functions, reference):
        assert accepted_by_casadi(f.name())
        for got, want in zip(evaluate(f, model, 1), evaluate(g, plain, 1)):
            assert rel_err(got, want) < 1e-14, f.name()
        if "jac_" + f.name() not in f.cache():
            continue
        # the analytical Jacobian casadi takes of a call
        xs = [ca.MX.sym(f.name_in(i), f.sparsity_in(i)) for i in range(f.n_in())]
        J = ca.Function("J", xs, [ca.jacobian(ca.vertcat(*[ca.vec(y) for y in f.call(xs)]), ca.vertcat(*xs))])
        xs = [ca.MX.sym(g.name_in(i), g.sparsity_in(i)) for i in range(g.n_in())]
        J_ref = ca.Function("J", xs, [ca.jacobian(ca.vertcat(*[ca.vec(y) for y in g.call(xs)]), ca.vertcat(*xs))])
        assert rel_err(evaluate(J, model, 2)[0], evaluate(J_ref, plain, 2)[0]) < 1e-12, f.name()


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_a_model_with_hostile_names_compiles(tmp_path, monkeypatch):
    monkeypatch.setenv("CASRBD_CACHE", str(tmp_path / "cache"))
    model = casrbd.load_urdf(urdf(HOSTILE), floating_base=True)
    functions = [
        casrbd.function(model, "rnea", jacobian="analytical", second_order="ad"),
        casrbd.function(model, "frame_placement", frame=HOSTILE["toe"]),
    ]
    lib = codegen.compile_functions(functions, flags=("-O0",))
    for f in functions:
        assert rel_err(evaluate(lib[f.name()], model, 3)[0], evaluate(f, model, 3)[0]) < 1e-14


def test_an_mjcf_file_named_like_a_download_copy(tmp_path):
    """The model takes its name from the file, ``humanoid (1).xml``."""
    pytest.importorskip("mujoco")
    path = tmp_path / "humanoid (1).xml"
    path.write_text(
        '<mujoco><worldbody><body name="torse (ü)_"><joint name="hinge " type="hinge" axis="0 1 0"/>'
        '<geom type="capsule" size="0.05" fromto="0 0 0 0 0 -0.5" mass="1"/></body></worldbody></mujoco>'
    )
    model = casrbd.load_mjcf(str(path))
    assert model.name == "humanoid (1)"
    f = casrbd.function(model, "aba")
    assert accepted_by_casadi(f.name()) and c_problem(f.name()) is None
    q, v, tau = np.array([0.3]), np.array([0.1]), np.array([0.5])
    a = np.array(f(q, v, tau)).ravel()  # undone by the Python rnea
    assert abs(np.array(casrbd.rnea(model, q, v, a)).item() - 0.5) < 1e-12
