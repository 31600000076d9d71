"""The public derivative functions: ``method=`` only dispatches to a paper's module, and the
analytical Jacobians that ``casrbd.function(..., jacobian="analytical")`` attaches to rnea and aba.

Methods: "chain_rule" (Carpentier & Mansard, RSS 2018; ``chain_rule.py``), "idsva" (Singh,
Russell & Wensing, RA-L 2022; ``idsva.py``), "ad" (casadi's AD of the dynamics graph, ``ad.py``).
"""

import casadi as ca

from ..spec import Jacobian, Option, Out, SecondOrderAdjoint, Spec, configuration, tangent
from . import aba_derivatives as fd
from . import ad, chain_rule, hessians, idsva
from .aba import aba
from .kinematics import joint_jacobians
from .regressor import joint_torque_regressor, symbolic_inertias

ID_DERIVATIVES = {"chain_rule": chain_rule.rnea_derivatives, "idsva": idsva.idsva, "ad": ad.rnea_derivatives}
METHOD = Option("idsva", tuple(ID_DERIVATIVES))
PRODUCT = Option("ltdl", fd.PRODUCTS)


def rnea_derivatives(model, q, v, a, f_ext=None, method="idsva"):
    """(dtau/dq, dtau/dv, dtau/da = M); d/dq on the tangent space."""
    return ID_DERIVATIVES[method](model, q, v, a, f_ext)


def aba_derivatives(model, q, v, tau, f_ext=None, method="idsva", minv_product="ltdl"):
    """(da/dq, da/dv, da/dtau = M^-1); d/dq on the tangent space."""
    if method == "ad":
        return ad.aba_derivatives(model, q, v, tau, f_ext)
    return fd.aba_derivatives(model, q, v, tau, f_ext, ID_DERIVATIVES[method], minv_product)


def _transposed_jacobians(model, q):
    """[J_1^T ... J_n^T], the local Jacobians of the joints' bodies: d tau / d f_ext = -[...]."""
    return ca.horzcat(*[J.T for J in joint_jacobians(model, q)])


def rnea_jacobian(model, q, v, a, f_ext=None, method="idsva"):
    d_dq, d_dv, d_da = rnea_derivatives(model, q, v, a, f_ext, method)
    blocks = {("tau", "q"): d_dq, ("tau", "v"): d_dv, ("tau", "a"): d_da}
    if f_ext is not None:
        blocks["tau", "f_ext"] = -_transposed_jacobians(model, q)
    if symbolic_inertias(model):  # the parameters pi are inputs: tau = Y pi + ...
        blocks["tau", "pi"] = joint_torque_regressor(model, q, v, a)
    return blocks


def aba_jacobian(model, q, v, tau, f_ext=None, method="idsva", minv_product="ltdl"):
    d_dq, d_dv, Minv = aba_derivatives(model, q, v, tau, f_ext, method, minv_product)
    blocks = {("a", "q"): d_dq, ("a", "v"): d_dv, ("a", "tau"): Minv}
    if f_ext is not None:  # a = M^-1 (tau - ...) + M^-1 sum J_i^T f_i
        blocks["a", "f_ext"] = ca.mtimes(Minv, _transposed_jacobians(model, q))
    if symbolic_inertias(model):  # Y(q, v, a) pi + ... = tau at a = aba(...), so da/dpi = -M^-1 Y
        Y = joint_torque_regressor(model, q, v, aba(model, q, v, tau, f_ext))
        blocks["a", "pi"] = -ca.mtimes(Minv, Y)
    return blocks


STATE = (configuration(), tangent("v"))
SPECS = (
    Spec(
        "rnea_derivatives",
        rnea_derivatives,
        STATE + (tangent("a"),),
        (Out("dtau_dq"), Out("dtau_dv"), Out("dtau_da")),
        f_ext=True,
        options={"method": METHOD},
    ),
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


def _jacobian_options_dropped(adjoint):
    """The second-order adjoint is analytical whatever the Jacobian's method: drop its options."""

    def impl(model, q, v, x, lam, f_ext=None, **_):
        return adjoint(model, q, v, x, lam, f_ext)

    return impl


JACOBIANS = (
    Jacobian("rnea", rnea_jacobian, {"method": METHOD}),
    Jacobian("aba", aba_jacobian, {"method": METHOD, "minv_product": PRODUCT}),
)
SECOND_ORDER = (
    SecondOrderAdjoint("rnea", _jacobian_options_dropped(hessians.rnea_second_order_adjoint)),
    SecondOrderAdjoint("aba", _jacobian_options_dropped(hessians.aba_second_order_adjoint)),
)
