"""casrbd.codegen: compiled Functions behave as the originals; cache, errors, names.

The compiled code is a different evaluator from casadi's virtual machine, so
the VM evaluation of the original Function is an independent reference;
so are identities between compiled Functions and the Python algorithms
(rnea(q, v, aba(q, v, tau)) = tau, M M^-1 = I). Robots: arm7 and a random tree
with every constant-subspace joint type (free-flyer, spherical and planar joints below the root).
Every test builds in its own cache (``CASRBD_CACHE``), never the user's.
"""

import ctypes
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import casadi as ca
import numpy as np
import pytest

import casrbd
from casrbd import codegen, ocp
from casrbd.models import CONSTANT_SUBSPACE_TYPES, load_robot, random_tree, serial_chain
from casrbd.testing import random_state, rel_err

ROOT = Path(__file__).resolve().parents[2]
TOL = 1e-12
FAST = ("-O1",)  # compiles several times faster than the default -O3
NO_OPT = ("-O0",)  # faster still, where the code's speed does not matter

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

ARM7 = load_robot("arm7")
TREE = random_tree(8, joint_types=CONSTANT_SUBSPACE_TYPES, branching=None, seed=5, name="tree")
MODELS = {"arm7": ARM7, "tree": TREE}


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    """A fresh, empty build cache for every test."""
    monkeypatch.setenv("CASRBD_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def builds(cache):
    """The library entries (and partial builds) of the cache."""
    return sorted(p.name for p in (cache / "libraries").iterdir()) if (cache / "libraries").exists() else []


def state(model, seed):
    """[q, v, a or tau, f_ext (6 x njoints)] at a random state."""
    return list(random_state(model, np.random.default_rng(seed)))


def dynamics(model):
    return [
        casrbd.function(model, "rnea", f_ext=True),
        casrbd.function(model, "aba", f_ext=True),
        casrbd.function(model, "crba"),
        casrbd.function(model, "aba_derivatives", f_ext=True),
    ]


def evaluate(f, args):
    """Outputs of f as numpy arrays."""
    return [np.array(o) for o in f.call([ca.DM(a) for a in args])]


@pytest.mark.parametrize("robot", MODELS)
def test_compiled_functions_equal_the_originals(robot):
    model = MODELS[robot]
    if robot == "tree":
        assert {j.type for j in model.joints} == set(CONSTANT_SUBSPACE_TYPES)
    originals = dynamics(model)
    lib = codegen.compile_functions(originals, name=f"{robot}_dynamics", flags=FAST)
    assert lib.compile_seconds is not None and lib.path.exists()
    rnea, aba, crba, aba_derivatives = (lib[f.name()] for f in originals)
    for seed in range(3):
        q, v, x, F = state(model, seed)
        for f in originals:
            args = [q, v, x, F][: f.n_in()]
            for got, want in zip(evaluate(lib[f.name()], args), evaluate(f, args)):
                assert got.shape == want.shape and rel_err(got, want) < TOL, f.name()
        # identities between compiled Functions and the Python algorithm
        a = evaluate(aba, [q, v, x, F])[0].ravel()
        assert rel_err(casrbd.rnea(model, q, v, a, f_ext=F), x) < 1e-10
        assert rel_err(evaluate(rnea, [q, v, a, F])[0].ravel(), x) < 1e-10
        M = evaluate(crba, [q])[0]
        Minv = evaluate(aba_derivatives, [q, v, x, F])[2]
        assert rel_err(M @ Minv, np.eye(model.nv)) < 1e-10


def jacobian_function(f):
    """The Jacobian casadi takes of ``f`` inside an MX graph, w.r.t. all inputs, as a Function."""
    syms = [ca.MX.sym(f.name_in(i), f.sparsity_in(i)) for i in range(f.n_in())]
    J = ca.jacobian(ca.vertcat(*f.call(syms)), ca.vertcat(*[ca.vec(s) for s in syms]))
    return ca.Function("jacobian_of_" + f.name(), syms, [J])


def test_custom_jacobian_is_exported_and_used_after_loading():
    names = ("rnea", "aba")
    # without the second-order adjoint, which casadi would take for full Jacobians of an External too
    analytical = [casrbd.function(ARM7, name, jacobian="analytical", second_order="ad", f_ext=True) for name in names]
    lib = codegen.compile_functions(analytical, name="arm7_analytical", flags=NO_OPT)
    exported = ctypes.CDLL(str(lib.path))
    for name, f in zip(names, analytical):
        assert hasattr(exported, "jac_" + f.name())
        J = jacobian_function(lib[f.name()])
        # casadi differentiates the loaded Function through the library's jac_ Function
        assert {(g.name(), g.class_name()) for g in J.find_functions()} >= {("jac_" + f.name(), "External")}
        ad = casrbd.function(ARM7, name, f_ext=True)  # differentiated by casadi's AD
        for seed in range(2):
            args = state(ARM7, seed)
            got = evaluate(J, args)[0]
            assert rel_err(got, evaluate(jacobian_function(f), args)[0]) < TOL
            assert rel_err(got, evaluate(jacobian_function(ad), args)[0]) < 1e-10


def test_only_a_custom_jacobian_is_exported():
    """A Jacobian casadi built on request, held in the Function's cache, is not part of the library."""
    f = casrbd.function(ARM7, "generalized_gravity")
    held = f.jacobian()
    assert f.cache()["jac_" + f.name()].name() == held.name()
    lib = codegen.compile_functions(f, flags=NO_OPT)
    assert not hasattr(ctypes.CDLL(str(lib.path)), "jac_" + f.name()) and "jac_" not in lib.source.read_text()


def test_two_models_load_side_by_side_and_link_into_one_program(tmp_path):
    libs = {
        robot: codegen.compile_functions(casrbd.function(m, "rnea", f_ext=True), flags=NO_OPT)
        for robot, m in MODELS.items()
    }
    args = {robot: state(m, 3) for robot, m in MODELS.items()}
    for robot, lib in libs.items():  # both loaded in this process
        f = casrbd.function(MODELS[robot], "rnea", f_ext=True)
        assert rel_err(evaluate(lib[f.name()], args[robot])[0], evaluate(f, args[robot])[0]) < TOL
    # one C program with both libraries' code: the driver of tests/compiled/test_generated_c.py calls each rnea
    cmd = ["gcc", "-O0", "-I", ROOT / "tests" / "c"]
    for lib in libs.values():
        cmd += ["-include", lib.source.with_suffix(".h"), lib.source]
    functions = [f"{robot}_rnea" for robot in MODELS]
    cmd += [
        f"-DFUNCTIONS={', '.join(f'FUN_T({n})' for n in functions)}",
        ROOT / "tests" / "c" / "driver.c",
        "-o",
        tmp_path / "both",
        "-lm",
    ]
    subprocess.run([str(c) for c in cmd], check=True)
    inputs = []
    for robot in MODELS:
        inputs.append(tmp_path / f"{robot}.in")
        np.concatenate([ca.DM(a).nonzeros() for a in args[robot]]).astype("<f8").tofile(inputs[-1])
    out = subprocess.run([tmp_path / "both", *inputs], check=True, capture_output=True, text=True).stdout
    printed = out.split("# ")[1:]
    assert [p.split()[0] for p in printed] == functions
    for robot, p in zip(MODELS, printed):
        want = evaluate(casrbd.function(MODELS[robot], "rnea", f_ext=True), args[robot])[0].ravel()
        assert rel_err(np.array(p.split()[1:], dtype=float), want) < TOL


def test_second_call_loads_from_the_cache(cache, monkeypatch, capfd):
    f = casrbd.function(ARM7, "rnea")
    monkeypatch.setattr(codegen.compiler, "PROGRESS_SECONDS", 0.01)
    first = codegen.compile_functions(f, verbose=True)  # default flags
    err = capfd.readouterr().err
    assert first.compile_seconds > 0
    # what it compiles, how, progress while it compiles, and how long it took
    assert re.search(
        rf"compiling {f.name()} .* {' '.join(codegen.DEFAULT_FLAGS)} ...\n"
        rf"(casrbd.codegen: \.\.\. \d+ s\n)+"
        rf"casrbd.codegen: compiled {f.name()} .* in {first.compile_seconds:.1f} s\n",
        err,
    ), err
    start = time.perf_counter()
    second = codegen.compile_functions(f)
    assert second.compile_seconds is None and time.perf_counter() - start < 0.5
    assert second.path == first.path and builds(cache) == [first.path.parent.name]
    args = state(ARM7, 0)[:3]
    assert rel_err(evaluate(second[f.name()], args)[0], evaluate(f, args)[0]) < TOL
    # another process finds it too: the key depends on the Function, not on this process
    script = (
        "import casrbd; from casrbd import codegen; from casrbd.models import load_robot; "
        "print(codegen.compile_functions(casrbd.function(load_robot('arm7'), 'rnea')).compile_seconds)"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    ).stdout
    assert out.strip() == "None"
    # other flags, or another library name, are other builds
    other = codegen.compile_functions(f, flags=NO_OPT)
    renamed = codegen.compile_functions(f, name="arm7_rnea_copy", flags=NO_OPT)
    assert other.compile_seconds is not None and renamed.compile_seconds is not None
    assert len(builds(cache)) == 3


def test_concurrent_builds_of_one_key(cache):
    f = casrbd.function(ARM7, "nonlinear_effects")
    libs, errors = [], []

    def build():
        try:
            libs.append(codegen.compile_functions(f, flags=NO_OPT))
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=build) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len({lib.path for lib in libs}) == 1
    args = state(ARM7, 1)[:2]
    for lib in libs:
        assert rel_err(evaluate(lib[f.name()], args)[0], evaluate(f, args)[0]) < TOL
    # one entry, no half-finished files left behind
    assert builds(cache) == [libs[0].path.parent.name]
    files = {p.name for p in libs[0].path.parent.iterdir()}
    assert files == {f"{f.name()}.c", f"{f.name()}.h", libs[0].path.name, "manifest.json"}


