"""casrbd's algorithms against Pinocchio on 50 random states per robot.

Synthetic trees (every joint type with a constant motion subspace, as a chain,
a binary tree and a random tree with a free-flyer root) go to Pinocchio through
tests/oracle.py's ``to_pinocchio``; the URDF robots are parsed by Pinocchio's own
URDF parser. Every test takes the ``pin`` fixture: skipped without Pinocchio.
(Trees of the universal joint: tests/core/test_joints.py.)
"""

import numpy as np
import pytest
from conftest import ALL_ROBOTS, robot_states

import casrbd
from casrbd.testing import rel_err

TOL = 1e-10
N_STATES = 50
REFERENCES = {"local": "LOCAL", "world": "WORLD", "local_world_aligned": "LOCAL_WORLD_ALIGNED"}  # pin's names


class Case:
    """A robot, its Pinocchio oracle and N_STATES random states (q, v, a or tau, f_ext (6 x njoints))."""

    def __init__(self, name):
        from oracle import Oracle

        self.name, self.model, self.states = robot_states(name, N_STATES, 0)
        self.oracle = Oracle.from_robot(name, self.model)
        self.pm, self.pd = self.oracle.pmodel, self.oracle.data

    def pin_states(self):
        """(casrbd state, Pinocchio state) pairs; the Pinocchio state as (q, v, a, f_ext)."""
        o = self.oracle
        for q, v, a, F in self.states:
            yield (q, v, a, F), (o.q(q), o.v(v), o.v(a), o.f_ext(F))


@pytest.fixture(scope="module", params=ALL_ROBOTS)
def case(request, pin):
    return Case(request.param)


def assert_close(errors, what):
    worst = np.max(errors)  # NaN propagates (and fails)
    assert worst < TOL, f"{what}: relative error {worst:.3g} (state {int(np.argmax(errors))})"


def test_rnea(case, pin):
    m, o = case.model, case.oracle
    errs = [
        rel_err(casrbd.rnea(m, q, v, a), o.from_v(pin.rnea(case.pm, case.pd, pq, pv, pa)))
        for (q, v, a, _), (pq, pv, pa, _) in case.pin_states()
    ]
    assert_close(errs, "rnea")


def test_rnea_external_forces(case, pin):
    m, o = case.model, case.oracle
    errs = [
        rel_err(casrbd.rnea(m, q, v, a, F), o.from_v(pin.rnea(case.pm, case.pd, pq, pv, pa, pf)))
        for (q, v, a, F), (pq, pv, pa, pf) in case.pin_states()
    ]
    assert_close(errs, "rnea with f_ext")


def test_nonlinear_effects(case, pin):
    m, o = case.model, case.oracle
    errs = [
        rel_err(casrbd.nonlinear_effects(m, q, v), o.from_v(pin.nonLinearEffects(case.pm, case.pd, pq, pv)))
        for (q, v, _, _), (pq, pv, _, _) in case.pin_states()
    ]
    assert_close(errs, "nonlinear_effects")


def test_generalized_gravity(case, pin):
    m, o = case.model, case.oracle
    errs = [
        rel_err(casrbd.generalized_gravity(m, q), o.from_v(pin.computeGeneralizedGravity(case.pm, case.pd, pq)))
        for (q, _, _, _), (pq, _, _, _) in case.pin_states()
    ]
    assert_close(errs, "generalized_gravity")


def test_crba(case, pin):
    m, o = case.model, case.oracle
    errs = [
        rel_err(casrbd.crba(m, q), o.from_upper(pin.crba(case.pm, case.pd, pq)))
        for (q, _, _, _), (pq, _, _, _) in case.pin_states()
    ]
    assert_close(errs, "crba")


@pytest.mark.parametrize("with_f_ext", [False, True])
def test_aba(case, with_f_ext, pin):
    m, o = case.model, case.oracle
    errs = []
    for (q, v, tau, F), (pq, pv, ptau, pf) in case.pin_states():
        if with_f_ext:
            got, ref = casrbd.aba(m, q, v, tau, F), pin.aba(case.pm, case.pd, pq, pv, ptau, pf)
        else:
            got, ref = casrbd.aba(m, q, v, tau), pin.aba(case.pm, case.pd, pq, pv, ptau)
        errs.append(rel_err(got, o.from_v(ref)))
    assert_close(errs, "aba")


def test_minverse(case, pin):
    m, o = case.model, case.oracle
    errs = [
        rel_err(casrbd.minverse(m, q), o.from_upper(pin.computeMinverse(case.pm, case.pd, pq)))
        for (q, _, _, _), (pq, _, _, _) in case.pin_states()
    ]
    assert_close(errs, "minverse")


def test_forward_kinematics(case, pin):
    m, o = case.model, case.oracle
    errs = []
    for (q, _, _, _), (pq, _, _, _) in case.pin_states():
        oMi = casrbd.forward_kinematics(m, q)
        assert len(oMi) == m.njoints
        pin.forwardKinematics(case.pm, case.pd, pq)
        errs += [rel_err(M, case.pd.oMi[jid].homogeneous) for M, jid in zip(oMi, o.joint_ids)]
    assert_close(errs, "forward_kinematics")


def test_frame_placement(case, pin):
    m, o = case.model, case.oracle
    errs = []
    for (q, _, _, _), (pq, _, _, _) in case.pin_states():
        pin.framesForwardKinematics(case.pm, case.pd, pq)
        errs += [
            rel_err(casrbd.frame_placement(m, q, i), case.pd.oMf[fid].homogeneous) for i, fid in enumerate(o.frame_ids)
        ]
    assert_close(errs, "frame_placement")


@pytest.mark.parametrize("reference", list(REFERENCES))
def test_frame_jacobian(case, reference, pin):
    m, o = case.model, case.oracle
    errs = []
    for (q, _, _, _), (pq, _, _, _) in case.pin_states():
        for i, fid in enumerate(o.frame_ids):
            J = casrbd.frame_jacobian(m, q, i, reference)
            ref = pin.computeFrameJacobian(case.pm, case.pd, pq, fid, getattr(pin, REFERENCES[reference]))
            errs.append(rel_err(J, o.from_jacobian(ref)))
    assert_close(errs, f"frame_jacobian {reference}")


def test_gravity_is_used(case, pin):
    """Another gravity (``with_gravity``, a new model) reaches the dynamics as Pinocchio's."""
    from oracle import Oracle

    model = case.model.with_gravity([1.5, -2.0, 3.0])
    oracle = Oracle.from_robot(case.name, model)
    for (q, v, a, F), _ in list(case.pin_states())[:5]:
        ref = pin.rnea(oracle.pmodel, oracle.data, oracle.q(q), oracle.v(v), oracle.v(a), oracle.f_ext(F))
        assert rel_err(casrbd.rnea(model, q, v, a, F), oracle.from_v(ref)) < TOL
        ref = pin.aba(oracle.pmodel, oracle.data, oracle.q(q), oracle.v(v), oracle.v(a))
        assert rel_err(casrbd.aba(model, q, v, a), oracle.from_v(ref)) < TOL
