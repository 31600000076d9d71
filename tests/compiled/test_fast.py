"""casrbd.fast: compiled calls through casadi's Function.buffer() and batches over states.

The reference is the cached casadi Function evaluated in casadi's VM (itself
checked against Pinocchio and AD elsewhere). Compiled libraries go to a
temporary cache (``CASRBD_CACHE``), never the user's.
"""

import threading

import casadi as ca
import numpy as np
import pytest
from conftest import get_model

import casrbd
from casrbd import fast
from casrbd.models import random_tree
from casrbd.testing import random_state, rel_err

TOL = 1e-12
CHUNK = 8  # small, so that a few dozen states make several chunks and a tail


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CASRBD_CACHE", str(tmp_path_factory.mktemp("cache")))
        yield


@pytest.fixture(scope="module")
def tree():
    """A small tree with a free-flyer root, a ball and screw joints (quaternions in q)."""
    return random_tree(4, ("floating", "spherical", "revolute", "prismatic"), branching=None, seed=5)


def vm_outputs(model, name, args, **options):
    out = casrbd.function(model, name, **options)(*args)
    return [np.array(o) for o in (out if isinstance(out, tuple) else (out,))]


def as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


@pytest.mark.parametrize(
    "name, options",
    [
        ("aba", {}),
        ("rnea", {"f_ext": True}),
        ("crba", {}),
        ("aba_derivatives", {}),
        ("frame_placement", {"frame": "tip2"}),
        ("constraint_dynamics", {"contacts": [("tip3", "3d")]}),  # a list: an unhashable option
    ],
)
def test_single_calls_equal_the_vm(tree, name, options):
    f = fast.function(tree, name, chunk=CHUNK, **options)
    rng = np.random.default_rng(0)
    for _ in range(3):
        q, v, x, F = random_state(tree, rng)
        args = [q, v, x][: len(f.inputs) - bool(options.get("f_ext"))] + ([F] if options.get("f_ext") else [])
        for mine, ref in zip(as_tuple(f(*args)), vm_outputs(tree, name, args, **options)):
            assert mine.shape == ref.reshape(mine.shape).shape and rel_err(mine, ref.reshape(mine.shape)) < TOL
        # the same through the preallocated arrays
        for key, value in zip(f.inputs, args):
            f.inputs[key][...] = value
        f.evaluate()
        for mine, ref in zip(f.outputs.values(), vm_outputs(tree, name, args, **options)):
            assert rel_err(mine, ref.reshape(mine.shape)) < TOL


def test_matrix_outputs_are_not_transposed():
    """dtau/dq is not symmetric: a column-major output read row-major would be its transpose."""
    model = get_model("arm7")
    f = fast.function(model, "rnea_derivatives", chunk=CHUNK, method="chain_rule")
    q, v, a, _ = random_state(model, np.random.default_rng(1))
    dq, dv, M = f(q, v, a)
    ref = casrbd.rnea_derivatives(model, q, v, a, method="chain_rule")
    assert rel_err(dq, ref[0]) < TOL and rel_err(dq.T, ref[0]) > 1e-3
    assert f.dtau_dq.shape == (7, 7) and rel_err(f.dtau_dq, ref[0]) < TOL
    B = fast.batch(model, "rnea_derivatives", chunk=CHUNK, method="chain_rule")
    dq_all = B(np.tile(q, (3, 1)), np.tile(v, (3, 1)), np.tile(a, (3, 1)))[0]
    assert dq_all.shape == (3, 7, 7) and rel_err(dq_all[2], ref[0]) < TOL


