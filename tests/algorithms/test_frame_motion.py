"""Frame velocity and acceleration, the Jacobian's time variation, the centre of mass, and
kinematics_derivatives in every reference.

References:
- Pinocchio, on 30 random states per robot evaluated in one vectorised call
  (``Function.map``): getFrameVelocity, getFrameAcceleration,
  getFrameClassicalAcceleration and getFrameJacobianTimeVariation in LOCAL,
  WORLD and LOCAL_WORLD_ALIGNED; centerOfMass (c, c', c''),
  jacobianCenterOfMass; getFrameVelocityDerivatives and
  getFrameAccelerationDerivatives. Pinocchio's LOCAL_WORLD_ALIGNED
  q-derivatives hold the frame origin fixed: the true derivatives add
  [[w]x J_lin; 0] (velocity) and [[alpha]x J_lin; 0] (acceleration). Its
  WORLD acceleration q-derivatives are wrong for the columns of multi-dof
  joints below the root (spherical, planar: checked here against finite
  differences of Pinocchio's own frame acceleration), so on the synthetic
  trees the WORLD and LOCAL_WORLD_ALIGNED references are Pinocchio's LOCAL
  derivatives moved by its own placement, velocity and Jacobian;
- casadi's AD of frame_velocity and frame_acceleration along q (+) delta at
  delta = 0, and central differences;
- identities: J v = v_f, J a + Jdot v = a_f (classical in local_world_aligned),
  Jcom v = c'.
"""

import casadi as ca
import numpy as np
import pytest
from conftest import get_model, motion_states

import casrbd
from casrbd.models import random_tree
from casrbd.testing import central_differences, rel_err

TOL = 1e-9
N_STATES = 30
REFERENCES = ("local", "world", "local_world_aligned")
FRAMES = {
    "solo12": ("FL_FOOT", "HR_FOOT"),
    "hyq": ("lf_foot", "rh_foot"),
    "talos_reduced": ("left_sole_link", "gripper_left_base_link", "head_2_link"),
    "panda": ("panda_hand_tcp", "panda_link4"),
    "chain": ("tip9", "body4"),
    "binary": ("tip10", "tip4", "body0"),
    "random": ("tip11", "tip3", "body0"),
}
ROBOTS = tuple(FRAMES)
SYNTHETIC = ("chain", "binary", "random")


SALT = 13  # this module's random states


@pytest.fixture(
    scope="module", params=[pytest.param(r, marks=pytest.mark.slow) if r == "talos_reduced" else r for r in ROBOTS]
)
def case(request):
    return motion_states(request.param, N_STATES, SALT)


def batch(outputs, model, states):
    """Evaluate symbolic ``outputs`` of (q, v, a) on every state in one mapped call: a list per output
    of its values, one per state."""
    q, v, a = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv), ca.SX.sym("a", model.nv)
    f = ca.Function("f", [q, v, a], outputs(q, v, a)).map(len(states))
    res = f(*[np.column_stack([s[k] for s in states]) for k in range(3)])
    res = res if isinstance(res, tuple) else (res,)
    return [np.split(np.array(r), len(states), axis=1) for r in res]


def frame_quantities(model, frames):
    def outputs(q, v, a):
        out = []
        for f in frames:
            for ref in REFERENCES:
                out += [
                    casrbd.frame_velocity(model, q, v, f, ref),
                    casrbd.frame_acceleration(model, q, v, a, f, ref),
                    casrbd.frame_classical_acceleration(model, q, v, a, f, ref),
                    casrbd.frame_jacobian_time_variation(model, q, v, f, ref),
                    casrbd.frame_jacobian(model, q, f, ref),
                    *casrbd.kinematics_derivatives(model, q, v, a, f, ref),
                ]
        return out + [*casrbd.center_of_mass(model, q, v, a), casrbd.jacobian_center_of_mass(model, q)]

    return outputs


@pytest.fixture(scope="module")
def values(case):
    return batch(frame_quantities(case.model, FRAMES[case.name]), case.model, case.states)


PER_FRAME = 10  # values per (frame, reference): v, a, a classical, Jdot, J, then the 5 derivatives


