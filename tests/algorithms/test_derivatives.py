"""Derivatives of inverse and forward dynamics: rnea_derivatives and aba_derivatives.

Every analytical method ("chain_rule", "idsva") is compared, on 30 random
states (random q, v, a or tau and random external forces) per robot, with
three references that do not share its code:

- method="ad": casadi's automatic differentiation of the rnea / aba graphs
  (to 1e-10);
- Pinocchio's computeRNEADerivatives / computeABADerivatives (to 1e-9;
  skipped without Pinocchio);
- central finite differences on the configuration manifold
  (``casrbd.testing.central_differences``, to their own accuracy, 1e-5).

Then identities: da/du = -M^-1 dtau/du at a = aba(q, v, tau), dtau/da = crba,
da/dtau = minverse, minv_product "aza" = "ltdl" = "dmm"; SX and MX Functions of the
derivatives agree; and the rounding experiment of Carpentier & Mansard (RSS 2018),
section V-B.

Errors are relative: max |x - y| / max(1, max |y|) with y the reference.
Robots: the three synthetic trees of conftest.py (every joint type with a constant
motion subspace, as a chain, a binary tree and a random tree with a free-flyer root),
arm7 and the example-robot-data robots (panda, ur5, both double pendulums, solo12, hyq,
talos_reduced); all of them with the full 30 states.
"""

import functools
import itertools

import casadi as ca
import numpy as np
import pytest
from conftest import ALL_ROBOTS, get_model, normalized_slices, robot_states, scale_normalized

import casrbd
from casrbd.testing import central_differences, random_state, rel_err

N_STATES = 30
AD_TOL = 1e-10  # analytical vs casadi AD
PIN_TOL = 1e-9  # vs Pinocchio
FD_TOL = 1e-5  # vs central finite differences (h = 1e-6)
IDENTITY_TOL = 1e-10
FD_STEP = 1e-6
METHODS = ("chain_rule", "idsva")
ALL_METHODS = METHODS + ("ad",)
PRODUCTS = ("dmm", "aza", "ltdl")
# every product with IDSVA, the default product with the chain rule: the product only multiplies
# M^-1 into the ID derivatives, which are the method's (test_products_equal_dmm covers the rest)
METHOD_PRODUCTS = tuple(("idsva", p) for p in PRODUCTS) + (("chain_rule", "ltdl"),)
F_EXT = (False, True)
WITH_F_EXT = pytest.mark.parametrize("with_f_ext", F_EXT, ids=["no_f_ext", "f_ext"])
# the whole method x product x f_ext matrix runs on these two by default (every constant-subspace joint
# type; a free-flyer URDF robot); the other robots run the default method and product, with and
# without f_ext, and the rest of the matrix under -m slow
MATRIX_ROBOTS = ("random", "solo12")
DEFAULT = {"method": "idsva", "minv_product": "ltdl", "product": "ltdl"}


def over_robots(**axes):
    """Parametrize ``case`` (indirect, a robot of ALL_ROBOTS) x the axes {name: values} (a name "a, b"
    takes pairs); a combination away from DEFAULT on a robot outside MATRIX_ROBOTS is marked slow."""
    params = []
    for robot in ALL_ROBOTS:
        for combo in itertools.product(*axes.values()):
            values = [x for c in combo for x in (c if isinstance(c, tuple) else (c,))]
            names = [n.strip() for name in axes for n in name.split(",")]
            default = all(DEFAULT.get(n, x) == x for n, x in zip(names, values))
            marks = () if robot in MATRIX_ROBOTS or default else (pytest.mark.slow,)
            words = [{True: "f_ext", False: "no_f_ext"}.get(x, x) if isinstance(x, bool) else x for x in values]
            params.append(pytest.param(robot, *values, marks=marks, id="-".join([robot, *map(str, words)])))
    return pytest.mark.parametrize(", ".join(["case", *axes]), params, indirect=["case"])


