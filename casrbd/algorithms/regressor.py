"""Regressors: joint torques and energies as linear functions of the inertial parameters.

The dynamics are linear in each body's ten inertial parameters pi_j = (m, h = m c,
Ixx, Ixy, Iyy, Ixz, Iyz, Izz) about the body's joint frame (Pinocchio's
``Inertia.toDynamicParameters``): tau = Y(q, v, a) pi (Atkeson, An & Hollerbach,
"Estimation of Inertial Parameters of Manipulator Loads and Links", IJRR 1986;
the net force of body j in the recursive Newton-Euler algorithm, f_j = I_j a_j + v_j x* I_j v_j
(Featherstone, *Rigid Body Dynamics Algorithms*, 2008, Table 5.1), is Yb(v_j, a_j) pi_j).
Column block j of Y (10 columns, bodies in ``model.joints`` order, as Pinocchio's
``computeJointTorqueRegressor``) holds body j's force regressor carried towards the
root: rows of joint k in the support of j are S_k^T kX_j^* Yb_j. The armature is a model
constant, not a parameter: rnea = Y pi + armature * a. The energy regressors
(Pinocchio's ``computeKineticEnergyRegressor``, ``computePotentialEnergyRegressor``)
are rows with T = Y_T(q, v) pi and V = Y_V(q) pi.

Everything runs in the algorithm frames (``casrbd.algorithm_frames``), reusing rnea's
forward pass; a body's parameters in its algorithm frame G_j are a constant linear map
P_j of those in its joint frame, so block j is the algorithm-frame regressor times P_j.
Glossary (frame: local j, the algorithm frame):
  Yb     6 x 10 body regressor, f_j = Yb pi_j                   (local j)
  P[j]   10 x 10, parameters in the joint frame -> in frame G_j
  F      the 6 x 10 force set of body j carried to an ancestor k  (local k)
  Y_T    1 x 10n kinetic-energy row; Y_V 1 x 10n potential-energy row
"""

import casadi as ca
import numpy as np

from ..spatial import Inertia, ang, cross, lin, skew
from ..spec import Out, Spec, configuration, tangent
from .passes.local import local_pass
from .passes.tree import placements, world_placements


def inertia_columns(u):
    """The 3 x 6 matrix L(u) with I u = L(u) (Ixx, Ixy, Iyy, Ixz, Iyz, Izz)."""
    x, y, z = u[0], u[1], u[2]
    return ca.vertcat(
        ca.horzcat(x, y, 0, z, 0, 0),
        ca.horzcat(0, x, y, 0, z, 0),
        ca.horzcat(0, 0, 0, x, y, z),
    )


def body_regressor(v, a):
    """Yb(v, a), 6 x 10, with I a + v x* (I v) = Yb pi for the parameters pi of I in the frame of v, a.

    With a' = a_lin + w x v_lin (the classical acceleration of the frame origin):
    linear rows  [a', [a_w]x + [w]x[w]x, 0], angular rows [0, -[a']x, L(a_w) + [w]x L(w)]."""
    vl, w, al, aw = lin(v), ang(v), lin(a), ang(a)
    acc = al + cross(w, vl)
    W = skew(w)
    top = ca.horzcat(acc, skew(aw) + ca.mtimes(W, W), ca.DM(3, 6))
    bottom = ca.horzcat(ca.DM(3, 1), -skew(acc), inertia_columns(aw) + ca.mtimes(W, inertia_columns(w)))
    return ca.vertcat(top, bottom)


def parameter_maps(model):
    """P[j] (10 x 10 numbers, None for the identity): body j's parameters in its joint frame ->
    in its algorithm frame G_j. act_inertia is linear in (m, h, I), so its columns are the images
    of the unit parameter vectors."""
    maps = []
    for G in model.algorithm_frames.G:
        Ginv = G.inverse()
        P = np.column_stack(
            [np.asarray(Ginv.act_inertia(Inertia.from_dynamic_parameters(e)).dynamic_parameters()) for e in np.eye(10)]
        )
        P[np.abs(P) < 1e-14] = 0.0
        maps.append(None if np.array_equal(P, np.eye(10)) else ca.DM(P))
    return maps


def _in_joint_frames(model, rows):
    """Blocks of rows (k x 10 per body, algorithm frames) on the joint-frame parameters."""
    maps = parameter_maps(model)
    return [R if P is None else ca.mtimes(R, P) for R, P in zip(rows, maps)]


def joint_torque_regressor(model, q, v, a):
    """Y(q, v, a), nv x 10 njoints, with rnea(q, v, a) = Y pi + armature * a (gravity included)."""
    fp = local_pass(model, q, v, a)  # its forces (the model's inertias) are not used
    Yb = _in_joint_frames(model, [body_regressor(fp.v[j], fp.a[j]) for j in range(model.njoints)])
    blocks = {}
    # backward pass: each body's force set is carried to the root through its supports
    for j in range(model.njoints):
        F, k = Yb[j], j
        while True:
            blocks[k, j] = ca.mtimes(fp.S[k].T, F)
            p = model.parents[k]
            if p < 0:
                break
            F, k = fp.liMi[k].act_force(F), p
    return ca.blockcat(
        [[blocks.get((k, j), ca.DM(jk.nv, 10)) for j in range(model.njoints)] for k, jk in enumerate(model.joints)]
    )


def kinetic_energy_regressor(model, q, v):
    """Y_T(q, v), 1 x 10 njoints: T = 1/2 sum v_j^T I_j v_j = Y_T pi, with per body
    1/2 v^T I v = 1/2 m |v_lin|^2 + h . (v_lin x w) + 1/2 w^T I w."""
    fp = local_pass(model, q, v, ca.DM.zeros(model.nv))
    rows = []
    for vj in fp.v:
        vl, w = lin(vj), ang(vj)
        rows.append(
            ca.horzcat(
                ca.dot(vl, vl) / 2,
                cross(vl, w).T,
                w[0] * w[0] / 2,
                w[0] * w[1],
                w[1] * w[1] / 2,
                w[0] * w[2],
                w[1] * w[2],
                w[2] * w[2] / 2,
            )
        )
    return ca.horzcat(*_in_joint_frames(model, rows))


def potential_energy_regressor(model, q):
    """Y_V(q), 1 x 10 njoints: V = -sum g . (m p_j + R_j h_j) = Y_V pi, (R_j, p_j) body j's world placement."""
    g = ca.DM(model.gravity)
    rows = []
    for X in world_placements(model, placements(model, q)):
        p = X.p if isinstance(X.p, (ca.SX, ca.MX, ca.DM)) else ca.DM(X.p)
        rows.append(ca.horzcat(-ca.dot(g, p), -ca.mtimes(g.T, X.R), ca.DM(1, 6)))
    return ca.horzcat(*_in_joint_frames(model, rows))


def symbolic_inertias(model):
    """True when some body inertia is a casadi expression (as for Functions built with the parameters
    as inputs): then the analytical Jacobians add their blocks d / d pi
    (``rnea_derivatives.py``, ``aba_derivatives.py``)."""
    return any(isinstance(x, (ca.SX, ca.MX)) for Y in model.inertias for x in (Y.mass, Y.h, Y.I))


SPECS = (
    Spec(
        "joint_torque_regressor",
        joint_torque_regressor,
        (configuration(), tangent("v"), tangent("a")),
        (Out("Y"),),
    ),
    Spec("kinetic_energy_regressor", kinetic_energy_regressor, (configuration(), tangent("v")), (Out("Y_T"),)),
    Spec("potential_energy_regressor", potential_energy_regressor, (configuration(),), (Out("Y_V"),)),
)
