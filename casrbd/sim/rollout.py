"""A plant without MuJoCo: the numeric ``aba`` integrated by RK4 with fine steps (a reference to replay
planned torques on)."""

import numpy as np

from ..api import aba
from ..ocp.transcription import rk4


def simulate_aba(model, x, taus, dt, substeps):
    """From the state x = [q; v] (nq = nv), each torque of ``taus`` held in turn for ``dt``, in
    ``substeps`` RK4 steps of the numeric aba; the final state."""
    if model.nq != model.nv:
        raise ValueError(f"model {model.name!r}: simulate_aba takes a state [q; v] with nq = nv, got nq {model.nq}")

    def ode(x, u):
        return np.r_[x[model.nq :], aba(model, x[: model.nq], x[model.nq :], u)]

    for tau in taus:
        for _ in range(substeps):
            x = rk4(ode, x, tau, dt / substeps)
    return x