class Case:
    """A robot and N_STATES random states; Pinocchio's derivatives and finite differences at each, on demand."""

    def __init__(self, name):
        self.name, self.model, self.states = robot_states(name, N_STATES, 1000)
        self._pin = {}
        self._fd = {}
        self._ad = {}
        self._oracle = None

    def forces(self, F, with_f_ext):
        return F if with_f_ext else None

    def pin_derivatives(self, pin, dynamics, k, with_f_ext):
        """Pinocchio's derivatives of "rnea" (dtau_dq, dtau_dv, M) or "aba" (da_dq, da_dv, Minv)
        at state k, in casrbd's order."""
        key = (dynamics, k, with_f_ext)
        if key not in self._pin:
            if self._oracle is None:
                from oracle import Oracle

                self._oracle = Oracle.from_robot(self.name, self.model)
            o = self._oracle
            q, v, x, F = self.states[k]
            args = (o.pmodel, o.data, o.q(q), o.v(v), o.v(x)) + ((o.f_ext(F),) if with_f_ext else ())
            compute = pin.computeRNEADerivatives if dynamics == "rnea" else pin.computeABADerivatives
            dq, dv, dx = (np.array(x) for x in compute(*args))
            self._pin[key] = (o.from_vv(dq), o.from_vv(dv), o.from_upper(dx))
        return self._pin[key]

    def ad_derivatives(self, dynamics, k, with_f_ext):
        """casadi AD's derivatives of "rnea" or "aba" at state k (method="ad"), shared by the methods' tests."""
        key = (dynamics, k, with_f_ext)
        if key not in self._ad:
            q, v, x, F = self.states[k]
            compute = casrbd.rnea_derivatives if dynamics == "rnea" else casrbd.aba_derivatives
            self._ad[key] = compute(self.model, q, v, x, self.forces(F, with_f_ext), method="ad")
        return self._ad[key]

    def finite_differences(self, dynamics, k, with_f_ext):
        """Central differences (d/dq along q (+) h e_j, d/dv) of "rnea" or "aba" at state k, through
        the cached Function (whatever the method, the same numbers)."""
        key = (dynamics, k, with_f_ext)
        if key not in self._fd:
            q, v, x, F = self.states[k]
            fun = casrbd.function(self.model, dynamics, f_ext=with_f_ext)
            extra = (F,) if with_f_ext else ()
            self._fd[key] = central_differences(self.model, fun, q, v, x, *extra, h=FD_STEP, vectors=(1,))
        return self._fd[key]


@functools.cache
def _case(name):
    return Case(name)


@pytest.fixture
def case(request):
    return _case(request.param)


def worst(errors):
    """(largest error, index of its state)."""
    k = int(np.argmax(errors))
    return errors[k], k


def assert_below(errors, tol, what):
    err, k = worst(errors)
    assert err < tol, f"{what}: relative error {err:.3g} > {tol:g} (state {k})"


NAMES_ID = ("dtau_dq", "dtau_dv", "dtau_da")
NAMES_FD = ("da_dq", "da_dv", "da_dtau")


# ---------------------------------------------------------------- rnea_derivatives


@over_robots(method=METHODS, with_f_ext=F_EXT)
def test_rnea_derivatives_agree_with_ad(case, method, with_f_ext):
    m = case.model
    errors = {n: [] for n in NAMES_ID}
    for k, (q, v, a, F) in enumerate(case.states):
        got = casrbd.rnea_derivatives(m, q, v, a, case.forces(F, with_f_ext), method=method)
        for n, x, y in zip(NAMES_ID, got, case.ad_derivatives("rnea", k, with_f_ext)):
            assert x.shape == (m.nv, m.nv)
            errors[n].append(rel_err(x, y))
    for n, errs in errors.items():
        assert_below(errs, AD_TOL, f"{case.name} {method} {n} vs ad")


