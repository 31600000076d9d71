"""Pinocchio as the reference: pin models of casrbd models, and conversions.

Import this module only in tests that compare against Pinocchio, after the
``pin`` fixture of conftest.py (which skips them when Pinocchio is absent).

- ``to_pinocchio(model)`` builds a ``pin.Model`` joint by joint from a casrbd
  model's data (used for the synthetic trees, whose only source is casrbd);
- ``Oracle.from_urdf(model, path, floating)`` instead parses the URDF with
  Pinocchio's own parser, so that casrbd's URDF reading is checked too, and
  maps joints and frames by name.

An ``Oracle`` converts casrbd's q, v and f_ext (6 x njoints) into
Pinocchio's and Pinocchio's results (vectors over v, matrices, Jacobians)
back into casrbd's order. Pinocchio represents a URDF continuous joint by
(cos, sin) (nq = 2) where casrbd uses one angle (a revolute joint without
limits); joint order may differ (mapped by name).
"""

import numpy as np
import pinocchio as pin

from casrbd.models import EXAMPLE_ROBOTS, SHIPPED, robot_path


def _vector(x):
    return np.asarray(x, dtype=float).reshape(3)


def _joint_model(joint):
    if joint.type in ("revolute", "prismatic", "helical"):
        assert joint.offset == (0.0, 0.0), f"a model's {joint.type} joint has offset {joint.offset}"
    if joint.type == "revolute":
        return pin.JointModelRevoluteUnaligned(_vector(joint.axis))
    if joint.type == "prismatic":
        return pin.JointModelPrismaticUnaligned(_vector(joint.axis))
    if joint.type == "helical":
        return pin.JointModelHelicalUnaligned(_vector(joint.axis), float(joint.pitch))
    if joint.type == "universal":
        return pin.JointModelUniversal(_vector(joint.axis1), _vector(joint.axis2))
    if joint.type == "spherical":
        return pin.JointModelSpherical()
    if joint.type == "planar":
        return pin.JointModelPlanar()
    if joint.type == "floating":
        return pin.JointModelFreeFlyer()
    raise ValueError(f"no Pinocchio joint for casrbd joint type {joint.type!r}")


def _se3(placement):
    return pin.SE3(np.array(placement.R, dtype=float), _vector(placement.p))


def _inertia(Y):
    if Y.mass == 0:
        return pin.Inertia(0.0, np.zeros(3), np.array(Y.I, dtype=float))
    return pin.Inertia(float(Y.mass), _vector(Y.com), np.array(Y.inertia_com, dtype=float))


def depth_first(model):
    """Joint indices in depth-first order, which Pinocchio requires (its algorithms take the
    velocities of a subtree to be contiguous); casrbd accepts any parent-first order."""
    order, stack = [], [i for i in reversed(range(model.njoints)) if model.parents[i] < 0]
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(model.children[i]))
    return order


def to_pinocchio(model):
    """A pin.Model with the same joints (in depth-first order), bodies, frames and gravity."""
    pm = pin.Model()
    pm.name = model.name
    pin_id = {-1: 0}
    for i in depth_first(model):
        pin_id[i] = pm.addJoint(
            pin_id[model.parents[i]], _joint_model(model.joints[i]), _se3(model.placements[i]), model.names[i]
        )
        pm.appendBodyToJoint(pin_id[i], _inertia(model.inertias[i]), pin.SE3.Identity())
    for frame in model.frames:
        pm.addFrame(pin.Frame(frame.name, pin_id[frame.joint], _se3(frame.placement), pin.FrameType.OP_FRAME))
    pm.gravity = pin.Motion(np.concatenate([model.gravity, np.zeros(3)]))
    return pm


