"""The same numbers through every route: numpy calls, cached SX and MX Functions, and the
algorithms called directly with SX or MX symbols; types, names and caching of the API."""

import casadi as ca
import numpy as np
import pytest
from conftest import get_model

import casrbd
from casrbd.models import random_tree
from casrbd.testing import random_state, rel_err

TOL = 1e-12
ROBOTS = ("random", "arm7")  # a synthetic tree with every constant-subspace joint type (free-flyer root), a URDF robot

# algorithm -> (input names, output name, takes f_ext)
SIGNATURES = {
    "rnea": (("q", "v", "a"), "tau", True),
    "nonlinear_effects": (("q", "v"), "nle", False),
    "generalized_gravity": (("q",), "g", False),
    "crba": (("q",), "M", False),
    "aba": (("q", "v", "tau"), "a", True),
    "minverse": (("q",), "Minv", False),
    "forward_kinematics": (("q",), "oMi", False),
    "frame_placement": (("q",), "oMf", False),
    "frame_jacobian": (("q",), "J", False),
    "integrate": (("q", "v"), "q_next", False),
    "difference": (("q0", "q1"), "dq", False),
}
COMPARED = ("rnea", "aba", "crba", "minverse", "integrate", "difference", "frame_jacobian")


def frame_options(model, name):
    """The options of the frame functions: the model's last frame (a leaf's), world Jacobian."""
    last = len(model.frames) - 1
    return {"frame_placement": {"frame": last}, "frame_jacobian": {"frame": last, "reference": "world"}}.get(name, {})


@pytest.fixture(scope="module", params=ROBOTS)
def model(request):
    return get_model(request.param)


def sizes(model, inputs):
    return [model.nq if name.startswith("q") else model.nv for name in inputs]


def numeric_args(model, name, rng):
    q, v, a, F = random_state(model, rng)
    args = {"q": q, "v": v, "a": a, "tau": a, "q0": q, "q1": casrbd.random_configuration(model, rng)}
    return [args[k] for k in SIGNATURES[name][0]], F


def api_call(model, name, args, F=None, **options):
    fun = getattr(casrbd, name)
    return fun(model, *args, **options) if F is None else fun(model, *args, F, **options)


def routes(model, name, with_f_ext):
    """Callables (args, F) -> numpy result of algorithm ``name`` by every route except the numpy call."""
    inputs, _, _ = SIGNATURES[name]
    options = frame_options(model, name)
    out = {}
    for symbolic in ("SX", "MX"):
        fun = casrbd.function(model, name, symbolic=symbolic, f_ext=with_f_ext, **options)
        out[f"function {symbolic}"] = lambda args, F, fun=fun: fun(*args, *([F] if with_f_ext else []))
        sym = getattr(ca, symbolic)
        syms = [sym.sym(k, n) for k, n in zip(inputs, sizes(model, inputs))]
        forces = [sym.sym("f_ext", 6, model.njoints)] if with_f_ext else []
        expr = api_call(model, name, syms, *forces, **options)
        assert isinstance(expr, sym), f"{name} of {symbolic} symbols returned a {type(expr).__name__}"
        direct = ca.Function("f", syms + forces, [expr])
        out[f"direct {symbolic}"] = lambda args, F, f=direct: f(*args, *([F] if with_f_ext else []))
        if with_f_ext:  # f_ext also as an expression: the columns of njoints symbolic 6-vectors side by side
            columns = [sym.sym(f"f{i}", 6) for i in range(model.njoints)]
            expr = api_call(model, name, syms, ca.horzcat(*columns), **options)
            direct = ca.Function("f", syms + columns, [expr])
            out[f"direct {symbolic}, f_ext columns"] = lambda args, F, f=direct: f(*args, *F.T)
    return out


@pytest.mark.parametrize(
    "name, with_f_ext", [(n, False) for n in COMPARED] + [(n, True) for n in COMPARED if SIGNATURES[n][2]]
)
def test_routes_agree(model, name, with_f_ext):
    others = routes(model, name, with_f_ext)
    rng = np.random.default_rng(7)
    for _ in range(5):
        args, F = numeric_args(model, name, rng)
        reference = api_call(model, name, args, F if with_f_ext else None, **frame_options(model, name))
        assert isinstance(reference, np.ndarray)
        for route, evaluate in others.items():
            value = np.array(evaluate(args, F))
            assert rel_err(value.reshape(reference.shape), reference) < TOL, route


def test_numeric_f_ext_forms(model):
    """f_ext as a 6 x njoints array, a list of its 6 rows, nested lists, or a DM give the same torques."""
    q, v, a, F = random_state(model, np.random.default_rng(3))
    tau = casrbd.rnea(model, q, v, a, F)
    assert rel_err(casrbd.rnea(model, q, v, a, list(F)), tau) == 0
    assert rel_err(casrbd.rnea(model, q, v, a, [list(f) for f in F]), tau) == 0
    assert rel_err(casrbd.rnea(model, q, v, a, ca.DM(F)), tau) == 0
    assert rel_err(casrbd.rnea(model, q, v, a, np.zeros_like(F)), casrbd.rnea(model, q, v, a)) == 0


def expected_shapes(model):
    nq, nv = model.nq, model.nv
    return {
        "rnea": (nv,),
        "nonlinear_effects": (nv,),
        "generalized_gravity": (nv,),
        "crba": (nv, nv),
        "aba": (nv,),
        "minverse": (nv, nv),
        "frame_placement": (4, 4),
        "frame_jacobian": (6, nv),
        "integrate": (nq,),
        "difference": (nv,),
    }


