"""Derivatives of forward dynamics from those of inverse dynamics.

Seed 003 eq. (24) (seed 004 eq. 5): da/du = -M^-1 dtau/du at a = aba(q, v, tau),
u in {q, qd}, and da/dtau = M^-1. The products with M^-1 are:
  dmm   M^-1 from the dedicated ``minverse`` recursion, then matrix products (DMM);
  aza   after seed 004 section IV-E, ABA with zero velocity and gravity applied to
        each column of dtau/du, reusing the articulated inertias of M^-1 (AZA);
  ltdl  the sparse factorization M = L^T D L of the M that the ID derivatives
        return, M^-1 = G D^-1 G^T with G = L^-1, and M^-1 B = G D^-1 L^-T B (``ltdl.py``).
Under a free-flyer root r the columns of dq_r are closed-form: moving the
whole tree only turns gravity in the base frame, g_b = R^T g, which acts as
the base's linear acceleration (see ``idsva.py``), so da/dq_r is zero but for
the base's linear rows along rotations, [g_b]x; those columns skip the product.
"""
import casadi as ca

from ..spatial import skew
from . import ltdl
from .aba import aba
from .frames import algorithm_frames, placements
from .idsva import base_gravity, floating_roots
from .kinematics import joint_placements
from .minverse import articulated_inertias, minv_product

PRODUCTS = ("dmm", "aza", "ltdl")


def aba_derivatives(model, q, v, tau, f_ext, id_derivatives, product="ltdl"):
    """(da/dq, da/dqd, da/dtau = M^-1); ``id_derivatives`` is an ID-derivative algorithm."""
    a = aba(model, q, v, tau, f_ext)
    dtau_dq, dtau_dv, M = id_derivatives(model, q, v, a, f_ext)
    liMi, _ = joint_placements(model, q)
    roots = floating_roots(model)
    for r in roots:
        c = model.joints[r].idx_v
        dtau_dq = ca.horzcat(dtau_dq[:, :c], ca.DM(model.nv, 6), dtau_dq[:, c + 6:])
    B = ca.horzcat(dtau_dq, dtau_dv)
    if product == "ltdl":
        factors = ltdl.factorize(model, M)
        Minv = ltdl.inverse(model, factors)
        da = -ltdl.solve(model, factors, B)
    else:
        frames = algorithm_frames(model)  # aba's frames, so the articulated inertias are shared with it
        art = articulated_inertias(model, placements(model, frames, q), frames)
        Minv = minv_product(model, art, ca.DM.eye(model.nv), upper=True)
        da = -ca.mtimes(Minv, B) if product == "dmm" else -minv_product(model, art, B)
    da_dq = da[:, :model.nv]
    for r in roots:
        c = model.joints[r].idx_v
        da_dq[c:c + 3, c + 3:c + 6] = skew(base_gravity(model, liMi, r))
    return da_dq, da[:, model.nv:], Minv
