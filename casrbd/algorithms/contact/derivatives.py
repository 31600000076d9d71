"""Derivatives of the contact and impulse dynamics, and the analytical Jacobians they install.

Differentiating the KKT system of ``dynamics.py`` at its solution (Carpentier
& Mansard, "Analytical Derivatives of Rigid Body Dynamics Algorithms", RSS
2018, the contact-dynamics derivatives; Pinocchio's
``computeConstraintDynamicsDerivatives``): with ID(q, v, a, lambda) =
rnea(q, v, a, f_ext(lambda)) = M a + b - J^T lambda and c(q, v, a) = J a +
gamma - a_BG the contact acceleration error (local axes), for x in {q, v},
    dlambda/dx = -K^-1 (dc/dx - J M^-1 dID/dx),   dddq/dx = M^-1 (J^T dlambda/dx - dID/dx),
    dlambda/dtau = -K^-1 J M^-1,                  dddq/dtau = M^-1 + M^-1 J^T dlambda/dtau,
with K = J M^-1 J^T + mu I. dID/dx is IDSVA's (``idsva.py``) with the local
contact forces as external forces, which turn with their bodies; every
product with M^-1 goes through the sparse factor (Y = L^-T J^T, W = L^-T
dID/dx, M^-1 B = L^-1 D^-1 L^-T B). The impulse dynamics differentiate
M (v+ - v-) - J^T P = 0 and J (v+ + r v-) + mu P = 0 the same way, M (v+ -
v-) - J^T P being rnea without gravity at zero velocity.

The contact-frame derivatives come in closed form from the tree-frame pass
(``passes.world``, absolute velocities in a free-flyer root's
frame): moving q_j turns the subtree of joint j about S_j, so for a frame f
on body i, with p the parent of j,
    dv_f/dq_j = fX (v_p x S_j) = fX Psid_j,          dv_f/dqd_j = fX S_j,
    da_f/dq_j = fX (a_p x S_j + Psid_j x (v_i - v_p)),
    da_f/dqd_j = fX (Psid_j + S_j x (v_i - v_j)),
gravity excluded; the classical acceleration adds w x v_lin. Baumgarte
adds kd dv/dx and kp de_p/dq: J_lin + [e_p]x J_ang (3d) or Jlog6 J (6d;
Jlog6 by casadi's AD of ``log6`` at the contact, a 6 x 6 block). Forces in
world axes (``local_world_aligned``), lambda_W = R lambda, add the turn of R:
dlambda_W/dq = R dlambda/dq - [lambda_W]x R J_ang.
The tree's topology says which products are zero (contacts on different branches: two feet, four feet,
hands): the columns of Y, of W for a dof and of K^-1 DY^T live on the dofs that support them, the
feet couple only through their common ancestors (the base), and dlambda/dx for a dof that supports no
contact is K^-1 DY^T W (dc/dx is zero there); dddq/dtau is one symmetric product G P G^T through the
factor's sparsity (``ltdl.sandwich``).
Glossary: dc_dq, dc_dv (dc/dx), dID (dID/dx), W = L^-T dID, DY = D^-1 Y, cp the ``Coupling``
(R, V, T, Q).
"""

from typing import NamedTuple

import casadi as ca

from ...model import per_model
from ...spatial import lin, motion_cross, skew, symmetric
from ...spec import Jacobian, Out, Spec, configuration, tangent
from ..idsva import idsva
from ..passes import ltdl
from ..passes.memo import shared
from ..passes.tree import columns, free_flyer_roots
from ..passes.world import world_pass
from . import dynamics
from .sets import IMPULSE_OPTIONS, OPTIONS, check_contacts


def frame_derivatives(model, w, frame, fMT, acceleration=True):
    """(dv/dq, da/dq, da/dqd) of a frame's local velocity and acceleration (6 x nv each; dv/dqd is
    its ``local_jacobian``) from the world pass ``w`` without gravity."""
    i = model.frames[frame].joint
    dv_dq, da_dq, da_dv = [], [], []
    zero = ca.DM.zeros(6, 1)
    for j in model.supports[i] if i >= 0 else ():
        p, S = model.parents[j], w.S[j]
        v_p = zero if p < 0 else w.v[p]
        Psid = motion_cross(v_p, S)
        dv_dq.append(columns(model, j, fMT.act_motion(Psid)))
        if acceleration:
            a_p = zero if p < 0 else w.a[p]
            da = motion_cross(a_p, S) - motion_cross(w.v[i] - v_p, Psid)
            da_dq.append(columns(model, j, fMT.act_motion(da)))
            da_dv.append(columns(model, j, fMT.act_motion(Psid - motion_cross(w.v[i] - w.v[j], S))))
    return tuple(sum(x, ca.DM(6, model.nv)) for x in (dv_dq, da_dq, da_dv))


