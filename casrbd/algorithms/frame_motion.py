"""Frame velocity and acceleration, the frame Jacobian's time variation, the centre of mass.

Conventions are Pinocchio's (``getFrameVelocity``, ``getFrameAcceleration``,
``getFrameClassicalAcceleration``, ``getFrameJacobianTimeVariation``,
``centerOfMass``, ``jacobianCenterOfMass``); accelerations exclude gravity.
References: ``local`` (the frame's axes at its origin), ``world`` (world axes,
the body point at the world origin), ``local_world_aligned`` (world axes at the
frame's origin). The classical acceleration adds w x v_lin to the spatial one
in the same reference; in ``local_world_aligned`` it is [p''; alpha], and
J a + Jdot v gives it there (the spatial acceleration in the other two).

The pass runs in each tree's frame as IDSVA's (``idsva.tree_placements``): a
free-flyer root's body frame, else the world, so that nothing below a free
flyer depends on its quaternion; world results are rotated once at the end.
Velocities and accelerations are the bodies' absolute ones expressed in the
tree frame. Glossary (code -> Featherstone / Pinocchio, tree frame T):
  oMi[i]   placement of joint i's frame in T        oS[i]  S_i in T
  ov[i]    v_i (spatial velocity)                   oa[i]  a_i (spatial, no gravity)
  T[r]     placement of root r's tree frame in the world
  Jdot     d/dt J; in T its column of joint j is (v_j - v_i) x S_j for a frame on body i
  mr[i]    m_i c_i, body i's first moment in T; H[j] the sum over the subtree of j
"""

from typing import NamedTuple

import casadi as ca

from ..spatial import SE3, ang, cross, lin, motion_cross
from ..spec import FRAME, Option, Out, Spec, configuration, tangent
from .idsva import tree_placements
from .kinematics import REFERENCES
from .passes.tree import free_flyer_roots, joint_subspaces, require_constant_subspaces

REFERENCE = Option("local", REFERENCES)


class TreeMotion(NamedTuple):
    T: list  # per body: its tree frame's placement in the world
    oMi: list
    oS: list
    ov: list  # None without v
    oa: list  # None without a


def tree_motion(model, q, v=None, a=None):
    """The ``TreeMotion`` of every body (``v``, ``a`` optional; a needs v)."""
    liMi, oMi, _ = tree_placements(model, q)
    S = joint_subspaces(model, q)
    roots = free_flyer_roots(model)
    T, oS, ov, oa = [], [], [], []
    for i, joint in enumerate(model.joints):
        p = model.parents[i]
        r = model.supports[i][0]
        T.append(liMi[r] if r in roots else SE3.identity())
        oS.append(oMi[i].act_motion(S[i]))
        if v is None:
            continue
        vJ = ca.mtimes(oS[i], v[model.v_slice(i)])
        ov.append(vJ if p < 0 else ov[p] + vJ)
        if a is None:
            continue
        ai = ca.mtimes(oS[i], a[model.v_slice(i)])
        if p >= 0:
            ai = ai + oa[p] + motion_cross(ov[p], vJ)
        if not joint.constant_subspace:
            ai = ai + oMi[i].act_motion(joint.bias(q[model.q_slice(i)], v[model.v_slice(i)]))
        oa.append(ai)
    return TreeMotion(T, oMi, oS, ov if v is not None else None, oa if a is not None else None)


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


def frame_motion(model, tm, frame):
    """A frame's ``FrameMotion`` from the pass ``tm``; a frame on the world has zero motion."""
    f = model.frames[frame]
    if f.joint < 0:
        zero = ca.DM.zeros(6, 1)
        return FrameMotion(f.placement, f.placement.inverse(), zero, zero)
    TMf = tm.oMi[f.joint] * f.placement
    fMT = TMf.inverse()
    v = None if tm.ov is None else fMT.act_motion(tm.ov[f.joint])
    a = None if tm.oa is None else fMT.act_motion(tm.oa[f.joint])
    return FrameMotion(tm.T[f.joint] * TMf, fMT, v, a)


def frame_velocity(model, q, v, frame, reference="local"):
    fm = frame_motion(model, tree_motion(model, q, v), frame)
    return in_reference(fm.oMf, fm.v, reference)


def frame_acceleration(model, q, v, a, frame, reference="local"):
    """The spatial acceleration (Pinocchio's ``getFrameAcceleration``), gravity excluded."""
    fm = frame_motion(model, tree_motion(model, q, v, a), frame)
    return in_reference(fm.oMf, fm.a, reference)


def frame_classical_acceleration(model, q, v, a, frame, reference="local"):
    fm = frame_motion(model, tree_motion(model, q, v, a), frame)
    return classical(in_reference(fm.oMf, fm.v, reference), in_reference(fm.oMf, fm.a, reference))


def local_jacobian_and_rate(model, tm, frame, fMT):
    """(J, Jdot) of ``frame`` in its local axes, 6 x nv with zeros outside its supports."""
    joint = model.frames[frame].joint
    support = model.supports[joint] if joint >= 0 else ()
    J, Jdot = [], []
    for j, jt in enumerate(model.joints):
        if j not in support:
            J.append(ca.DM(6, jt.nv))
            Jdot.append(ca.DM(6, jt.nv))
            continue
        J.append(fMT.act_motion(tm.oS[j]))
        if tm.ov is not None:
            Jdot.append(fMT.act_motion(motion_cross(tm.ov[j] - tm.ov[joint], tm.oS[j])))
    return ca.horzcat(ca.DM(6, 0), *J), (ca.horzcat(ca.DM(6, 0), *Jdot) if tm.ov is not None else None)


def frame_jacobian_time_variation(model, q, v, frame, reference="local"):
    """d/dt of ``frame_jacobian(model, q, frame, reference)`` along v (6 x nv)."""
    require_constant_subspaces(model, "frame_jacobian_time_variation")
    tm = tree_motion(model, q, v)
    fm = frame_motion(model, tm, frame)
    J, Jdot = local_jacobian_and_rate(model, tm, frame, fm.fMT)
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


def first_moments(model, tm):
    """m_i c_i of every body in its tree frame (None for massless bodies)."""
    out = []
    for Y, X in zip(model.inertias, tm.oMi):
        if isinstance(Y.mass, (int, float)) and Y.mass == 0:
            out.append(None)
        else:
            out.append(ca.mtimes(X.R, Y.h) + Y.mass * X.p)
    return out


def center_of_mass(model, q, v, a):
    """(c, c', c'') in the world: Pinocchio's com[0], vcom[0], acom[0]."""
    m = total_mass(model)
    tm = tree_motion(model, q, v, a)
    c, vc, ac = 0, 0, 0
    for i, mr in enumerate(first_moments(model, tm)):
        if mr is None:
            continue
        mi, T = model.inertias[i].mass, tm.T[i]
        w, vl, al, alpha = ang(tm.ov[i]), lin(tm.ov[i]), lin(tm.oa[i]), ang(tm.oa[i])
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
    tm = tree_motion(model, q)
    mr = first_moments(model, tm)
    mass = [Y.mass for Y in model.inertias]
    H = [ca.DM.zeros(3, 1) if x is None else x for x in mr]
    for i in reversed(range(model.njoints)):
        p = model.parents[i]
        if p >= 0:
            H[p] = H[p] + H[i]
            mass[p] = mass[p] + mass[i]
    cols = [ca.mtimes(tm.T[i].R, mass[i] * lin(S) + cross(H[i], -ang(S))) for i, S in enumerate(tm.oS)]
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