def test_missing_compiler_is_a_clear_error(tmp_path, monkeypatch, cache):
    f = casrbd.function(ARM7, "rnea")
    monkeypatch.delenv("CC", raising=False)
    with monkeypatch.context() as no_path:
        no_path.setenv("PATH", str(tmp_path))  # an empty directory
        with pytest.raises(codegen.CompilerNotFoundError, match=r"no C compiler found: tried cc, gcc, clang.*install"):
            codegen.compile_functions(f)
    assert builds(cache) == []
    with pytest.raises(codegen.CompilerNotFoundError, match=r"tried compiler=no-such-cc"):
        codegen.compile_functions(f, compiler="no-such-cc")
    monkeypatch.setenv("CC", "no-such-cc")  # a CC that is set is used, not silently replaced
    with pytest.raises(codegen.CompilerNotFoundError, match=r"tried \$CC=no-such-cc"):
        codegen.find_compiler()
    assert builds(cache) == []


def test_compiler_failure_is_a_compile_error(cache):
    f = casrbd.function(ARM7, "rnea")
    with pytest.raises(codegen.CompileError, match=r"(?s)-no-such-flag.*failed.*-no-such-flag"):
        codegen.compile_functions(f, flags=("-no-such-flag",))
    # nothing that looks like a finished build is left: the next call compiles again
    assert not list(cache.rglob("*.so"))
    assert codegen.compile_functions(f, flags=NO_OPT).compile_seconds is not None


