"""Residuals: the quantities a knot's terms weigh or bound (Crocoddyl's residual models).

A residual r is split where the Gauss-Newton model needs it: its *features* are the nonlinear part
of the state (kinematics, contact forces), computed in the stage's inner Function and linearised
there (``gauss_newton_stage``), and its *value* is an SX expression of the features, the state, the
control and its reference (a slice of the stage's parameters p), mostly features - reference. A
term uses a residual either as a cost, ``weight * activation(r)`` (``Cost``), or as a hard
constraint, ``lower <= r <= upper`` (``Constraint``). Residuals are named; the problem packs their
references, weights and features by name, never by offsets in user code.
"""

import casadi as ca
import numpy as np

from ..functions import function
from ..spatial import SE3, log6


def actuated(model):
    """(first q entry, first v entry) of the actuated joints: past a free-flyer root, else 0."""
    root = model.joints[0]
    return (root.nq, root.nv) if model.parents[0] == -1 and root.full_motion else (0, 0)


def as_vector(values, size, label):
    if values is None:
        return None
    values = np.asarray(values, dtype=float)
    values = np.full(size, float(values)) if values.ndim == 0 else values.ravel()
    if values.size != size:
        raise ValueError(f"{label} has {values.size} entries, expected {size}")
    return values


class Residual:
    """A residual of a knot: ``features(model, q, v, force)`` (SX, from the inner Function; ``force(frame)``
    the frame's contact force), ``value(model, x, u, y, ref)`` (SX), its reference size and natural bounds."""

    kind = "residual"
    frame = None

    @property
    def name(self):
        return self.kind if self.frame is None else f"{self.kind}_{self.frame}"

    def reference_size(self, model):
        return 0

    def size(self, model):
        """Its number of rows (by default its reference's)."""
        return self.reference_size(model)

    def bounds(self, model):
        """The (lower, upper) bounds a barrier or a constraint takes by default (None: none)."""
        return None

    def features(self, model, q, v, force):
        return ca.SX(0, 1)

    def value(self, model, x, u, y, ref):
        return y - ref

    def key(self):
        """What describes it: a stage Function is built once per distinct description."""
        return (self.kind, self.frame)


class CoMPosition(Residual):
    """The centre of mass minus its reference (3)."""

    kind = "com_position"

    def reference_size(self, model):
        return 3

    def features(self, model, q, v, force):
        zero = ca.DM.zeros(model.nv)
        return function(model, "center_of_mass")(q, zero, zero)[0]


class CoMVelocity(CoMPosition):
    """The centre of mass' velocity minus its reference (3)."""

    kind = "com_velocity"

    def features(self, model, q, v, force):
        return function(model, "center_of_mass")(q, v, ca.DM.zeros(model.nv))[1]


class FrameTranslation(Residual):
    """A frame's position in the world minus its reference (3)."""

    kind = "frame_translation"

    def __init__(self, frame):
        self.frame = frame

    def reference_size(self, model):
        return 3

    def features(self, model, q, v, force):
        return function(model, "frame_placement", frame=self.frame)(q)[:3, 3]


class FramePlacement(FrameTranslation):
    """log6(M_ref^-1 oMf) (6); the reference M_ref = (R, p) packed as [p; vec(R)] (12)."""

    kind = "frame_placement"

    def reference_size(self, model):
        return 12

    def size(self, model):
        return 6

    def features(self, model, q, v, force):
        oMf = function(model, "frame_placement", frame=self.frame)(q)
        return ca.vertcat(ca.vec(oMf[:3, :3]), oMf[:3, 3])

    def value(self, model, x, u, y, ref):
        R, p, R_ref = ca.reshape(y[:9], 3, 3), y[9:12], ca.reshape(ref[3:12], 3, 3)
        return log6(SE3(ca.mtimes(R_ref.T, R), ca.mtimes(R_ref.T, p - ref[:3])))


