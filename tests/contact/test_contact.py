"""Contact dynamics (constraint_dynamics), impulse dynamics and their derivatives.

References:
- Pinocchio's constraintDynamics, computeConstraintDynamicsDerivatives,
  impulseDynamics and computeImpulseDynamicsDerivatives with one
  RigidConstraintModel per contact (joint2 the world, joint2_placement the
  anchor, Baumgarte Kp and Kd), on 30 random states per case evaluated in
  one vectorised call. Pinocchio stores dv+/dv - I for impulses. Cases avoid
  Pinocchio's known faults: LOCAL_WORLD_ALIGNED with a 6-D contact and
  Kp != 0, LOCAL_WORLD_ALIGNED with damping (both give wrong
  q-derivatives; casrbd's agree with AD and finite differences there), and
  LOCAL_WORLD_ALIGNED on trees with multi-dof joints below the root (its
  WORLD frame acceleration derivatives are wrong for them);
- casadi's AD of the dynamics along q (+) delta at delta = 0, central
  differences, and the Jacobian that casadi takes of the Function built
  with jacobian="analytical" against the one it takes by AD;
- identities: M ddq + b = tau + J^T lambda; the contact acceleration is
  -kd v_c - kp e_p at the solution (zero without gains); no contacts gives
  aba; impulses: M (v+ - v) = J^T P and J v+ = -r J v.
"""

from typing import NamedTuple

import casadi as ca
import numpy as np
import pytest
from conftest import get_model, scale_normalized

import casrbd
from casrbd.models import random_tree
from casrbd.testing import central_differences, rel_err

TOL = 1e-9
N_STATES = 30
ANCHOR_OFFSET = 0.05  # size of the random SE3 between a contact frame and its anchor


class Case(NamedTuple):
    robot: str
    contacts: tuple  # (frame, type)
    reference: str = "local"
    kp: float = 0.0
    kd: float = 0.0
    damping: float = 0.0
    restitution: float = 0.0

    @property
    def id(self):
        kinds = "+".join(t for _, t in self.contacts)
        gains = f"-kp{self.kp:g}-kd{self.kd:g}" if self.kp or self.kd else ""
        return f"{self.robot}-{len(self.contacts)}:{kinds}-{self.reference}{gains}"


SOLO = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
HYQ = ("lf_foot", "rf_foot", "lh_foot", "rh_foot")
LWA = "local_world_aligned"
CASES = (
    Case("solo12", (("FL_FOOT", "3d"),), restitution=0.5),
    Case("solo12", tuple((f, "3d") for f in SOLO[:2]), LWA, kd=3.0),
    Case("solo12", tuple((f, "3d") for f in SOLO[:3]), LWA, kp=10.0, kd=2.0, restitution=0.2),
    Case("solo12", tuple((f, "3d") for f in SOLO), kp=10.0, kd=3.0),
    Case("hyq", tuple((f, "3d") for f in HYQ), LWA, kp=5.0, kd=1.0),
    Case("talos_reduced", (("left_sole_link", "6d"), ("right_sole_link", "6d")), kp=10.0, kd=3.0),
    Case("talos_reduced", (("left_sole_link", "6d"), ("gripper_left_base_link", "3d")), LWA, kd=2.0),
    Case("panda", (("panda_hand_tcp", "6d"),), kp=4.0, kd=1.0, restitution=0.7),
    Case("panda", (("panda_hand_tcp", "3d"),), LWA, kp=4.0),
    Case("chain", (("tip9", "3d"),), kd=1.0),
    Case("binary", (("tip10", "3d"), ("tip5", "6d")), kp=3.0),
    Case("random", (("tip5", "3d"), ("tip11", "6d"), ("tip9", "3d")), kp=10.0, kd=3.0, restitution=0.3),
)


def random_states(model, seed, n=N_STATES):
    rng = np.random.default_rng(seed)
    return [
        (np.asarray(casrbd.random_configuration(model, rng)), rng.normal(size=model.nv), rng.normal(size=model.nv))
        for _ in range(n)
    ]


