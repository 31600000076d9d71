"""Robot description loaders: safe XML reading (``xml``), a format-neutral model builder
(``builder``), and one module per format doing only the format's mapping (``urdf``, ``mjcf``; the
MuJoCo state maps in ``mujoco_state``); ``srdf`` reads a model's named poses and rotor armature."""

from .builder import LoadError, LoadWarning
from .mjcf import MJCFError, MJCFWarning, load_mjcf
from .srdf import SRDF, SRDFError, load_srdf
from .urdf import URDFError, URDFWarning, load_urdf

__all__ = [
    "SRDF",
    "LoadError",
    "LoadWarning",
    "MJCFError",
    "MJCFWarning",
    "SRDFError",
    "URDFError",
    "URDFWarning",
    "load_mjcf",
    "load_srdf",
    "load_urdf",
]
