"""Public entry points, from the algorithms' specs (their arguments checked by ``casrbd.arguments``).

Every algorithm is written once over casadi types (``casrbd.algorithms``).
Called with symbols (SX or MX) it returns an expression of the same type;
called with numbers (lists, numpy, DM) it evaluates the model's cached SX
Function (``casrbd.functions``), built once, and returns numpy arrays.
Results are shaped as the spec's outputs say: vectors as 1-D arrays
(numbers) or columns (symbols), placements as lists of 4 x 4 matrices.
"""

from collections.abc import Sequence
from typing import Optional, Union

import casadi as ca
import numpy as np

from .algorithms import configuration
from .arguments import evaluate
from .model import Model

# what the entry points take: numbers (returned as numpy arrays) or casadi symbols (returned as such)
Vector = Union[np.ndarray, Sequence[float], ca.DM, ca.SX, ca.MX]
Matrix = Union[np.ndarray, Sequence[Sequence[float]], ca.DM, ca.SX, ca.MX]
Frame = Union[str, int]  # a frame's name or index in model.frames
Contacts = Sequence[tuple]  # (frame, "3d" | "6d"[, anchor]) entries


def rnea(model: Model, q: Vector, v: Vector, a: Vector, f_ext: Optional[Matrix] = None):
    """Inverse dynamics tau(q, v, a, f_ext) by the recursive Newton-Euler algorithm.

    ``f_ext``: 6 x njoints, column i the spatial force [force; torque] on the
    body of joint i, in that joint's frame (Pinocchio's ``fext``)."""
    return evaluate("rnea", model, q, v, a, f_ext=f_ext)


def nonlinear_effects(model: Model, q: Vector, v: Vector):
    """C(q, v) v + g(q)."""
    return evaluate("nonlinear_effects", model, q, v)


def generalized_gravity(model: Model, q: Vector):
    """g(q)."""
    return evaluate("generalized_gravity", model, q)


def crba(model: Model, q: Vector):
    """The full symmetric joint-space inertia matrix M(q)."""
    return evaluate("crba", model, q)


def aba(model: Model, q: Vector, v: Vector, tau: Vector, f_ext: Optional[Matrix] = None):
    """Forward dynamics a(q, v, tau, f_ext) by the articulated-body algorithm."""
    return evaluate("aba", model, q, v, tau, f_ext=f_ext)


def minverse(model: Model, q: Vector):
    """M(q)^-1 by the dedicated recursive algorithm (no M, no factorisation)."""
    return evaluate("minverse", model, q)


def forward_kinematics(model: Model, q: Vector):
    """World placements of all joints: a list of 4 x 4 homogeneous matrices."""
    return evaluate("forward_kinematics", model, q)


def frame_placement(model: Model, q: Vector, frame: Frame):
    """4 x 4 homogeneous placement of ``frame`` (name or index) in the world."""
    return evaluate("frame_placement", model, q, frame=frame)


def frame_jacobian(model: Model, q: Vector, frame: Frame, reference: str = "local"):
    """6 x nv Jacobian of ``frame``; ``reference``: local, world or local_world_aligned."""
    return evaluate("frame_jacobian", model, q, frame=frame, reference=reference)


def integrate(model: Model, q: Vector, v: Vector):
    """q (+) v on the configuration manifold."""
    return evaluate("integrate", model, q, v)


def difference(model: Model, q0: Vector, q1: Vector):
    """q1 (-) q0, the tangent vector from q0 to q1."""
    return evaluate("difference", model, q0, q1)


def rnea_derivatives(
    model: Model, q: Vector, v: Vector, a: Vector, f_ext: Optional[Matrix] = None, method: str = "idsva"
):
    """(dtau/dq, dtau/dv, dtau/da = M); d/dq on the tangent space (as Pinocchio).

    ``method``: "chain_rule" (Carpentier & Mansard, RSS 2018, Algorithms 2-3),
    "idsva" (Singh, Russell & Wensing, RA-L 2022, Algorithm 1) or "ad"
    (casadi's AD of the rnea graph)."""
    return evaluate("rnea_derivatives", model, q, v, a, f_ext=f_ext, method=method)


def aba_derivatives(
    model: Model,
    q: Vector,
    v: Vector,
    tau: Vector,
    f_ext: Optional[Matrix] = None,
    method: str = "idsva",
    minv_product: str = "ltdl",
):
    """(da/dq, da/dv, da/dtau = M^-1) from the ID derivatives at a = aba(q, v, tau).

    ``method`` picks the ID derivatives ("ad": AD of the aba graph);
    ``minv_product``: "ltdl" back-substitutes with the sparse factorization
    M = L^T D L (Featherstone RBDA 6.5; the smallest and fastest), "dmm"
    multiplies by M^-1 from the dedicated recursion, "aza" runs ABA with zero
    velocity and gravity on the columns (Singh, Russell & Wensing, section IV-E)."""
    return evaluate("aba_derivatives", model, q, v, tau, f_ext=f_ext, method=method, minv_product=minv_product)