def anchored(model, case, q, seed):
    """The contacts with anchors at a random SE3 of size ANCHOR_OFFSET from the frames at q: (frame,
    type, anchor) for casrbd, and the anchors as 4 x 4 matrices."""
    rng = np.random.default_rng(seed)
    out, anchors = [], []
    for f, t in case.contacts:
        w = ANCHOR_OFFSET * rng.normal(size=6)
        dX = np.eye(4)
        dX[:3, :3] = np.array(casrbd.spatial.exp3(w[3:]))
        dX[:3, 3] = w[:3]
        A = casrbd.frame_placement(model, q, f) @ dX
        anchors.append(A)
        out.append((f, t, A[:3, 3] if t == "3d" else A))
    return out, anchors


def options(case, contacts):
    return {"contacts": contacts, "reference": case.reference, "kp": case.kp, "kd": case.kd, "damping": case.damping}


def impulse_options(case, contacts):
    return {"contacts": contacts, "reference": case.reference, "restitution": case.restitution, "damping": case.damping}


class Evaluated(NamedTuple):
    model: object
    states: list
    contacts: list  # with anchors
    anchors: list
    values: list  # per output, one value per state


@pytest.fixture(scope="module", params=CASES, ids=[c.id for c in CASES])
def evaluated(request):
    case = request.param
    m = get_model(case.robot)
    states = random_states(m, sum(map(ord, case.id)))
    contacts, anchors = anchored(m, case, states[0][0], 1)
    q, v, tau = ca.SX.sym("q", m.nq), ca.SX.sym("v", m.nv), ca.SX.sym("tau", m.nv)
    opts, iopts = options(case, contacts), impulse_options(case, contacts)
    outs = [
        *casrbd.constraint_dynamics(m, q, v, tau, **opts),
        *casrbd.constraint_dynamics_derivatives(m, q, v, tau, **opts),
        *casrbd.impulse_dynamics(m, q, v, **iopts),
        *casrbd.impulse_dynamics_derivatives(m, q, v, **iopts),
    ]
    f = ca.Function("contact", [q, v, tau], outs).map(N_STATES)
    res = f(*[np.column_stack([s[k] for s in states]) for k in range(3)])
    return case, Evaluated(m, states, contacts, anchors, [np.split(np.array(r), N_STATES, axis=1) for r in res])


LABELS = ("ddq", "lambda", "ddq_dq", "ddq_dv", "ddq_dtau", "dlambda_dq", "dlambda_dv", "dlambda_dtau")
IMPULSE_LABELS = ("v+", "P", "dv+_dq", "dv+_dv", "dP_dq", "dP_dv")


def pinocchio_contacts(pin, o, case, anchors):
    kinds = {"3d": pin.ContactType.CONTACT_3D, "6d": pin.ContactType.CONTACT_6D}
    ref = pin.LOCAL if case.reference == "local" else pin.LOCAL_WORLD_ALIGNED
    cms = pin.StdVec_RigidConstraintModel()
    for (f, t), A in zip(case.contacts, anchors):
        frame = o.pmodel.frames[o.frame_ids[o.model.frame_index(f)]]
        cm = pin.RigidConstraintModel(kinds[t], o.pmodel, frame.parentJoint, frame.placement, ref)
        cm.joint2_placement = pin.SE3(A[:3, :3], A[:3, 3])
        cm.m_baumgarte_parameters.Kp = case.kp
        cm.m_baumgarte_parameters.Kd = case.kd
        cms.append(cm)
    cds = pin.StdVec_RigidConstraintData()
    for cm in cms:
        cds.append(cm.createData())
    return cms, cds


