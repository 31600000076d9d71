"""Derivatives of forward dynamics from those of inverse dynamics.

Carpentier & Mansard, "Analytical Derivatives of Rigid Body Dynamics
Algorithms" (RSS 2018), eq. (24) (eq. 5 of Singh, Russell & Wensing, RA-L
2022): da/du = -M^-1 dtau/du at a = aba(q, v, tau), u in {q, qd}, and
da/dtau = M^-1. The products with M^-1 are:
  dmm   M^-1 from the dedicated ``minverse`` recursion, then matrix products (DMM);
  aza   ABA with zero velocity and gravity applied to each column of dtau/du,
        reusing the articulated inertias of M^-1 (AZA, section IV-E of Singh et al.);
  ltdl  the sparse factorization M = L^T D L of the M that the ID derivatives
        return, M^-1 = G D^-1 G^T with G = L^-1, and M^-1 B = G D^-1 L^-T B (``passes/ltdl.py``).
Under a free-flyer root r the columns of dq_r are closed-form: moving the
whole tree only turns gravity in the base frame, g_b = R^T g, which acts as
the base's linear acceleration (see ``idsva.py``), so da/dq_r is zero but for
the base's linear rows along rotations, [g_b]x; those columns skip the product (not under
armature on the root, with which M^-1 M[:, :3] is no longer a selection).
"""

import casadi as ca

from ..spatial import skew
from ..spec import Jacobian, Option, Out, Spec, tangent
from . import ad
from .aba import aba
from .minverse import minv_product
from .passes import ltdl
from .passes.articulated import articulated_inertias
from .passes.memo import shared
from .passes.tree import free_flyer_roots, motion_subspaces, placements, root_gravity
from .regressor import joint_torque_regressor, symbolic_inertias
from .rnea_derivatives import ID_DERIVATIVES, METHOD, STATE, transposed_jacobians

PRODUCTS = ("dmm", "aza", "ltdl")
PRODUCT = Option("ltdl", PRODUCTS)


def from_id_derivatives(model, q, v, tau, f_ext, id_derivatives, product="ltdl", a=None):
    """(da/dq, da/dqd, da/dtau = M^-1); ``id_derivatives`` is an ID-derivative algorithm, ``a``
    aba(q, v, tau, f_ext) where the caller has it (a Function's nominal output)."""
    a = aba(model, q, v, tau, f_ext) if a is None else a
    return minv_times(model, q, id_derivatives(model, q, v, a, f_ext), product)


@shared
def minv_times(model, q, id_derivatives, product="ltdl"):
    """(-M^-1 dtau/dq, -M^-1 dtau/dv, M^-1) from the ID derivatives (dtau/dq, dtau/dv, M) at
    a = aba(...), by ``product``."""
    if not model.nv:  # no joints: every block is 0 x 0
        return ca.DM(0, 0), ca.DM(0, 0), ca.DM(0, 0)
    dtau_dq, dtau_dv, M = id_derivatives
    liMi = placements(model, q)
    # closed-form base columns: M^-1 M[:, :3] selects the base's linear rows, unless the base has armature
    roots = [r for r in free_flyer_roots(model) if model.joint_armature(r) is None]
    for r in roots:
        c = model.idx_v[r]
        dtau_dq = ca.horzcat(dtau_dq[:, :c], ca.DM(model.nv, 6), dtau_dq[:, c + 6 :])
    B = ca.horzcat(dtau_dq, dtau_dv)
    if product == "ltdl":
        factors = ltdl.factorize(model, M)
        Minv = ltdl.inverse(model, factors)
        da = -ltdl.solve(model, factors, B)
    else:
        art = articulated_inertias(model, liMi, motion_subspaces(model, q))  # aba's, shared with it
        Minv = minv_product(model, art, ca.DM.eye(model.nv), upper=True)
        da = -ca.mtimes(Minv, B) if product == "dmm" else -minv_product(model, art, B)
    da_dq = da[:, : model.nv]
    for r in roots:
        c = model.idx_v[r]
        da_dq[c : c + 3, c + 3 : c + 6] = skew(root_gravity(model, liMi, r))
    return da_dq, da[:, model.nv :], Minv


def aba_derivatives(model, q, v, tau, f_ext=None, method="idsva", minv_product="ltdl", a=None):
    """(da/dq, da/dv, da/dtau = M^-1); d/dq on the tangent space. ``method`` picks the ID derivatives;
    ``a``: aba(q, v, tau, f_ext) where the caller has it."""
    if method == "ad":
        return ad.aba_jacobians(model, q, v, tau, f_ext)
    return from_id_derivatives(model, q, v, tau, f_ext, ID_DERIVATIVES[method], minv_product, a)


def aba_jacobian(model, q, v, tau, f_ext=None, method="idsva", minv_product="ltdl", out=None):
    """The blocks of d a / d inputs at the Function's nominal output ``out["a"]`` where casadi hands it
    (else aba is run)."""
    a = aba(model, q, v, tau, f_ext) if out is None else out["a"]
    d_dq, d_dv, Minv = aba_derivatives(model, q, v, tau, f_ext, method, minv_product, a)
    blocks = {("a", "q"): d_dq, ("a", "v"): d_dv, ("a", "tau"): Minv}
    if f_ext is not None:  # a = M^-1 (tau - ...) + M^-1 sum J_i^T f_i
        blocks["a", "f_ext"] = ca.mtimes(Minv, transposed_jacobians(model, q))
    if symbolic_inertias(model):  # Y(q, v, a) pi + ... = tau at a = aba(...), so da/dpi = -M^-1 Y
        Y = joint_torque_regressor(model, q, v, a)
        blocks["a", "pi"] = -ca.mtimes(Minv, Y)
    return blocks


SPECS = (
    Spec(
        "aba_derivatives",
        aba_derivatives,
        STATE + (tangent("tau"),),
        (Out("da_dq"), Out("da_dv"), Out("da_dtau")),
        f_ext=True,
        options={"method": METHOD, "minv_product": PRODUCT},
        regular_mass=True,
    ),
)
JACOBIANS = (Jacobian("aba", aba_jacobian, {"method": METHOD, "minv_product": PRODUCT}),)
