"""casrbd.gpu: the CUDA kernels of casadi Functions.

Without a GPU, the kernel source is compiled for the CPU (``host_function``:
the CUDA qualifiers defined away, the thread index a loop over states) and
compared with casadi's own evaluation of the Function, state by state, for
every kind of Function: dynamics, their derivatives, contact dynamics,
second order, and a user Function with sparse outputs and every helper. With
CuPy and a GPU, the GPU's results are compared with casadi's too; without
them those tests are skipped, saying why. Builds go to a temporary cache.
"""

import runpy
import sys
from pathlib import Path

import casadi as ca
import numpy as np
import pytest
from conftest import get_model

import casrbd
from casrbd import gpu
from casrbd.models import random_tree
from casrbd.testing import rel_err

TOL = 1e-12
SINGLE_TOL = 1e-4  # float32 through a few thousand operations
N_STATES = 13  # not a multiple of anything
ROOT = Path(__file__).resolve().parents[2]
CONTACTS = (("tip2", "3d"), ("tip3", "3d"))


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CASRBD_CACHE", str(tmp_path_factory.mktemp("cache")))
        yield


def floating_tree():
    """A small floating tree (free flyer, ball joint) for contact dynamics."""
    return random_tree(4, ("floating", "revolute", "spherical", "revolute"), branching=None, seed=3)


def user_function():
    """Sparse outputs, a dense matrix output, and casadi's helpers and math functions."""
    x, y = ca.SX.sym("x", 3), ca.SX.sym("y", 2, 2)
    column = ca.vertcat(
        ca.sin(x[0]) * ca.cos(x[1]),
        ca.sqrt(x[2] ** 2 + 1),
        ca.fmax(x[0], x[1]),
        ca.fmin(x[0], 0.25),
        ca.if_else(x[0] > x[2], x[1], ca.exp(x[2])),
        ca.sign(x[1]) * ca.fabs(x[2]),
        ca.atan2(x[0], x[1]) + ca.tanh(x[2]) + ca.log1p(x[0] ** 2) + ca.hypot(x[1], x[2]),
        ca.fmod(x[0], 0.3) + ca.floor(x[1]) + x[0] ** 3 / y[0, 1],
    )
    S = ca.SX(3, 3)
    S[0, 0], S[2, 1], S[1, 2] = x[0] * y[1, 0], ca.asinh(y[1, 1]), ca.expm1(x[2])
    return ca.Function("user", [x, y], [column, S, y @ y.T], ["x", "y"], ["column", "S", "yyT"])


def model_function(robot, name, **options):
    def make():
        model = floating_tree() if robot == "tree" else get_model(robot)
        return casrbd.function(model, name, **options), model

    return make


CASES = {
    "rnea": model_function("arm7", "rnea"),
    "aba": model_function("arm7", "aba"),
    "crba": model_function("arm7", "crba"),
    "aba_derivatives": model_function("arm7", "aba_derivatives"),
    "constraint_dynamics": model_function("tree", "constraint_dynamics", contacts=CONTACTS),
    "constraint_dynamics_derivatives": model_function("tree", "constraint_dynamics_derivatives", contacts=CONTACTS),
    "aba_hessian": model_function("arm7", "aba_hessian"),
    "user": lambda: (user_function(), None),
}


def random_inputs(f, n, model=None, seed=0):
    """n states of f's inputs, one per row: q a random configuration of ``model`` (unit quaternions),
    normal numbers otherwise."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(f.n_in()):
        sp = f.sparsity_in(i)
        if f.name_in(i) == "q" and model is not None:
            out.append(np.array([casrbd.random_configuration(model, rng) for _ in range(n)]))
        else:
            shape = (sp.size1(),) if sp.size2() == 1 else sp.size()
            out.append(rng.normal(size=(n, *shape)))
    return out


def casadi_outputs(f, inputs):
    """casadi's evaluation, state by state, in the batch layout: (N, m) columns, (N, m, n) dense
    matrices, (N, nnz) sparse outputs' nonzeros."""
    per_state = [f(*[x[k] for x in inputs]) for k in range(len(inputs[0]))]
    per_state = [out if isinstance(out, tuple) else (out,) for out in per_state]
    result = []
    for j in range(f.n_out()):
        sp = f.sparsity_out(j)
        values = [ca.DM(out[j]) for out in per_state]
        if not sp.is_dense():
            result.append(np.array([v.nonzeros() for v in values]))
        else:
            shape = (sp.size1(),) if sp.size2() == 1 else sp.size()
            result.append(np.array([np.array(v).reshape(shape) for v in values]))
    return result


def as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