class FrameVelocity(FrameTranslation):
    """A frame's spatial velocity [linear; angular] in ``reference`` axes minus its reference (6)."""

    kind = "frame_velocity"

    def __init__(self, frame, reference="local_world_aligned"):
        self.frame, self.reference = frame, reference

    def reference_size(self, model):
        return 6

    def features(self, model, q, v, force):
        return function(model, "frame_velocity", frame=self.frame, reference=self.reference)(q, v)

    def key(self):
        return (*super().key(), self.reference)


class FootClearance(FrameTranslation):
    """A frame's height above the ground z = ``ground`` (1); natural bounds [``height``, inf)."""

    kind = "foot_clearance"

    def __init__(self, frame, height=0.0, ground=0.0):
        self.frame, self.height, self.ground = frame, float(height), float(ground)

    def reference_size(self, model):
        return 0

    def size(self, model):
        return 1

    def features(self, model, q, v, force):
        return function(model, "frame_placement", frame=self.frame)(q)[2, 3] - self.ground

    def value(self, model, x, u, y, ref):
        return y

    def bounds(self, model):
        return np.array([self.height]), np.array([np.inf])

    def key(self):
        return (*super().key(), self.height, self.ground)


class State(Residual):
    """[q_ref (-) q; v - v_ref] (2 nv): the state's distance to a constant reference ``x_ref`` (nq + nv)."""

    kind = "state"

    def __init__(self, x_ref):
        self.x_ref = np.asarray(x_ref, dtype=float).ravel()

    def size(self, model):
        return 2 * model.nv

    def features(self, model, q, v, force):
        x_ref = as_vector(self.x_ref, model.nq + model.nv, "State's x_ref")
        return ca.vertcat(function(model, "difference")(x_ref[: model.nq], q), v - x_ref[model.nq :])

    def value(self, model, x, u, y, ref):
        return y

    def key(self):
        return (self.kind, tuple(self.x_ref))


class Control(Residual):
    """The control minus its reference (nu)."""

    kind = "control"

    def reference_size(self, model):
        return model.nv - actuated(model)[1]

    def value(self, model, x, u, y, ref):
        return u - ref


class JointPosition(Residual):
    """The actuated joints' configuration (past a free-flyer root); natural bounds the model's limits."""

    kind = "joint_position"

    def size(self, model):
        return model.nq - actuated(model)[0]

    def value(self, model, x, u, y, ref):
        return x[actuated(model)[0] : model.nq]

    def bounds(self, model):
        start = actuated(model)[0]
        return np.asarray(model.lower)[start:], np.asarray(model.upper)[start:]


class JointVelocity(Residual):
    """The actuated joints' velocity; natural bounds +- the model's velocity limits."""

    kind = "joint_velocity"

    def size(self, model):
        return model.nv - actuated(model)[1]

    def value(self, model, x, u, y, ref):
        return x[model.nq + actuated(model)[1] :]

    def bounds(self, model):
        limit = np.asarray(model.velocity_limit)[actuated(model)[1] :]
        return -limit, limit


class JointTorque(Residual):
    """The actuated joints' torques, the control itself; natural bounds +- the model's effort limits.
    As a ``Constraint`` it is declared as bounds on the control."""

    kind = "joint_torque"

    def size(self, model):
        return model.nv - actuated(model)[1]

    def value(self, model, x, u, y, ref):
        return u

    def bounds(self, model):
        limit = np.asarray(model.effort_limit)[actuated(model)[1] :]
        return -limit, limit


class ContactForce(Residual):
    """A contact's force (3-D contact) or wrench [f; tau] (6-D) in the dynamics' axes minus its reference."""

    kind = "contact_force"

    def __init__(self, frame, size=3):
        if size not in (3, 6):
            raise ValueError(f"ContactForce {frame!r}: size must be 3 or 6, got {size!r}")
        self.frame, self.size = frame, size

    def reference_size(self, model):
        return self.size

    def features(self, model, q, v, force):
        return force(self.frame)[: self.size]

    def key(self):
        return (*super().key(), self.size)


