"""casrbd: rigid-body dynamics as casadi expression graphs."""
from .api import (aba, crba, difference, forward_kinematics, frame_jacobian, frame_placement, function,
                  generalized_gravity, integrate, minverse, neutral, nonlinear_effects, random_configuration,
                  rnea)
from .model import Frame, Model
from .spatial import SE3, Inertia
from .urdf import URDFError, load_urdf

__all__ = ["Frame", "Inertia", "Model", "SE3", "URDFError", "aba", "crba", "difference", "forward_kinematics",
           "frame_jacobian", "frame_placement", "function", "generalized_gravity", "integrate", "load_urdf",
           "minverse", "neutral", "nonlinear_effects", "random_configuration", "rnea"]
