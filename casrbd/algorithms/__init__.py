"""The algorithms, one module each, written once over casadi types.

They take casadi column vectors (SX, MX or DM) and return casadi matrices;
``casrbd.api`` checks shapes, dispatches numeric calls to cached Functions
and converts results. ``SPECS`` gathers what every module declares, with the
analytical Jacobians that derivative modules attach."""

from . import (
    aba,
    centroidal,
    configuration,
    contact,
    contact_derivatives,
    contact_hessians,
    crba,
    derivatives,
    frame_motion,
    kinematics,
    kinematics_derivatives,
    minverse,
    regressor,
    rnea,
    second_order_derivatives,
)

SPECS = {
    s.name: s
    for module in (rnea, crba, aba, minverse, kinematics, configuration, derivatives, kinematics_derivatives, regressor)
    + (frame_motion, centroidal, contact, contact_derivatives, second_order_derivatives)
    for s in module.SPECS
}
for _jacobian in derivatives.JACOBIANS + contact_derivatives.JACOBIANS + centroidal.JACOBIANS:
    SPECS[_jacobian.of] = SPECS[_jacobian.of]._replace(jacobian=_jacobian)
for _adjoint in derivatives.SECOND_ORDER + contact_hessians.SECOND_ORDER:
    SPECS[_adjoint.of] = SPECS[_adjoint.of]._replace(hessian=_adjoint)