def kinematics_derivatives(model: Model, q: Vector, v: Vector, a: Vector, frame: Frame, reference: str = "local"):
    """Derivatives of ``frame``'s spatial velocity and acceleration (no gravity) in ``reference``
    (local, world or local_world_aligned, as ``frame_velocity``): (dv/dq, dv/dv, da/dq, da/dv, da/da)."""
    return evaluate("kinematics_derivatives", model, q, v, a, frame=frame, reference=reference)


def joint_torque_regressor(model: Model, q: Vector, v: Vector, a: Vector):
    """Y(q, v, a), nv x 10 njoints, with rnea(q, v, a) = Y pi + armature * a: pi the bodies' inertial
    parameters, 10 each in ``model.joints`` order (``casrbd.parameters``; Pinocchio's
    ``computeJointTorqueRegressor``)."""
    return evaluate("joint_torque_regressor", model, q, v, a)


def kinetic_energy_regressor(model: Model, q: Vector, v: Vector):
    """Y_T(q, v), 1 x 10 njoints, with the kinetic energy T = Y_T pi."""
    return evaluate("kinetic_energy_regressor", model, q, v)


def potential_energy_regressor(model: Model, q: Vector):
    """Y_V(q), 1 x 10 njoints, with the potential energy V = Y_V pi (zero at the world origin)."""
    return evaluate("potential_energy_regressor", model, q)


neutral = configuration.neutral
random_configuration = configuration.random_configuration


# ---- frame motion, centre of mass, centroidal and contact dynamics (legged robots)


def frame_velocity(model: Model, q: Vector, v: Vector, frame: Frame, reference: str = "local"):
    """``frame``'s spatial velocity [linear; angular] in ``reference`` (local, world or
    local_world_aligned; Pinocchio's ``getFrameVelocity``)."""
    return evaluate("frame_velocity", model, q, v, frame=frame, reference=reference)


def frame_acceleration(model: Model, q: Vector, v: Vector, a: Vector, frame: Frame, reference: str = "local"):
    """``frame``'s spatial acceleration, gravity excluded (Pinocchio's ``getFrameAcceleration``)."""
    return evaluate("frame_acceleration", model, q, v, a, frame=frame, reference=reference)


def frame_classical_acceleration(model: Model, q: Vector, v: Vector, a: Vector, frame: Frame, reference: str = "local"):
    """The spatial acceleration plus [w x v_lin; 0] in ``reference``; in local_world_aligned, the
    frame origin's acceleration and the angular acceleration (``getFrameClassicalAcceleration``)."""
    return evaluate("frame_classical_acceleration", model, q, v, a, frame=frame, reference=reference)


def frame_jacobian_time_variation(model: Model, q: Vector, v: Vector, frame: Frame, reference: str = "local"):
    """d/dt frame_jacobian(model, q, frame, reference) along v (``getFrameJacobianTimeVariation``)."""
    return evaluate("frame_jacobian_time_variation", model, q, v, frame=frame, reference=reference)


def center_of_mass(model: Model, q: Vector, v: Optional[Vector] = None, a: Optional[Vector] = None):
    """The centre of mass c in the world; (c, c') with ``v``; (c, c', c'') with ``v`` and ``a``."""
    zero = np.zeros(model.nv)
    com, vcom, acom = evaluate("center_of_mass", model, q, zero if v is None else v, zero if a is None else a)
    return com if v is None else (com, vcom) if a is None else (com, vcom, acom)


def jacobian_center_of_mass(model: Model, q: Vector):
    """3 x nv Jacobian of the centre of mass, world axes (``jacobianCenterOfMass``)."""
    return evaluate("jacobian_center_of_mass", model, q)


def ccrba(model: Model, q: Vector, v: Optional[Vector] = None):
    """The centroidal momentum matrix A_G (6 x nv: momentum [linear; angular] about the centre of mass,
    world axes); (A_G, h_G = A_G v) with ``v`` (Pinocchio's ``ccrba``)."""
    Ag, hg = evaluate("ccrba", model, q, np.zeros(model.nv) if v is None else v)
    return Ag if v is None else (Ag, hg)


def centroidal_momentum(model: Model, q: Vector, v: Vector):
    """h_G = A_G v (Pinocchio's ``computeCentroidalMomentum``); its Function offers
    ``jacobian="analytical"`` (dh_G/dq from ``centroidal_dynamics_derivatives``, and A_G)."""
    return evaluate("centroidal_momentum", model, q, v)


def dccrba(model: Model, q: Vector, v: Vector):
    """d/dt A_G along v (Pinocchio's ``dccrba``)."""
    return evaluate("dccrba", model, q, v)


def centroidal_momentum_time_variation(model: Model, q: Vector, v: Vector, a: Vector):
    """(h_G, dh_G/dt), gravity excluded: dh_G/dt = A_G a + dA_G/dt v (the sum of the external wrenches
    and gravity about the centre of mass when a is the dynamics' acceleration)."""
    return evaluate("centroidal_momentum_time_variation", model, q, v, a)