@over_robots(method=ALL_METHODS, with_f_ext=F_EXT)
def test_rnea_derivatives_match_pinocchio(case, method, with_f_ext, pin):
    m = case.model
    errors = {n: [] for n in NAMES_ID}
    for k, (q, v, a, F) in enumerate(case.states):
        got = casrbd.rnea_derivatives(m, q, v, a, case.forces(F, with_f_ext), method=method)
        for n, x, y in zip(NAMES_ID, got, case.pin_derivatives(pin, "rnea", k, with_f_ext)):
            errors[n].append(rel_err(x, y))
    for n, errs in errors.items():
        assert_below(errs, PIN_TOL, f"{case.name} {method} {n} vs Pinocchio")


# ---------------------------------------------------------------- aba_derivatives


@over_robots(**{"method, minv_product": METHOD_PRODUCTS, "with_f_ext": F_EXT})
def test_aba_derivatives_agree_with_ad(case, method, minv_product, with_f_ext):
    m = case.model
    errors = {n: [] for n in NAMES_FD}
    for k, (q, v, tau, F) in enumerate(case.states):
        got = casrbd.aba_derivatives(m, q, v, tau, case.forces(F, with_f_ext), method=method, minv_product=minv_product)
        for n, x, y in zip(NAMES_FD, got, case.ad_derivatives("aba", k, with_f_ext)):
            assert x.shape == (m.nv, m.nv)
            errors[n].append(rel_err(x, y))
    for n, errs in errors.items():
        assert_below(errs, AD_TOL, f"{case.name} {method}/{minv_product} {n} vs ad")


@over_robots(**{"method, minv_product": METHOD_PRODUCTS + (("ad", "dmm"),), "with_f_ext": F_EXT})
def test_aba_derivatives_match_pinocchio(case, method, minv_product, with_f_ext, pin):
    m = case.model
    errors = {n: [] for n in NAMES_FD}
    for k, (q, v, tau, F) in enumerate(case.states):
        got = casrbd.aba_derivatives(m, q, v, tau, case.forces(F, with_f_ext), method=method, minv_product=minv_product)
        for n, x, y in zip(NAMES_FD, got, case.pin_derivatives(pin, "aba", k, with_f_ext)):
            errors[n].append(rel_err(x, y))
    for n, errs in errors.items():
        assert_below(errs, PIN_TOL, f"{case.name} {method}/{minv_product} {n} vs Pinocchio")


# ---------------------------------------------------------------- finite differences


def test_central_differences_step_on_the_manifold():
    """casrbd.testing.central_differences steps q along q (+) (+-h e_k): the differences of
    difference(q0, .) at q0 are the identity, those of a linear function of a vector its matrix,
    and every q it evaluates at keeps unit quaternions and (cos, sin) pairs."""
    m = get_model("random")
    rng = np.random.default_rng(3)
    q0 = np.asarray(casrbd.random_configuration(m, rng))
    A = rng.normal(size=(m.nv, 4))
    seen = []

    def fun(q, x):
        seen.append(q)
        return casrbd.difference(m, q0, q) + A @ x

    d_dq, d_dx = central_differences(m, fun, q0, rng.normal(size=4), h=FD_STEP, vectors=(1,))
    assert rel_err(d_dq, np.eye(m.nv)) < 1e-8
    assert rel_err(d_dx, A) < 1e-8
    assert len(seen) == 2 * (m.nv + 4)
    for q in seen:
        for _, s in normalized_slices(m):
            assert abs(np.linalg.norm(q[s]) - 1) < 1e-14


@over_robots(dynamics=("rnea", "aba"), method=ALL_METHODS, with_f_ext=F_EXT)
def test_derivatives_match_finite_differences(case, method, with_f_ext, dynamics):
    m = case.model
    derivatives = getattr(casrbd, f"{dynamics}_derivatives")
    errs_q, errs_v = [], []
    for k, (q, v, x, F) in enumerate(case.states):
        dq, dv, _ = derivatives(m, q, v, x, case.forces(F, with_f_ext), method=method)
        fd_q, fd_v = case.finite_differences(dynamics, k, with_f_ext)
        errs_q.append(rel_err(fd_q, dq))
        errs_v.append(rel_err(fd_v, dv))
    assert_below(errs_q, FD_TOL, f"{case.name} {method} {dynamics} d/dq vs finite differences")
    assert_below(errs_v, FD_TOL, f"{case.name} {method} {dynamics} d/dv vs finite differences")


