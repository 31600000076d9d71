"""Inverse dynamics by the recursive Newton-Euler algorithm.

Featherstone, *Rigid Body Dynamics Algorithms* (2008), Table 5.1; Algorithm 1
of Carpentier & Mansard, "Analytical Derivatives of Rigid Body Dynamics
Algorithms" (RSS 2018). Body-local frames as Pinocchio's ``rnea``, here the
algorithm frames (``casrbd.algorithm_frames``), which leave tau unchanged.
Glossary (code -> paper, frame):
  liMi[i]  ^{lambda(i)}X_i, placement of body i in its parent    (parent)
  S[i]     S_i, motion subspace; cJ[i] c_J = dS_i/dt qd_i         (local i)
  vJ       v_J = S_i qd_i                                        (local i)
  v[i]     v_i, a[i] a_i (gravity included), f[i] f_i            (local i)
  a0       a_0 = -a_g: gravity enters as a fictitious base acceleration
"""

from typing import NamedTuple

import casadi as ca

from ..spatial import force_cross, motion_cross
from ..spec import Out, Spec, configuration, tangent
from .passes.tree import base_acceleration, forces_to_bodies, joint_biases, motion_subspaces, placements


class ForwardPass(NamedTuple):
    liMi: list
    S: list
    vJ: list
    v: list
    a: list
    f: list


def forward_pass(model, q, v, a, f_ext=None, a0=None):
    """Lines 1-12 of Algorithm 1: body velocities, accelerations and forces.

    ``a0`` defaults to -a_g; kinematics pass zero to get accelerations without gravity."""
    liMi, S, cJ = placements(model, q), motion_subspaces(model, q), joint_biases(model, q, v)
    f_ext = forces_to_bodies(model, f_ext)
    a0 = base_acceleration(model) if a0 is None else a0
    vJs, vs, as_, fs = [], [], [], []
    for i, I in enumerate(model.algorithm_frames.inertias):
        p, X = model.parents[i], liMi[i]
        vJ = ca.mtimes(S[i], v[model.v_slice(i)])
        vi = vJ if p < 0 else X.inv_act_motion(vs[p]) + vJ
        ai = X.inv_act_motion(a0 if p < 0 else as_[p]) + ca.mtimes(S[i], a[model.v_slice(i)]) + motion_cross(vi, vJ)
        if cJ[i] is not None:
            ai = ai + cJ[i]
        fi = I.act(ai) + force_cross(vi, I.act(vi))
        if f_ext is not None:
            fi = fi - f_ext[i]
        vJs.append(vJ)
        vs.append(vi)
        as_.append(ai)
        fs.append(fi)
    return ForwardPass(liMi, S, vJs, vs, as_, fs)


def rnea(model, q, v, a, f_ext=None):
    """Joint torques tau = M(q) a + C(q, v) v + g(q) - sum J_i^T f_ext_i, with the armature in M."""
    fp = forward_pass(model, q, v, a, f_ext)
    f = list(fp.f)
    tau = [None] * model.njoints
    # backward pass: tau_i = S_i^T f_i, f_lambda(i) += lambda(i)X_i^* f_i
    for i in reversed(range(model.njoints)):
        tau[i] = ca.mtimes(fp.S[i].T, f[i])
        armature = model.joint_armature(i)
        if armature is not None:
            tau[i] = tau[i] + armature * a[model.v_slice(i)]
        p = model.parents[i]
        if p >= 0:
            f[p] = f[p] + fp.liMi[i].act_force(f[i])
    return ca.vertcat(*tau)


def nonlinear_effects(model, q, v):
    """C(q, v) v + g(q) = rnea(q, v, 0)."""
    return rnea(model, q, v, ca.DM.zeros(model.nv))


def generalized_gravity(model, q):
    """g(q) = rnea(q, 0, 0)."""
    zero = ca.DM.zeros(model.nv)
    return rnea(model, q, zero, zero)


SPECS = (
    Spec("rnea", rnea, (configuration(), tangent("v"), tangent("a")), (Out("tau", "vector"),), f_ext=True),
    Spec("nonlinear_effects", nonlinear_effects, (configuration(), tangent("v")), (Out("nle", "vector"),)),
    Spec("generalized_gravity", generalized_gravity, (configuration(),), (Out("g", "vector"),)),
)
