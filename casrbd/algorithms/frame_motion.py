"""Frame velocity and acceleration, the frame Jacobian's time variation, the centre of mass.

Conventions are Pinocchio's (``getFrameVelocity``, ``getFrameAcceleration``,
``getFrameClassicalAcceleration``, ``getFrameJacobianTimeVariation``,
``centerOfMass``, ``jacobianCenterOfMass``); accelerations exclude gravity.
References: ``local`` (the frame's axes at its origin), ``world`` (world axes,
the body point at the world origin), ``local_world_aligned`` (world axes at the
frame's origin). The classical acceleration adds w x v_lin to the spatial one
in the same reference; in ``local_world_aligned`` it is [p''; alpha], and
J a + Jdot v gives it there (the spatial acceleration in the other two).

They read the world pass (``passes.world``, without gravity), in each tree's
frame: a free-flyer root's body frame, else the world, so that nothing below
a free flyer depends on its quaternion; world results are rotated once at
the end. Glossary (code -> Featherstone / Pinocchio, tree frame T):
  w        the world pass: w.oMi, w.S, w.v, w.a (no gravity), w.T (T in the world)
  Jdot     d/dt J; in T its column of joint j is (v_j - v_i) x S_j for a frame on body i
  mr[i]    m_i c_i, body i's first moment in T; H[j] the sum over the subtree of j
"""

from typing import NamedTuple

import casadi as ca

from ..spatial import ang, cross, lin, motion_cross
from ..spec import FRAME, Option, Out, Spec, configuration, tangent
from .kinematics import REFERENCES
from .passes.tree import require_constant_subspaces, subtree_sums
from .passes.world import frame_in_tree, local_jacobian, world_pass

REFERENCE = Option("local", REFERENCES)


def rotate(R, m):
    """A motion or force set with both 3-row blocks rotated by R."""
    return ca.vertcat(ca.mtimes(R, lin(m)), ca.mtimes(R, ang(m)))


def in_reference(oMf, m, reference):
    """A motion (set) given in the frame's local axes, in ``reference``; oMf the world placement."""
    if reference == "local":
        return m
    if reference == "world":
        return oMf.act_motion(m)
    return rotate(oMf.R, m)


def classical(vel, acc):
    """The classical acceleration of the spatial ``acc``: + [w x v_lin; 0] (same reference)."""
    return acc + ca.vertcat(cross(ang(vel), lin(vel)), ca.DM.zeros(3, 1))


class FrameMotion(NamedTuple):
    oMf: object  # world placement
    fMT: object  # the tree frame in the frame's
    v: object  # local spatial velocity (None without v)
    a: object  # local spatial acceleration (None without a)


def frame_motion(model, w, frame):
    """A frame's ``FrameMotion`` from the world pass ``w``; a frame on the world has zero motion."""
    f = model.frames[frame]
    if f.joint < 0:
        zero = ca.DM.zeros(6, 1)
        return FrameMotion(f.placement, f.placement.inverse(), zero, zero)
    TMf = frame_in_tree(model, w, frame)
    fMT = TMf.inverse()
    v = None if w.v is None else fMT.act_motion(w.v[f.joint])
    a = None if w.a is None else fMT.act_motion(w.a[f.joint])
    return FrameMotion(w.T[f.joint] * TMf, fMT, v, a)


def kinematic_pass(model, q, v=None, a=None):
    """The world pass with accelerations without gravity (Pinocchio's ``data.a``)."""
    return world_pass(model, q, v, a, gravity=False)


def frame_velocity(model, q, v, frame, reference="local"):
    fm = frame_motion(model, kinematic_pass(model, q, v), frame)
    return in_reference(fm.oMf, fm.v, reference)


def frame_acceleration(model, q, v, a, frame, reference="local"):
    """The spatial acceleration (Pinocchio's ``getFrameAcceleration``), gravity excluded."""
    fm = frame_motion(model, kinematic_pass(model, q, v, a), frame)
    return in_reference(fm.oMf, fm.a, reference)


def frame_classical_acceleration(model, q, v, a, frame, reference="local"):
    fm = frame_motion(model, kinematic_pass(model, q, v, a), frame)
    return classical(in_reference(fm.oMf, fm.v, reference), in_reference(fm.oMf, fm.a, reference))


def jacobian_rate(model, w, frame, fMT):
    """d/dt of ``frame``'s local Jacobian, 6 x nv with zeros outside its supports."""
    joint = model.frames[frame].joint
    support = model.supports[joint] if joint >= 0 else ()
    Jdot = [
        fMT.act_motion(motion_cross(w.v[j] - w.v[joint], w.S[j])) if j in support else ca.DM(6, jt.nv)
        for j, jt in enumerate(model.joints)
    ]
    return ca.horzcat(ca.DM(6, 0), *Jdot)


