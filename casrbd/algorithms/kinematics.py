"""Forward kinematics, frame placements and frame Jacobians.

Glossary: ``liMi`` placement of joint i in its parent joint's frame
(Featherstone's X_T X_J, as Pinocchio's ``data.liMi``), ``oMi`` placement of
joint i in the world, ``oMf`` placement of a frame in the world.
"""
import casadi as ca

from ..spatial import ang, lin

REFERENCES = ("local", "world", "local_world_aligned")


def joint_placements(model, q):
    """(liMi, oMi) for every joint."""
    liMi, oMi = [], []
    for i, joint in enumerate(model.joints):
        M = joint.placement * joint.transform(q[model.q_slice(i)])
        liMi.append(M)
        oMi.append(M if joint.parent < 0 else oMi[joint.parent] * M)
    return liMi, oMi


def forward_kinematics(model, q):
    """World placements of all joints, as a 4 x 4 njoints row of homogeneous matrices."""
    _, oMi = joint_placements(model, q)
    return ca.horzcat(*[M.homogeneous() for M in oMi])


def _frame_placement(model, oMi, frame):
    f = model.frames[frame]
    return f.placement if f.joint < 0 else oMi[f.joint] * f.placement


def frame_placement(model, q, frame):
    """Homogeneous 4 x 4 placement of ``frame`` (index) in the world."""
    _, oMi = joint_placements(model, q)
    return _frame_placement(model, oMi, frame).homogeneous()


def world_jacobian(model, oMi, joint):
    """6 x nv Jacobian of the spatial velocity of ``joint``'s body, world frame at the world origin."""
    support = model.supports[joint] if joint >= 0 else ()
    return ca.horzcat(ca.DM(6, 0), *[oMi[i].act_motion(j.S) if i in support else ca.DM(6, j.nv)
                                     for i, j in enumerate(model.joints)])


def joint_jacobians(model, q):
    """Local 6 x nv Jacobians of every joint's body velocity."""
    _, oMi = joint_placements(model, q)
    return [oMi[i].inv_act_motion(world_jacobian(model, oMi, i)) for i in range(model.njoints)]


def frame_jacobian(model, q, frame, reference):
    """6 x nv Jacobian of ``frame``'s spatial velocity [linear; angular].

    ``world``: the velocity of the body point at the world origin, in world
    axes; ``local``: the frame's velocity in its own axes;
    ``local_world_aligned``: the velocity of the frame's origin in world axes
    (Pinocchio's WORLD, LOCAL and LOCAL_WORLD_ALIGNED).
    """
    _, oMi = joint_placements(model, q)
    oMf = _frame_placement(model, oMi, frame)
    J = world_jacobian(model, oMi, model.frames[frame].joint)
    if reference == "world":
        return J
    J = oMf.inv_act_motion(J)
    if reference == "local":
        return J
    return ca.vertcat(ca.mtimes(oMf.R, lin(J)), ca.mtimes(oMf.R, ang(J)))
