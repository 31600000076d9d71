"""casrbd: rigid-body dynamics as casadi expression graphs."""

from .api import (
    aba,
    aba_derivatives,
    crba,
    difference,
    forward_kinematics,
    frame_jacobian,
    frame_placement,
    generalized_gravity,
    integrate,
    kinematics_derivatives,
    minverse,
    neutral,
    nonlinear_effects,
    random_configuration,
    rnea,
    rnea_derivatives,
)
from .functions import SingularMassMatrixError, function
from .loaders import LoadError, LoadWarning, URDFError, URDFWarning, load_urdf
from .model import Body, Frame, Model
from .spatial import SE3, Inertia

__all__ = [
    "SE3",
    "Body",
    "Frame",
    "Inertia",
    "LoadError",
    "LoadWarning",
    "Model",
    "SingularMassMatrixError",
    "URDFError",
    "URDFWarning",
    "aba",
    "aba_derivatives",
    "crba",
    "difference",
    "forward_kinematics",
    "frame_jacobian",
    "frame_placement",
    "function",
    "generalized_gravity",
    "integrate",
    "kinematics_derivatives",
    "load_urdf",
    "minverse",
    "neutral",
    "nonlinear_effects",
    "random_configuration",
    "rnea",
    "rnea_derivatives",
]