def test_match_pinocchio(evaluated, pin):
    from oracle import Oracle

    case, ev = evaluated
    m = ev.model
    o = Oracle.from_robot(case.robot, m)
    cms, cds = pinocchio_contacts(pin, o, case, ev.anchors)
    pd = o.pmodel.createData()
    pin.initConstraintDynamics(o.pmodel, pd, cms, cds)
    prox = pin.ProximalSettings(1e-12, case.damping, 1)
    worst = dict.fromkeys(LABELS + IMPULSE_LABELS, 0.0)
    for k, (q, v, tau) in enumerate(ev.states):
        ddq = pin.constraintDynamics(o.pmodel, pd, o.q(q), o.v(v), o.v(tau), cms, cds, prox)
        lam = pd.lambda_c.copy()
        d = [np.array(x).copy() for x in pin.computeConstraintDynamicsDerivatives(o.pmodel, pd, cms, cds, prox)]
        expected = [o.from_v(ddq), lam, *[o.from_vv(x) for x in d[:3]], *[o.from_jacobian(x) for x in d[3:]]]
        vp = pin.impulseDynamics(o.pmodel, pd, o.q(q), o.v(v), cms, cds, case.restitution, prox)
        P = pd.impulse_c.copy()
        pin.computeImpulseDynamicsDerivatives(o.pmodel, pd, cms, cds, case.restitution, prox)
        expected += [
            o.from_v(vp),
            P,
            o.from_vv(pd.ddq_dq),
            o.from_vv(pd.ddq_dv) + np.eye(m.nv),
            o.from_jacobian(pd.dlambda_dq),
            o.from_jacobian(pd.dlambda_dv),
        ]
        for label, got, exp in zip(LABELS + IMPULSE_LABELS, ev.values, expected):
            worst[label] = max(worst[label], rel_err(got[k].reshape(exp.shape), exp))
    bad = {n: e for n, e in worst.items() if not e < TOL}
    assert not bad, f"{case.id}: relative errors vs Pinocchio {bad}"


def contact_rows(model, case, q, kind="jacobian", v=None, a=None):
    """Per contact, in the case's reference: its Jacobian rows, or its constrained acceleration."""
    rows = []
    for f, t in case.contacts:
        if kind == "jacobian":
            J = casrbd.frame_jacobian(model, q, f, case.reference)
            x = J[:3] if t == "3d" else J
        else:  # local: the classical acceleration (3d) or the spatial one (6d), then rotated as lambda
            x = (casrbd.frame_classical_acceleration if t == "3d" else casrbd.frame_acceleration)(model, q, v, a, f)
            x = x[:3] if t == "3d" else x
        rows.append(x)
    return rows


def test_identities(evaluated):
    """M ddq + b = tau + J^T lambda; the contact acceleration with the Baumgarte terms is zero; impulses."""
    case, ev = evaluated
    m = ev.model
    for k, (q, v, tau) in enumerate(ev.states[:4]):
        ddq, lam = ev.values[0][k].ravel(), ev.values[1][k].ravel()
        J = np.vstack(contact_rows(m, case, q))
        M, b = casrbd.crba(m, q), casrbd.nonlinear_effects(m, q, v)
        assert rel_err(M @ ddq + b, tau + J.T @ lam) < 1e-10
        residual = []
        for (f, t), (_, _, anchor), acc in zip(
            case.contacts, ev.contacts, contact_rows(m, case, q, "acceleration", v, ddq)
        ):
            vel = casrbd.frame_velocity(m, q, v, f)
            oMf = casrbd.frame_placement(m, q, f)
            if t == "3d":
                err = oMf[:3, :3].T @ (oMf[:3, 3] - anchor)
                residual.append(acc + case.kd * vel[:3] + case.kp * err)
            elif not case.kp:
                residual.append(acc + case.kd * vel)
        if residual:
            assert np.abs(np.concatenate(residual)).max() < 1e-9 * max(1, np.abs(ddq).max())
        vp, P = ev.values[8][k].ravel(), ev.values[9][k].ravel()
        assert rel_err(M @ (vp - v), J.T @ P) < 1e-10
        if not case.damping:
            assert rel_err(J @ vp, -case.restitution * J @ v) < 1e-10


def test_no_contacts_gives_aba():
    m = get_model("random")
    for q, v, tau in random_states(m, 3, 3):
        ddq, lam = casrbd.constraint_dynamics(m, q, v, tau, contacts=())
        assert lam.shape == (0,) and rel_err(ddq, casrbd.aba(m, q, v, tau)) < 1e-12
        d = casrbd.constraint_dynamics_derivatives(m, q, v, tau, contacts=())
        for x, y in zip(d[:3], casrbd.aba_derivatives(m, q, v, tau)):
            assert rel_err(x, y) < 1e-10
        vp, P = casrbd.impulse_dynamics(m, q, v, contacts=())
        assert P.shape == (0,) and np.array_equal(vp, v)


