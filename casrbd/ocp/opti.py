"""Pieces of optimal-control problems written by hand in casadi ``Opti`` (examples/legged.py,
humanoid_com.py, arm_p2p.py, ...): contact forces at frames as rnea's ``f_ext``, friction pyramids and a
sole's wrench cone, a contact schedule over equal intervals, a straight-line guess, the IPOPT solve and
the solution per node.
"""

import casadi as ca
import numpy as np

from ..functions import function
from .solvers import solve, solver_options


def contact_forces(model, q, frames, forces):
    """rnea's ``f_ext`` (6 x njoints, each column in its joint's frame) of ``forces`` at ``frames``: a
    column per frame, in world axes, a force at the frame's origin (3 rows) or a wrench [f; tau] about
    it (6 rows); numbers (a DM) or casadi expressions.

    A wrench [f; tau] at the frame is, in the frame of the frame's joint i (rotation o_R_i from forward
    kinematics), [i_R_o f; i_R_o tau + r x i_R_o f], r the frame's fixed offset from the joint."""
    if forces.shape[0] not in (3, 6) or forces.shape[1] != len(frames):
        raise ValueError(f"forces must be 3 or 6 x {len(frames)} (a column per frame), got {forces.shape}")
    oMi = function(model, "forward_kinematics")(q)
    columns = [ca.DM.zeros(6, 1) for _ in range(model.njoints)]
    for k, name in enumerate(frames):
        frame = model.frames[model.frame_index(name)]
        i = frame.joint
        i_R_o = oMi[:3, 4 * i : 4 * i + 3].T
        f = ca.mtimes(i_R_o, forces[:3, k])
        tau = ca.cross(ca.DM(np.asarray(frame.placement.p).ravel()), f)
        if forces.shape[0] == 6:
            tau = ca.mtimes(i_R_o, forces[3:, k]) + tau
        columns[i] = columns[i] + ca.vertcat(f, tau)
    return ca.horzcat(*columns)


def friction_pyramid(opti, f, mu):
    """Forces ``f`` (3 x k, world axes, z up) pushing (f_z >= 0) inside the linearised friction cone
    |f_x|, |f_y| <= mu f_z."""
    opti.subject_to(f[2, :] >= 0)
    for k in (0, 1):
        opti.subject_to(opti.bounded(-mu * f[2, :], f[k, :], mu * f[2, :]))


def schedule(nodes, phases):
    """The phase index of each of ``nodes`` equal intervals and their dt, for ``phases`` a sequence of
    (anything, seconds)."""
    duration = sum(s for _, s in phases)
    ends = np.cumsum([s for _, s in phases]) / duration * nodes
    return np.searchsorted(ends, np.arange(nodes) + 0.5), duration / nodes


def interpolate(start, goal, nodes):
    """``nodes`` + 1 columns from ``start`` to ``goal`` at constant speed (an initial guess)."""
    s = np.linspace(0, 1, nodes + 1)
    return np.outer(start, 1 - s) + np.outer(goal, s)


def solve_ipopt(opti, **options):
    """Solves ``opti`` with IPOPT and ``solver_options(**options)``: (stats, value), ``value`` giving
    the solution, or the last iterate if the solve failed (``opti.debug.value``)."""
    opti.solver("ipopt", solver_options(**options))
    return solve(opti), opti.debug.value


def trajectories(value, dt, **expressions):
    """A solution per node: the values of each Opti expression of ``expressions`` (one column per node) as
    rows, one per node, with the node times ``t`` (as many as the longest has nodes) and ``dt``."""
    out = {name: np.atleast_2d(value(x)).T for name, x in expressions.items()}
    out.update(t=np.arange(max(len(rows) for rows in out.values())) * dt, dt=dt)
    return out


def sole_wrench_cone(opti, w, mu, half_length, half_width):
    """Wrenches ``w`` = [f; tau] (6 x k, world axes, z up, about the sole's centre) of a flat sole: f in its
    ``friction_pyramid``, the centre of pressure within the sole, |tau_y| <= half_length f_z and |tau_x| <=
    half_width f_z."""
    f, tau = w[:3, :], w[3:, :]
    friction_pyramid(opti, f, mu)
    opti.subject_to(opti.bounded(-half_length * f[2, :], tau[1, :], half_length * f[2, :]))
    opti.subject_to(opti.bounded(-half_width * f[2, :], tau[0, :], half_width * f[2, :]))


def wrench_about(c, p, w):
    """A wrench w = [f; tau] at point p (world axes), about point c."""
    return ca.vertcat(w[:3], w[3:] + ca.cross(p - c, w[:3]))
