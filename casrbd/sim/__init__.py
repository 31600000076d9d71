"""Simulation with MuJoCo as the plant (``pip install casrbd[sim]``): ``to_mjcf`` writes a MuJoCo model of
a casrbd ``Model``; ``Plant`` runs it in closed loop with a controller; ``reach_targets`` runs the arm's
reaching MPC on it; ``simulate_aba`` is a plant without MuJoCo (the numeric aba, RK4)."""

from .mjcf_writer import actuated_dofs, to_mjcf
from .plant import Plant, Push, Record, scaled_masses
from .reach import reach_summary, reach_targets
from .rollout import simulate_aba

__all__ = [
    "Plant",
    "Push",
    "Record",
    "actuated_dofs",
    "reach_summary",
    "reach_targets",
    "scaled_masses",
    "simulate_aba",
    "to_mjcf",
]