class FrictionCone(Residual):
    """The friction cone of a contact force f (world-aligned axes, normal z) with coefficient ``mu``:
    ``facets=4``, the pyramid's rows [+-f_x - mu f_z, +-f_y - mu f_z, f_z] (Crocoddyl's friction cone,
    bounds [-inf, 0] and f_z in [0, inf)); ``facets=None``, the smooth cone [mu^2 f_z^2 - f_x^2 - f_y^2, f_z]
    in [0, inf)."""

    kind = "friction_cone"

    def __init__(self, frame, mu, facets=4):
        if facets not in (4, None):
            raise ValueError(f"FrictionCone {frame!r}: facets must be 4 (a pyramid) or None (smooth), got {facets!r}")
        self.frame, self.mu, self.facets = frame, float(mu), facets

    def size(self, model):
        return 5 if self.facets else 2

    def features(self, model, q, v, force):
        return force(self.frame)[:3]

    def value(self, model, x, u, y, ref):
        if self.facets is None:
            return ca.vertcat(self.mu**2 * y[2] ** 2 - y[0] ** 2 - y[1] ** 2, y[2])
        mu = self.mu
        return ca.mtimes(ca.DM([[1, 0, -mu], [-1, 0, -mu], [0, 1, -mu], [0, -1, -mu], [0, 0, 1]]), y)

    def bounds(self, model):
        if self.facets is None:
            return np.zeros(2), np.full(2, np.inf)
        return np.r_[[-np.inf] * 4, 0.0], np.r_[[0.0] * 4, np.inf]

    def key(self):
        return (*super().key(), self.mu, self.facets)


def wrench_cone_matrix(mu, X, Y):
    """A of the contact wrench cone of a 2X x 2Y rectangular sole, wrench w = [f; tau] about its centre
    (Caron, Pham, Nakamura, ICRA 2015): friction pyramid (4 rows), f_z (1), centre of pressure (4), yaw
    torque (8); A w <= 0 but f_z >= 0."""
    rows = [[1, 0, -mu, 0, 0, 0], [-1, 0, -mu, 0, 0, 0], [0, 1, -mu, 0, 0, 0], [0, -1, -mu, 0, 0, 0]]
    rows += [[0, 0, 1, 0, 0, 0], [0, 0, -Y, 1, 0, 0], [0, 0, -Y, -1, 0, 0], [0, 0, -X, 0, 1, 0], [0, 0, -X, 0, -1, 0]]
    for s in (-1, 1):  # tau_z above its lower (s = -1) and below its upper bound (s = 1)
        for a, b in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
            rows.append([a * Y, b * X, -mu * (X + Y), s * a * mu, s * b * mu, s])
    return np.array(rows, dtype=float)


class WrenchCone(Residual):
    """The 6-D contact wrench cone A w (``wrench_cone_matrix``) of a sole of half sizes ``X`` x ``Y`` with
    friction ``mu`` (bounds: A w <= 0, f_z >= 0): friction, centre of pressure, yaw torque."""

    kind = "wrench_cone"

    def __init__(self, frame, mu, X, Y):
        self.frame, self.mu, self.X, self.Y = frame, float(mu), float(X), float(Y)
        self.A = wrench_cone_matrix(self.mu, self.X, self.Y)

    def size(self, model):
        return len(self.A)

    def features(self, model, q, v, force):
        return force(self.frame)[:6]

    def value(self, model, x, u, y, ref):
        return ca.mtimes(ca.DM(self.A), y)

    def bounds(self, model):
        normal = np.arange(len(self.A)) == 4
        return np.where(normal, 0.0, -np.inf), np.where(normal, np.inf, 0.0)

    def key(self):
        return (*super().key(), self.mu, self.X, self.Y)