def test_frame_motion_and_center_of_mass_match_pinocchio(case, oracle, values, pin):
    m, o = case.model, oracle
    pm, pd = o.pmodel, o.data
    refs = {"local": pin.LOCAL, "world": pin.WORLD, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}
    worst = {}
    for k, (q, v, a) in enumerate(case.states):
        pin.forwardKinematics(pm, pd, o.q(q), o.v(v), o.v(a))
        pin.computeJointJacobiansTimeVariation(pm, pd, o.q(q), o.v(v))
        n = 0
        for f in FRAMES[case.name]:
            fid = o.frame_ids[m.frame_index(f)]
            for ref in REFERENCES:
                pairs = {
                    "v": pin.getFrameVelocity(pm, pd, fid, refs[ref]).vector,
                    "a": pin.getFrameAcceleration(pm, pd, fid, refs[ref]).vector,
                    "a classical": pin.getFrameClassicalAcceleration(pm, pd, fid, refs[ref]).vector,
                    "Jdot": o.from_jacobian(pin.getFrameJacobianTimeVariation(pm, pd, fid, refs[ref])),
                }
                for j, (label, ref_value) in enumerate(pairs.items()):
                    got = values[n + j][k]
                    err = rel_err(got.reshape(ref_value.shape), ref_value)
                    worst[f, ref, label] = max(worst.get((f, ref, label), 0.0), err)
                n += PER_FRAME
        pin.centerOfMass(pm, pd, o.q(q), o.v(v), o.v(a))
        Jcom = o.from_jacobian(pin.jacobianCenterOfMass(pm, pd, o.q(q)))
        for label, got, ref_value in zip(
            ("com", "vcom", "acom", "Jcom"), values[n:], (*pd.com[:1], pd.vcom[0], pd.acom[0], Jcom)
        ):
            err = rel_err(got[k].reshape(np.shape(ref_value)), ref_value)
            worst[label] = max(worst.get(label, 0.0), err)
    bad = {key: e for key, e in worst.items() if not e < TOL}
    assert not bad, f"{case.name}: relative errors vs Pinocchio {bad}"


def pinocchio_world_derivatives_are_right(model):
    """Pinocchio's WORLD acceleration q-derivatives are right when no joint below a root has nv > 1."""
    return all(j.nv == 1 or p < 0 for j, p in zip(model.joints, model.parents))


def test_kinematics_derivatives_match_pinocchio(case, oracle, values, pin):
    m, o = case.model, oracle
    pm, pd = o.pmodel, o.data
    refs = {"local": pin.LOCAL, "world": pin.WORLD, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}
    direct = pinocchio_world_derivatives_are_right(m)
    worst = 0.0
    for k, (q, v, a) in enumerate(case.states):
        pin.computeForwardKinematicsDerivatives(pm, pd, o.q(q), o.v(v), o.v(a))
        pin.forwardKinematics(pm, pd, o.q(q), o.v(v), o.v(a))
        pin.computeJointJacobians(pm, pd, o.q(q))
        pin.updateFramePlacements(pm, pd)
        n = 0
        for f in FRAMES[case.name]:
            fid = o.frame_ids[m.frame_index(f)]
            local = pinocchio_derivatives(pin, pm, pd, fid, pin.LOCAL)
            for ref in REFERENCES:
                if ref == "local" or direct:
                    expected = pinocchio_derivatives(pin, pm, pd, fid, refs[ref])
                    if ref == "local_world_aligned":  # the frame origin moves with q
                        expected = lwa_true(pin, pm, pd, fid, expected)
                else:
                    expected = moved(pin, pm, pd, fid, local, ref)
                for got, exp in zip(values[n + 5 : n + 10], expected):
                    worst = max(worst, rel_err(got[k], o.from_jacobian(exp)))
                n += PER_FRAME
    assert worst < TOL, f"{case.name}: kinematics_derivatives vs Pinocchio {worst:.3g}"


def pinocchio_derivatives(pin, pm, pd, fid, ref):
    v_dq, v_dv = pin.getFrameVelocityDerivatives(pm, pd, fid, ref)
    _, a_dq, a_dv, a_da = pin.getFrameAccelerationDerivatives(pm, pd, fid, ref)
    return [np.array(x) for x in (v_dq, v_dv, a_dq, a_dv, a_da)]