# ---------------------------------------------------------------- identities


@over_robots(method=ALL_METHODS, with_f_ext=F_EXT)
def test_aba_derivatives_are_minus_minv_times_rnea_derivatives(case, method, with_f_ext):
    """da/du = -M^-1 dtau/du at a = aba(q, v, tau), with M^-1 = minverse = crba^-1."""
    m = case.model
    errs_q, errs_v, errs_tau = [], [], []
    for q, v, tau, F in case.states:
        F = case.forces(F, with_f_ext)
        a = casrbd.aba(m, q, v, tau, F)
        dtau_dq, dtau_dv, _ = casrbd.rnea_derivatives(m, q, v, a, F, method=method)
        da_dq, da_dv, Minv = casrbd.aba_derivatives(m, q, v, tau, F, method=method)
        # solve with the CRBA matrix, independent of minverse and of aba_derivatives' M^-1
        M_crba = casrbd.crba(m, q)
        errs_q.append(rel_err(M_crba @ da_dq, -dtau_dq))
        errs_v.append(rel_err(M_crba @ da_dv, -dtau_dv))
        errs_tau.append(rel_err(M_crba @ Minv, np.eye(m.nv)))
    # M @ da_du is compared with dtau_du: the error is relative to |dtau_du|, not to |da_du|
    assert_below(errs_q, IDENTITY_TOL, f"{case.name} {method}: M da_dq = -dtau_dq")
    assert_below(errs_v, IDENTITY_TOL, f"{case.name} {method}: M da_dv = -dtau_dv")
    assert_below(errs_tau, 1e-9, f"{case.name} {method}: M da_dtau = I")


@over_robots(product=("aza", "ltdl"), with_f_ext=F_EXT)
def test_products_equal_dmm(case, product, with_f_ext):
    m, method = case.model, "idsva"  # the product does not depend on the method (METHOD_PRODUCTS)
    errors = {n: [] for n in NAMES_FD}
    for q, v, tau, F in case.states:
        F = case.forces(F, with_f_ext)
        got = casrbd.aba_derivatives(m, q, v, tau, F, method=method, minv_product=product)
        dmm = casrbd.aba_derivatives(m, q, v, tau, F, method=method, minv_product="dmm")
        for n, x, y in zip(NAMES_FD, got, dmm):
            errors[n].append(rel_err(x, y))
    for n, errs in errors.items():
        assert_below(errs, IDENTITY_TOL, f"{case.name} {method} {n}: {product} vs dmm")


@over_robots(method=ALL_METHODS)
def test_dtau_da_is_crba_and_da_dtau_is_minverse(case, method):
    m = case.model
    errs_M, errs_Minv = [], []
    for q, v, a, F in case.states:
        errs_M.append(rel_err(casrbd.rnea_derivatives(m, q, v, a, F, method=method)[2], casrbd.crba(m, q)))
        errs_Minv.append(rel_err(casrbd.aba_derivatives(m, q, v, a, F, method=method)[2], casrbd.minverse(m, q)))
    assert_below(errs_M, IDENTITY_TOL, f"{case.name} {method} dtau_da vs crba")
    assert_below(errs_Minv, IDENTITY_TOL, f"{case.name} {method} da_dtau vs minverse")


