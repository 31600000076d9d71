"""The derivatives of inverse dynamics: ``method=`` only dispatches to a paper's module, and the
analytical Jacobian that ``casrbd.function(..., jacobian="analytical")`` attaches to rnea.

Methods: "chain_rule" (Carpentier & Mansard, RSS 2018; ``chain_rule.py``), "idsva" (Singh,
Russell & Wensing, RA-L 2022; ``idsva.py``), "ad" (casadi's AD of the dynamics graph, ``ad.py``).
"""

import casadi as ca

from ..spec import Jacobian, Option, Out, Spec, configuration, tangent
from . import ad, chain_rule, idsva
from .passes.world import body_jacobians, world_pass
from .regressor import joint_torque_regressor, symbolic_inertias

ID_DERIVATIVES = {"chain_rule": chain_rule.rnea_derivatives, "idsva": idsva.idsva, "ad": ad.rnea_jacobians}
METHOD = Option("idsva", tuple(ID_DERIVATIVES))
STATE = (configuration(), tangent("v"))


def rnea_derivatives(model, q, v, a, f_ext=None, method="idsva"):
    """(dtau/dq, dtau/dv, dtau/da = M); d/dq on the tangent space."""
    return ID_DERIVATIVES[method](model, q, v, a, f_ext)


def transposed_jacobians(model, q):
    """[J_1^T ... J_n^T], the local Jacobians of the joints' bodies: d tau / d f_ext = -[...]."""
    return ca.horzcat(*[J.T for J in body_jacobians(model, world_pass(model, q))])


def rnea_jacobian(model, q, v, a, f_ext=None, method="idsva", out=None):
    d_dq, d_dv, d_da = rnea_derivatives(model, q, v, a, f_ext, method)
    blocks = {("tau", "q"): d_dq, ("tau", "v"): d_dv, ("tau", "a"): d_da}
    if f_ext is not None:
        blocks["tau", "f_ext"] = -transposed_jacobians(model, q)
    if symbolic_inertias(model):  # the parameters pi are inputs: tau = Y pi + ...
        blocks["tau", "pi"] = joint_torque_regressor(model, q, v, a)
    return blocks


SPECS = (
    Spec(
        "rnea_derivatives",
        rnea_derivatives,
        STATE + (tangent("a"),),
        (Out("dtau_dq"), Out("dtau_dv"), Out("dtau_da")),
        f_ext=True,
        options={"method": METHOD},
    ),
)
JACOBIANS = (Jacobian("rnea", rnea_jacobian, {"method": METHOD}),)
