"""Centroidal dynamics: the centroidal momentum matrix, its rate, and their derivatives.

The centroidal momentum h_G = A_G(q) v is the robot's momentum [linear;
angular] about its centre of mass c, in world axes (Orin, Goswami & Lee,
"Centroidal dynamics of a humanoid robot", Autonomous Robots 35, 2013;
Pinocchio's ``ccrba``, ``dccrba``, ``computeCentroidalMomentumTimeVariation``,
``computeCentroidalDynamicsDerivatives``). Column set j of A_G is the
composite inertia of the subtree of joint j times S_j, moved to c:
X_G^* I^C_j S_j (CCRBA, Orin et al. section 3).

Frames, two: ``ccrba`` composes the composite inertias in the algorithm frames as crba
does, and the placement of every body frame seen from c (world axes) along
the tree, which carries its force set I^C_j S_j there in one step; the momentum rate sums the
local pass's forces (``passes.local``) the same way. ``dccrba`` and the derivatives
read the world pass in each tree's frame (``idsva.forward`` on ``passes.world``: a
free-flyer root's frame, else the world) and its composite quantities
(Singh, Russell & Wensing, RA-L 2022): with absolute velocities expressed
in a tree frame, d/dt (I^C S) = 2 B^C S - S x* h^C + I^C (v x S), and the
derivatives of the composite momentum and force along joint j are those of
a rigid motion of its subtree about S_j (Carpentier & Mansard, RSS 2018):
  d h^C / dq_j = S_j x* h^C_j + I^C_j Psid_j,
  d f^C / dq_j = 2 B^C_j Psid_j + I^C_j Psidd_j + S_j x* f^C_j,
  d f^C / dqd_j = 2 B^C_j S_j + I^C_j (Sd_j + Psid_j),
where f^C (gravity included) at c differs from dh_G/dt by the constant m g.
Moving c itself adds [0; p x dc/dq] (p the linear momentum or force), and a
free-flyer root's own columns move the tree frame: X_G^* (e_j x* y).
Glossary (code -> symbol, frame): X = X_G (tree frame -> c, world axes),
IC, BC2, hC, fC the composites I^C, 2 B^C, h^C, f^C (tree frame),
Ag A_G, dAg dA_G/dt, hg h_G, dhg dh_G/dt (world axes at c).
"""

from typing import NamedTuple

import casadi as ca

from ..spatial import SE3, SE3Chain, cross, force_bar_matrix, force_cross, lin, skew, symmetric
from ..spec import Jacobian, Out, Spec, configuration, tangent
from .crba import composite_inertias
from .frame_motion import total_mass
from .idsva import composites as idsva_composites
from .idsva import forward
from .passes.local import local_pass
from .passes.tree import base_acceleration, compose, free_flyer_roots, motion_subspaces, placements, subtree_sums


def _roots(model):
    return [i for i, p in enumerate(model.parents) if p < 0]


def _root_placements(model, liMi):
    """The placement of each root's algorithm frame in the world."""
    return {r: liMi[r].se3() if isinstance(liMi[r], SE3Chain) else liMi[r] for r in _roots(model)}


def _to_center(W, c):
    """X_G: the placement W of a frame in the world, seen from c with world axes."""
    return SE3(W.R, W.p - c)


def _center(model, W, first_moments):
    """c from each root's placement W[r] and its tree's first moment (mass, h) in the root frame."""
    m = total_mass(model)
    return sum((ca.mtimes(W[r].R, h) + mass * W[r].p for r, (mass, h) in first_moments.items()), 0) / m


