"""Forward dynamics under rigid contacts, and impulse dynamics.

With contact Jacobian J (the stacked contact frames' rows), contact forces
lambda applied on the robot and the contact drift gamma, the constrained
dynamics solve the KKT system of Carpentier & Mansard, "Analytical
Derivatives of Rigid Body Dynamics Algorithms" (RSS 2018), section on
contact dynamics, as Pinocchio's ``constraintDynamics``:
    M ddq = tau - b + J^T lambda,   J ddq + gamma - a_BG + mu lambda = 0,
with the Delassus matrix J M^-1 J^T of Carpentier, Budhiraja & Mansard,
"Proximal and Sparse Resolution of Constrained Dynamic Equations" (RSS 2021).
Both are solved over the tree's sparsity with the factorization M = L^T D L
(Featherstone, *Rigid Body Dynamics Algorithms*, 2008, section 6.5;
``passes/ltdl.py``): with Y = L^-T J^T, which keeps the zeros of the contact
bodies' branches, J M^-1 J^T = Y^T D^-1 Y, J M^-1 (tau - b) = Y^T D^-1 z for
z = L^-T (tau - b), and ddq = L^-1 D^-1 (z + Y lambda), one forward
substitution. Impulses solve M (v+ - v-) = J^T P, J v+ + r J v- + mu P = 0.

Contacts (Pinocchio's ``RigidConstraintModel`` with joint2 the world; the
types in ``types.py``): ``(frame, "3d")`` a point contact at the frame's origin
(3 rows: the linear velocity of that point), ``(frame, "6d")`` a frame contact (6 rows);
lambda is stacked in contact order, 3 forces per 3d contact and a wrench
[force; torque] per 6d contact, at the frame's origin, in the frame's axes
(``reference="local"``) or world axes (``"local_world_aligned"``). gamma is
the classical acceleration of the point (3d) or the spatial acceleration of
the frame (6d) at ddq = 0, so that the solution has zero contact
acceleration; Baumgarte (Pinocchio's, in the local frame): a_BG = -kp e_p -
kd e_v, e_v the contact velocity and e_p the position error to an anchor
given with the contact, R^T (p - p*) (3d) or log6(anchor^-1 oMf) (6d).
``damping`` mu > 0 regularises a rank-deficient contact Jacobian (one damped
solve, Pinocchio's ``ProximalSettings(.., mu, 1)``); without it such a set is
refused when the Function is built (``sets.py``). Glossary: J, gamma,
a_BG as above; K the LDL factor of the Delassus matrix plus mu I; f the
factors of M; Y, z, DY = D^-1 Y; lam the local lambda; fm the contact frames'
``frame_motion.FrameMotion`` (tree frame pass).
"""

from typing import NamedTuple

import casadi as ca

from ...spatial import symmetric
from ...spec import Out, Spec, configuration, tangent
from ..crba import crba
from ..frame_motion import frame_motion, kinematic_pass
from ..passes import ltdl
from ..passes.tree import dof_ancestors
from ..passes.world import local_jacobian
from ..rnea import nonlinear_effects
from .sets import IMPULSE_OPTIONS, OPTIONS, check_contacts

# ---------------------------------------------------------------- kinematics of the contacts


class ContactKinematics(NamedTuple):
    world: object  # the world pass without gravity (``passes.world.WorldPass``)
    fm: list  # frame_motion.FrameMotion of each contact (local velocity and acceleration)
    J6: list  # each contact frame's local Jacobian (6 x nv)
    J: list  # the rows of it that the contact constrains


def contact_kinematics(model, q, v, a, contacts):
    """The contacts' local Jacobians, velocities and accelerations at (q, v, a), gravity excluded."""
    w = kinematic_pass(model, q, v, a)
    fm = [frame_motion(model, w, c.frame) for c in contacts]
    J6 = [local_jacobian(model, w, c.frame, m.fMT) for c, m in zip(contacts, fm)]
    return ContactKinematics(w, fm, J6, [c.select(J) for c, J in zip(contacts, J6)])


def contact_acceleration(c, fm):
    """The constrained acceleration c of the contact type, local axes (the drift gamma at ddq = 0)."""
    return c.kind.acceleration(fm.v, fm.a)


def baumgarte(contacts, kin, kp, kd):
    """a_BG of every contact (local), or None when both gains are zero."""
    if not (kp or kd):
        return None
    out = []
    for c, fm in zip(contacts, kin.fm):
        target = 0
        if kd:
            target = target - kd * c.select(fm.v)
        if kp:
            target = target - kp * c.kind.position_error(c.anchor, fm.oMf)
        out.append(target)
    return ca.vertcat(*out)


# ---------------------------------------------------------------- the sparse KKT solve


def l_solve(model, f, B):
    """L^-1 b for a vector: forward substitution from the root (``ltdl.g_times`` for many columns)."""
    X = []
    for i in range(model.nv):
        X.append(B[i, :] - sum((f.L[i, j] * X[j] for j in dof_ancestors(model, i)), 0))
    return ca.vertcat(*X)


