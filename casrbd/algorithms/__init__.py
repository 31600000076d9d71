"""The algorithms, written once over casadi types, in families as Pinocchio's ``algorithm/``:

- ``passes/``: what every algorithm walks with: the tree's placements, subspaces and sums
  (``tree.py``), the articulated-inertia pass (``articulated.py``), the sparse factorization
  M = L^T D L (``ltdl.py``);
- one module per algorithm with its derivatives beside it: ``rnea.py``, ``rnea_derivatives.py``
  (dispatching to the papers' ``chain_rule.py`` and ``idsva.py``, or ``ad.py``), ``aba.py``,
  ``aba_derivatives.py``, ``crba.py``, ``minverse.py``, ``kinematics.py``,
  ``kinematics_derivatives.py``, ``frame_motion.py``, ``centroidal.py``, ``regressor.py``,
  ``configuration.py``;
- ``contact/``: contact sets, constraint and impulse dynamics, their derivatives;
- ``second_order/``: the second-order adjoint, contracted Hessians and IDSVA's tensors.

They take casadi column vectors (SX, MX or DM) and return casadi matrices; ``casrbd.api`` checks
shapes, dispatches numeric calls to cached Functions and converts results. This module is the one
wiring table: ``SPECS`` gathers what every module declares, with the analytical Jacobians of the
first-order modules and the second-order adjoints attached, so that no first-order module imports
a second-order one."""

from . import (
    aba,
    aba_derivatives,
    centroidal,
    configuration,
    crba,
    frame_motion,
    kinematics,
    kinematics_derivatives,
    minverse,
    regressor,
    rnea,
    rnea_derivatives,
)
from .contact import derivatives as contact_derivatives
from .contact import dynamics as contact_dynamics
from .contact import hessians as contact_hessians
from .second_order import derivatives as second_order_derivatives
from .second_order import hessians

SPECS = {
    s.name: s
    for module in (rnea, crba, aba, minverse, kinematics, configuration, rnea_derivatives, aba_derivatives)
    + (kinematics_derivatives, regressor, frame_motion, centroidal, contact_dynamics, contact_derivatives)
    + (second_order_derivatives,)
    for s in module.SPECS
}
JACOBIANS = rnea_derivatives.JACOBIANS + aba_derivatives.JACOBIANS + contact_derivatives.JACOBIANS
for _jacobian in JACOBIANS + centroidal.JACOBIANS:
    SPECS[_jacobian.of] = SPECS[_jacobian.of]._replace(jacobian=_jacobian)
for _adjoint in hessians.SECOND_ORDER + contact_hessians.SECOND_ORDER:
    SPECS[_adjoint.of] = SPECS[_adjoint.of]._replace(second_order=_adjoint)
