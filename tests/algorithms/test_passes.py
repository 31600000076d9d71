"""The world pass and the local pass describe the same motion, and every Jacobian route agrees.

References: the local pass (algorithm frames) against the world pass (tree frames), body by body
in the joint frames: velocities, accelerations with and without gravity, forces with external
forces. A frame's local Jacobian by ``passes.world.local_jacobian`` (which frame_motion, the
contacts and ``frame_jacobian(..., "local")`` read) against ``frame_jacobian`` in the world
reference moved into the frame, ``kinematics_derivatives``' dv/dqd (the chain rule's local pass)
and J v = ``frame_velocity``; every body's Jacobian times v against the local pass's velocity, and
the second-order adjoint's d tau / d f_ext against ``rnea_derivatives``'. At random states of
robots with a fixed base, a free flyer and every joint type.
"""

import casadi as ca
import numpy as np
import pytest
from conftest import robot_states

from casrbd.algorithms.frame_motion import frame_velocity
from casrbd.algorithms.kinematics import frame_jacobian
from casrbd.algorithms.kinematics_derivatives import kinematics_derivatives
from casrbd.algorithms.passes.local import local_pass
from casrbd.algorithms.passes.world import body_jacobians, local_jacobian, world_pass
from casrbd.algorithms.rnea_derivatives import transposed_jacobians
from casrbd.algorithms.second_order import adjoint
from casrbd.testing import rel_err

TOL = 1e-10
ROBOTS = ("arm7", "solo12", "random", "binary")
SALT = 29  # this module's random states


@pytest.fixture(scope="module", params=ROBOTS)
def case(request):
    return robot_states(request.param, 3, SALT)


def dm(state):
    return [ca.DM(x) for x in state]


def assert_same(model, local, world, oMi, force=False):
    """Per-body quantities of both passes agree in the joint frames (motions, or forces)."""
    G = model.algorithm_frames.G
    for i, (x, y) in enumerate(zip(local, world)):
        if force:
            x, y = G[i].act_force(x), oMi[i].inv_act_force(y)
        else:
            x, y = G[i].act_motion(x), oMi[i].inv_act_motion(y)
        assert rel_err(np.array(x), np.array(y)) < TOL


def test_passes_agree(case):
    model = case.model
    for q, v, a, f_ext in map(dm, case.states):
        lp, wp = local_pass(model, q, v, a, f_ext), world_pass(model, q, v, a, f_ext)
        assert_same(model, lp.v, wp.v, wp.oMi)
        assert_same(model, lp.a, wp.a, wp.oMi)
        assert_same(model, lp.f, wp.f, wp.oMi, force=True)
        kinematic = local_pass(model, q, v, a, a0=ca.DM.zeros(6, 1))
        assert_same(model, kinematic.a, world_pass(model, q, v, a, gravity=False).a, wp.oMi)


def frames(model):
    """A few frames on bodies, deepest first (every third one)."""
    return [i for i, f in reversed(list(enumerate(model.frames))) if f.joint >= 0][::3][:4]


def test_jacobian_routes_agree(case):
    model = case.model
    constant = all(j.constant_subspace for j in model.joints)
    for q, v, a, f_ext in map(dm, case.states):
        world = world_pass(model, q)
        for frame in frames(model):
            J = np.array(local_jacobian(model, world, frame))
            f = model.frames[frame]
            oMf = world.T[f.joint] * world.oMi[f.joint] * f.placement
            assert rel_err(np.array(oMf.inv_act_motion(frame_jacobian(model, q, frame, "world"))), J) < TOL
            assert rel_err(np.array(frame_jacobian(model, q, frame, "local")), J) < TOL
            assert rel_err(J @ np.array(v), np.array(frame_velocity(model, q, v, frame))) < TOL
            if constant:  # the chain rule's local pass
                assert rel_err(np.array(kinematics_derivatives(model, q, v, a, frame)[1]), J) < TOL
        # every body's Jacobian against the local pass's velocities, and d tau / d f_ext
        lp = local_pass(model, q, v, a)
        for i, Ji in enumerate(body_jacobians(model, world)):
            vi = model.algorithm_frames.G[i].act_motion(lp.v[i])
            assert rel_err(np.array(Ji @ v), np.array(vi)) < TOL
        if constant:
            kin = adjoint.kinematics(model, q, v, a, f_ext)
            dtau_df = np.array(adjoint.force_jacobian(model, kin))
            assert rel_err(dtau_df, -np.array(transposed_jacobians(model, q))) < TOL
