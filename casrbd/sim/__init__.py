"""Simulation with MuJoCo as the plant (``pip install casrbd[sim]``): ``to_mjcf`` writes a MuJoCo model of
a casrbd ``Model``; ``Plant`` runs it in closed loop with a controller."""

from .mjcf_writer import actuated_dofs, to_mjcf
from .plant import Plant, Push, Record, scaled_masses

__all__ = ["Plant", "Push", "Record", "actuated_dofs", "scaled_masses", "to_mjcf"]