def lwa_true(pin, pm, pd, fid, d):
    J = pin.getFrameJacobian(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED)
    w = pin.getFrameVelocity(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED).angular
    alpha = pin.getFrameAcceleration(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED).angular
    zero = np.zeros((3, J.shape[1]))
    d = list(d)
    d[0] = d[0] + np.vstack([pin.skew(w) @ J[:3], zero])
    d[2] = d[2] + np.vstack([pin.skew(alpha) @ J[:3], zero])
    return d


def moved(pin, pm, pd, fid, local, ref):
    """Pinocchio's LOCAL derivatives in ``ref``, moved by its own frame placement, velocity, acceleration
    and Jacobian: d(X m)/dq = X (dm/dq - m x J) (world), d(R m)/dq = R (dm/dq - [m]x J_ang) (aligned)."""
    oMf = pd.oMf[fid]
    J = pin.getFrameJacobian(pm, pd, fid, pin.LOCAL)
    vel = pin.getFrameVelocity(pm, pd, fid, pin.LOCAL)
    acc = pin.getFrameAcceleration(pm, pd, fid, pin.LOCAL)
    v_dq, v_dv, a_dq, a_dv, a_da = local
    if ref == "world":
        X = oMf.action
        return [X @ (v_dq - vel.action @ J), X @ v_dv, X @ (a_dq - acc.action @ J), X @ a_dv, X @ a_da]
    R = np.kron(np.eye(2), oMf.rotation)

    def turn(m):
        return np.vstack([pin.skew(m[:3]) @ J[3:], pin.skew(m[3:]) @ J[3:]])

    return [R @ (v_dq - turn(vel.vector)), R @ v_dv, R @ (a_dq - turn(acc.vector)), R @ a_dv, R @ a_da]


def test_jacobian_identities(case, values):
    """J v = v_f; J a + Jdot v = a_f (spatial), classical in local_world_aligned; dv/dv = da/da = J."""
    m = case.model
    worst = 0.0
    for k, (_, v, a) in enumerate(case.states):
        n = 0
        for _ in FRAMES[case.name]:
            for ref in REFERENCES:
                vel, acc, acl, Jdot, J = (values[n + j][k] for j in range(5))
                dv_dv, da_da = values[n + 6][k], values[n + 9][k]
                target = acl if ref == "local_world_aligned" else acc
                worst = max(
                    worst,
                    rel_err(J @ v, vel.ravel()),
                    rel_err(J @ a + Jdot @ v, target.ravel()),
                    rel_err(dv_dv, J),
                    rel_err(da_da, J),
                )
                n += PER_FRAME
        _, vcom, _, Jcom = (x[k] for x in values[n:])
        worst = max(worst, rel_err(Jcom @ v, vcom.ravel()))
    assert worst < 1e-12 * max(1, m.nv), worst


# ---------------------------------------------------------------- casadi AD and finite differences


AD_ROBOTS = ("solo12", "random", "chain")


@pytest.mark.parametrize("name", AD_ROBOTS)
def test_kinematics_derivatives_match_casadi_ad_and_finite_differences(name):
    m = get_model(name)
    case = motion_states(name, N_STATES, SALT)
    q, v, a, d = (ca.SX.sym(s, n) for s, n in (("q", m.nq), ("v", m.nv), ("a", m.nv), ("d", m.nv)))
    qd = casrbd.integrate(m, q, d)
    for frame in FRAMES[name][:2]:
        for ref in REFERENCES:
            vel = casrbd.frame_velocity(m, qd, v, frame, ref)
            acc = casrbd.frame_acceleration(m, qd, v, a, frame, ref)
            jac = [
                ca.jacobian(vel, d),
                ca.jacobian(vel, v),
                ca.jacobian(acc, d),
                ca.jacobian(acc, v),
                ca.jacobian(acc, a),
            ]
            jac = [ca.substitute(x, d, ca.DM.zeros(m.nv)) for x in jac]
            ad = ca.Function("ad", [q, v, a], jac)
            f = casrbd.function(m, "kinematics_derivatives", frame=frame, reference=ref)
            for s in case.states[:2]:
                for x, y in zip(f(*s), ad(*s)):
                    assert rel_err(x.full(), y.full()) < 1e-10, (name, frame, ref)
            q0, v0, a0 = case.states[2]
            fv = casrbd.function(m, "frame_velocity", frame=frame, reference=ref)
            fa = casrbd.function(m, "frame_acceleration", frame=frame, reference=ref)
            got = [x.full() for x in f(q0, v0, a0)]
            dv = central_differences(m, lambda *x, f=fv: f(*x[:2]).full().ravel(), q0, v0, a0, vectors=(1,))
            da = central_differences(m, lambda *x, f=fa: f(*x).full().ravel(), q0, v0, a0)
            for x, y in zip(got, (*dv, *da)):
                assert rel_err(x, y) < 1e-6, (name, frame, ref)