def ccrba(model, q, v):
    """(A_G, h_G = A_G v)."""
    liMi, S = placements(model, q), motion_subspaces(model, q)
    IC = composite_inertias(model, liMi, model.algorithm_frames.inertias)
    W = _root_placements(model, liMi)
    X = {r: _to_center(W[r], _center(model, W, {k: (IC[k].mass, IC[k].h) for k in W})) for r in W}
    cols, gM = [], {}
    for i in range(model.njoints):
        p = model.parents[i]
        gM[i] = X[i] if p < 0 else compose(gM[p], liMi[i])  # body i seen from c, world axes
        if len(W) == 1 and p < 0 and model.joints[i].full_motion:  # the whole robot: c is its centre of mass
            cols.append(_free_flyer_columns(W[i].R, IC[i]))
        else:
            cols.append(gM[i].act_force(IC[i].act(S[i])))
    Ag = ca.horzcat(ca.DM(6, 0), *cols)
    return Ag, ca.mtimes(Ag, v)


def _free_flyer_columns(R, Y):
    """X_G^* I^C S for a free-flying root carrying the whole robot (S = 1, h = m c in its frame):
    [[m R, -R [h]x], [0, R I_c]], with I_c = I + [h]x [h]x / m the inertia about c."""
    H = skew(Y.h)
    Ic = symmetric(Y.I + ca.mtimes(H, H) / Y.mass)
    return ca.blockcat([[Y.mass * R, -ca.mtimes(R, H)], [ca.DM(3, 3), ca.mtimes(R, Ic)]])


class Composites(NamedTuple):
    fw: object  # idsva.Forward
    X: dict  # root -> X_G of its tree frame
    IC: list
    BC2: list
    hC: list
    fC: list


def composites(model, q, v, a):
    """IDSVA's forward pass and the composite quantities of every subtree, with X_G per tree."""
    fw = forward(model, q, v, a)
    IC, BC2, fC = idsva_composites(model, fw)
    hC = subtree_sums(model, [I.act(vi) for I, vi in zip(fw.world.I, fw.world.v)])
    W = {r: fw.world.T[r] for r in _roots(model)}
    c = _center(model, W, {r: (IC[r].mass, IC[r].h) for r in W})
    return Composites(fw, {r: _to_center(W[r], c) for r in W}, IC, BC2, hC, fC)


def _tree_root(model, i):
    return model.supports[i][0]


def _mass_rate(model, cs, y):
    """Sum over the trees of the linear part of X_G^* y[r], world axes."""
    return sum((ca.mtimes(X.R, lin(y[r])) for r, X in cs.X.items()), 0)


def _crossed(S, f):
    """S_k x* f for each column S_k of the set S."""
    return ca.mtimes(force_bar_matrix(f), S)


def _moved_center(p, Jc):
    """[0; p x dc]: the change of a force about c when c moves by Jc (3 x k)."""
    return ca.vertcat(ca.DM(3, Jc.shape[1]), cross(p, Jc))


def dccrba(model, q, v):
    """dA_G/dt."""
    cs = composites(model, q, v, ca.DM.zeros(model.nv))
    m = total_mass(model)
    vc = _mass_rate(model, cs, cs.hC) / m
    cols = []
    for i in range(model.njoints):
        X, S = cs.X[_tree_root(model, i)], cs.fw.world.S[i]
        Ag = X.act_force(cs.IC[i].act(S))
        dF = cs.BC2[i].times(S) - _crossed(S, cs.hC[i]) + cs.IC[i].act(cs.fw.Sd[i])
        cols.append(X.act_force(dF) - force_cross(ca.vertcat(vc, ca.DM.zeros(3, 1)), Ag))
    return ca.horzcat(ca.DM(6, 0), *cols)


def centroidal_momentum_time_variation(model, q, v, a):
    """(h_G, dh_G/dt) without gravity (Pinocchio's ``computeCentroidalMomentumTimeVariation``),
    from rnea's forward pass: dh_G/dt = X_G^* f^C + [m g; 0], f^C the bodies' forces with gravity."""
    fp = local_pass(model, q, v, a)
    inertias = model.algorithm_frames.inertias

    def to_parent(i, y):
        return fp.liMi[i].act_force(y)

    h = subtree_sums(model, [I.act(vi) for I, vi in zip(inertias, fp.v)], to_parent)
    f = subtree_sums(model, fp.f, to_parent)
    roots = _roots(model)
    IC = composite_inertias(model, fp.liMi, inertias)
    W = _root_placements(model, fp.liMi)
    c = _center(model, W, {r: (IC[r].mass, IC[r].h) for r in roots})
    hg = sum((_to_center(W[r], c).act_force(h[r]) for r in roots), 0)
    dhg = sum((_to_center(W[r], c).act_force(f[r]) for r in roots), 0)
    return hg, dhg - total_mass(model) * base_acceleration(model)


