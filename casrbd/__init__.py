"""casrbd: rigid-body dynamics as casadi expression graphs."""
from .api import (aba, aba_derivatives, crba, difference, forward_kinematics, frame_jacobian, frame_placement,
                  generalized_gravity, integrate, kinematics_derivatives, minverse, neutral,
                  nonlinear_effects, random_configuration, rnea, rnea_derivatives)
from .functions import function
from .model import Frame, Model
from .spatial import SE3, Inertia
from .urdf import URDFError, URDFWarning, load_urdf

__all__ = ["Frame", "Inertia", "Model", "SE3", "URDFError", "URDFWarning", "aba", "aba_derivatives", "crba", "difference",
           "forward_kinematics", "frame_jacobian", "frame_placement", "function", "generalized_gravity", "integrate",
           "kinematics_derivatives", "load_urdf", "minverse", "neutral", "nonlinear_effects", "random_configuration",
           "rnea", "rnea_derivatives"]
