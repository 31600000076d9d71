"""Second-order derivatives: rnea_hessian, aba_hessian, rnea_second_order_derivatives, and the
adjoints (and their Jacobians) that casadi's derivative cache takes.

References that do not share the analytical code:

- casadi's AD (method="ad"): the forward-over-reverse Hessian of the rnea / aba graph in raw
  coordinates, carried to the tangent chart by the chain rule; itself checked against casadi's
  forward-over-forward Hessian of lam^T tau(q (+) delta) at delta = 0 taken directly;
- for the tensors, casadi's Jacobian of its Jacobian of the rnea graph, and casadi's Jacobian of
  the analytical first-order derivatives (IDSVA);
- Pinocchio's C++ ComputeRNEASecondOrderDerivatives (benchmarks/pinocchio_cpp; to 1e-9, without
  external forces, which it does not take), where the program is built;
- identities: d(M lam)/dq is dtau/dq at v = 0, a = lam without gravity; the tensors contracted
  with lam are the Hessian's blocks; the Hessians are symmetric.

Errors are relative, max |x - y| / max(1, max |y|), per state and block. The contracted Hessians
are checked on 30 random states per robot of the test corpus (conftest.py: the synthetic trees
with every constant-subspace joint type, arm7, the example-robot-data robots), with and without
external forces, evaluated in one call of a mapped Function per robot; talos_reduced is slow.
"""

import casadi as ca
import numpy as np
import pytest
from conftest import EXAMPLE_ROBOTS, SHIPPED_ROBOTS, SYNTHETIC_ROBOTS, get_model

import casrbd
from casrbd.algorithms.configuration import integrate
from casrbd.algorithms.idsva import idsva
from casrbd.algorithms.rnea import rnea
from casrbd.algorithms.second_order import hessians
from casrbd.models import random_tree
from casrbd.testing import mapped, random_state, rel_err

TOL = 1e-10
PIN_TOL = 1e-9
N_STATES = 30
# AD's Hessian of aba is the expensive reference: the default run samples the corpus (random holds every
# joint type under a free flyer); these run with -m slow
SLOW = ("talos_reduced", "chain", "binary", "hyq")
CORPUS = [
    pytest.param(name, marks=pytest.mark.slow) if name in SLOW else name
    for name in SYNTHETIC_ROBOTS + SHIPPED_ROBOTS + EXAMPLE_ROBOTS
]
WITH_F_EXT = pytest.mark.parametrize("with_f_ext", [False, True], ids=["no_f_ext", "f_ext"])
HESSIANS = {"rnea": "rnea_hessian", "aba": "aba_hessian"}
TENSORS = ("d2tau_dqdq", "d2tau_dvdv", "d2tau_dqdv", "dtau_dadq")


def small_tree():
    """Six bodies, one of each constant-subspace joint type, under a free-flyer root (nv = 15)."""
    return random_tree(6, ("floating", "spherical", "planar", "revolute", "helical", "prismatic"), None, 5)