@pytest.mark.parametrize("N", [0, 1, CHUNK, 3 * CHUNK + 5])
def test_batches_equal_the_vm_map(tree, N):
    rng = np.random.default_rng(N)
    states = [random_state(tree, rng) for _ in range(N)]
    Q, V, T = (np.array([s[k] for s in states]).reshape(N, n) for k, n in enumerate((tree.nq, tree.nv, tree.nv)))
    F = np.array([s[3] for s in states]).reshape(N, 6, tree.njoints)
    A = fast.batch(tree, "aba", chunk=CHUNK, f_ext=True)(Q, V, T, F)
    M = fast.batch(tree, "crba", chunk=CHUNK)(Q)
    assert A.shape == (N, tree.nv) and M.shape == (N, tree.nv, tree.nv)
    if N:
        aba = casrbd.function(tree, "aba", f_ext=True).map(N)
        ref = np.array(aba(Q.T, V.T, T.T, np.hstack(list(F)))).T
        assert rel_err(A, ref) < TOL
        for k in (0, N - 1):
            assert rel_err(M[k], casrbd.crba(tree, Q[k])) < TOL


def test_batches_read_any_layout_and_dtype_correctly():
    """Strided, Fortran-ordered, float32 and integer arrays are converted, never read as raw doubles."""
    model = get_model("arm7")
    B = fast.batch(model, "rnea", chunk=CHUNK)
    rng = np.random.default_rng(2)
    N = 2 * CHUNK + 3
    wide = rng.normal(size=(N, 3 * model.nv))
    Q, V, A = (
        wide[:, : model.nv],
        wide[:, model.nv :: 2][:, : model.nv],
        np.asfortranarray(rng.normal(size=(N, model.nv))),
    )
    ref = B(np.ascontiguousarray(Q), np.ascontiguousarray(V), np.ascontiguousarray(A))
    assert rel_err(B(Q, V, A), ref) < TOL
    assert rel_err(B(Q.astype(np.float32), V, A), B(Q.astype(np.float32).astype(float), V, A)) < TOL
    assert rel_err(B(np.ones((N, model.nv), dtype=int), V, A), B(np.ones((N, model.nv)), V, A)) < TOL
    assert rel_err(ref[5], casrbd.rnea(model, Q[5], V[5], A[5])) < TOL


def test_single_call_arguments_of_any_form_or_a_clear_error():
    model = get_model("arm7")
    f = fast.function(model, "aba", chunk=CHUNK)
    q, v, tau, _ = random_state(model, np.random.default_rng(3))
    ref = f(q, v, tau)
    for args in (
        [list(q), tuple(v), tau],
        [q.reshape(7, 1), v.reshape(1, 7), ca.DM(tau)],
        [q.astype(np.float32), v, tau],
    ):
        expected = ref if np.asarray(args[0]).dtype != np.float32 else f(q.astype(np.float32).astype(float), v, tau)
        assert rel_err(f(*args), expected) < TOL
    assert rel_err(f(q[::1], v, np.ascontiguousarray(np.vstack([tau, tau]).T)[:, 0]), ref) < TOL  # strided view
    with pytest.raises(ValueError, match=r"arm7_aba: argument 'v' must have shape \(7,\), got shape \(6,\)"):
        f(q, v[:6], tau)
    with pytest.raises(ValueError, match=r"argument 'q' must have shape \(7,\), got shape \(\) \(float\)"):
        f(1.0, v, tau)
    with pytest.raises(ValueError, match="argument 'tau' must be numbers, got"):
        f(q, v, "abc")
    with pytest.raises(ValueError, match=r"argument 'tau' must have shape \(7,\), got shape \(\) \(NoneType\)"):
        f(q, v, None)
    with pytest.raises(ValueError, match="argument 'q' must be real numbers"):
        f(q + 1j, v, tau)
    with pytest.raises(ValueError, match=r"argument 'v' must be numbers, got list \(.*inhomogeneous"):
        f(q, [list(v[:3]), list(v[3:])], tau)  # ragged
    with pytest.raises(ValueError, match="argument 'tau' holds a number beyond float64's range"):
        f(q, v, [10**400] * 7)
    with pytest.raises(ValueError, match="argument 'q' must be real numbers"):
        f([1 + 1j] * 7, v, tau)
    with pytest.raises(TypeError, match=r"takes 3 arguments \['q', 'v', 'tau'\], got 2"):
        f(q, v)
    with pytest.raises(AttributeError, match="has no attribute or argument 'nope'"):
        f.nope  # noqa: B018
    assert rel_err(f(q, v, tau), ref) < TOL  # nothing above reached the buffer