# ---------------------------------------------------------------- casadi AD and finite differences

AD_CASES = (
    Case("solo12", tuple((f, "3d") for f in SOLO), LWA, kp=10.0, kd=3.0, restitution=0.4),
    Case("random", (("tip5", "3d"), ("tip11", "6d")), LWA, kp=10.0, kd=3.0, damping=1e-3, restitution=0.3),
)


def tangent_ad(fun, model, n_in):
    """Function of the AD Jacobians of fun(q (+) d, *x) with respect to d at 0 and to each x."""
    q, d = ca.SX.sym("q", model.nq), ca.SX.sym("d", model.nv)
    xs = [ca.SX.sym(f"x{i}", model.nv) for i in range(n_in)]
    outs = fun(casrbd.integrate(model, q, d), *xs)
    jac = [ca.jacobian(o, w) for o in outs for w in (d, *xs)]
    return ca.Function("ad", [q, *xs], [ca.substitute(j, d, ca.DM.zeros(model.nv)) for j in jac])


@pytest.mark.parametrize("case", AD_CASES, ids=[c.id for c in AD_CASES])
def test_derivatives_match_casadi_ad_and_finite_differences(case):
    m = get_model(case.robot)
    states = random_states(m, 11, 3)
    contacts, _ = anchored(m, case, states[0][0], 2)
    opts, iopts = options(case, contacts), impulse_options(case, contacts)
    ad = tangent_ad(lambda q, v, tau: casrbd.constraint_dynamics(m, q, v, tau, **opts), m, 2)
    ad_imp = tangent_ad(lambda q, v: casrbd.impulse_dynamics(m, q, v, **iopts), m, 1)
    deriv = casrbd.function(m, "constraint_dynamics_derivatives", **opts)
    deriv_imp = casrbd.function(m, "impulse_dynamics_derivatives", **iopts)
    for q, v, tau in states[:2]:
        for x, y in zip(deriv(q, v, tau), ad(q, v, tau)):
            assert rel_err(x.full(), y.full()) < 1e-10
        for x, y in zip(deriv_imp(q, v), ad_imp(q, v)):
            assert rel_err(x.full(), y.full()) < 1e-10
    q, v, tau = states[2]
    f = casrbd.function(m, "constraint_dynamics", **opts)
    got = [x.full() for x in deriv(q, v, tau)]
    fd = central_differences(m, lambda *x: f(*x)[0].full().ravel(), q, v, tau)
    fd += central_differences(m, lambda *x: f(*x)[1].full().ravel(), q, v, tau)
    for x, y in zip(got, fd):
        assert rel_err(x, y) < 1e-6
    g = casrbd.function(m, "impulse_dynamics", **iopts)
    got = [x.full() for x in deriv_imp(q, v)]
    fd = central_differences(m, lambda *x: g(*x)[0].full().ravel(), q, v, vectors=(1,))
    fd += central_differences(m, lambda *x: g(*x)[1].full().ravel(), q, v, vectors=(1,))
    for x, y in zip(got, fd):
        assert rel_err(x, y) < 1e-6


def mx_jacobian(fun, values):
    syms = [ca.MX.sym(fun.name_in(i), fun.sparsity_in(i)) for i in range(fun.n_in())]
    J = ca.jacobian(ca.vertcat(*fun(*syms)), ca.vertcat(*syms))
    return ca.Function("J", syms, [J])(*values).full()