class LDL:
    """K = L D L^T of a small symmetric positive definite K, on its entries (so that SX, MX and DM
    expand alike), with the solves on any number of columns."""

    def __init__(self, K):
        n = K.shape[0]
        self.n, self.L, d = n, {}, []
        for j in range(n):
            d.append(K[j, j] - sum((self.L[j, k] ** 2 * d[k] for k in range(j)), 0))
            for i in range(j + 1, n):
                self.L[i, j] = (K[i, j] - sum((self.L[i, k] * self.L[j, k] * d[k] for k in range(j)), 0)) / d[j]
        self.dinv = [1 / x for x in d]

    def lower(self, B):
        """L^-1 B, as rows."""
        y = []
        for i in range(self.n):
            y.append(B[i, :] - sum((self.L[i, k] * y[k] for k in range(i)), 0))
        return y

    def upper(self, y):
        """L^-T y for rows y, as a matrix."""
        x = [None] * self.n
        for i in reversed(range(self.n)):
            x[i] = y[i] - sum((self.L[k, i] * x[k] for k in range(i + 1, self.n)), 0)
        return ca.vertcat(*x)

    def solve(self, B):
        """K^-1 B."""
        return self.upper([d * y for d, y in zip(self.dinv, self.lower(B))])


class Delassus(NamedTuple):
    f: object  # ltdl.Factors of M
    J: object  # stacked local contact rows, nc x nv
    Y: object  # L^-T J^T
    DY: object  # D^-1 Y
    K: object  # LDL of Y^T D^-1 Y + mu I


def delassus(model, q, J, damping):
    f = ltdl.factorize(model, crba(model, q))
    J = ca.vertcat(ca.DM(0, model.nv), *J)
    Y = ltdl.lt_solve(model, f, J.T)
    DY = ltdl.scaled(f, Y)
    K = symmetric(ca.mtimes(Y.T, DY))
    if damping:
        K = K + damping * ca.DM.eye(J.shape[0])
    return Delassus(f, J, Y, DY, LDL(K))


class Solution(NamedTuple):
    kin: ContactKinematics  # at ddq = 0
    dl: Delassus
    ddq: object
    lam: object  # local axes


def solve(model, q, v, tau, contacts, kp=0.0, kd=0.0, damping=0.0):
    """The constrained accelerations and local contact forces."""
    kin = contact_kinematics(model, q, v, ca.DM.zeros(model.nv), contacts)
    dl = delassus(model, q, kin.J, damping)
    z = ltdl.lt_solve(model, dl.f, tau - nonlinear_effects(model, q, v))
    if not contacts:
        return Solution(kin, dl, l_solve(model, dl.f, ltdl.scaled(dl.f, z)), ca.DM(0, 1))
    rhs = -ca.vertcat(*[contact_acceleration(c, fm) for c, fm in zip(contacts, kin.fm)])
    a_bg = baumgarte(contacts, kin, kp, kd)
    if a_bg is not None:
        rhs = rhs + a_bg
    lam = dl.K.solve(rhs - ca.mtimes(dl.DY.T, z))
    ddq = l_solve(model, dl.f, ltdl.scaled(dl.f, z + ca.mtimes(dl.Y, lam)))
    return Solution(kin, dl, ddq, lam)


def in_reference(contacts, fms, lam, reference):
    """Local contact forces (or a set of their derivatives) in ``reference``: world axes rotate them."""
    if reference == "local" or not contacts:
        return lam
    out, k = [], 0
    for c, fm in zip(contacts, fms):
        block = lam[k : k + c.rows, :]
        out.append(c.kind.to_world(fm.oMf.R, block))
        k += c.rows
    return ca.vertcat(*out)


def local_forces(contacts, fms, lam, reference):
    """The local axes' forces of output forces ``lam`` given in ``reference`` (``in_reference`` undone)."""
    if reference == "local":
        return lam
    out, k = [], 0
    for c, fm in zip(contacts, fms):
        block = lam[k : k + c.rows]
        out.append(c.kind.to_world(fm.oMf.R.T, block))
        k += c.rows
    return ca.vertcat(*out)


def constraint_dynamics(model, q, v, tau, contacts, reference="local", kp=0.0, kd=0.0, damping=0.0):
    """(ddq, lambda): forward dynamics under the contacts (Pinocchio's ``constraintDynamics``)."""
    check_contacts(model, contacts, damping, kp)
    sol = solve(model, q, v, tau, contacts, kp, kd, damping)
    return sol.ddq, in_reference(contacts, sol.kin.fm, sol.lam, reference)


class Impulse(NamedTuple):
    kin: ContactKinematics
    dl: Delassus
    v_plus: object
    P: object  # local axes


def solve_impulse(model, q, v, contacts, restitution=0.0, damping=0.0):
    kin = contact_kinematics(model, q, v, None, contacts)
    dl = delassus(model, q, kin.J, damping)
    if not contacts:
        return Impulse(kin, dl, v, ca.DM(0, 1))
    P = -dl.K.solve((1 + restitution) * ca.mtimes(dl.J, v))
    return Impulse(kin, dl, v + l_solve(model, dl.f, ltdl.scaled(dl.f, ca.mtimes(dl.Y, P))), P)


def impulse_dynamics(model, q, v, contacts, reference="local", restitution=0.0, damping=0.0):
    """(v+, P): velocity after an impact with restitution r, and the contact impulses
    (Pinocchio's ``impulseDynamics``); ``v`` is the velocity before it."""
    check_contacts(model, contacts, damping, what="impulse_dynamics")
    imp = solve_impulse(model, q, v, contacts, restitution, damping)
    return imp.v_plus, in_reference(contacts, imp.kin.fm, imp.P, reference)


SPECS = (
    Spec(
        "constraint_dynamics",
        constraint_dynamics,
        (configuration(), tangent("v"), tangent("tau")),
        (Out("ddq", "vector"), Out("lambda_c", "vector")),
        options=OPTIONS,
        regular_mass=True,
    ),
    Spec(
        "impulse_dynamics",
        impulse_dynamics,
        (configuration(), tangent("v")),
        (Out("dq_after", "vector"), Out("impulse_c", "vector")),
        options=IMPULSE_OPTIONS,
        regular_mass=True,
    ),
)