def test_assigning_an_input_copies_it_in_and_assigning_an_output_raises():
    """f.q = q and f.inputs["q"] = q reach the compiled code (checked as a call's arguments); an output
    or an unknown name cannot be assigned, so that nothing is silently ignored."""
    model = get_model("arm7")
    f = fast.function(model, "aba", chunk=CHUNK)
    rng = np.random.default_rng(8)
    for k in range(3):
        q, v, tau, _ = random_state(model, rng)
        bound = f.q
        if k == 0:
            f.q, f.v, f.tau = q, v, tau
        elif k == 1:
            f.inputs["q"], f.inputs["v"], f.inputs["tau"] = list(q), tuple(v), ca.DM(tau)
        else:
            v = v.astype(np.float32).astype(float)  # the value a float32 array holds
            f.q, f.v, f.tau = q.reshape(7, 1), v.astype(np.float32), tau
        assert f.q is bound  # the array bound to the buffer, not a new one
        f.evaluate()
        assert rel_err(f.a, casrbd.aba(model, q, v, tau)) < TOL
    a = f.a.copy()
    for assign, error, message in (
        (lambda: setattr(f, "a", np.zeros(7)), AttributeError, "'a' is an output, written by evaluate"),
        (lambda: f.outputs.__setitem__("a", np.zeros(7)), AttributeError, "'a' is an output"),
        (lambda: setattr(f, "Q", q), AttributeError, r"no argument 'Q' to assign; inputs \['q', 'v', 'tau'\]"),
        (lambda: f.inputs.__setitem__("Q", q), KeyError, r"no input 'Q'; its inputs are \['q', 'v', 'tau'\]"),
        (lambda: setattr(f, "q", q[:6]), ValueError, r"argument 'q' must have shape \(7,\), got shape \(6,\)"),
        (lambda: setattr(f, "tau", "abc"), ValueError, "argument 'tau' must be numbers"),
        (lambda: setattr(f, "v", None), ValueError, r"argument 'v' must have shape \(7,\)"),
        (lambda: setattr(f, "v", [10**400] * 7), ValueError, "argument 'v' holds a number beyond float64's range"),
        (lambda: setattr(f, "inputs", {"q": q}), AttributeError, "'inputs' cannot be replaced"),
        (lambda: setattr(f, "outputs", {}), AttributeError, "'outputs' cannot be replaced"),
    ):
        with pytest.raises(error, match=message):
            assign()
    f.evaluate()
    assert np.array_equal(f.a, a)  # no refused assignment reached the buffer


def test_assigning_a_matrix_input():
    """A matrix input (f_ext, 6 x njoints) assigned as an (m, n) array lands in column-major memory."""
    model = get_model("arm7")
    f = fast.function(model, "rnea", chunk=CHUNK, f_ext=True)
    q, v, a, F = random_state(model, np.random.default_rng(9))
    f.q, f.v, f.a, f.f_ext = q, v, a, F
    f.evaluate()
    assert rel_err(f.tau, casrbd.rnea(model, q, v, a, F)) < TOL


def test_batch_arguments_or_a_clear_error():
    model = get_model("arm7")
    B = fast.batch(model, "aba", chunk=CHUNK)
    Q = np.zeros((5, 7))
    with pytest.raises(
        ValueError, match=r"argument 'v' must have shape \(N, 7\), one state per row.*got shape \(4, 7\) \(N = 5\)"
    ):
        B(Q, np.zeros((4, 7)), Q)
    with pytest.raises(ValueError, match=r"argument 'q' must have shape \(N, 7\).*got shape \(7,\)"):
        B(np.zeros(7), Q, Q)
    with pytest.raises(ValueError, match="argument 'tau' must be real numbers"):
        B(Q, Q, Q + 0j)
    with pytest.raises(ValueError, match="argument 'tau' must be numbers"):
        B(Q, Q, [["x"] * 7] * 5)
    with pytest.raises(TypeError, match="takes 3 arguments"):
        B(Q, Q)
    F = fast.batch(model, "rnea", chunk=CHUNK, f_ext=True)
    with pytest.raises(ValueError, match=r"argument 'f_ext' must have shape \(N, 6, 7\)"):
        F(Q, Q, Q, np.zeros((5, 7, 6)))


