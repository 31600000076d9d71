"""Inverse dynamics by the recursive Newton-Euler algorithm.

Featherstone, *Rigid Body Dynamics Algorithms* (2008), Table 5.1; Algorithm 1
of Carpentier & Mansard, "Analytical Derivatives of Rigid Body Dynamics
Algorithms" (RSS 2018). Frame: body-local frames as Pinocchio's ``rnea``,
here the algorithm frames (``casrbd.algorithm_frames``), which leave tau
unchanged; the forward pass is the local pass (``passes.local``, whose
glossary this module follows), the backward pass sums the forces f_i over
the subtrees and projects them on S_i.
"""

import casadi as ca

from ..spec import Out, Spec, configuration, tangent
from .passes.local import local_pass
from .passes.tree import subtree_sums


def rnea(model, q, v, a, f_ext=None):
    """Joint torques tau = M(q) a + C(q, v) v + g(q) - sum J_i^T f_ext_i, with the armature in M."""
    fp = local_pass(model, q, v, a, f_ext)
    # backward pass: f_lambda(i) += lambda(i)X_i^* f_i, tau_i = S_i^T f_i
    f = subtree_sums(model, fp.f, lambda i, fi: fp.liMi[i].act_force(fi))
    tau = []
    for i, S in enumerate(fp.S):
        tau.append(ca.mtimes(S.T, f[i]))
        armature = model.joint_armature(i)
        if armature is not None:
            tau[i] = tau[i] + armature * a[model.v_slice(i)]
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
