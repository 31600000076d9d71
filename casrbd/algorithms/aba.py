"""Forward dynamics by the articulated-body algorithm.

Featherstone, *Rigid Body Dynamics Algorithms* (2008), Table 7.1, in body-local
frames as Pinocchio's ``aba``: the algorithm frames, which leave qdd unchanged.
The articulated inertias (pass 2 without bias forces) come from
``passes/articulated.py``. Glossary (code -> book, frame local i):
  c[i]    c_i = c_J + v_i x v_J, velocity-product acceleration
  pA[i]   p^A_i bias force; U, D, UDinv: U_i = I^A_i S_i, D_i = S_i^T U_i, U_i D_i^-1
  u[i]    u_i = tau_i - S_i^T p^A_i
  pa      the bias force passed to the parent
"""

import casadi as ca

from ..spatial import force_cross, motion_cross, spd_solve
from ..spec import Out, Spec, configuration, tangent
from .passes.articulated import articulated_inertias
from .passes.tree import base_acceleration, forces_to_bodies, joint_biases, motion_subspaces, placements


def aba(model, q, v, tau, f_ext=None):
    S, cJ = motion_subspaces(model, q), joint_biases(model, q, v)
    art = articulated_inertias(model, placements(model, q), S)
    liMi, inertias = art.liMi, model.algorithm_frames.inertias
    f_ext = forces_to_bodies(model, f_ext)
    n = model.njoints
    vs, c, pA = [None] * n, [None] * n, [None] * n
    # pass 1: velocities, bias accelerations and forces
    for i in range(n):
        p = model.parents[i]
        vJ = ca.mtimes(S[i], v[model.v_slice(i)])
        vs[i] = vJ if p < 0 else liMi[i].inv_act_motion(vs[p]) + vJ
        c[i] = motion_cross(vs[i], vJ) if cJ[i] is None else cJ[i] + motion_cross(vs[i], vJ)
        pA[i] = force_cross(vs[i], inertias[i].act(vs[i]))
        if f_ext is not None:
            pA[i] = pA[i] - f_ext[i]
    # pass 2: bias forces, leaves to root
    u = [None] * n
    for i in reversed(range(n)):
        p = model.parents[i]
        u[i] = tau[model.v_slice(i)] - ca.mtimes(S[i].T, pA[i])
        if p >= 0:
            pa = pA[i] + ca.mtimes(art.Ia[i], c[i]) + ca.mtimes(art.UDinv[i], u[i])
            pA[p] = pA[p] + liMi[i].act_force(pa)
    # pass 3: accelerations, root to leaves
    a0 = base_acceleration(model)
    acc, qdd = [None] * n, [None] * n
    for i in range(n):
        p = model.parents[i]
        ai = liMi[i].inv_act_motion(a0 if p < 0 else acc[p]) + c[i]
        qdd[i] = spd_solve(art.D[i], u[i] - ca.mtimes(art.U[i].T, ai))
        acc[i] = ai + ca.mtimes(S[i], qdd[i])
    return ca.vertcat(*qdd)


SPECS = (
    Spec(
        "aba",
        aba,
        (configuration(), tangent("v"), tangent("tau")),
        (Out("a", "vector"),),
        f_ext=True,
        regular_mass=True,
    ),
)
