"""The frozen model: immutability, variants as new models, and Functions cached per model.

A ``Model``, its placements (``SE3``), inertias (``Inertia``), joints and
frames cannot be changed once built: assigning an attribute raises, every
numeric array it holds is read-only, and two models loaded from the same file
share nothing mutable. ``with_gravity`` and ``with_inertias`` return new
models, whose Functions use the new constants, and leave the original model
and its cached Functions as they were. ``model.bodies`` gives back the
records the model was built from.
"""

import warnings

import casadi as ca
import numpy as np
import pytest
from conftest import fresh_model, get_model

import casrbd
from casrbd import Body, Frame, Model
from casrbd.joints import FreeFlyer, Revolute
from casrbd.models import load_robot, random_tree
from casrbd.spatial import SE3, Frozen, Inertia
from casrbd.testing import rel_err

ROBOTS = ("random", "arm7", "solo12")
LEAVES = (str, bytes, int, float, complex, bool, type(None), slice, np.generic, type)


def reachable(root):
    """(object, path) of everything reachable from ``root`` through the slots of frozen objects,
    tuples (NamedTuples too), lists and dicts."""
    seen, stack, out = set(), [(root, "model")], []
    while stack:
        obj, path = stack.pop()
        if id(obj) in seen or isinstance(obj, LEAVES):
            continue
        seen.add(id(obj))
        out.append((obj, path))
        if isinstance(obj, Frozen):
            for name in {s for cls in type(obj).__mro__ for s in getattr(cls, "__slots__", ())} - {"__weakref__"}:
                if hasattr(obj, name):
                    stack.append((getattr(obj, name), f"{path}.{name}"))
        elif isinstance(obj, (tuple, list)):
            stack += [(x, f"{path}[{k}]") for k, x in enumerate(obj)]
        elif isinstance(obj, dict):
            stack += [(x, f"{path}[{k!r}]") for k, x in obj.items()]
    return out


def mutable(obj):
    """Whether ``obj`` can be changed in place."""
    if isinstance(obj, np.ndarray):
        return obj.flags.writeable or (isinstance(obj.base, np.ndarray) and obj.base.flags.writeable)
    return isinstance(obj, (list, dict, set, bytearray, ca.DM, ca.SX, ca.MX)) or (
        hasattr(obj, "__dict__") and not isinstance(obj, Frozen)
    )


