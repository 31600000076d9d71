"""The local pass: every body's motion and force in its own algorithm frame.

Frame: body i's algorithm frame (``casrbd.algorithm_frames``), which leaves every joint-space
result unchanged and makes most constant placements rotations about x; this is the forward pass
of rnea (Featherstone, *Rigid Body Dynamics Algorithms* (2008), Table 5.1; Algorithm 1 of
Carpentier & Mansard, RSS 2018), read by rnea, the chain rule, the regressor and the centroidal
momentum's rate. Glossary (code -> paper, frame):
  liMi[i]  ^{lambda(i)}X_i, placement of body i in its parent    (parent)
  S[i]     S_i, motion subspace; cJ[i] c_J = dS_i/dt qd_i         (local i)
  vJ       v_J = S_i qd_i                                        (local i)
  v[i]     v_i, a[i] a_i (gravity included), f[i] f_i            (local i)
  a0       a_0 = -a_g: gravity enters as a fictitious base acceleration
"""

from typing import NamedTuple

import casadi as ca

from ...spatial import force_cross, motion_cross
from .tree import base_acceleration, forces_to_bodies, joint_biases, motion_subspaces, placements


class LocalPass(NamedTuple):
    liMi: list
    S: list
    vJ: list
    v: list
    a: list
    f: list


def local_pass(model, q, v, a, f_ext=None, a0=None):
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
    return LocalPass(liMi, S, vJs, vs, as_, fs)