@pytest.mark.parametrize("case", AD_CASES, ids=[c.id for c in AD_CASES])
def test_analytical_jacobian_is_installed(case):
    """The Jacobian casadi takes of a call in an MX graph is the analytical one (the graph calls jac_<name>)
    and equals AD's, also along directions that change the quaternions' norm (norm 1.3 here)."""
    m = get_model(case.robot)
    q, v, tau = random_states(m, 5, 1)[0]
    q = scale_normalized(m, q, 1.3)
    contacts, _ = anchored(m, case, q, 3)
    for name, opts, values in (
        ("constraint_dynamics", options(case, contacts), (q, v, tau)),
        ("impulse_dynamics", impulse_options(case, contacts), (q, v)),
    ):
        analytical = casrbd.function(m, name, jacobian="analytical", **opts)
        assert analytical.jacobian().name() == "jac_" + analytical.name()
        got = mx_jacobian(analytical, values)
        assert rel_err(got, mx_jacobian(casrbd.function(m, name, **opts), values)) < 1e-10


# ---------------------------------------------------------------- redundant contacts and damping


def test_redundant_contacts_are_refused_unless_damped(pin):
    """Two feet and a point at one of them: rank 6 < 9 rows. Without damping the error names the
    redundant contact; with damping the solve is Pinocchio's proximal one (one iteration)."""
    from oracle import Oracle

    m = get_model("solo12")
    foot = m.frames[m.frame_index("FL_FOOT")]
    # a frame at the front left foot, so that the contact is redundant yet not a duplicate
    twin = casrbd.Model(m.name + "_twin", m.bodies, (*m.frames, casrbd.Frame("FL_TWIN", foot.joint, foot.placement)))
    contacts = (("FL_FOOT", "3d"), ("FR_FOOT", "3d"), ("FL_TWIN", "3d"))
    with pytest.raises(ValueError, match=r"rank deficient.*'FL_TWIN'.*damping"):
        casrbd.function(twin, "constraint_dynamics", contacts=contacts)
    with pytest.raises(ValueError, match="FL_TWIN"):
        casrbd.function(twin, "impulse_dynamics_derivatives", contacts=contacts)
    mu = 1e-6
    o = Oracle.from_robot("solo12", m)  # the twin has the same joints
    q, v, tau = random_states(twin, 8, 1)[0]
    cd = casrbd.function(twin, "constraint_dynamics", contacts=contacts, damping=mu)
    dd = casrbd.function(twin, "constraint_dynamics_derivatives", contacts=contacts, damping=mu)
    cms = pin.StdVec_RigidConstraintModel()
    for f, _ in contacts:
        pf = o.pmodel.frames[o.frame_ids[m.frame_index(f if f != "FL_TWIN" else "FL_FOOT")]]
        cms.append(
            pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, o.pmodel, pf.parentJoint, pf.placement, pin.LOCAL)
        )
    cds = pin.StdVec_RigidConstraintData()
    for cm in cms:
        cds.append(cm.createData())
    pd = o.pmodel.createData()
    pin.initConstraintDynamics(o.pmodel, pd, cms, cds)
    prox = pin.ProximalSettings(1e-12, mu, 1)
    ddq = pin.constraintDynamics(o.pmodel, pd, o.q(q), o.v(v), o.v(tau), cms, cds, prox)
    lam = pd.lambda_c.copy()
    d = [np.array(x).copy() for x in pin.computeConstraintDynamicsDerivatives(o.pmodel, pd, cms, cds, prox)]
    got = [x.full() for x in (*cd(q, v, tau), *dd(q, v, tau))]
    expected = [
        o.from_v(ddq)[:, None],
        lam[:, None],
        *[o.from_vv(x) for x in d[:3]],
        *[o.from_jacobian(x) for x in d[3:]],
    ]
    for label, x, y in zip(LABELS, got, expected):
        assert rel_err(x, y) < 1e-8, label
    # the damped forces on the twin points split the foot's force evenly
    assert rel_err(got[1][:3], got[1][6:]) < 1e-6


def test_redundancy_through_the_tree_is_found():
    """A 6-D contact fixes its body; a point contact on the body's parent, one helical joint away, then
    has only one free direction left: found at a generic configuration, not by frame names."""
    m = get_model("random")
    assert m.parents[11] == 8 and m.joints[11].type == "helical"
    with pytest.raises(ValueError, match=r"rank 10 < 12 rows.*'tip8'"):
        casrbd.function(m, "constraint_dynamics", contacts=[("tip5", "3d"), ("tip11", "6d"), ("tip8", "3d")])


