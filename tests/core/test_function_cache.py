"""Built Functions kept on disk: another model object of the same robot loads them, derivatives included,
and a damaged entry is rebuilt with a warning naming it.

The reference is a fresh build in the same process (tested elsewhere against Pinocchio and AD): a loaded
Function must be that Function, with the same graphs for its analytical Jacobian, its analytical adjoint
and the adjoint's Jacobian (the contracted Hessian), and casadi must still find them by their names.
"""

import json
import warnings

import casadi as ca
import numpy as np
import pytest

import casrbd
from casrbd import CacheWarning, functions
from casrbd.cache import MANIFEST
from casrbd.functions import PAYLOAD
from casrbd.models import load_robot, random_tree
from casrbd.testing import random_state, rel_err


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CASRBD_CACHE", str(tmp_path))
    monkeypatch.setattr(functions, "DISK_MIN_SECONDS", 0.0)  # every Function stored, however quick
    return tmp_path / "functions"


def tree():
    return random_tree(4, ("floating", "revolute", "spherical", "revolute"), branching=None, seed=3)


CASES = {
    "aba, second order": (lambda: load_robot("arm7"), "aba", {"jacobian": "analytical"}),
    "rnea, AD": (lambda: load_robot("arm7"), "rnea", {}),
    "contact dynamics": (tree, "constraint_dynamics", {"jacobian": "analytical", "contacts": [("tip2", "3d")]}),
}


def derivatives(f):
    """f, casadi's Jacobian of f, its reverse mode and that one's Jacobian: what an NLP solver asks for."""
    return [f, f.jacobian(), f.reverse(1), f.reverse(1).jacobian()]


def values(g, seed=0):
    rng = np.random.default_rng(seed)
    return [np.array(y) for y in g.call([rng.normal(size=g.sparsity_in(i).shape) for i in range(g.n_in())])]


def assert_same(loaded, built):
    for a, b in zip(derivatives(loaded), derivatives(built)):
        assert (a.name(), a.n_instructions()) == (b.name(), b.n_instructions())
        for x, y in zip(values(a), values(b)):
            assert rel_err(x, y) < 1e-14


@pytest.mark.parametrize("case", list(CASES))
def test_another_model_of_the_robot_loads_the_function_and_its_derivatives(case, cache, monkeypatch):
    load, name, options = CASES[case]
    built = casrbd.function(load(), name, **options)
    assert len(list(cache.glob("*/" + PAYLOAD))) == 1
    monkeypatch.setattr(functions, "_build", lambda *a: pytest.fail("built again instead of loaded"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        loaded = casrbd.function(load(), name, **options)
    assert loaded is not built
    assert_same(loaded, built)


def test_the_loaded_adjoint_serves_an_exact_hessian():
    model = load_robot("arm7")
    built = casrbd.function(model, "aba", jacobian="analytical")
    loaded = casrbd.function(load_robot("arm7"), "aba", jacobian="analytical")
    q, v, tau = (ca.MX.sym(n, model.nv) for n in ("q", "v", "tau"))
    lam = ca.MX.sym("lam", model.nv)
    x = ca.vertcat(q, v, tau)
    hess = [ca.Function("h", [x, lam], [ca.hessian(ca.dot(lam, f(q, v, tau)), x)[0]]).expand() for f in (built, loaded)]
    state = np.r_[random_state(model, np.random.default_rng(1))[:3]].reshape(-1)
    weights = np.linspace(-1, 1, model.nv)
    assert rel_err(np.array(hess[1](state, weights)), np.array(hess[0](state, weights))) < 1e-14


def damage_truncate(path):
    path.write_text(path.read_text()[: len(path.read_text()) // 2])
    return path


def damage_payload(path):
    path.write_text(path.read_text().replace("a", "b", 1))
    return path


def damage_key(path):
    manifest = path.parent / MANIFEST
    entry = json.loads(manifest.read_text())
    entry["key"] = "0" * 64
    manifest.write_text(json.dumps(entry))
    return manifest


@pytest.mark.parametrize("damage", [damage_truncate, damage_payload, damage_key])
def test_a_damaged_entry_is_rebuilt_with_a_warning_naming_it(damage, cache):
    built = casrbd.function(load_robot("arm7"), "aba", jacobian="analytical")
    (path,) = cache.glob("*/" + PAYLOAD)
    culprit = damage(path)
    with pytest.warns(CacheWarning, match=str(culprit)):
        rebuilt = casrbd.function(load_robot("arm7"), "aba", jacobian="analytical")
    assert_same(rebuilt, built)
    # rebuilt and stored again: the next model loads it without a warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        assert_same(casrbd.function(load_robot("arm7"), "aba", jacobian="analytical"), built)


def test_mx_functions_are_not_stored(cache):
    casrbd.function(load_robot("arm7"), "aba", symbolic="MX")
    assert not list(cache.glob("*/" + PAYLOAD))


def test_the_cache_can_be_turned_off(cache, monkeypatch):
    casrbd.function(load_robot("arm7"), "aba", jacobian="analytical")
    monkeypatch.setenv("CASRBD_FUNCTION_CACHE", "off")
    monkeypatch.setattr(functions, "_load", lambda *a: pytest.fail("read with the cache off"))
    monkeypatch.setattr(functions, "_store", lambda *a: pytest.fail("written with the cache off"))
    casrbd.function(load_robot("arm7"), "aba", jacobian="analytical")


def test_quick_builds_are_not_stored(cache, monkeypatch):
    monkeypatch.setattr(functions, "DISK_MIN_SECONDS", 1e9)
    casrbd.function(load_robot("arm7"), "aba", jacobian="analytical")
    assert not list(cache.glob("*/" + PAYLOAD))
