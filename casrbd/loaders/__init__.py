"""Robot description loaders: safe XML reading (``xml``), a format-neutral model builder
(``builder``), and one module per format doing only the format's mapping (``urdf``, ``mjcf``; the
MuJoCo state maps in ``mujoco_state``)."""

from .builder import LoadError, LoadWarning
from .mjcf import MJCFError, MJCFWarning, load_mjcf
from .urdf import URDFError, URDFWarning, load_urdf

__all__ = ["LoadError", "LoadWarning", "MJCFError", "MJCFWarning", "URDFError", "URDFWarning", "load_mjcf", "load_urdf"]