@pytest.mark.parametrize("robot_name", ["random", "arm7", "one revolute", "one spherical", "two prismatic"])
def test_numeric_outputs_are_numpy_of_documented_shapes(robot_name):
    if robot_name.startswith(("one", "two")):
        n, jtype = robot_name.split()
        model = random_tree(1 if n == "one" else 2, (jtype,), seed=5)
    else:
        model = get_model(robot_name)
    rng = np.random.default_rng(1)
    wrong = {}
    for name, shape in expected_shapes(model).items():
        args, _ = numeric_args(model, name, rng)
        for form in (lambda x: x, list, ca.DM):  # numpy, list and DM inputs
            out = api_call(model, name, [form(x) for x in args], **frame_options(model, name))
            if not isinstance(out, np.ndarray) or out.shape != shape:
                wrong[name] = (type(out).__name__, np.shape(out), shape)
    oMi = casrbd.forward_kinematics(model, casrbd.neutral(model))
    if len(oMi) != model.njoints or any(not isinstance(M, np.ndarray) or M.shape != (4, 4) for M in oMi):
        wrong["forward_kinematics"] = [np.shape(M) for M in oMi]
    assert not wrong, f"(type, shape, expected shape): {wrong}"


@pytest.mark.parametrize("symbolic", ["SX", "MX"])
def test_symbolic_outputs_have_input_type(symbolic):
    model = get_model("binary")
    sym = getattr(ca, symbolic)
    shapes = expected_shapes(model)
    for name, (inputs, _, _) in SIGNATURES.items():
        syms = [sym.sym(k, n) for k, n in zip(inputs, sizes(model, inputs))]
        out = api_call(model, name, syms, **frame_options(model, name))
        outs = out if name == "forward_kinematics" else [out]
        for o in outs:
            assert isinstance(o, sym), (name, type(o))
        if name in shapes:
            assert out.shape == (shapes[name] + (1,))[:2], name


def test_function_names(model):
    for name, (inputs, output, takes_f_ext) in SIGNATURES.items():
        options = frame_options(model, name)
        for f_ext in (False, True) if takes_f_ext else (False,):
            for symbolic in ("SX", "MX"):
                fun = casrbd.function(model, name, symbolic=symbolic, f_ext=f_ext, **options)
                assert isinstance(fun, ca.Function)
                assert fun.name_in() == list(inputs) + (["f_ext"] if f_ext else [])
                assert fun.name_out() == [output]
                assert [fun.size_in(k) for k in range(len(inputs))] == [(n, 1) for n in sizes(model, inputs)]
                if f_ext:
                    assert fun.size_in(len(inputs)) == (6, model.njoints)
                assert fun.is_a(f"{symbolic}Function")


def test_function_cache(model):
    f = casrbd.function(model, "rnea")
    assert casrbd.function(model, "rnea") is f
    assert casrbd.function(model, "rnea", symbolic="SX") is f
    assert casrbd.function(model, "rnea", symbolic="MX") is not f
    assert casrbd.function(model, "rnea", f_ext=True) is not f
    J = casrbd.function(model, "frame_jacobian", frame=1, reference="local")
    assert casrbd.function(model, "frame_jacobian", frame=model.frames[1].name, reference="local") is J
    assert casrbd.function(model, "frame_jacobian", frame=1, reference="world") is not J
    assert casrbd.function(model, "frame_jacobian", frame=2, reference="local") is not J


def test_frame_by_name_and_default_reference(model):
    q = casrbd.random_configuration(model, 4)
    for i, frame in enumerate(model.frames):
        assert rel_err(casrbd.frame_placement(model, q, frame.name), casrbd.frame_placement(model, q, i)) == 0
        assert rel_err(casrbd.frame_jacobian(model, q, frame.name), casrbd.frame_jacobian(model, q, i, "local")) == 0


@pytest.mark.parametrize("robot_name", ROBOTS)
def test_with_gravity_gives_new_functions_and_keeps_the_old_ones(robot_name):
    """A model's gravity cannot change: ``with_gravity`` returns a new model, whose Functions use
    the new gravity, while the original model keeps its gravity and its cached Functions."""
    model = get_model(robot_name)
    gravity = model.gravity.copy()
    assert np.array_equal(gravity, [0.0, 0.0, -9.81])
    q = casrbd.random_configuration(model, 2)
    g_fun, M_fun = casrbd.function(model, "generalized_gravity"), casrbd.function(model, "crba")
    g = casrbd.generalized_gravity(model, q)
    M = casrbd.crba(model, q)
    assert np.max(np.abs(g)) > 1e-3
    heavier = model.with_gravity([0.0, 0.0, -2 * 9.81])
    assert heavier is not model
    assert casrbd.function(heavier, "generalized_gravity") is not g_fun
    assert casrbd.function(heavier, "crba") is not M_fun
    assert rel_err(casrbd.generalized_gravity(heavier, q), 2 * g) < TOL  # g(q) is linear in gravity
    assert rel_err(casrbd.crba(heavier, q), M) < TOL
    weightless = model.with_gravity(np.zeros(3))
    assert np.all(casrbd.generalized_gravity(weightless, q) == 0)
    assert np.array_equal(weightless.gravity, np.zeros(3))
    # the original is untouched
    assert np.array_equal(model.gravity, gravity)
    assert casrbd.function(model, "generalized_gravity") is g_fun and casrbd.function(model, "crba") is M_fun
    assert rel_err(g_fun(q).full().ravel(), g) == 0
    assert rel_err(casrbd.generalized_gravity(model, q), g) == 0
