"""casrbd: rigid-body dynamics as casadi expression graphs."""

import importlib

from .api import (
    aba,
    aba_derivatives,
    aba_hessian,
    ccrba,
    center_of_mass,
    centroidal_dynamics_derivatives,
    centroidal_momentum,
    centroidal_momentum_time_variation,
    constraint_dynamics,
    constraint_dynamics_derivatives,
    crba,
    dccrba,
    difference,
    forward_kinematics,
    frame_acceleration,
    frame_classical_acceleration,
    frame_jacobian,
    frame_jacobian_time_variation,
    frame_placement,
    frame_velocity,
    generalized_gravity,
    impulse_dynamics,
    impulse_dynamics_derivatives,
    integrate,
    jacobian_center_of_mass,
    joint_torque_regressor,
    kinematics_derivatives,
    kinetic_energy_regressor,
    minverse,
    neutral,
    nonlinear_effects,
    potential_energy_regressor,
    random_configuration,
    rnea,
    rnea_derivatives,
    rnea_hessian,
    rnea_second_order_derivatives,
)
from .cache import CacheWarning
from .codegen import CompileError, compiled
from .functions import SingularMassMatrixError, function
from .loaders import LoadError, LoadWarning, MJCFError, MJCFWarning, URDFError, URDFWarning, load_mjcf, load_urdf
from .model import Body, Frame, Model
from .models import load_robot
from .spatial import SE3, Inertia

__version__ = "0.1.0"


def __getattr__(name):
    """``casrbd.keep_analytical``, ``casrbd.fast`` and ``casrbd.gpu`` when first asked for: importing casrbd
    does not import the optimal-control package nor the numeric front-ends."""
    if name == "keep_analytical":
        from .ocp.expand import keep_analytical

        return keep_analytical
    if name in ("fast", "gpu"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "SE3",
    "Body",
    "CacheWarning",
    "CompileError",
    "Frame",
    "Inertia",
    "LoadError",
    "LoadWarning",
    "MJCFError",
    "MJCFWarning",
    "Model",
    "SingularMassMatrixError",
    "URDFError",
    "URDFWarning",
    "aba",
    "aba_derivatives",
    "aba_hessian",
    "ccrba",
    "center_of_mass",
    "centroidal_dynamics_derivatives",
    "centroidal_momentum",
    "centroidal_momentum_time_variation",
    "compiled",
    "constraint_dynamics",
    "constraint_dynamics_derivatives",
    "crba",
    "dccrba",
    "difference",
    "forward_kinematics",
    "frame_acceleration",
    "frame_classical_acceleration",
    "frame_jacobian",
    "frame_jacobian_time_variation",
    "frame_placement",
    "frame_velocity",
    "function",
    "generalized_gravity",
    "impulse_dynamics",
    "impulse_dynamics_derivatives",
    "integrate",
    "keep_analytical",
    "jacobian_center_of_mass",
    "joint_torque_regressor",
    "kinematics_derivatives",
    "kinetic_energy_regressor",
    "load_mjcf",
    "load_robot",
    "load_urdf",
    "minverse",
    "neutral",
    "nonlinear_effects",
    "potential_energy_regressor",
    "random_configuration",
    "rnea",
    "rnea_derivatives",
    "rnea_hessian",
    "rnea_second_order_derivatives",
]