def frame_jacobian_time_variation(model, q, v, frame, reference="local"):
    """d/dt of ``frame_jacobian(model, q, frame, reference)`` along v (6 x nv)."""
    require_constant_subspaces(model, "frame_jacobian_time_variation")
    w = kinematic_pass(model, q, v)
    fm = frame_motion(model, w, frame)
    J, Jdot = local_jacobian(model, w, frame, fm.fMT), jacobian_rate(model, w, frame, fm.fMT)
    if reference == "local":
        return Jdot
    if reference == "world":  # d/dt oXf = oXf (v_L x)
        return fm.oMf.act_motion(Jdot + motion_cross(fm.v, J))
    w = ang(fm.v)  # d/dt R = R [w_L]x
    return rotate(fm.oMf.R, Jdot + ca.vertcat(cross(w, lin(J)), cross(w, ang(J))))


# ---------------------------------------------------------------- centre of mass


def total_mass(model):
    m = model.mass
    if isinstance(m, (int, float)) and not m > 0:
        raise ValueError(f"model {model.name!r} has no mass: its centre of mass is undefined")
    return m


def first_moments(model, w):
    """m_i c_i of every body in its tree frame (None for massless bodies)."""
    out = []
    for Y, X in zip(model.inertias, w.oMi):
        if isinstance(Y.mass, (int, float)) and Y.mass == 0:
            out.append(None)
        else:
            out.append(ca.mtimes(X.R, Y.h) + Y.mass * X.p)
    return out


def center_of_mass(model, q, v, a):
    """(c, c', c'') in the world: Pinocchio's com[0], vcom[0], acom[0]."""
    m = total_mass(model)
    wp = kinematic_pass(model, q, v, a)
    c, vc, ac = 0, 0, 0
    for i, mr in enumerate(first_moments(model, wp)):
        if mr is None:
            continue
        mi, T = model.inertias[i].mass, wp.T[i]
        w, vl, al, alpha = ang(wp.v[i]), lin(wp.v[i]), lin(wp.a[i]), ang(wp.a[i])
        # the body's com point: m r, its velocity m (v + w x r), classical acceleration
        mv = mi * vl + cross(w, mr)
        ma = mi * al + cross(alpha, mr) + cross(w, mv)
        c = c + ca.mtimes(T.R, mr) + mi * T.p
        vc = vc + ca.mtimes(T.R, mv)
        ac = ac + ca.mtimes(T.R, ma)
    return c / m, vc / m, ac / m


def jacobian_center_of_mass(model, q):
    """3 x nv Jacobian of the centre of mass, world axes: column set of joint j is
    (m_sub S_lin + S_ang x H_j) / m with H_j the first moment of the subtree of j."""
    m = total_mass(model)
    w = kinematic_pass(model, q)
    mass = subtree_sums(model, [Y.mass for Y in model.inertias])
    H = subtree_sums(model, [ca.DM.zeros(3, 1) if x is None else x for x in first_moments(model, w)])
    cols = [ca.mtimes(w.T[i].R, mass[i] * lin(S) + cross(H[i], -ang(S))) for i, S in enumerate(w.S)]
    return ca.horzcat(ca.DM(3, 0), *cols) / m


STATE = (configuration(), tangent("v"))
FRAME_OPTIONS = {"frame": FRAME, "reference": REFERENCE}
SPECS = (
    Spec("frame_velocity", frame_velocity, STATE, (Out("v_frame", "vector"),), options=FRAME_OPTIONS),
    Spec(
        "frame_acceleration",
        frame_acceleration,
        STATE + (tangent("a"),),
        (Out("a_frame", "vector"),),
        options=FRAME_OPTIONS,
    ),
    Spec(
        "frame_classical_acceleration",
        frame_classical_acceleration,
        STATE + (tangent("a"),),
        (Out("a_frame", "vector"),),
        options=FRAME_OPTIONS,
    ),
    Spec("frame_jacobian_time_variation", frame_jacobian_time_variation, STATE, (Out("dJ"),), options=FRAME_OPTIONS),
    Spec(
        "center_of_mass",
        center_of_mass,
        STATE + (tangent("a"),),
        (Out("com", "vector"), Out("vcom", "vector"), Out("acom", "vector")),
    ),
    Spec("jacobian_center_of_mass", jacobian_center_of_mass, (configuration(),), (Out("Jcom"),)),
)
