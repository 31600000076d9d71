"""Optimal control with casrbd Functions in casadi Opti.

A problem layer (``Problem`` of ``Knot``s with ``Cost`` and ``Constraint`` terms of residuals;
``casrbd.ocp.legged``: Crocoddyl's gaits on it) over what every example would otherwise repeat: the
dynamics Function with analytical or AD Jacobians (optionally compiled to
C), explicit RK4 and implicit-Euler transcriptions of forward dynamics, the
Euler state update on the configuration manifold, a stage-wise declaration
order for Opti (``Stagewise``: what fatrop's structure detection needs), a
Gauss-Newton model of a Function's curvature (``gauss_newton``), IPOPT and
fatrop options and the solver statistics. The problems themselves stay plain
casadi.

The analytical Jacobian of ``casrbd.function(..., jacobian="analytical")``
takes effect where casadi differentiates a *call* of the Function, that is
inside MX graphs (Opti builds MX): build transcription Functions from MX
symbols, since an SX graph inlines the call and differentiates it by AD.
"""

from ..codegen.flags import COMPILE_FLAGS, STAGE_FLAGS, STAGE_O3_MAX, stage_flags
from . import blasfeo, expand
from .compile import GAP_OUTPUT, compile_stages, negated, stage_derivatives
from .expand import keep_analytical
from .knots import INTEGRATORS, Dynamics, Knot, contact_dynamics, free_dynamics, impulse
from .problem import HESSIAN_MODELS, Problem, Solution
from .residuals import (
    CoMPosition,
    CoMVelocity,
    ContactForce,
    Control,
    FootClearance,
    FramePlacement,
    FrameTranslation,
    FrameVelocity,
    FrictionCone,
    JointPosition,
    JointTorque,
    JointVelocity,
    Residual,
    State,
    WrenchCone,
)
from .riccati import LQ, RTI, riccati
from .solvers import HESSIANS, SOLVERS, STAT_FIELDS, SolveError, format_stats, solve, solver_options
from .stages import SX_PRODUCTS_MAX, gauss_newton, gauss_newton_stage, sx_second_order
from .stagewise import MAX_GRADIENT, MAX_SCALE, WARN_STAGES, Stagewise, UncompiledStagesWarning
from .terms import Constraint, Cost, Quadratic, QuadraticBarrier, WeightedQuadratic
from .transcription import (
    DYNAMICS,
    JACOBIANS,
    dynamics,
    euler_step,
    forward_dynamics_ode,
    implicit_euler_residual,
    rk4,
)

__all__ = [
    "INTEGRATORS",
    "Dynamics",
    "Knot",
    "contact_dynamics",
    "free_dynamics",
    "impulse",
    "HESSIAN_MODELS",
    "Problem",
    "Solution",
    "LQ",
    "RTI",
    "riccati",
    "CoMPosition",
    "CoMVelocity",
    "Constraint",
    "ContactForce",
    "Control",
    "Cost",
    "FootClearance",
    "FramePlacement",
    "FrameTranslation",
    "FrameVelocity",
    "FrictionCone",
    "JointPosition",
    "JointTorque",
    "JointVelocity",
    "Quadratic",
    "QuadraticBarrier",
    "Residual",
    "State",
    "WeightedQuadratic",
    "WrenchCone",
    "COMPILE_FLAGS",
    "DYNAMICS",
    "GAP_OUTPUT",
    "HESSIANS",
    "JACOBIANS",
    "MAX_GRADIENT",
    "MAX_SCALE",
    "SOLVERS",
    "STAGE_FLAGS",
    "STAGE_O3_MAX",
    "STAT_FIELDS",
    "SolveError",
    "SX_PRODUCTS_MAX",
    "Stagewise",
    "UncompiledStagesWarning",
    "WARN_STAGES",
    "blasfeo",
    "compile_stages",
    "dynamics",
    "euler_step",
    "expand",
    "format_stats",
    "forward_dynamics_ode",
    "gauss_newton",
    "gauss_newton_stage",
    "implicit_euler_residual",
    "keep_analytical",
    "negated",
    "rk4",
    "solve",
    "solver_options",
    "stage_derivatives",
    "stage_flags",
    "sx_second_order",
]