def test_derivatives_do_not_depend_on_the_norm_of_quaternions():
    """Quaternions and (cos, sin) are normalised inside the joints: scaling them changes nothing."""
    m = get_model("random")
    rng = np.random.default_rng(5)
    for _ in range(5):
        q, v, a, F = random_state(m, rng)
        q2 = scale_normalized(m, q, 1.3)
        assert np.max(np.abs(q2 - q)) > 0.05
        for method in METHODS:
            for x, y in zip(
                casrbd.rnea_derivatives(m, q2, v, a, F, method=method),
                casrbd.rnea_derivatives(m, q, v, a, F, method=method),
            ):
                assert rel_err(x, y) < IDENTITY_TOL
            for x, y in zip(
                casrbd.aba_derivatives(m, q2, v, a, F, method=method),
                casrbd.aba_derivatives(m, q, v, a, F, method=method),
            ):
                assert rel_err(x, y) < IDENTITY_TOL


# ---------------------------------------------------------------- SX and MX Functions

SX_MX_ROBOTS = ("random", "solo12")  # every constant-subspace joint type; a free-flyer URDF robot


@pytest.mark.parametrize("name", SX_MX_ROBOTS)
@pytest.mark.parametrize(
    "algorithm, options",
    [("rnea_derivatives", {"method": mt}) for mt in METHODS]
    + [("aba_derivatives", {"method": mt, "minv_product": p}) for mt, p in METHOD_PRODUCTS],
)
@WITH_F_EXT
def test_sx_and_mx_functions_agree(name, algorithm, options, with_f_ext):
    """The analytical methods; method="ad" in MX: test_ad_reference_in_mx_is_finite."""
    m = get_model(name)
    sx = casrbd.function(m, algorithm, symbolic="SX", f_ext=with_f_ext, **options)
    mx = casrbd.function(m, algorithm, symbolic="MX", f_ext=with_f_ext, **options)
    assert sx.is_a("SXFunction") and mx.is_a("MXFunction")
    expected_out = list(NAMES_ID) if algorithm == "rnea_derivatives" else list(NAMES_FD)
    assert sx.name_out() == mx.name_out() == expected_out
    rng = np.random.default_rng(17)
    for _ in range(5):
        q, v, x, F = random_state(m, rng)
        args = [q, v, x] + ([F] if with_f_ext else [])
        via_numpy = getattr(casrbd, algorithm)(m, q, v, x, F if with_f_ext else None, **options)
        for a, b, c in zip(sx(*args), mx(*args), via_numpy):
            assert rel_err(b.full(), a.full()) < 1e-12
            assert rel_err(c, a.full()) == 0.0  # the numpy call evaluates the SX Function


def test_kinematics_derivatives_sx_and_mx_functions_agree():
    m = get_model("random")
    rng = np.random.default_rng(19)
    for frame in ("tip3", "tip11", 5):
        sx = casrbd.function(m, "kinematics_derivatives", symbolic="SX", frame=frame)
        mx = casrbd.function(m, "kinematics_derivatives", symbolic="MX", frame=frame)
        assert sx.is_a("SXFunction") and mx.is_a("MXFunction")
        for _ in range(3):
            q, v, a, _ = random_state(m, rng)
            for x, y in zip(sx(q, v, a), mx(q, v, a)):
                assert rel_err(y.full(), x.full()) < 1e-12


@pytest.mark.parametrize("sym", [ca.SX, ca.MX], ids=["SX", "MX"])
def test_symbolic_inputs_give_expressions_of_the_same_type(sym):
    m = get_model("random")
    q, v, a, F = random_state(m, np.random.default_rng(2))
    Q, V, A = sym.sym("q", m.nq), sym.sym("v", m.nv), sym.sym("a", m.nv)
    Fs = sym.sym("f", 6, m.njoints)
    # method="ad" in MX: test_ad_reference_in_mx_is_finite
    for method in ALL_METHODS if sym is ca.SX else METHODS:
        for name in ("rnea_derivatives", "aba_derivatives"):
            outs = getattr(casrbd, name)(m, Q, V, A, Fs, method=method)
            assert len(outs) == 3 and all(isinstance(o, sym) for o in outs)
            f = ca.Function("f", [Q, V, A, Fs], list(outs))
            for x, y in zip(f(q, v, a, F), getattr(casrbd, name)(m, q, v, a, F, method=method)):
                assert rel_err(x.full(), y) < 1e-12