def constraint_derivatives(model, kin, contacts, kp=0.0, kd=0.0):
    """(dc/dq, dc/dv) stacked over the contacts, local axes, at the pass ``kin`` (at ddq)."""
    dq, dv = [], []
    for c, fm, J in zip(contacts, kin.fm, kin.J6):
        vdq, adq, adv = frame_derivatives(model, kin.world, c.frame, fm.fMT)
        dq_c, dv_c = c.kind.acceleration_derivatives(fm.v, J, vdq, adq, adv)
        if kd:
            dq_c, dv_c = dq_c + kd * c.select(vdq), dv_c + kd * c.select(J)
        if kp:
            dq_c = dq_c + kp * c.kind.position_error_jacobian(c.anchor, fm.oMf, J)
        dq.append(dq_c)
        dv.append(dv_c)
    return ca.vertcat(ca.DM(0, model.nv), *dq), ca.vertcat(ca.DM(0, model.nv), *dv)


@shared
def contact_forces(model, contacts, lam):
    """f_ext (6 x njoints, joint frames) of the local contact forces or impulses ``lam``."""
    cols = [0] * model.njoints
    k = 0
    for c in contacts:
        f = c.kind.force(lam[k : k + c.rows])
        j = model.frames[c.frame].joint
        cols[j] = cols[j] + model.frames[c.frame].placement.act_force(f)
        k += c.rows
    return ca.horzcat(*[ca.DM.zeros(6, 1) if isinstance(x, int) else x for x in cols])


def supporting_dofs(model, contacts):
    """The velocity coordinates of the joints that support a contact: the only ones that move it."""
    joints = {j for c in contacts for j in model.supports[model.frames[c.frame].joint]}
    return {k for j in joints for k in range(model.v_slice(j).start, model.v_slice(j).stop)}


class Coupling(NamedTuple):
    """The contact terms of the KKT derivatives, K = L_K D_K L_K^T; R and Q are nonzero on the dofs that
    support the contacts only (DY's rows), from which G spreads V and T down the tree."""

    R: object  # L_K^-1 DY^T
    DR: object  # D_K^-1 R
    V: object  # G R^T = M^-1 J^T L_K^-T
    DV: object  # V D_K^-1
    T: object  # M^-1 J^T K^-1 = (L_K^-T DV^T)^T
    Q: object  # K^-1 DY^T = L_K^-T DR
    MJt: object  # M^-1 J^T = G DY
    dofs: set  # the dofs that support a contact (``supporting_dofs``)
    tau: bool  # T is needed anyway (dlambda/dtau of the contact dynamics), and so is R
    product: object  # L^-1 B: ``ltdl.g_times`` where some dof supports no contact (sparse columns), else
    # the forward substitution (``dynamics.l_solve``: every column fills the tree)


def coupling(model, dl, contacts, tau):
    dofs = supporting_dofs(model, contacts)
    product = ltdl.g_times if len(dofs) < model.nv else dynamics.l_solve
    R = ca.vertcat(*dl.K.lower(dl.DY.T))
    DR = ca.vertcat(*[d * R[k, :] for k, d in enumerate(dl.K.dinv)])
    V = product(model, dl.f, R.T)
    DV = ca.horzcat(*[d * V[:, k] for k, d in enumerate(dl.K.dinv)])
    T = dl.K.upper([DV[:, k].T for k in range(DV.shape[1])]).T
    Q = dl.K.upper([DR[k, :] for k in range(DR.shape[0])])
    return Coupling(R, DR, V, DV, T, Q, product(model, dl.f, dl.DY), dofs, tau, product)


