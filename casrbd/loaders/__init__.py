"""Robot description loaders: safe XML reading (``xml``), a format-neutral model builder
(``builder``), and one module per format doing only the format's mapping (``urdf``)."""

from .builder import LoadError, LoadWarning
from .urdf import URDFError, URDFWarning, load_urdf

__all__ = ["LoadError", "LoadWarning", "URDFError", "URDFWarning", "load_urdf"]
