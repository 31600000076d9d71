"""Inverse of the joint-space inertia matrix without forming M.

The dedicated algorithm cited in seed 003 section IV-C (Carpentier 2018,
Pinocchio's ``computeMinverse``): ABA with zero velocity and gravity applied
to all unit torques at once. Column j of M^-1 is ABA(q, 0, e_j) with a_g = 0,
so the bias forces become force sets P[i] (6 x nv), nonzero only on the
columns of the subtree of i. Rows are computed for the upper triangle only
(columns from idx_v(i) on: in tree order a subtree follows its root) and
mirrored. Glossary (local i): IA, U, D as in ABA; P[i] the bias force set;
E_i the rows of the identity for joint i; A the acceleration set.
"""
import casadi as ca

from ..spatial import spd_solve
from .kinematics import joint_placements


def minverse(model, q):
    liMi, _ = joint_placements(model, q)
    n, nv = model.njoints, model.nv
    IA = [j.inertia.matrix() for j in model.joints]
    P = [ca.DM(6, nv) for _ in range(n)]
    U, D, u = [None] * n, [None] * n, [None] * n
    # pass 2 of ABA with tau = identity, v = 0
    for i in reversed(range(n)):
        joint = model.joints[i]
        S = joint.S
        U[i] = ca.mtimes(IA[i], S)
        D[i] = ca.mtimes(S.T, U[i])
        E = ca.DM(joint.nv, nv)
        E[:, model.v_slice(i)] = ca.DM.eye(joint.nv)
        u[i] = E - ca.mtimes(S.T, P[i])
        if joint.parent >= 0:
            UDinv = spd_solve(D[i], U[i].T).T
            Ia = IA[i] - ca.mtimes(UDinv, U[i].T)
            IA[joint.parent] = IA[joint.parent] + liMi[i].act_inertia(Ia)
            P[joint.parent] = P[joint.parent] + liMi[i].act_force(P[i] + ca.mtimes(UDinv, u[i]))
    # pass 3, upper triangle: rows of joint i on columns idx_v(i) ..
    A, rows = [None] * n, [None] * n
    for i, joint in enumerate(model.joints):
        cols = slice(joint.idx_v, nv)
        p = joint.parent
        Ai = ca.DM(6, nv - joint.idx_v) if p < 0 else liMi[i].inv_act_motion(A[p][:, joint.idx_v - model.joints[p].idx_v:])
        rows[i] = spd_solve(D[i], u[i][:, cols] - ca.mtimes(U[i].T, Ai))
        A[i] = Ai + ca.mtimes(joint.S, rows[i])
    upper = ca.vertcat(*[ca.horzcat(ca.DM(j.nv, j.idx_v), rows[i]) for i, j in enumerate(model.joints)])
    return ca.triu(upper) + ca.triu(upper, False).T