def load(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_robot(name)


@pytest.fixture(scope="module", params=ROBOTS)
def model(request):
    return get_model(request.param)


# ---------------------------------------------------------------- immutability


def test_assigning_an_attribute_raises(model):
    for obj, name in [
        (model, "gravity"),
        (model, "name"),
        (model, "joints"),
        (model, "parents"),
        (model, "nv"),
        (model, "algorithm_frames"),
        (model, "new_attribute"),
        (model.placements[0], "R"),
        (model.placements[0], "p"),
        (model.inertias[0], "mass"),
        (model.inertias[0], "I"),
        (model.joints[0], "nq"),
        (model.joints[-1], "axis"),
    ]:
        with pytest.raises(AttributeError):
            setattr(obj, name, 0.0)
    with pytest.raises(AttributeError):
        model.frames[0].name = "renamed"  # a NamedTuple


def test_numeric_arrays_are_read_only(model):
    arrays = [(x, path) for x, path in reachable(model) if isinstance(x, np.ndarray)]
    assert len(arrays) > 4 * model.njoints  # placements, inertias, limits, gravity, algorithm frames
    writeable = [path for x, path in arrays if mutable(x)]
    assert not writeable, writeable
    for x in (model.gravity, model.lower, model.placements[-1].R, model.inertias[-1].h):
        with pytest.raises(ValueError, match="read-only"):
            x[0] = 1.0


def test_nothing_mutable_is_reachable_but_private_lookup_tables(model):
    found = sorted(path for obj, path in reachable(model) if mutable(obj))
    assert found == ["model._frame_index", "model._joint_index"]


@pytest.mark.parametrize("name", ["arm7", "solo12"])
def test_two_models_loaded_from_the_same_file_share_nothing_mutable(name):
    a, b = fresh_model(name), fresh_model(name)
    assert a is not b
    mutable_a = {id(obj): path for obj, path in reachable(a) if mutable(obj)}
    shared = [path for obj, path in reachable(b) if mutable(obj) and id(obj) in mutable_a]
    assert not shared, shared
    assert rel_err(casrbd.crba(a, casrbd.neutral(a)), casrbd.crba(b, casrbd.neutral(b))) == 0


def test_bodies_give_back_the_model():
    model = get_model("random")
    bodies = model.bodies
    assert [b.name for b in bodies] == list(model.names) and all(isinstance(b, Body) for b in bodies)
    again = Model(model.name, bodies, model.frames, model.gravity)
    assert again.names == model.names and again.parents == model.parents and again.idx_v == model.idx_v
    assert np.array_equal(again.lower, model.lower) and np.array_equal(again.upper, model.upper)
    q = casrbd.random_configuration(model, 1)
    assert rel_err(casrbd.crba(again, q), casrbd.crba(model, q)) == 0


def test_index_sets_are_computed_when_built():
    model = random_tree(5, ("floating", "revolute", "spherical"), branching=None, seed=3)
    assert model.idx_q == tuple(np.cumsum([0] + [j.nq for j in model.joints[:-1]]))
    assert model.idx_v == tuple(np.cumsum([0] + [j.nv for j in model.joints[:-1]]))
    for i, p in enumerate(model.parents):
        assert model.supports[i] == (model.supports[p] if p >= 0 else ()) + (i,)
        assert model.children[i] == tuple(k for k, pk in enumerate(model.parents) if pk == i)
        assert model.subtree[i] == tuple(k for k in range(model.njoints) if i in model.supports[k])


# ---------------------------------------------------------------- variants are new models


@pytest.mark.parametrize("name", ROBOTS)
def test_with_inertias_gives_a_new_model_and_keeps_the_old_functions(name):
    """Doubling every inertia doubles M and g; the original model keeps its inertias and Functions."""
    model = get_model(name)
    q = casrbd.random_configuration(model, 5)
    M_fun, g_fun = casrbd.function(model, "crba"), casrbd.function(model, "generalized_gravity")
    M, g = casrbd.crba(model, q), casrbd.generalized_gravity(model, q)
    masses = [Y.mass for Y in model.inertias]
    heavier = model.with_inertias([Inertia(2 * Y.mass, 2 * Y.h, 2 * Y.I) for Y in model.inertias])
    assert heavier is not model and heavier.names == model.names
    assert rel_err(casrbd.crba(heavier, q), 2 * M) < 1e-12
    assert rel_err(casrbd.generalized_gravity(heavier, q), 2 * g) < 1e-12
    assert casrbd.function(heavier, "crba") is not M_fun
    assert [Y.mass for Y in model.inertias] == masses
    assert casrbd.function(model, "crba") is M_fun and casrbd.function(model, "generalized_gravity") is g_fun
    assert rel_err(np.array(M_fun(q)), M) == 0 and rel_err(casrbd.crba(model, q), M) == 0
    with pytest.raises(ValueError, match=f"{model.njoints - 1} inertias given for {model.njoints} bodies"):
        model.with_inertias(model.inertias[1:])


def test_with_inertias_takes_symbolic_inertias():
    """Inertias may be casadi symbols (identification): M is then an expression in them."""
    model = get_model("arm7")
    m = ca.SX.sym("m", model.njoints)
    symbolic = model.with_inertias(
        [Inertia(m[i], Y.h / Y.mass * m[i], Y.I) if Y.mass > 0 else Y for i, Y in enumerate(model.inertias)]
    )
    q = casrbd.random_configuration(model, 6)
    M = casrbd.crba(symbolic, ca.SX(q))
    assert isinstance(M, ca.SX) and ca.depends_on(M, m)
    M_at = ca.Function("M", [m], [M])([Y.mass for Y in model.inertias]).full()
    assert rel_err(M_at, casrbd.crba(model, q)) < 1e-12


def test_with_gravity_keeps_everything_else():
    model = get_model("solo12")
    other = model.with_gravity([1.0, 2.0, 3.0])
    assert np.array_equal(other.gravity, [1.0, 2.0, 3.0]) and np.array_equal(model.gravity, [0, 0, -9.81])
    assert other.names == model.names and other.frames == model.frames and other.name == model.name
    q = casrbd.random_configuration(model, 7)
    assert rel_err(casrbd.crba(other, q), casrbd.crba(model, q)) == 0
    for bad in ([0.0, 1.0], [np.nan, 0, 0], [[0.0, 0.0, -9.81]]):
        with pytest.raises(ValueError, match="gravity must be 3 finite numbers"):
            model.with_gravity(bad)


def test_functions_are_cached_per_model_and_released_with_it():
    import gc
    import weakref

    model = random_tree(3, seed=2)
    f = casrbd.function(model, "rnea")
    assert casrbd.function(model, "rnea") is f
    assert casrbd.function(random_tree(3, seed=2), "rnea") is not f  # an equal model is another model
    ref = weakref.ref(model)
    del model, f
    gc.collect()
    assert ref() is None, "the Function cache keeps the model alive"


# ---------------------------------------------------------------- building a model


def _body(name, parent, joint=None, mass=1.0):
    return Body(
        name,
        joint or Revolute([0.0, 0.0, 1.0]),
        parent,
        SE3(np.eye(3), [0.1, 0, 0]),
        Inertia.from_com(mass, [0.0, 0.0, 0.1], 0.01 * np.eye(3)),
    )


def test_a_model_refuses_inconsistent_bodies_naming_them():
    with pytest.raises(ValueError, match=r"duplicate joint names \['a'\]"):
        Model("m", [_body("a", -1), _body("a", 0)])
    with pytest.raises(ValueError, match="joint 'b' has parent index 1, which does not come before it"):
        Model("m", [_body("a", -1), _body("b", 1)])
    with pytest.raises(ValueError, match="joint 'a' has 1 coordinates, but limits of shape"):
        Model("m", [_body("a", -1)._replace(lower=[0.0, 1.0], upper=[1.0, 2.0])])
    with pytest.raises(ValueError, match="frame 'f' is attached to joint 3, which does not exist"):
        Model("m", [_body("a", -1)], [Frame("f", 3, SE3.identity())])
    with pytest.raises(KeyError, match="has no joint 'z'"):
        Model("m", [_body("a", -1)]).joint_index("z")


def test_limits_default_to_none_and_free_flyer_limits_are_per_coordinate():
    inf = np.inf
    root = Body(
        "root",
        FreeFlyer(),
        -1,
        SE3.identity(),
        Inertia.from_com(1.0, np.zeros(3), np.eye(3)),
        [-1, -1, 0, -inf, -inf, -inf, -inf],
        [1, 1, 2, inf, inf, inf, inf],
    )
    model = Model("m", [root, _body("arm", 0)])
    assert model.lower.shape == model.upper.shape == (8,)
    assert np.isinf(model.lower[7]) and np.isinf(model.upper[7])
    samples = np.array([casrbd.random_configuration(model, seed) for seed in range(50)])
    assert np.all(samples[:, 2] >= 0) and np.all(samples[:, 2] <= 2)