# ---------------------------------------------------------------- the AD reference in MX graphs


@pytest.mark.parametrize("algorithm", ["rnea_derivatives", "aba_derivatives"])
def test_ad_reference_in_mx_is_finite(algorithm):
    """method="ad" built as an MX Function (or called with MX symbols) on a tree with a
    spherical joint must give the SX Function's numbers, not NaN.

    Regression test: it gave NaN in d/dq of every quaternion joint. The AD
    reference differentiates q (+) delta at delta = 0, and the Jacobian of
    casrbd.integrate at a zero step was NaN (see the next test); the SX build
    hid it because substituting delta = 0 into the SX graph folds 0 * inf away."""
    m = get_model("random")
    sx = casrbd.function(m, algorithm, symbolic="SX", method="ad")
    mx = casrbd.function(m, algorithm, symbolic="MX", method="ad")
    q, v, x, _ = random_state(m, np.random.default_rng(29))
    for name, a, b in zip(sx.name_out(), sx(q, v, x), mx(q, v, x)):
        assert np.all(np.isfinite(b.full())), f"MX {algorithm} {name} has NaN entries"
        assert rel_err(b.full(), a.full()) < 1e-12


@pytest.mark.parametrize("joint_type", ["spherical", "floating", "planar"])
def test_integrate_jacobian_at_zero_step_is_finite(joint_type):
    """d/dv integrate(q, v) at v = 0 (what the AD reference and any optimal-control
    transcription q_next = integrate(q, v dt) started at v = 0 differentiate)
    is finite, and a right inverse of the tangent map (raw q -> tangent coordinates).

    Regression test: it was NaN for spherical and free-flyer joints, in SX and MX alike,
    when casrbd.spatial.exp3_quaternion(w) returned [s(|w|^2) w; cos(sqrt(|w|^2) / 2)]: s
    went through the masked Taylor branch but the cos did not, and d sqrt(t)/dt = inf at
    t = 0 times d|w|^2/dw = 0 gave NaN in its row, which the quaternion product spread
    over all four quaternion entries."""
    from casrbd.models import random_tree

    m = random_tree(1, (joint_type,), seed=0)
    for sym in (ca.SX, ca.MX):
        q, d = sym.sym("q", m.nq), sym.sym("d", m.nv)
        J = ca.Function("J", [q, d], [ca.jacobian(casrbd.integrate(m, q, d), d)])
        q0 = np.asarray(casrbd.random_configuration(m, 1))
        Jv = J(q0, np.zeros(m.nv)).full()
        assert np.all(np.isfinite(Jv)), f"{sym.__name__}: NaN in d integrate / dv at v = 0:\n{Jv}"
        # the tangent map (raw q -> tangent) is a left inverse of it
        T = ca.Function("T", [q], [casrbd.algorithms.configuration.tangent_map(m, q)])(q0).full()
        assert rel_err(T @ Jv, np.eye(m.nv)) < 1e-12


# ------------------------------------------------ Carpentier & Mansard (RSS 2018), section V-B (Fig. 3)


