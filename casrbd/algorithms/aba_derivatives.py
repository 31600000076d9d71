"""Derivatives of forward dynamics from those of inverse dynamics.

Seed 003 eq. (24) (seed 004 eq. 5): da/du = -M^-1 dtau/du at a = aba(q, v, tau),
u in {q, qd}, and da/dtau = M^-1 from the dedicated ``minverse`` recursion.
The product with M^-1 is either a direct matrix multiplication (DMM) or,
after seed 004 section IV-E, ABA with zero velocity and gravity applied to
each column of dtau/du, reusing the articulated inertias of M^-1 (AZA).
"""
import casadi as ca

from .aba import aba
from .kinematics import joint_placements
from .minverse import articulated_inertias, minv_product

PRODUCTS = ("dmm", "aza")


def aba_derivatives(model, q, v, tau, f_ext, id_derivatives, product="dmm"):
    """(da/dq, da/dqd, da/dtau = M^-1); ``id_derivatives`` is an ID-derivative algorithm."""
    a = aba(model, q, v, tau, f_ext)
    dtau_dq, dtau_dv, _ = id_derivatives(model, q, v, a, f_ext)
    liMi, _ = joint_placements(model, q)
    art = articulated_inertias(model, liMi)
    Minv = minv_product(model, art, ca.DM.eye(model.nv), upper=True)
    if product == "dmm":
        return -ca.mtimes(Minv, dtau_dq), -ca.mtimes(Minv, dtau_dv), Minv
    da = -minv_product(model, art, ca.horzcat(dtau_dq, dtau_dv))
    return da[:, :model.nv], da[:, model.nv:], Minv
