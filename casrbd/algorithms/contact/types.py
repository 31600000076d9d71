"""Contact types: one class per type behind one small interface, and their registry.

A contact type says what a contact on a frame constrains and how (Crocoddyl's contact-3d and
contact-6d on contact-base). The contact algorithms ask the type, never its name:

  name                      its name in ``CONTACT_TYPES`` (what a contact declares: (frame, "3d"))
  rows                      the number of constrained directions (the rows of lambda it owns)
  anchor_shape, anchor_what the shape of its anchor (what kp pulls the frame to) and its description
  check_anchor(x)           the reason a finite anchor of that shape is refused, or None
  select(m)                 the rows of a local motion or force (set) it constrains: its Jacobian rows
                            J from the frame's local Jacobian, its velocity from the frame's velocity
  acceleration(v, a)        c: its constrained acceleration from the frame's local velocity and spatial
                            acceleration, linear in a (select's rows); the KKT system sets it to zero
                            (with Baumgarte's terms), the drift gamma being c at ddq = 0
  acceleration_derivatives(v, J, dv_dq, da_dq, da_dv)
                            (dc/dq, dc/dv) from the frame's (``derivatives.frame_derivatives``)
  position_error(anchor, oMf), position_error_jacobian(anchor, oMf, J)
                            e_p, Baumgarte's position error to the anchor, and de_p/dq (tangent)
  force(f)                  the spatial force [force; torque] on the frame of its rows f of lambda
  to_world(R, f)            its rows of a force (set) in world axes, R the frame's rotation (R^T undoes
                            it); a ValueError for rows that are not 3-vectors (reference='local' only)
  world_turn(f_w, R, J)     d(R f)/dq at fixed f (f_w = R f): the turn of forces in world axes

Every answer takes and returns casadi types, so the second derivatives (``hessians.py``, by AD of
the contact kinematics) follow. Adding a contact type means writing its class here, its registry
entry, and its case in the contact tests (``tests/contact/``).
"""

import functools
from abc import ABC, abstractmethod

import casadi as ca
import numpy as np

from ...spatial import SE3, ang, cross, lin, log6, se3_exp
from ..frame_motion import classical, rotate


class ContactType(ABC):
    """A rigid contact of a frame with the world; the defaults hold for types whose rows are 3-row blocks
    of vectors (forces and torques) that turn with the frame."""

    name = None
    rows = 0
    anchor_shape = ()
    anchor_what = ""

    def check_anchor(self, x):
        return None

    @abstractmethod
    def select(self, m): ...

    @abstractmethod
    def acceleration(self, v, a): ...

    @abstractmethod
    def acceleration_derivatives(self, v, J, dv_dq, da_dq, da_dv): ...

    @abstractmethod
    def position_error(self, anchor, oMf): ...

    @abstractmethod
    def position_error_jacobian(self, anchor, oMf, J): ...

    @abstractmethod
    def force(self, f): ...

    @abstractmethod
    def to_world(self, R, f): ...

    def world_turn(self, f_w, R, J):
        RJa = ca.mtimes(R, ang(J))
        return [-cross(f_w[r : r + 3], RJa) for r in range(0, self.rows, 3)]


class Contact3D(ContactType):
    """A point contact at the frame's origin: its linear velocity; lambda a force at the point."""

    name = "3d"
    rows = 3
    anchor_shape = (3,)
    anchor_what = "a world point (3 numbers)"

    def select(self, m):
        return lin(m)

    def acceleration(self, v, a):
        """The point's classical acceleration a_lin + w x v_lin."""
        return lin(classical(v, a))

    def acceleration_derivatives(self, v, J, dv_dq, da_dq, da_dv):
        w, vl = ang(v), lin(v)
        dq = lin(da_dq) + cross(w, lin(dv_dq)) - cross(vl, ang(dv_dq))
        dv = lin(da_dv) + cross(w, lin(J)) - cross(vl, ang(J))
        return dq, dv

    def position_error(self, anchor, oMf):
        """R^T (p - p*), local axes."""
        return ca.mtimes(oMf.R.T, oMf.p - np.array(anchor))

    def position_error_jacobian(self, anchor, oMf, J):
        return lin(J) + cross(self.position_error(anchor, oMf), ang(J))

    def force(self, f):
        return ca.vertcat(f, ca.DM.zeros(3, 1))

    def to_world(self, R, f):
        return ca.mtimes(R, f)


@functools.cache
def _jlog6():
    """Jlog6 of a placement (R, p): d log6(X exp(xi)) / d xi at xi = 0, by AD of ``spatial.log6``."""
    R, p, xi = ca.SX.sym("R", 3, 3), ca.SX.sym("p", 3), ca.SX.sym("xi", 6)
    dR, dp = se3_exp(xi)
    X = SE3(ca.mtimes(R, dR), p + ca.mtimes(R, dp))
    J = ca.substitute(ca.jacobian(log6(X), xi), xi, ca.DM.zeros(6))
    return ca.Function("jlog6", [R, p], [J])


class Contact6D(ContactType):
    """A frame contact: the frame's spatial velocity; lambda a wrench [force; torque] at its origin."""

    name = "6d"
    rows = 6
    anchor_shape = (4, 4)
    anchor_what = "a 4 x 4 homogeneous placement"

    def check_anchor(self, x):
        rigid = np.allclose(x[:3, :3].T @ x[:3, :3], np.eye(3), atol=1e-9) and np.allclose(x[3], [0, 0, 0, 1])
        return None if rigid else "the anchor is not a rigid placement (rotation, translation)"

    def select(self, m):
        return m

    def acceleration(self, v, a):
        """The frame's spatial acceleration."""
        return a

    def acceleration_derivatives(self, v, J, dv_dq, da_dq, da_dv):
        return da_dq, da_dv

    def position_error(self, anchor, oMf):
        """log6(anchor^-1 oMf)."""
        return log6(self.placement(anchor).inverse() * oMf)

    def position_error_jacobian(self, anchor, oMf, J):
        """Jlog6 J (Jlog6 by casadi's AD of ``log6`` at the contact, a 6 x 6 block)."""
        X = self.placement(anchor).inverse() * oMf
        return ca.mtimes(_jlog6()(X.R, X.p), J)

    @staticmethod
    def placement(anchor):
        A = np.array(anchor).reshape(4, 4)
        return SE3(A[:3, :3], A[:3, 3])

    def force(self, f):
        return f

    def to_world(self, R, f):
        return rotate(R, f)


CONTACT_TYPES = {t.name: t for t in (Contact3D(), Contact6D())}