def centroidal_dynamics_derivatives(model: Model, q: Vector, v: Vector, a: Vector):
    """(dh_G/dq, d(dh_G/dt)/dq, d(dh_G/dt)/dv, d(dh_G/dt)/da = A_G); d/dq on the tangent space
    (Pinocchio's ``computeCentroidalDynamicsDerivatives``)."""
    return evaluate("centroidal_dynamics_derivatives", model, q, v, a)


def constraint_dynamics(
    model: Model,
    q: Vector,
    v: Vector,
    tau: Vector,
    contacts: Contacts,
    reference: str = "local",
    kp: float = 0.0,
    kd: float = 0.0,
    damping: float = 0.0,
):
    """(ddq, lambda): forward dynamics under rigid contacts and the contact forces on the robot
    (Pinocchio's ``constraintDynamics``). ``contacts``: (frame, "3d" | "6d") pairs, or (frame, type,
    anchor) with an anchor for the Baumgarte gain ``kp``; ``reference``: the axes of lambda (local or
    local_world_aligned); ``damping`` > 0 admits redundant contacts (see ``casrbd.algorithms.contact.dynamics``)."""
    return evaluate(
        "constraint_dynamics", model, q, v, tau, contacts=contacts, reference=reference, kp=kp, kd=kd, damping=damping
    )


def constraint_dynamics_derivatives(
    model: Model,
    q: Vector,
    v: Vector,
    tau: Vector,
    contacts: Contacts,
    reference: str = "local",
    kp: float = 0.0,
    kd: float = 0.0,
    damping: float = 0.0,
):
    """(dddq/dq, dddq/dv, dddq/dtau, dlambda/dq, dlambda/dv, dlambda/dtau) of ``constraint_dynamics``."""
    return evaluate(
        "constraint_dynamics_derivatives",
        model,
        q,
        v,
        tau,
        contacts=contacts,
        reference=reference,
        kp=kp,
        kd=kd,
        damping=damping,
    )


def impulse_dynamics(
    model: Model,
    q: Vector,
    v: Vector,
    contacts: Contacts,
    reference: str = "local",
    restitution: float = 0.0,
    damping: float = 0.0,
):
    """(v+, P): the velocity after an impact on ``contacts`` from velocity ``v`` with restitution
    coefficient r in [0, 1] (J v+ = -r J v), and the contact impulses (``impulseDynamics``)."""
    options = {"contacts": contacts, "reference": reference, "restitution": restitution, "damping": damping}
    return evaluate("impulse_dynamics", model, q, v, **options)


def impulse_dynamics_derivatives(
    model: Model,
    q: Vector,
    v: Vector,
    contacts: Contacts,
    reference: str = "local",
    restitution: float = 0.0,
    damping: float = 0.0,
):
    """(dv+/dq, dv+/dv, dP/dq, dP/dv) of ``impulse_dynamics`` (Pinocchio stores dv+/dv - I)."""
    return evaluate(
        "impulse_dynamics_derivatives",
        model,
        q,
        v,
        contacts=contacts,
        reference=reference,
        restitution=restitution,
        damping=damping,
    )


def rnea_hessian(
    model: Model,
    q: Vector,
    v: Vector,
    a: Vector,
    lam: Vector,
    f_ext: Optional[Matrix] = None,
    method: str = "second_order_adjoint",
):
    """Hessian of lam^T rnea(q, v, a, f_ext) by (q, v, a), q on the tangent space (phi(q (+) delta)
    at delta = 0): (H_qq, H_qv, H_vv, H_qa), plus H_qf (nv x 6 njoints, f_ext vectorised column by
    column) when f_ext is given; the a-a and a-v blocks vanish. ``method``: "second_order_adjoint" (the
    second-order adjoint in IDSVA's world frame) or "ad" (casadi's AD)."""
    return evaluate("rnea_hessian", model, q, v, a, lam, f_ext=f_ext, method=method)


def aba_hessian(
    model: Model,
    q: Vector,
    v: Vector,
    tau: Vector,
    lam: Vector,
    f_ext: Optional[Matrix] = None,
    method: str = "second_order_adjoint",
):
    """Hessian of lam^T aba(q, v, tau, f_ext) by (q, v, tau), q on the tangent space: (H_qq, H_qv,
    H_vv, H_qtau), plus H_qf when f_ext is given; the tau-tau and tau-v blocks vanish."""
    return evaluate("aba_hessian", model, q, v, tau, lam, f_ext=f_ext, method=method)


def rnea_second_order_derivatives(
    model: Model, q: Vector, v: Vector, a: Vector, f_ext: Optional[Matrix] = None, method: str = "idsva"
):
    """(d2tau_dqdq, d2tau_dvdv, d2tau_dqdv, dtau_dadq) as (nv, nv, nv) arrays in Pinocchio's layout
    (``ComputeRNEASecondOrderDerivatives``, here with external forces): T[i, j, k] = d/dq_k of
    dtau_dq[i, j], d2 tau_i / dv_j dv_k, d/dv_k of dtau_dq[i, j], d/dq_k of M[i, j]. ``method``:
    "idsva" (second-order IDSVA) or "ad" (casadi's Jacobian of its Jacobian)."""
    return evaluate("rnea_second_order_derivatives", model, q, v, a, f_ext=f_ext, method=method)
