"""The algorithms, one module each, written once over casadi types.

They take casadi column vectors (SX, MX or DM) and return casadi matrices;
``casrbd.api`` checks shapes, dispatches numeric calls to cached Functions
and converts results. ``SPECS`` gathers what every module declares, with the
analytical Jacobians that derivative modules attach."""

from . import aba, configuration, crba, derivatives, kinematics, kinematics_derivatives, minverse, rnea

SPECS = {
    s.name: s
    for module in (rnea, crba, aba, minverse, kinematics, configuration, derivatives, kinematics_derivatives)
    for s in module.SPECS
}
for _jacobian in derivatives.JACOBIANS:
    SPECS[_jacobian.of] = SPECS[_jacobian.of]._replace(jacobian=_jacobian)
