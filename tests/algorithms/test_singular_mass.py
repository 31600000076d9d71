"""Models whose mass matrix is singular: what needs M^-1 refuses them, naming the joints.

Three ways to get there: a URDF whose moving link has no <inertial>, a chain
of massless links, and a massless free-flyer root over a revolute joint (the
root turns about the joint's axis while the joint turns back: no mass moves).
aba, minverse and aba_derivatives, called numerically, through
``casrbd.function`` (jacobian="analytical" too) and with SX or MX symbols,
raise ``SingularMassMatrixError`` (a ValueError) naming the singular joints
and no other, instead of returning NaN or inf. Loading such a URDF only warns,
and rnea, crba, kinematics and rnea_derivatives still work on the model.
"""

import warnings

import casadi as ca
import numpy as np
import pytest

import casrbd
from casrbd import Body, Frame, Model, SingularMassMatrixError
from casrbd.joints import FreeFlyer, Revolute
from casrbd.models import random_tree
from casrbd.parameters import model_parameters, with_parameters
from casrbd.spatial import SE3, Inertia
from casrbd.testing import random_state

BOX = '<inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.03"/></inertial>'
# base -> upper (a box) -> lower (no <inertial>): 'knee' moves nothing, 'hip' moves the box
URDF = f"""<robot name="no_inertial"><link name="base"/><link name="upper">{BOX}</link><link name="lower"/>
  <joint name="hip" type="continuous"><parent link="base"/><child link="upper"/><axis xyz="0 1 0"/></joint>
  <joint name="knee" type="continuous"><parent link="upper"/><child link="lower"/><axis xyz="1 0 0"/>
    <origin xyz="0 0 -0.3"/></joint></robot>"""


def urdf_without_inertial():
    with pytest.warns(casrbd.URDFWarning, match=r"joints \['knee'\] have a motion that moves no mass"):
        return casrbd.load_urdf(URDF)


TIP = SE3(np.eye(3), [0.1, 0.0, 0.0])


def massless_chain():
    return Model(
        "massless_chain",
        [
            Body(
                f"j{i}",
                Revolute([0.0, 0.0, 1.0] if i % 2 else [0.0, 1.0, 0.0]),
                i - 1,
                SE3(np.eye(3), [0.2, 0.0, 0.0]),
                Inertia.zero(),
            )
            for i in range(3)
        ],
        [Frame("tip", 2, TIP)],
    )


def massless_free_flyer():
    arm = Inertia.from_com(1.5, [0.3, 0.0, 0.0], np.diag([0.01, 0.02, 0.02]))
    return Model(
        "massless_free_flyer",
        [
            Body("root", FreeFlyer(), -1, SE3.identity(), Inertia.zero()),
            Body("shoulder", Revolute([0.0, 0.0, 1.0]), 0, SE3.identity(), arm),
        ],
        [Frame("tip", 1, TIP)],
    )


# (model, the joints it must name)
CASES = {
    "urdf_without_inertial": (urdf_without_inertial, ["knee"]),
    "massless_chain": (massless_chain, ["j0", "j1", "j2"]),
    "massless_free_flyer": (massless_free_flyer, ["root"]),
}


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    build, joints = CASES[request.param]
    return build(), joints


def assert_refused(call, joints):
    with pytest.raises(SingularMassMatrixError) as info:
        call()
    assert f"joints {joints!r}" in str(info.value), str(info.value)
    assert "mass matrix is singular" in str(info.value)


def test_the_error_is_a_value_error():
    assert issubclass(SingularMassMatrixError, ValueError)


def test_numeric_calls_are_refused(case):
    model, joints = case
    q, v, tau, F = random_state(model, np.random.default_rng(0))
    for call in (
        lambda: casrbd.aba(model, q, v, tau),
        lambda: casrbd.aba(model, q, v, tau, F),
        lambda: casrbd.minverse(model, q),
        lambda: casrbd.aba_derivatives(model, q, v, tau),
        lambda: casrbd.aba_derivatives(model, q, v, tau, F, method="chain_rule", minv_product="aza"),
        lambda: casrbd.aba_derivatives(model, q, v, tau, method="ad"),
    ):
        assert_refused(call, joints)