# ---------------------------------------------------------------- joints whose S depends on q, API forms, errors


def universal_tree():
    return random_tree(
        6, ("floating", "universal", "revolute", "universal", "spherical", "helical"), branching=None, seed=5
    )


def test_universal_joints_match_pinocchio(pin):
    """Frame motion and the centre of mass take the joint bias c_J of joints whose S depends on q."""
    from oracle import Oracle

    m = universal_tree()
    o = Oracle.from_model(m)
    rng = np.random.default_rng(4)
    for _ in range(3):
        q, v, a = casrbd.random_configuration(m, rng), rng.normal(size=m.nv), rng.normal(size=m.nv)
        pin.forwardKinematics(o.pmodel, o.data, o.q(q), o.v(v), o.v(a))
        for f in ("tip3", "tip5"):
            fid = o.frame_ids[m.frame_index(f)]
            for ref, pref in (("world", pin.WORLD), ("local", pin.LOCAL)):
                assert (
                    rel_err(
                        casrbd.frame_velocity(m, q, v, f, ref), pin.getFrameVelocity(o.pmodel, o.data, fid, pref).vector
                    )
                    < TOL
                )
                exp = pin.getFrameAcceleration(o.pmodel, o.data, fid, pref).vector
                assert rel_err(casrbd.frame_acceleration(m, q, v, a, f, ref), exp) < TOL
        pin.centerOfMass(o.pmodel, o.data, o.q(q), o.v(v), o.v(a))
        for got, exp in zip(casrbd.center_of_mass(m, q, v, a), (o.data.com[0], o.data.vcom[0], o.data.acom[0])):
            assert rel_err(got, exp) < TOL
    with pytest.raises(NotImplementedError, match="j1_universal"):
        casrbd.frame_jacobian_time_variation(m, q, v, "tip3")


def test_center_of_mass_forms_and_symbols():
    m = get_model("solo12")
    q, v, a = motion_states("solo12", N_STATES, SALT).states[0]
    c, vc, ac = casrbd.center_of_mass(m, q, v, a)
    assert np.array_equal(casrbd.center_of_mass(m, q), c)
    c2, vc2 = casrbd.center_of_mass(m, q, v)
    assert np.array_equal(c2, c) and np.array_equal(vc2, vc)
    Q = ca.MX.sym("q", m.nq)
    f = ca.Function("c", [Q], [casrbd.center_of_mass(m, Q)])
    assert rel_err(f(q).full().ravel(), c) < 1e-14


def test_bad_input_names_the_culprit():
    m = get_model("solo12")
    q, v, a = motion_states("solo12", N_STATES, SALT).states[0]
    with pytest.raises(KeyError, match="no_foot"):
        casrbd.frame_velocity(m, q, v, "no_foot")
    with pytest.raises(ValueError, match="reference"):
        casrbd.frame_acceleration(m, q, v, a, "FL_FOOT", "body")
    with pytest.raises(ValueError, match="'v'"):
        casrbd.frame_jacobian_time_variation(m, q, v[:3], "FL_FOOT")
    empty = casrbd.Model("massless", [casrbd.Body("j", casrbd.joints.Revolute([0, 0, 1]), -1, casrbd.SE3.identity())])
    with pytest.raises(ValueError, match="no mass"):
        casrbd.jacobian_center_of_mass(empty, [0.0])