def named(name):
    x = ca.SX.sym("x")
    return ca.Function(name, [x], [2 * x])


@pytest.mark.parametrize(
    "functions, library",
    [
        ([named("int")], None),
        ([named("main")], None),
        ([named("sin")], None),
        ([named("class")], None),
        ([named("casadi_f0")], None),
        ([named("f"), named("f")], None),
        ([named("f"), named("f_work")], None),
        ([named("f")], "1abc"),
        ([named("f")], "a-b"),
        ([named("f")], "_Lib"),
        ([named("lib_casadi_version")], "lib"),
    ],
    ids=[
        "keyword",
        "main",
        "math.h",
        "c++-keyword",
        "casadi-prefix",
        "duplicate",
        "suffix-clash",
        "library-digit",
        "library-dash",
        "library-reserved",
        "library-symbol-clash",
    ],
)
def test_invalid_names_are_refused_before_generation(functions, library, tmp_path, cache):
    with pytest.raises(ValueError, match="cannot be used in generated C code|defined twice"):
        codegen.check_names(functions, library)
    with pytest.raises(ValueError, match="cannot be used in generated C code|defined twice"):
        codegen.generate(functions, tmp_path / "out", library or "lib")
    with pytest.raises(ValueError, match="cannot be used in generated C code|defined twice"):
        codegen.compile_functions(functions, name=library)
    assert not (tmp_path / "out").exists() and builds(cache) == []


def test_valid_names_pass():
    f = casrbd.function(ARM7, "rnea", jacobian="analytical")
    codegen.check_names([f, f.cache()["jac_" + f.name()], casrbd.function(ARM7, "aba")], "arm7")


CHAIN = serial_chain(3, seed=2)  # small: the second derivatives compile in seconds


def external_calls(f):
    """(name, class) of every Function f's graph calls."""
    return {(g.name(), g.class_name()) for g in f.find_functions()}


def swingup(model, fd, record):
    """Reach a configuration with minimum effort, explicit Euler on forward dynamics ``fd``."""
    opti = ca.Opti()
    nodes, dt = 5, 0.05
    Q, V, T = opti.variable(model.nv, nodes + 1), opti.variable(model.nv, nodes + 1), opti.variable(model.nv, nodes)
    opti.subject_to([Q[:, 0] == 0, V[:, 0] == 0, Q[:, -1] == 0.4, V[:, -1] == 0])
    for k in range(nodes):
        opti.subject_to(Q[:, k + 1] == Q[:, k] + dt * V[:, k])
        opti.subject_to(V[:, k + 1] == V[:, k] + dt * fd(Q[:, k], V[:, k], T[:, k]))
    opti.minimize(ca.sumsqr(T) + ca.sumsqr(V))
    opti.solver("ipopt", ocp.solver_options("exact"))
    opti.callback(lambda i: record.append(np.array(opti.debug.value(opti.x))))
    return opti, ocp.solve(opti)