def test_one_object_shared_by_threads_and_clones_in_threads():
    model = get_model("arm7")
    f = fast.function(model, "rnea", chunk=CHUNK)
    rng = np.random.default_rng(4)
    states = [random_state(model, rng)[:3] for _ in range(16)]
    refs = [casrbd.rnea(model, *s) for s in states]
    errors = []

    def shared(k):
        for _ in range(200):
            errors.append(rel_err(f(*states[k]), refs[k]))

    def own(k):
        g = f.clone()
        for key, value in zip(("q", "v", "a"), states[k]):
            g.inputs[key][...] = value
        for _ in range(200):
            g.evaluate()
            errors.append(rel_err(g.tau, refs[k]))

    threads = [threading.Thread(target=shared if k % 2 else own, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 16 * 200 and max(errors) < TOL


def test_libraries_are_compiled_once_per_model_and_options(tmp_path):
    model = get_model("arm7")
    f, g = fast.function(model, "aba", chunk=CHUNK), fast.function(model, "aba", chunk=CHUNK)
    assert f.library is g.library and f.q is not g.q  # one library, separate arrays
    assert fast.batch(model, "aba", chunk=CHUNK).library is f.library
    assert fast.function(model, "aba", chunk=CHUNK, f_ext=True).library is not f.library
    tree = random_tree(3, ("floating", "revolute", "revolute"), branching=None, seed=1)
    contacts = fast.batch(tree, "constraint_dynamics", chunk=CHUNK, contacts=[("tip2", "3d")]).library
    assert fast.batch(tree, "constraint_dynamics", chunk=CHUNK, contacts=(("tip2", "3d"),)).library is contacts


def test_any_casadi_function_with_sparse_outputs():
    x, y = ca.SX.sym("x", 3), ca.MX.sym("y", 2)
    f = ca.Function("sparse_out", [x], [ca.diag(x), ca.sin(x[0]) * x], ["x"], ["D", "s"])
    g = ca.Function("mx_fun", [y], [ca.mtimes(y, y.T)], ["y"], ["P"])
    lib = fast.compile_function(f, chunk=4)
    D, s = fast.FastFunction(lib)([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(D, np.diag([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(s, np.sin(1.0) * np.array([1.0, 2.0, 3.0]), rtol=1e-15)
    Ds = fast.BatchFunction(lib)(np.arange(15.0).reshape(5, 3))[0]
    np.testing.assert_array_equal(Ds[4], np.diag([12.0, 13.0, 14.0]))
    P = fast.FastFunction(fast.compile_function(g, chunk=4))([1.0, 2.0])
    np.testing.assert_array_equal(P, [[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(ValueError, match="chunk must be a positive integer"):
        fast.compile_function(f, chunk=0)
    with pytest.raises(ValueError, match="mx_fun is already compiled"):
        fast.compile_function(fast.compile_function(g, chunk=4).single)
    with pytest.raises(ValueError, match="input 'x' is sparse"):
        fast.compile_function(ca.Function("sp", [ca.SX.sym("x", ca.Sparsity.diag(2))], [ca.SX(1)], ["x"], ["y"]))
    constant = ca.Function("constant", [], [ca.DM([[1.0, 2.0]])], [], ["c"])
    np.testing.assert_array_equal(fast.FastFunction(fast.compile_function(constant, chunk=2))(), [[1.0, 2.0]])