@pytest.fixture(scope="module", params=list(CASES))
def built(request):
    """(Function, model, its host build): one compile per kind, shared by the tests."""
    f, model = CASES[request.param]()
    return f, model, gpu.host_function(f)


def test_host_kernels_equal_casadi(built):
    f, model, host = built
    inputs = random_inputs(f, N_STATES, model)
    ref = casadi_outputs(f, inputs)
    mine = as_tuple(host(*inputs))
    assert len(mine) == f.n_out()
    for name, a, r in zip(f.name_out(), mine, ref):
        assert a.shape == r.shape and a.dtype == np.float64, name
        assert rel_err(a, r) < TOL, name


def test_raw_layout_is_the_transposed_batch(built):
    """raw(): (nnz, N) in and out, column-major entries of each state (a matrix read row-major would
    be its transpose: aba_derivatives' blocks are not symmetric)."""
    f, model, host = built
    inputs = random_inputs(f, N_STATES, model, seed=1)
    raw_in = [x.reshape(N_STATES, -1, order="F").T if x.ndim == 3 else x.T for x in inputs]
    out = [np.full((s.nnz(), N_STATES), np.nan) for s in host.sparsity_out]
    assert all(a is b for a, b in zip(host.raw(*raw_in, out=out), out))  # written in place
    for a, r in zip(out, casadi_outputs(f, inputs)):
        assert rel_err(a.T.reshape(r.shape, order="F") if r.ndim == 3 else a.T, r) < TOL


@pytest.mark.parametrize("split", ["outputs", 60])
def test_split_kernels_give_the_same_values(split):
    """aba_derivatives' three 7 x 7 outputs: one kernel each, or kernels of at most 60 nonzeros (49 + 11,
    38 + 22, 27: pieces of outputs)."""
    f, model = CASES["aba_derivatives"]()
    host = gpu.host_function(f, split=split)
    assert len(host.source.names) == 3
    inputs = random_inputs(f, N_STATES, model, seed=2)
    for a, r in zip(host(*inputs), casadi_outputs(f, inputs)):
        assert rel_err(a, r) < TOL


@pytest.mark.parametrize("split, kernels", [(5, 3), ([["yyT"], ["S", "column"]], 2)], ids=str)
def test_split_user_function(split, kernels):
    f = user_function()  # outputs of 8, 3 and 4 nonzeros
    host = gpu.host_function(f, split=split)
    assert len(host.source.names) == kernels
    inputs = random_inputs(f, N_STATES, seed=3)
    for a, r in zip(host(*inputs), casadi_outputs(f, inputs)):
        assert rel_err(a, r) < TOL


def test_single_precision():
    f, model = CASES["aba"]()
    host = gpu.host_function(f, precision="single")
    assert "float" in host.source.code and "sinf(" in host.source.code and "sin(" not in host.source.code
    inputs = random_inputs(f, N_STATES, model, seed=4)
    a, ref = host(*inputs), casadi_outputs(f, inputs)[0]
    assert a.dtype == np.float32
    assert 1e-9 < rel_err(a, ref) < SINGLE_TOL  # float, and close


def test_user_single_precision():
    f = user_function()
    inputs = random_inputs(f, N_STATES, seed=5)
    for a, r in zip(gpu.host_function(f, precision="single")(*inputs), casadi_outputs(f, inputs)):
        assert a.dtype == np.float32 and rel_err(a, r) < SINGLE_TOL


def test_infinity_nan_and_mx_functions():
    x = ca.MX.sym("x", 2)
    f = ca.Function("consts", [x], [ca.vertcat(ca.if_else(x[0] > 0, ca.inf, -ca.inf), x[1] * np.nan, x[0] + 1)])
    host = gpu.host_function(f)  # an MX Function is expanded
    out = host(np.array([[1.0, 2.0], [-1.0, 0.5]]))
    np.testing.assert_array_equal(out[:, 0], [np.inf, -np.inf])
    assert np.isnan(out[:, 1]).all() and np.array_equal(out[:, 2], [2.0, 0.0])