@pytest.mark.parametrize("name", ["panda", pytest.param("random", marks=pytest.mark.slow)])
def test_rounding_zero_velocity_derivatives_are_exactly_zero(name):
    """With no gravity, v = 0, a = 0 (tau = 0) and no f_ext, dtau/dv and da/dv vanish.

    The analytical methods return exact zeros; finite differences do not. Note:
    a *central* difference in v gives exact zeros too, since in floating point
    rnea(q, -v, a) == rnea(q, v, a) bit for bit (negation is exact and every
    intermediate is even or odd in v); so the finite differences shown here are
    one-sided, as a forward-difference Jacobian (e.g. a solver's) would be."""
    m = get_model(name).with_gravity([0.0, 0.0, 0.0])
    rng = np.random.default_rng(23)
    zero = np.zeros(m.nv)
    h = FD_STEP
    E = h * np.eye(m.nv)
    largest_fd = 0.0
    for _ in range(3):
        q = np.asarray(casrbd.random_configuration(m, rng))
        for method in METHODS:
            dtau_dv = casrbd.rnea_derivatives(m, q, zero, zero, method=method)[1]
            da_dv = casrbd.aba_derivatives(m, q, zero, zero, method=method)[1]
            for mp in PRODUCTS:
                da_dv_p = casrbd.aba_derivatives(m, q, zero, zero, method=method, minv_product=mp)[1]
                assert np.all(da_dv_p == 0), f"{method}/{mp} da_dv max {np.abs(da_dv_p).max():.3g}"
            assert dtau_dv.shape == da_dv.shape == (m.nv, m.nv)
            assert np.all(dtau_dv == 0), f"{method} dtau_dv max {np.abs(dtau_dv).max():.3g}"
            assert np.all(da_dv == 0), f"{method} da_dv max {np.abs(da_dv).max():.3g}"
        tau0, a0 = casrbd.rnea(m, q, zero, zero), casrbd.aba(m, q, zero, zero)
        assert np.all(tau0 == 0) and np.all(a0 == 0)
        fd_tau = np.column_stack([casrbd.rnea(m, q, E[:, k], zero) - tau0 for k in range(m.nv)]) / h
        fd_a = np.column_stack([casrbd.aba(m, q, E[:, k], zero) - a0 for k in range(m.nv)]) / h
        largest_fd = max(largest_fd, np.abs(fd_tau).max(), np.abs(fd_a).max())
        # yet they are small: they are O(h) errors around the exact zero
        assert np.abs(fd_tau).max() < 1e-3 and np.abs(fd_a).max() < 1e-2
    assert largest_fd > 0, "finite differences are exactly zero too"


# ---------------------------------------------------------------- options


def test_unknown_method_raises_listing_valid_methods():
    m = get_model("arm7")
    q, v, a, _ = random_state(m, np.random.default_rng(0))
    for call in (
        lambda: casrbd.rnea_derivatives(m, q, v, a, method="pinocchio"),
        lambda: casrbd.aba_derivatives(m, q, v, a, method="pinocchio"),
        lambda: casrbd.function(m, "rnea_derivatives", method="pinocchio"),
        lambda: casrbd.function(m, "aba_derivatives", method="pinocchio"),
    ):
        with pytest.raises(ValueError, match="pinocchio") as info:
            call()
        for valid in ALL_METHODS:
            assert repr(valid) in str(info.value)


def test_unknown_minv_product_raises_listing_valid_products():
    m = get_model("arm7")
    q, v, a, _ = random_state(m, np.random.default_rng(0))
    for call in (
        lambda: casrbd.aba_derivatives(m, q, v, a, minv_product="lu"),
        lambda: casrbd.function(m, "aba_derivatives", minv_product="lu"),
    ):
        with pytest.raises(ValueError, match="lu") as info:
            call()
        for valid in PRODUCTS:
            assert repr(valid) in str(info.value)


def test_minv_product_is_not_an_option_of_rnea_derivatives():
    m = get_model("arm7")
    with pytest.raises((TypeError, ValueError)):
        casrbd.function(m, "rnea_derivatives", minv_product="aza")


def test_default_method_is_idsva_and_product_ltdl():
    m = get_model("random")
    q, v, a, F = random_state(m, np.random.default_rng(1))
    for x, y in zip(casrbd.rnea_derivatives(m, q, v, a, F), casrbd.rnea_derivatives(m, q, v, a, F, method="idsva")):
        assert np.array_equal(x, y)
    assert casrbd.function(m, "rnea_derivatives") is casrbd.function(m, "rnea_derivatives", method="idsva")
    assert casrbd.function(m, "aba_derivatives") is casrbd.function(
        m, "aba_derivatives", method="idsva", minv_product="ltdl"
    )