def states(model, n, seed):
    """n random (q, v, x, lam, f_ext)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        q, v, x, F = random_state(model, rng)
        out.append((q, v, x, rng.normal(size=model.nv), F))
    return out


def assert_below(errors, tol, what):
    k = int(np.argmax(errors))
    assert errors[k] < tol, f"{what}: relative error {errors[k]:.3g} > {tol:g} (state {k})"


# ---------------------------------------------------------------- contracted Hessians


@pytest.mark.parametrize("dynamics", ["rnea", "aba"])
@pytest.mark.parametrize("name", CORPUS)
def test_hessian_equals_ad(name, dynamics):
    """With and without external forces; the reference is the AD Function with f_ext, at f_ext = 0
    for the Function without (the Hessian by (q, v, x) depends on f_ext only through its value)."""
    model = get_model(name)
    fname = HESSIANS[dynamics]
    ref = casrbd.function(model, fname, f_ext=True, method="ad")
    cases = states(model, N_STATES, sum(map(ord, name)))
    references = mapped(ref, [s[:4] + (s[4],) for s in cases])
    zero = mapped(ref, [s[:4] + (np.zeros_like(s[4]),) for s in cases])
    for with_f_ext, want in ((True, references), (False, zero)):
        got = casrbd.function(model, fname, f_ext=with_f_ext, method="second_order_adjoint")
        values = mapped(got, [s[:4] + ((s[4],) if with_f_ext else ()) for s in cases])
        for k, x in enumerate(values[: 5 if with_f_ext else 4]):
            what = f"{name} {fname} {got.name_out(k)} (f_ext={with_f_ext}) vs ad"
            assert_below([rel_err(a, b) for a, b in zip(x, want[k])], TOL, what)
        for H in values[0]:
            assert rel_err(H, H.T) == 0  # symmetric by construction


@pytest.mark.parametrize("dynamics", ["rnea", "aba"])
@pytest.mark.parametrize("name", ["small", "arm7"])
def test_hessian_with_armature_equals_ad(name, dynamics):
    """Armature on every joint but a free-flyer root (where IDSVA's first-order base columns, which
    aba_hessian uses, take it inside M: tests/algorithms/test_armature.py's xfail)."""
    base = small_tree() if name == "small" else get_model(name)
    armature = np.random.default_rng(0).uniform(0.01, 0.2, base.nv)
    for r in (i for i, j in enumerate(base.joints) if base.parents[i] < 0 and j.full_motion):
        armature[base.v_slice(r)] = 0
    model = base.with_armature(armature)
    fname = HESSIANS[dynamics]
    for q, v, x, lam, F in states(model, 5, 3):
        got = getattr(casrbd, fname)(model, q, v, x, lam, F)
        ref = getattr(casrbd, fname)(model, q, v, x, lam, F, method="ad")
        for a, b in zip(got, ref):
            assert rel_err(a, b) < TOL


def chart_hessian(model, fun, with_f_ext):
    """Forward-over-forward AD Hessian of lam^T fun(q (+) delta, v, x, f_ext) by (delta, v, x) at 0:
    the definition, without the chain rule of method="ad"."""
    Q, V, X, L, D = (ca.SX.sym(n, model.nq if n == "q" else model.nv) for n in "qvxld")
    F = ca.SX.sym("f", 6, model.njoints) if with_f_ext else None
    phi = ca.dot(L, fun(model, integrate(model, Q, D), V, X, F))
    z = ca.vertcat(D, V, X)
    eye = ca.DM.eye(z.shape[0])
    H = ca.substitute(ca.jtimes(ca.jtimes(phi, z, eye).T, z, eye), D, ca.DM.zeros(model.nv))
    return ca.Function("ref", [Q, V, X, L] + ([F] if with_f_ext else []), [H])


@pytest.mark.parametrize("dynamics", ["rnea", "aba"])
def test_ad_method_is_the_hessian_on_the_chart(dynamics):
    """method="ad" (chain rule through integrate) equals the forward-over-forward Hessian of
    phi(q (+) delta) at delta = 0 (reverse mode gives 0 * inf there through the exp map)."""
    model = small_tree()
    fun = casrbd.algorithms.aba.aba if dynamics == "aba" else rnea
    ref = chart_hessian(model, fun, True)
    nv = model.nv
    for q, v, x, lam, F in states(model, 3, 4):
        H = np.array(ref(q, v, x, lam, F))
        blocks = getattr(casrbd, HESSIANS[dynamics])(model, q, v, x, lam, F, method="ad")
        expected = (H[:nv, :nv], H[:nv, nv : 2 * nv], H[nv : 2 * nv, nv : 2 * nv], H[:nv, 2 * nv :])
        for got, want in zip(blocks, expected):
            assert rel_err(got, want) < TOL
        assert np.abs(H[nv:, 2 * nv :]).max() < 1e-12  # the x-v and x-x blocks vanish


def test_qa_block_is_the_derivative_of_m_lam():
    """H_qa^T = d(M lam)/dq = dtau/dq at v = 0, a = lam without gravity (closed form of the issue)."""
    for name in ("random", "solo12"):
        model = get_model(name)
        weightless = model.with_gravity([0.0, 0.0, 0.0])
        for q, v, a, lam, _ in states(model, 3, 5):
            H_qa = casrbd.rnea_hessian(model, q, v, a, lam)[3]
            dMlam_dq = casrbd.rnea_derivatives(weightless, q, np.zeros(model.nv), lam, method="ad")[0]
            assert rel_err(H_qa.T, dMlam_dq) < TOL


# ---------------------------------------------------------------- the adjoints for casadi's cache


def adjoint_reference(model, fun, with_f_ext):
    """Forward-mode AD of lam^T fun(((q (+) d1) (+) d2), v, x, f_ext): the gradient (by d2, v, x, f)
    and its Jacobian (by d1, v, x, f, lam), at d1 = d2 = 0."""
    Q, V, X, L, D1, D2 = (ca.SX.sym(n, model.nq if n == "q" else model.nv) for n in ("q", "v", "x", "l", "d1", "d2"))
    F = ca.SX.sym("f", 6, model.njoints) if with_f_ext else None
    phi = ca.dot(L, fun(model, integrate(model, integrate(model, Q, D1), D2), V, X, F))
    parts = {"q": D2, "v": V, "x": X} | ({"f_ext": ca.vec(F)} if with_f_ext else {})
    moved = {"q": D1, "v": V, "x": X, "lam": L} | ({"f_ext": ca.vec(F)} if with_f_ext else {})
    grad = {k: ca.jtimes(phi, w, ca.DM.eye(w.shape[0])).T for k, w in parts.items()}
    jac = {(k, m): ca.jtimes(g, w, ca.DM.eye(w.shape[0])) for k, g in grad.items() for m, w in moved.items()}
    zero = [ca.DM.zeros(model.nv)] * 2
    outs = ca.substitute(list(grad.values()) + list(jac.values()), [D1, D2], zero)
    fun = ca.Function("ref", [Q, V, X, L] + ([F] if with_f_ext else []), outs)
    return fun, list(grad), list(jac)


@WITH_F_EXT
@pytest.mark.parametrize("dynamics", ["rnea", "aba"])
def test_second_order_adjoint_equals_ad(dynamics, with_f_ext):
    model = small_tree()
    model = model.with_armature(np.r_[np.zeros(6), np.full(model.nv - 6, 0.05)])  # not on the root: see above
    fun = casrbd.algorithms.aba.aba if dynamics == "aba" else rnea
    x_name = "tau" if dynamics == "aba" else "a"
    adjoint = hessians.aba_second_order_adjoint if dynamics == "aba" else hessians.rnea_second_order_adjoint
    ref, grad_keys, jac_keys = adjoint_reference(model, fun, with_f_ext)
    name = {"x": x_name}
    for q, v, x, lam, F in states(model, 3, 6):
        expected = ref(q, v, x, lam, *([F] if with_f_ext else []))
        gradient, jacobian = adjoint(model, ca.DM(q), ca.DM(v), ca.DM(x), ca.DM(lam), ca.DM(F) if with_f_ext else None)
        assert set(gradient) == {name.get(k, k) for k in grad_keys}
        for k, want in zip(grad_keys, expected[: len(grad_keys)]):
            assert rel_err(ca.vec(gradient[name.get(k, k)]), want) < TOL, k
        for (k, m), want in zip(jac_keys, expected[len(grad_keys) :]):
            got = jacobian.get((name.get(k, k), name.get(m, m)), ca.DM(*want.shape))
            assert rel_err(got, want) < TOL, (k, m)


# ---------------------------------------------------------------- full tensors


def first_order_jacobian(model, with_f_ext):
    """casadi's Jacobian of IDSVA's first-order derivatives (q on the tangent space), in the layout of
    rnea_second_order_derivatives."""
    Q, V, A = (ca.SX.sym(n, model.nq if n == "q" else model.nv) for n in "qva")
    F = ca.SX.sym("f", 6, model.njoints) if with_f_ext else None
    D = ca.SX.sym("d", model.nv)
    dq, dv, M = idsva(model, integrate(model, Q, D), V, A, F)
    eye, nv = ca.DM.eye(model.nv), model.nv
    outs = [
        ca.jtimes(ca.vec(dq), D, eye),
        ca.jacobian(ca.vec(dv), V),
        ca.jacobian(ca.vec(dq), V),
        ca.jtimes(ca.vec(M), D, eye),
    ]
    outs = [ca.reshape(ca.substitute(o, D, ca.DM.zeros(nv)), nv, nv * nv) for o in outs]
    return ca.Function("ref", [Q, V, A] + ([F] if with_f_ext else []), outs)


TENSOR_ROBOTS = ["small", "arm7", "ur5"] + [
    pytest.param(n, marks=pytest.mark.slow) for n in ("chain", "random", "solo12", "hyq", "talos_reduced")
]


@WITH_F_EXT
@pytest.mark.parametrize("name", TENSOR_ROBOTS)
def test_tensors_equal_ad_of_ad_and_jacobian_of_first_order(name, with_f_ext):
    model = small_tree() if name == "small" else get_model(name)
    got, ad = (
        casrbd.function(model, "rnea_second_order_derivatives", f_ext=with_f_ext, method=m) for m in ("idsva", "ad")
    )
    jac = first_order_jacobian(model, with_f_ext)
    args = [s[:3] + ((s[4],) if with_f_ext else ()) for s in states(model, 5, 7)]
    values = mapped(got, args)
    for reference, what in ((mapped(ad, args), "AD of AD"), (mapped(jac, args), "Jacobian of IDSVA")):
        for k, (x, y) in enumerate(zip(values, reference)):
            assert_below([rel_err(a, b) for a, b in zip(x, y)], TOL, f"{name} {TENSORS[k]} vs {what}")


@pytest.mark.parametrize("name", ["small", "solo12"])
def test_tensors_contracted_with_lam_are_the_hessian(name):
    model = small_tree() if name == "small" else get_model(name)
    for q, v, a, lam, F in states(model, 2, 8):
        T_qq, T_vv, T_qv, T_aq = casrbd.rnea_second_order_derivatives(model, q, v, a, F)
        H_qq, H_qv, H_vv, H_qa, _ = casrbd.rnea_hessian(model, q, v, a, lam, F)
        D, C_vv, C_qv, C_aq = (np.einsum("i,ijk->jk", lam, T) for T in (T_qq, T_vv, T_qv, T_aq))
        assert rel_err((D + D.T) / 2, H_qq) < TOL  # the Lie-group joints' chart term is antisymmetric
        assert rel_err(C_vv, H_vv) < TOL
        assert rel_err(C_qv, H_qv) < TOL
        assert rel_err(C_aq, H_qa.T) < TOL


@pytest.mark.parametrize("name", ["ur5", "panda", "solo12", "hyq"])
def test_tensors_match_pinocchio_cpp(name, pin):
    from oracle import Oracle

    from benchmarks import pinocchio_cpp

    exe = pinocchio_cpp.built()
    if exe is None:
        pytest.skip(
            "Pinocchio's C++ program is not built for the installed pin wheel (needs cmeel-eigen and "
            "cmeel-urdfdom-headers; build it with `python -m pytest -m slow -k pinocchio_cpp_build`)"
        )
    model = get_model(name)
    oracle = Oracle.from_robot(name, model)
    for q, v, a, _, _ in states(model, 3, 9):
        got = casrbd.rnea_second_order_derivatives(model, q, v, a)
        for k, (x, y) in enumerate(zip(got, pinocchio_cpp.tensors(exe, name, oracle, q, v, a))):
            assert rel_err(x, y) < PIN_TOL, f"{name} {TENSORS[k]} vs Pinocchio C++"


@pytest.mark.slow
def test_pinocchio_cpp_build(pin):
    """Builds benchmarks/pinocchio_cpp (minutes, 4.3 GB of memory) and compares it on solo12."""
    from benchmarks import pinocchio_cpp

    try:
        pinocchio_cpp.build()
    except pinocchio_cpp.Unavailable as e:
        pytest.skip(str(e))
    test_tensors_match_pinocchio_cpp("solo12", pin)


# ---------------------------------------------------------------- joints, arguments, symbols


def test_q_dependent_subspaces_are_refused_by_name_and_ad_works():
    model = random_tree(4, ("revolute", "universal"), 1, 2)
    q, v, a, lam, _ = states(model, 1, 0)[0]
    for fname, args in (("rnea_hessian", (q, v, a, lam)), ("aba_hessian", (q, v, a, lam))):
        with pytest.raises(NotImplementedError, match="j1_universal"):
            getattr(casrbd, fname)(model, *args)
        H = getattr(casrbd, fname)(model, *args, method="ad")
        assert np.all(np.isfinite(H[0]))
    with pytest.raises(NotImplementedError, match="j1_universal"):
        casrbd.rnea_second_order_derivatives(model, q, v, a)
    assert np.all(np.isfinite(casrbd.rnea_second_order_derivatives(model, q, v, a, method="ad")[0]))


def test_bad_arguments_name_the_culprit():
    model = get_model("arm7")
    q, v, a, lam, F = states(model, 1, 0)[0]
    with pytest.raises(ValueError, match="'lam'"):
        casrbd.rnea_hessian(model, q, v, a, lam[:-1])
    with pytest.raises(ValueError, match="f_ext"):
        casrbd.aba_hessian(model, q, v, a, lam, F.T)
    with pytest.raises(ValueError, match="method"):
        casrbd.rnea_hessian(model, q, v, a, lam, method="idsva")
    with pytest.raises(ValueError, match="method"):
        casrbd.rnea_second_order_derivatives(model, q, v, a, method="analytical")


@pytest.mark.parametrize("sym", [ca.SX, ca.MX], ids=["SX", "MX"])
def test_symbolic_arguments_and_shapes(sym):
    model = small_tree()
    q, v, a, lam, F = states(model, 1, 1)[0]
    numeric = casrbd.aba_hessian(model, q, v, a, lam, F)
    assert [h.shape for h in numeric] == [(model.nv, model.nv)] * 4 + [(model.nv, 6 * model.njoints)]
    assert len(casrbd.aba_hessian(model, q, v, a, lam)) == 4
    Q = sym.sym("q", model.nq)
    out = casrbd.aba_hessian(model, Q, v, a, lam, F)
    assert all(isinstance(h, sym) for h in out)
    values = ca.Function("f", [Q], list(out))(q)
    for x, y in zip(values, numeric):
        assert rel_err(x, y) < TOL
    tensors = casrbd.rnea_second_order_derivatives(model, q, v, a)
    assert [t.shape for t in tensors] == [(model.nv,) * 3] * 4
    f = casrbd.function(model, "rnea_second_order_derivatives", symbolic=sym.__name__)
    assert f.size_out(0) == (model.nv, model.nv**2)
    assert rel_err(np.array(f(q, v, a)[0]).reshape((model.nv,) * 3, order="F"), tensors[0]) < TOL


def test_benchmark_script_runs(tmp_path):
    """benchmarks/second_order.py on a small robot, sizes and values only (no gcc, no C++ program)."""
    import json

    from benchmarks import second_order

    second_order.main(["--robots", "double_pendulum", "--no-compile", "--no-pinocchio", "--out", str(tmp_path)])
    record = json.loads((tmp_path / "second_order.json").read_text())["double_pendulum"]
    for label in ("H(rnea) analytical", "H(aba) analytical", "tensors IDSVA"):
        assert record["entries"][label]["err_vs_ad"] < TOL
    assert "| double_pendulum | 2 | H(aba) analytical |" in (tmp_path / "second_order.md").read_text()