def test_bad_input_names_the_culprit():
    f = user_function()
    host = gpu.host_function(f)
    x, y = random_inputs(f, 4)
    with pytest.raises(ValueError, match="argument 'y' must have shape \\(N, 2, 2\\)"):
        host(x, y[:3])
    with pytest.raises(TypeError, match="takes 2 arguments"):
        host(x)
    with pytest.raises(ValueError, match="raw argument 'x' must have shape \\(3, N\\)"):
        host.raw(x, y.reshape(4, 4).T)
    with pytest.raises(ValueError, match="out for 'S' must be a C-contiguous numpy array of shape \\(3, 4\\)"):
        host.raw(x.T, y.reshape(4, 4).T, out=[np.empty((8, 4)), np.empty((4, 3)), np.empty((4, 4))])
    with pytest.raises(ValueError, match="argument 'x' holds complex numbers"):
        host(x + 1e-3j, y)  # refused, not truncated to its real part
    with pytest.raises(ValueError, match="argument 'y' holds complex numbers"):
        host.raw(x.T, y.reshape(4, 4).T.astype(complex))
    xr, yr = np.ascontiguousarray(x.T), np.ascontiguousarray(y.reshape(4, 4).T)
    aliased = [np.empty((8, 4)), np.empty((3, 4)), yr]
    with pytest.raises(ValueError, match=r"out for 'yyT' shares memory with \['y'\]"):
        host.raw(xr, yr, out=aliased)  # the kernel would read what it has written
    twice = np.empty((8, 4))
    with pytest.raises(ValueError, match=r"out for 'column' shares memory with \['S'\]"):
        host.raw(xr, yr, out=[twice, twice[:3], np.empty((4, 4))])
    with pytest.raises(ValueError, match="precision"):
        gpu.KernelSource(f, precision="half")
    with pytest.raises(ValueError, match=r"unknown \['nope'\], named twice \['S'\], missing \['yyT'\]"):
        gpu.KernelSource(f, split=[["column", "S"], ["S", "nope"]])
    with pytest.raises(ValueError, match="split must be"):
        gpu.KernelSource(f, split="rows")
    s = ca.SX.sym("s")
    with pytest.raises(ValueError, match="casadi_printme"):
        gpu.KernelSource(ca.Function("printing", [s], [s.printme(0)]))
    with pytest.raises(TypeError, match="casadi Function"):
        gpu.KernelSource(lambda q: q)


def nvrtc():
    """CuPy's NVRTC, or a skip: compiling needs CuPy and its NVRTC library, not a GPU."""
    try:
        gpu._cupy()
        from cupy_backends.cuda.libs import nvrtc

        nvrtc.getVersion()
    except Exception as e:
        pytest.skip(f"CuPy's NVRTC is not available (pip install 'casrbd[gpu]'): {type(e).__name__}: {e}")
    return nvrtc


@pytest.mark.parametrize("precision", ["double", "single"])
def test_nvrtc_compiles_the_kernels(precision):
    nvrtc()
    src = gpu.KernelSource(user_function(), precision, split="outputs")
    path, _ = gpu.nvrtc_build(src, "90")
    assert path.read_bytes()[:4] == b"\x7fELF" and set(gpu.resources(path)) == set(src.names)


def device():
    ok, why = gpu.available()
    if not ok:
        pytest.skip(f"no GPU for casrbd.gpu: {why}")
    return gpu._cupy()


@pytest.mark.parametrize("name", ["aba", "aba_derivatives", "user"])
def test_gpu_equals_casadi(name):
    cp = device()
    f, model = CASES[name]()
    inputs = random_inputs(f, 300, model, seed=6)
    g = gpu.compile_function(f, split="outputs" if name == "user" else None)
    for a, r in zip(as_tuple(g(*[cp.asarray(x) for x in inputs])), casadi_outputs(f, inputs)):
        assert isinstance(a, cp.ndarray) and rel_err(cp.asnumpy(a), r) < TOL
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():  # a PyTorch tensor on the GPU is read in place (DLPack / CUDA array interface)
        out = as_tuple(g(*[torch.from_numpy(x).cuda() for x in inputs]))
        assert rel_err(cp.asnumpy(out[0]), casadi_outputs(f, inputs)[0]) < TOL


def test_mppi_example_runs_on_the_cpu(monkeypatch, capsys):
    monkeypatch.setattr(gpu, "available", lambda: (False, "forced off by the test"))
    argv = ["mppi_gpu.py", "--rollouts", "64", "--horizon", "10", "--steps", "30"]
    monkeypatch.setattr(sys, "argv", argv)
    result = runpy.run_path(str(ROOT / "examples" / "mppi_gpu.py"), run_name="__main__")["RESULT"]
    out = capsys.readouterr().out
    assert "no GPU" in out and "CPU" in out and "control steps/s" in out
    assert result["final_distance"] < 0.7 * result["initial_distance"]  # it reaches towards the target


def test_benchmark_without_a_gpu_says_so(monkeypatch, tmp_path, capsys):
    pytest.importorskip("pinocchio")
    from benchmarks.gpu import main

    monkeypatch.setattr(gpu, "available", lambda: (False, "forced off by the test"))
    assert main(["--parts", "throughput", "--out", str(tmp_path)]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().out and not (tmp_path / "gpu.json").exists()