def _kkt(model, dl, cp, dID, dc, dofs):
    """(dlambda, dddq) for the partial derivatives dID, dc (columns side by side, by the dofs ``dofs``):
    W = L^-T dID keeps the zeros of the branches off each column's joint; dlambda = -K^-1 (dc - DY^T W),
    or Q W where the dof supports no contact (dc zero there) and such dofs are many, summing over the
    contact-supporting dofs among W's nonzeros; dddq = -G (D^-1 W - DY dlambda) over the nonzeros."""
    W = ltdl.lt_solve(model, dl.f, dID)
    if dl.J.shape[0] == 0:
        return ca.DM(0, dID.shape[1]), -ltdl.g_times(model, dl.f, ltdl.scaled(dl.f, W))
    rest = [k for k, d in enumerate(dofs) if d not in cp.dofs]
    # Q costs about nc^2 |dofs| / 2 with R at hand (else twice) and saves about nc^2 per column (the
    # contact dynamics have two sets of them, d/dq and d/dv)
    if not cp.tau and len(rest) <= len(cp.dofs):
        rest = []
    moving = [k for k in range(len(dofs)) if k not in rest]
    cols = dict(zip(moving, ca.horzsplit(-dl.K.solve(dc[:, moving] - ca.mtimes(dl.DY.T, W[:, moving])))))
    cols.update(zip(rest, ca.horzsplit(ca.mtimes(cp.Q, W[:, rest]))))
    dlam = ca.horzcat(ca.DM(dl.J.shape[0], 0), *[cols[k] for k in range(len(dofs))])
    return dlam, -cp.product(model, dl.f, ltdl.scaled(dl.f, W) - ca.mtimes(dl.DY, dlam))


def _kkt_free_flyers(model, q, dl, cp, dID_dq, dc_dq):
    """(dlambda/dq, dddq/dq) where the columns of free-flyer roots are closed-form: moving a whole tree
    turns only gravity in its frame (``idsva.py``: dID/dq_r = -M[:, r:r+3] [g_b]x on rotations), so
    M^-1 dID/dq_r = Z_r is -[g_b]x on the root's linear rows, and J M^-1 dID/dq_r = J[:, r:r+3] Z; the
    contact errors, local, change only through kp (in dc_dq). ``cp``: the ``Coupling`` (None without
    contacts); M^-1 J^T dlambda is -T (...) where T is needed anyway."""
    roots = free_flyer_roots(model)
    base = [model.idx_v[r] + k for r in roots for k in range(6)]
    other = [c for c in range(model.nv) if c not in base]
    lam_cols, ddq_cols = {}, {}
    if other:
        dlam, dddq = _kkt(model, dl, cp, dID_dq[:, other], dc_dq[:, other], other)
        for j, c in enumerate(other):
            lam_cols[c], ddq_cols[c] = dlam[:, j], dddq[:, j]
    a0 = world_pass(model, q).a0
    for r in roots:
        c = model.idx_v[r]
        Z = ca.vertcat(ca.DM(c, 6), ca.horzcat(ca.DM(3, 3), skew(lin(a0[r]))), ca.DM(model.nv - c - 3, 6))
        if dl.J.shape[0]:
            e = dc_dq[:, c : c + 6] - ca.mtimes(dl.J[:, c : c + 3], Z[c : c + 3, :])
            dlam = -dl.K.solve(e)
            dddq = (-ca.mtimes(cp.T, e) if cp.tau else ca.mtimes(cp.MJt, dlam)) - Z
        else:
            dlam, dddq = ca.DM(0, 6), -Z
        for k in range(6):
            lam_cols[c + k], ddq_cols[c + k] = dlam[:, k], dddq[:, k]
    return tuple(ca.horzcat(*[cols[k] for k in range(model.nv)]) for cols in (lam_cols, ddq_cols))