def centroidal_dynamics_derivatives(model, q, v, a):
    """(dh_G/dq, d(dh_G/dt)/dq, d(dh_G/dt)/dv, d(dh_G/dt)/da = A_G); d/dq on the tangent space."""
    cs = composites(model, q, v, a)
    fw = cs.fw
    m = total_mass(model)
    Ag = [cs.X[_tree_root(model, i)].act_force(cs.IC[i].act(S)) for i, S in enumerate(fw.world.S)]
    p, dp = _mass_rate(model, cs, cs.hC), _mass_rate(model, cs, cs.fC)  # m c', m c'' - m g
    mg = m * ca.DM(model.gravity)
    roots = free_flyer_roots(model)
    dh_dq, dhd_dq, dhd_dv = [], [], []
    for i in range(model.njoints):
        X, S = cs.X[_tree_root(model, i)], fw.world.S[i]
        Jc = lin(Ag[i]) / m
        if i in roots:  # the tree frame moves: X_G^* (e_j x* y), y without gravity does not change
            dh = _crossed(S, cs.hC[i])
            dhd = _crossed(S, cs.fC[i] - cs.IC[i].act(fw.world.a0[i]))
            force = dp + mg
        else:
            dh = _crossed(S, cs.hC[i]) + cs.IC[i].act(fw.Psid[i])
            dhd = cs.BC2[i].times(fw.Psid[i]) + cs.IC[i].act(fw.Psidd[i]) + _crossed(S, cs.fC[i])
            force = dp
        dh_dq.append(X.act_force(dh) + _moved_center(p, Jc))
        dhd_dq.append(X.act_force(dhd) + _moved_center(force, Jc))
        dhd_dv.append(X.act_force(cs.BC2[i].times(S) + cs.IC[i].act(fw.Sd[i] + fw.Psid[i])))
    return tuple(ca.horzcat(ca.DM(6, 0), *x) for x in (dh_dq, dhd_dq, dhd_dv, Ag))


def centroidal_momentum(model, q, v):
    """h_G = A_G v (Pinocchio's ``computeCentroidalMomentum``)."""
    return ccrba(model, q, v)[1]


def centroidal_momentum_jacobian(model, q, v, out=None):
    """The analytical Jacobian of ``centroidal_momentum``: dh_G/dq and A_G."""
    dh_dq, _, _, Ag = centroidal_dynamics_derivatives(model, q, v, ca.DM.zeros(model.nv))
    return {("hg", "q"): dh_dq, ("hg", "v"): Ag}


STATE = (configuration(), tangent("v"))
SPECS = (
    Spec("ccrba", ccrba, STATE, (Out("Ag"), Out("hg", "vector"))),
    Spec("centroidal_momentum", centroidal_momentum, STATE, (Out("hg", "vector"),)),
    Spec("dccrba", dccrba, STATE, (Out("dAg"),)),
    Spec(
        "centroidal_momentum_time_variation",
        centroidal_momentum_time_variation,
        STATE + (tangent("a"),),
        (Out("hg", "vector"), Out("dhg", "vector")),
    ),
    Spec(
        "centroidal_dynamics_derivatives",
        centroidal_dynamics_derivatives,
        STATE + (tangent("a"),),
        (Out("dh_dq"), Out("dhdot_dq"), Out("dhdot_dv"), Out("dhdot_da")),
    ),
)
JACOBIANS = (Jacobian("centroidal_momentum", centroidal_momentum_jacobian),)