@pytest.mark.parametrize(
    "name, options",
    [
        ("aba", {}),
        ("minverse", {}),
        ("aba_derivatives", {}),
        ("aba_derivatives", {"method": "ad"}),
        ("aba", {"jacobian": "analytical"}),
        ("aba", {"symbolic": "MX"}),
    ],
)
def test_functions_are_refused(case, name, options):
    model, joints = case
    assert_refused(lambda: casrbd.function(model, name, **options), joints)


@pytest.mark.parametrize("sym", [ca.SX, ca.MX], ids=["SX", "MX"])
def test_symbolic_calls_are_refused(case, sym):
    model, joints = case
    q, v, tau = sym.sym("q", model.nq), sym.sym("v", model.nv), sym.sym("tau", model.nv)
    for call in (
        lambda: casrbd.aba(model, q, v, tau),
        lambda: casrbd.minverse(model, q),
        lambda: casrbd.aba_derivatives(model, q, v, tau),
    ):
        assert_refused(call, joints)


def test_what_needs_no_inverse_still_works(case):
    model, _ = case
    q, v, a, F = random_state(model, np.random.default_rng(1))
    results = [
        casrbd.rnea(model, q, v, a, F),
        casrbd.nonlinear_effects(model, q, v),
        casrbd.crba(model, q),
        *casrbd.forward_kinematics(model, q),
        casrbd.frame_jacobian(model, q, len(model.frames) - 1),
        *casrbd.rnea_derivatives(model, q, v, a, F),
        *casrbd.kinematics_derivatives(model, q, v, a, 0),
    ]
    assert all(np.all(np.isfinite(x)) for x in results)
    M = casrbd.crba(model, q)
    assert np.linalg.eigvalsh(M)[0] <= 1e-12 * max(1.0, np.linalg.eigvalsh(M)[-1])  # singular indeed


def test_a_regular_model_is_not_refused():
    """The same URDF with the lower link's inertia: no warning, and aba undoes rnea."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = casrbd.load_urdf(URDF.replace('<link name="lower"/>', f'<link name="lower">{BOX}</link>'))
    q, v, tau, F = random_state(model, np.random.default_rng(2))
    a = casrbd.aba(model, q, v, tau, F)
    assert np.max(np.abs(casrbd.rnea(model, q, v, a, F) - tau)) < 1e-10


@pytest.mark.parametrize(
    "name, options",
    [("aba", {}), ("aba", {"jacobian": "analytical"}), ("minverse", {}), ("aba_derivatives", {})],
)
def test_parametrised_functions_raise_at_a_singular_pi(name, options):
    """With pi an input (parameters=True), a pi whose leaf body is massless makes M(pi) singular: the
    plain model at that pi is refused by name, and the Function's numeric calls (and its Jacobian's)
    raise instead of returning NaN; at the model's own pi it is the plain algorithm."""
    model = random_tree(3, seed=3)
    pi = model_parameters(model)
    massless = np.r_[pi[:-10], np.zeros(10)]
    q, v, tau, _ = random_state(model, np.random.default_rng(3))
    args = [q, v, tau] if name != "minverse" else [q]
    plain = getattr(casrbd, name)
    assert_refused(lambda: plain(with_parameters(model, massless, consistent=False), *args), [model.names[-1]])
    f = casrbd.function(model, name, parameters=True, **options)
    expected, got = plain(model, *args), f(*args, pi)
    expected, got = (expected, got) if f.n_out() > 1 else ((expected,), (got,))
    for x, y in zip(got, expected):
        assert np.max(np.abs(np.array(x).reshape(np.shape(y)) - y)) < 1e-10
    jacobian = f.jacobian()
    for call in (
        lambda: f(*args, massless),
        lambda: f(*args, np.zeros_like(pi)),
        lambda: jacobian(*args, massless, *got),
    ):
        with pytest.raises(RuntimeError, match="(nan|inf) detected for output"):
            call()