class Oracle:
    """A Pinocchio model and data standing for a casrbd model."""

    def __init__(self, model, pmodel, frame_type):
        self.model, self.pmodel = model, pmodel
        self.from_urdf_parser = frame_type == pin.FrameType.BODY  # else built by to_pinocchio
        pmodel.gravity = pin.Motion(np.concatenate([model.gravity, np.zeros(3)]))
        assert pmodel.njoints == model.njoints + 1, (pmodel.njoints, model.njoints)
        assert pmodel.nv == model.nv, (pmodel.nv, model.nv)
        self.joint_ids = []
        self.cos_sin_v = []  # casrbd velocity indices of the angles Pinocchio stores as (cos, sin)
        self.v_index = np.empty(model.nv, dtype=int)  # pin's index of each casrbd velocity
        for i, (name, joint) in enumerate(zip(model.names, model.joints)):
            assert pmodel.existJointName(name), f"Pinocchio has no joint {name!r}"
            jid = pmodel.getJointId(name)
            pj = pmodel.joints[jid]
            assert pj.nv == joint.nv, (name, pj.nv, joint.nv)
            unbounded = bool(np.all(np.isinf(model.lower[model.q_slice(i)])))
            assert pj.nq == joint.nq or (joint.type == "revolute" and unbounded and pj.nq == 2), (name, pj.nq)
            self.v_index[model.v_slice(i)] = range(pj.idx_v, pj.idx_v + pj.nv)
            if pj.nq != joint.nq:
                self.cos_sin_v.append(model.idx_v[i])
            self.joint_ids.append(jid)
        self.frame_ids = []
        for frame in model.frames:
            assert pmodel.existFrame(frame.name, frame_type), f"Pinocchio has no frame {frame.name!r}"
            self.frame_ids.append(pmodel.getFrameId(frame.name, frame_type))
        self.data = pmodel.createData()

    @classmethod
    def from_model(cls, model):
        """Pinocchio model built from the casrbd model's joints and inertias (synthetic trees)."""
        return cls(model, to_pinocchio(model), pin.FrameType.OP_FRAME)

    @classmethod
    def from_urdf(cls, model, path, floating_base):
        """Pinocchio's own parse of the URDF that ``model`` was loaded from."""
        if floating_base:
            pmodel = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
        else:
            pmodel = pin.buildModelFromUrdf(path)
        return cls(model, pmodel, pin.FrameType.BODY)

    @classmethod
    def from_robot(cls, name, model):
        """The oracle of a robot name of tests/conftest.py (a synthetic tree or a URDF robot)."""
        if name not in SHIPPED and name not in EXAMPLE_ROBOTS:
            return cls.from_model(model)
        path, floating = robot_path(name)
        return cls.from_urdf(model, path, floating)

    # casrbd -> Pinocchio
    def q(self, q):
        q = np.asarray(q, dtype=float)
        out = np.empty(self.pmodel.nq)
        for i, (joint, jid) in enumerate(zip(self.model.joints, self.joint_ids)):
            pj = self.pmodel.joints[jid]
            qi = q[self.model.q_slice(i)]
            out[pj.idx_q : pj.idx_q + pj.nq] = [np.cos(qi[0]), np.sin(qi[0])] if pj.nq != joint.nq else qi
        return out

    def v(self, v):
        out = np.empty(self.model.nv)
        out[self.v_index] = v
        return out

    def f_ext(self, F):
        """Pinocchio's external forces of casrbd's 6 x njoints F: a pin.Force per joint, the universe's first."""
        F = np.asarray(F, dtype=float)
        assert F.shape == (6, self.model.njoints), F.shape
        forces = [pin.Force.Zero() for _ in range(self.pmodel.njoints)]
        for jid, f in zip(self.joint_ids, F.T):
            forces[jid] = pin.Force(f)
        return forces

    # Pinocchio -> casrbd
    def from_q(self, q):
        """A Pinocchio configuration in casrbd's form (the angles of (cos, sin) in (-pi, pi])."""
        out = np.empty(self.model.nq)
        for i, (joint, jid) in enumerate(zip(self.model.joints, self.joint_ids)):
            pj = self.pmodel.joints[jid]
            qi = np.asarray(q)[pj.idx_q : pj.idx_q + pj.nq]
            out[self.model.q_slice(i)] = np.arctan2(qi[1], qi[0]) if pj.nq != joint.nq else qi
        return out

    def from_v(self, x):
        """A vector over v (tau, a, g), in casrbd's order."""
        return np.asarray(x)[self.v_index]

    def from_vv(self, X):
        """An nv x nv matrix (M, Minv), in casrbd's order."""
        return np.asarray(X)[np.ix_(self.v_index, self.v_index)]

    def from_upper(self, X):
        """An nv x nv symmetric matrix of which Pinocchio filled the upper triangle (M, Minv), in casrbd's order."""
        return self.from_vv(symmetrize_upper(X))

    def from_jacobian(self, J):
        return np.asarray(J)[:, self.v_index]


def symmetrize_upper(X):
    """The symmetric matrix of which Pinocchio filled the upper triangle."""
    X = np.array(X)
    return np.triu(X) + np.triu(X, 1).T
