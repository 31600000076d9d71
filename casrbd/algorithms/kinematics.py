"""Forward kinematics, frame placements and frame Jacobians.

Frame: the world, from the joint frames chained to it (in the world pass's tree frames every
world quantity would pay for a free flyer's rotation once more); the local Jacobian is the world
pass's (``passes.world.local_jacobian``). Glossary: ``liMi`` placement of joint i in its parent
joint's frame (Featherstone's X_T X_J, as Pinocchio's ``data.liMi``), ``oMi`` placement of joint
i in the world, ``oMf`` placement of a frame in the world.
"""

import casadi as ca

from ..spatial import ang, lin
from ..spec import FRAME, Option, Out, Spec, configuration
from .passes.tree import joint_placements as local_placements
from .passes.tree import joint_subspaces, world_placements
from .passes.world import local_jacobian, world_pass

REFERENCES = ("local", "world", "local_world_aligned")


def body_placements(model, q):
    """(S, oMi) in the joint frames."""
    return joint_subspaces(model, q), world_placements(model, local_placements(model, q))


def forward_kinematics(model, q):
    """World placements of all joints, as a 4 x 4 njoints row of homogeneous matrices."""
    _, oMi = body_placements(model, q)
    return ca.horzcat(*[M.homogeneous() for M in oMi])


def frame_world_placement(model, oMi, frame):
    """oMf of frame index ``frame``."""
    f = model.frames[frame]
    return f.placement if f.joint < 0 else oMi[f.joint] * f.placement


def frame_placement(model, q, frame):
    """Homogeneous 4 x 4 placement of ``frame`` (index) in the world."""
    _, oMi = body_placements(model, q)
    return frame_world_placement(model, oMi, frame).homogeneous()


def world_jacobian(model, S, oMi, joint):
    """6 x nv Jacobian of the spatial velocity of ``joint``'s body, world frame at the world origin."""
    support = model.supports[joint] if joint >= 0 else ()
    return ca.horzcat(
        ca.DM(6, 0), *[oMi[i].act_motion(S[i]) if i in support else ca.DM(6, j.nv) for i, j in enumerate(model.joints)]
    )


def frame_jacobian(model, q, frame, reference="local"):
    """6 x nv Jacobian of ``frame``'s spatial velocity [linear; angular].

    ``world``: the velocity of the body point at the world origin, in world
    axes; ``local``: the frame's velocity in its own axes (the world pass's
    ``local_jacobian``); ``local_world_aligned``: the velocity of the frame's
    origin in world axes (Pinocchio's WORLD, LOCAL and LOCAL_WORLD_ALIGNED).
    """
    if reference == "local":
        return local_jacobian(model, world_pass(model, q), frame)
    S, oMi = body_placements(model, q)
    oMf = frame_world_placement(model, oMi, frame)
    J = world_jacobian(model, S, oMi, model.frames[frame].joint)
    if reference == "world":
        return J
    J = oMf.inv_act_motion(J)
    return ca.vertcat(ca.mtimes(oMf.R, lin(J)), ca.mtimes(oMf.R, ang(J)))


SPECS = (
    Spec("forward_kinematics", forward_kinematics, (configuration(),), (Out("oMi", "placements"),)),
    Spec("frame_placement", frame_placement, (configuration(),), (Out("oMf"),), options={"frame": FRAME}),
    Spec(
        "frame_jacobian",
        frame_jacobian,
        (configuration(),),
        (Out("J"),),
        options={"frame": FRAME, "reference": Option("local", REFERENCES)},
    ),
)