def _force_input(model, dl, cp):
    """(dlambda/dtau, dddq/dtau): dlambda/dtau = -K^-1 J M^-1 = -T^T, and dddq/dtau = M^-1 - M^-1 J^T K^-1
    J M^-1 = G (D^-1 - R^T D_K^-1 R) G^T, one symmetric product through G's sparsity (``ltdl.sandwich``)
    where D^-1 - R^T D_K^-1 R is diagonal but on the dofs that support the contacts, or M^-1 - DV V^T
    row by row where that is shorter."""
    Dinv = ca.diag(ca.vertcat(*dl.f.Dinv))
    if dl.J.shape[0] == 0:
        return ca.DM(0, model.nv), ltdl.sandwich(model, dl.f, Dinv)
    P = Dinv - symmetric(ca.mtimes(cp.R.T, cp.DR))
    return -cp.T.T, ltdl.sandwich(model, dl.f, P, (cp.DV, cp.V))


def world_aligned(contacts, kin, lam, d_dq, others):
    """The derivatives of the forces in world axes: lam local, d_dq and the sets ``others`` local."""
    rotated = [dynamics.in_reference(contacts, kin.fm, d, "local_world_aligned") for d in (d_dq, *others)]
    lam_w = dynamics.in_reference(contacts, kin.fm, lam, "local_world_aligned")
    turn, k = [], 0
    for c, fm, J6 in zip(contacts, kin.fm, kin.J6):
        turn += c.kind.world_turn(lam_w[k : k + c.rows], fm.oMf.R, J6)
        k += c.rows
    return (rotated[0] + ca.vertcat(ca.DM(0, d_dq.shape[1]), *turn), *rotated[1:])


@shared
def nominal_solution(model, q, v, ddq, lam, contacts, reference, damping):
    """The ``dynamics.Solution`` at the nominal (ddq, lambda in ``reference``) that casadi hands the
    derivative Functions: the Delassus factors, not a second solve of the KKT system."""
    kin = dynamics.contact_kinematics(model, q, v, None, contacts)
    dl = dynamics.delassus(model, q, kin.J, damping)
    return dynamics.Solution(kin, dl, ddq, dynamics.local_forces(contacts, kin.fm, lam, reference))


@shared
def local_constraint_derivatives(model, q, v, sol, contacts, kp, kd):
    """(kin at ddq, (dddq/dq, dddq/dv, dddq/dtau, dlambda/dq, dlambda/dv, dlambda/dtau)) at the solution
    ``sol`` (its Delassus factors, ddq and local lambda), forces in local axes."""
    kin = dynamics.contact_kinematics(model, q, v, sol.ddq, contacts)
    dID_dq, dID_dv, _ = idsva(model, q, v, sol.ddq, contact_forces(model, contacts, sol.lam))
    dc_dq, dc_dv = constraint_derivatives(model, kin, contacts, kp, kd)
    cp = coupling(model, sol.dl, contacts, True) if contacts else None
    dlam_dtau, dddq_dtau = _force_input(model, sol.dl, cp)
    dlam_dq, dddq_dq = _kkt_free_flyers(model, q, sol.dl, cp, dID_dq, dc_dq)
    dlam_dv, dddq_dv = _kkt(model, sol.dl, cp, dID_dv, dc_dv, range(model.nv))
    return kin, (dddq_dq, dddq_dv, dddq_dtau, dlam_dq, dlam_dv, dlam_dtau)


def constraint_dynamics_derivatives(
    model, q, v, tau, contacts, reference="local", kp=0.0, kd=0.0, damping=0.0, out=None
):
    """(dddq/dq, dddq/dv, dddq/dtau, dlambda/dq, dlambda/dv, dlambda/dtau); d/dq on the tangent space;
    at the nominal outputs ``out`` (ddq, lambda_c) where casadi hands them, else at a solve."""
    check_contacts(model, contacts, damping, kp)
    if out is None:
        sol = dynamics.solve(model, q, v, tau, contacts, kp, kd, damping)
    else:
        sol = nominal_solution(model, q, v, out["ddq"], out["lambda_c"], contacts, reference, damping)
    kin, d = local_constraint_derivatives(model, q, v, sol, contacts, kp, kd)
    dddq_dq, dddq_dv, dddq_dtau, dlam_dq, dlam_dv, dlam_dtau = d
    if reference == "local_world_aligned" and contacts:
        dlam_dq, dlam_dv, dlam_dtau = world_aligned(contacts, kin, sol.lam, dlam_dq, (dlam_dv, dlam_dtau))
    return dddq_dq, dddq_dv, dddq_dtau, dlam_dq, dlam_dv, dlam_dtau


