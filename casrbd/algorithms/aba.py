"""Forward dynamics by the articulated-body algorithm.

Featherstone RBDA Table 7.1, in body-local frames as Pinocchio's ``aba``,
but in the frames of ``frames.py`` (axes along z, DH placements), which
leave qdd unchanged; the articulated inertias (pass 2 without bias forces)
are shared with ``minverse``. Glossary (code -> paper, frame local i):
  c[i]    c_i = v_i x v_J, velocity-product acceleration
  pA[i]   p^A_i bias force; U, D, UDinv: U_i = I^A_i S_i, D_i = S_i^T U_i, U_i D_i^-1
  u[i]    u_i = tau_i - S_i^T p^A_i
  Ia, pa  the articulated inertia and bias force passed to the parent
"""
import casadi as ca

from ..spatial import force_cross, motion_cross, spd_solve
from .frames import algorithm_frames, forces_to_frames, placements
from .minverse import articulated_inertias
from .rnea import base_acceleration


def aba(model, q, v, tau, f_ext=None):
    F = algorithm_frames(model)
    liMi = placements(model, F, q)
    art = articulated_inertias(model, liMi, F)
    f_ext = forces_to_frames(F, f_ext)
    n = model.njoints
    vs, c, pA = [None] * n, [None] * n, [None] * n
    # pass 1: velocities, bias accelerations and forces
    for i, joint in enumerate(model.joints):
        vJ = ca.mtimes(art.S[i], v[model.v_slice(i)])
        vs[i] = vJ if joint.parent < 0 else liMi[i].inv_act_motion(vs[joint.parent]) + vJ
        c[i] = motion_cross(vs[i], vJ)
        pA[i] = force_cross(vs[i], F.inertia[i].act(vs[i]))
        if f_ext is not None:
            pA[i] = pA[i] - f_ext[i]
    # pass 2: bias forces, leaves to root
    u = [None] * n
    for i in reversed(range(n)):
        joint = model.joints[i]
        u[i] = tau[model.v_slice(i)] - ca.mtimes(art.S[i].T, pA[i])
        if joint.parent >= 0:
            pa = pA[i] + ca.mtimes(art.Ia[i], c[i]) + ca.mtimes(art.UDinv[i], u[i])
            pA[joint.parent] = pA[joint.parent] + liMi[i].act_force(pa)
    # pass 3: accelerations, root to leaves
    a0 = base_acceleration(model)
    acc, qdd = [None] * n, [None] * n
    for i, joint in enumerate(model.joints):
        ai = liMi[i].inv_act_motion(a0 if joint.parent < 0 else acc[joint.parent]) + c[i]
        qdd[i] = spd_solve(art.D[i], u[i] - ca.mtimes(art.U[i].T, ai))
        acc[i] = ai + ca.mtimes(art.S[i], qdd[i])
    return ca.vertcat(*qdd)