def test_compiled_function_in_an_nlp_takes_the_same_iterates_through_its_compiled_derivatives():
    """The NLP's constraint Jacobian and exact Hessian call only the library: jac_<name> and the
    analytical contracted Hessian jac_adj1_<name>; IPOPT's iterates are those of the uncompiled
    Function (casadi's VM evaluating the same analytical derivatives)."""
    compiled = casrbd.compiled(CHAIN, "aba", flags=NO_OPT)
    assert casrbd.compiled(CHAIN, "aba", flags=NO_OPT) is compiled  # built once per model
    original = casrbd.function(CHAIN, "aba", jacobian="analytical")
    assert compiled.class_name() == "External" and compiled.name() == original.name()
    iterates = {"compiled": [], "original": []}
    opti, stats = swingup(CHAIN, compiled, iterates["compiled"])
    _, reference = swingup(CHAIN, original, iterates["original"])
    assert stats["success"] and reference["success"]
    assert stats["iterations"] == reference["iterations"]
    for a, b in zip(iterates["compiled"], iterates["original"]):
        assert rel_err(a, b) < 1e-9
    solver, name = opti.debug.casadi_solver, original.name()
    hess_l, jac_g = (external_calls(solver.get_function(n)) for n in ("nlp_hess_l", "nlp_jac_g"))
    assert ("jac_adj1_" + name, "External") in hess_l and ("jac_" + name, "External") in jac_g
    assert {c for _, c in hess_l | jac_g} == {"External"}  # nothing left for casadi to differentiate


def hessian_of(f):
    """(inputs, lam) -> (Hessian of lam^T f(inputs), its gradient, f's Jacobian), as casadi takes them
    of a call in an MX graph; all inputs and outputs vectorised."""
    xs = [ca.MX.sym(f.name_in(i), f.sparsity_in(i)) for i in range(f.n_in())]
    ys = ca.vertcat(*[ca.vec(y) for y in f.call(xs)])
    lam, z = ca.MX.sym("lam", ys.shape), ca.vertcat(*[ca.vec(x) for x in xs])
    H, g = ca.hessian(ca.dot(lam, ys), z)
    return ca.Function("hessian_of_" + f.name(), [*xs, lam], [H, g, ca.jacobian(ys, z)])


@pytest.mark.parametrize(
    "name, options",
    [
        ("center_of_mass", {}),
        ("frame_placement", {"frame": 5}),
        ("aba", {"jacobian": "analytical", "second_order": "ad"}),
    ],
)
def test_compiled_function_carries_ad_derivatives_where_there_are_no_analytical_ones(name, options):
    """Without an analytical Jacobian or Hessian, the library carries casadi's AD ones (several
    outputs included); they equal AD of the uncompiled Function's graph."""
    compiled = casrbd.compiled(CHAIN, name, flags=NO_OPT, **options)
    ad = {k: v for k, v in options.items() if k == "frame"}  # the Function differentiated by casadi's AD
    H, H_ref = hessian_of(compiled), hessian_of(casrbd.function(CHAIN, name, **ad))
    assert {c for _, c in external_calls(H)} == {"External"}
    for seed in range(2):
        rng = np.random.default_rng(seed)
        args = [rng.normal(size=H.size_in(i)) for i in range(H.n_in())]
        args[0] = np.asarray(casrbd.random_configuration(CHAIN, rng))
        for got, want in zip(H(*args), H_ref(*args)):
            assert rel_err(np.array(got), np.array(want)) < 1e-11


def test_compiled_function_without_second_order_carries_the_jacobian_only(cache):
    compiled = casrbd.compiled(CHAIN, "center_of_mass", flags=NO_OPT, hessian="limited-memory")
    original = casrbd.function(CHAIN, "center_of_mass")
    (library,) = cache.rglob("*.so")
    exported = ctypes.CDLL(str(library))
    assert hasattr(exported, "jac_" + original.name()) and not hasattr(exported, "adj1_" + original.name())
    args = [np.asarray(casrbd.random_configuration(CHAIN, np.random.default_rng(4))), np.ones(3), np.ones(3)]
    got, want = (evaluate(jacobian_function(f), args)[0] for f in (compiled, original))
    assert rel_err(got, want) < TOL