@per_model
def weightless(model):
    """The model without gravity: its rnea at zero velocity is M a."""
    return model.with_gravity((0.0, 0.0, 0.0))


def impulse_dynamics_derivatives(model, q, v, contacts, reference="local", restitution=0.0, damping=0.0):
    """(dv+/dq, dv+/dv, dP/dq, dP/dv), v the velocity before the impact; d/dq on the tangent space.
    (Pinocchio's ``computeImpulseDynamicsDerivatives`` stores dv+/dv - I.)"""
    check_contacts(model, contacts, damping, what="impulse_dynamics")
    imp = dynamics.solve_impulse(model, q, v, contacts, restitution, damping)
    kin, (dvp_dq, dvp_dv, dP_dq, dP_dv) = local_impulse_derivatives(model, q, v, imp, contacts, restitution)
    if reference == "local_world_aligned" and contacts:
        dP_dq, dP_dv = world_aligned(contacts, kin, imp.P, dP_dq, (dP_dv,))
    return dvp_dq, dvp_dv, dP_dq, dP_dv


def local_impulse_derivatives(model, q, v, imp, contacts, restitution):
    """(kin at v+ + r v, (dv+/dq, dv+/dv, dP/dq, dP/dv)) at the impulse ``imp`` (its Delassus factors,
    v+ and local P), impulses in local axes."""
    w = imp.v_plus + restitution * v  # J w + mu P = 0
    kin = dynamics.contact_kinematics(model, q, w, None, contacts)
    dc_dq = ca.vertcat(
        ca.DM(0, model.nv),
        *[c.select(frame_derivatives(model, kin.world, c.frame, fm.fMT, False)[0]) for c, fm in zip(contacts, kin.fm)],
    )
    zero = ca.DM.zeros(model.nv)
    dID_dq = idsva(weightless(model), q, zero, imp.v_plus - v, contact_forces(model, contacts, imp.P))[0]
    cp = coupling(model, imp.dl, contacts, False) if contacts else None
    # without gravity, moving a whole free-flying tree changes nothing: zero columns
    dP_dq, dvp_dq = _kkt_free_flyers(weightless(model), q, imp.dl, cp, dID_dq, dc_dq)
    # d/dv-: M (dv+ - I) = J^T dP, J dv+ + r J + mu dP = 0
    if contacts:
        dP_dv = -(1 + restitution) * imp.dl.K.solve(imp.dl.J)
        dvp_dv = ca.DM.eye(model.nv) + ca.mtimes(cp.MJt, dP_dv)
    else:
        dP_dv, dvp_dv = ca.DM(0, model.nv), ca.DM.eye(model.nv)
    return kin, (dvp_dq, dvp_dv, dP_dq, dP_dv)


def constraint_dynamics_jacobian(model, q, v, tau, out=None, **options):
    d = constraint_dynamics_derivatives(model, q, v, tau, **options, out=out)
    keys = [(out, arg) for out in ("ddq", "lambda_c") for arg in ("q", "v", "tau")]
    return dict(zip(keys, d))


def impulse_dynamics_jacobian(model, q, v, out=None, **options):
    d = impulse_dynamics_derivatives(model, q, v, **options)
    return dict(zip([(out, arg) for out in ("dq_after", "impulse_c") for arg in ("q", "v")], d))


STATE = (configuration(), tangent("v"))
SPECS = (
    Spec(
        "constraint_dynamics_derivatives",
        constraint_dynamics_derivatives,
        STATE + (tangent("tau"),),
        tuple(Out(n) for n in ("ddq_dq", "ddq_dv", "ddq_dtau", "dlambda_dq", "dlambda_dv", "dlambda_dtau")),
        options=OPTIONS,
        regular_mass=True,
    ),
    Spec(
        "impulse_dynamics_derivatives",
        impulse_dynamics_derivatives,
        STATE,
        tuple(Out(n) for n in ("ddq_after_dq", "ddq_after_dv", "dimpulse_dq", "dimpulse_dv")),
        options=IMPULSE_OPTIONS,
        regular_mass=True,
    ),
)
JACOBIANS = (
    Jacobian("constraint_dynamics", constraint_dynamics_jacobian),
    Jacobian("impulse_dynamics", impulse_dynamics_jacobian),
)