def test_a_contact_that_cannot_move_is_refused():
    """A contact frame on the world (or on a body whose joints cannot move it as asked) gives zero rows."""
    m = get_model("panda")
    world = next(f.name for f in m.frames if f.joint < 0)
    with pytest.raises(ValueError, match=f"rank deficient.*'{world}'"):
        casrbd.function(m, "constraint_dynamics", contacts=[(world, "3d")])
    with pytest.raises(ValueError, match="panda_link1"):
        casrbd.function(m, "constraint_dynamics", contacts=[("panda_link1", "6d")])


# ---------------------------------------------------------------- options, caching, errors


def test_functions_are_cached_per_contact_set():
    m = get_model("solo12")
    a = casrbd.function(m, "constraint_dynamics", contacts=[("FL_FOOT", "3d"), ("HR_FOOT", "3d")])
    index = m.frame_index("FL_FOOT")
    assert casrbd.function(m, "constraint_dynamics", contacts=((index, "3d"), ("HR_FOOT", "3d"))) is a
    b = casrbd.function(m, "constraint_dynamics", contacts=[("HR_FOOT", "3d"), ("FL_FOOT", "3d")])
    assert b is not a and b.name() != a.name()
    assert "FL_FOOT_3d" in a.name()


@pytest.mark.parametrize(
    ("contacts", "kwargs", "error", "match"),
    [
        ([("FL_FOOOT", "3d")], {}, KeyError, "FL_FOOOT"),
        ([("FL_FOOT", "3d"), ("FL_FOOT", "6d")], {}, ValueError, "duplicate contact on frame 'FL_FOOT'"),
        ([("FL_FOOT", "2d")], {}, ValueError, "unknown type '2d'; valid: '3d', '6d'"),
        (["FL_FOOT"], {}, ValueError, "expected \\(frame, '3d' \\| '6d'\\)"),
        ("FL_FOOT", {}, TypeError, "sequence"),
        ([("FL_FOOT", "3d", [0, 0])], {}, ValueError, "anchor of a 3d contact"),
        ([("FL_FOOT", "6d", np.ones((4, 4)))], {}, ValueError, "not a rigid placement"),
        ([("FL_FOOT", "3d")], {"kp": 1.0}, ValueError, "needs an anchor.*FL_FOOT"),
        ([("FL_FOOT", "3d")], {"kd": -1.0}, ValueError, "kd"),
        ([("FL_FOOT", "3d")], {"damping": "a lot"}, ValueError, "damping must be a number"),
        ([("FL_FOOT", "3d")], {"reference": "world"}, ValueError, "reference"),
    ],
)
def test_bad_input_names_the_culprit(contacts, kwargs, error, match):
    m = get_model("solo12")
    q, v, tau = random_states(m, 0, 1)[0]
    with pytest.raises(error, match=match):
        casrbd.constraint_dynamics(m, q, v, tau, contacts, **kwargs)


def test_bad_impulse_options():
    m = get_model("solo12")
    q, v, _ = random_states(m, 0, 1)[0]
    with pytest.raises(ValueError, match="restitution"):
        casrbd.impulse_dynamics(m, q, v, [("FL_FOOT", "3d")], restitution=1.5)
    with pytest.raises(TypeError, match="kp"):
        casrbd.impulse_dynamics(m, q, v, [("FL_FOOT", "3d")], kp=1.0)


def test_universal_joints():
    """The dynamics take joints whose S depends on q; their analytical derivatives refuse them by name."""
    m = random_tree(5, ("floating", "universal", "revolute", "universal", "prismatic"), branching=None, seed=2)
    q, v, tau = random_states(m, 1, 1)[0]
    ddq, lam = casrbd.constraint_dynamics(m, q, v, tau, [("tip4", "3d")])
    J = casrbd.frame_jacobian(m, q, "tip4", "local")[:3]
    assert rel_err(casrbd.crba(m, q) @ ddq + casrbd.nonlinear_effects(m, q, v), tau + J.T @ lam) < 1e-10
    with pytest.raises(NotImplementedError, match="universal"):
        casrbd.constraint_dynamics_derivatives(m, q, v, tau, [("tip4", "3d")])
