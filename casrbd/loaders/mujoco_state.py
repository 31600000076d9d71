"""States and generalized forces between casrbd's (Pinocchio's) coordinates and MuJoCo's.

For a model loaded by ``load_mjcf`` the joints and their index sets are
MuJoCo's (``idx_q`` = ``jnt_qposadr``, ``idx_v`` = ``jnt_dofadr``), hinge and
slide coordinates are equal (the ``ref`` is in the placements), and two
things differ:

- quaternions: casrbd (x, y, z, w), MuJoCo (w, x, y, z), for free and ball
  joints;
- a free joint's linear velocity: casrbd's is in the body's frame (Pinocchio's
  free flyer), MuJoCo's qvel is the world-frame velocity of the body origin
  (its angular velocity is local in both).

With R the rotation of each free joint (from its quaternion), the velocity
map T is the identity but for a block R on each free joint's linear
velocity, and

    qvel = T v                        v = T^T qvel            (T is orthogonal)
    qacc = T a + dT/dt v              (dT/dt v) = R (omega x v_linear) on a free joint
    qfrc = T tau                      tau = T^T qfrc          (power: tau . v = qfrc . qvel)
    M_mujoco = T M T^T                M = T^T M_mujoco T

for generalized forces of every kind (``qfrc_inverse``, ``qfrc_bias``,
``qfrc_applied``, ``qfrc_actuator``, ...). MuJoCo's bias is then
``T^T (qfrc_bias + M_mujoco dT/dt v)`` in casrbd's coordinates, since its
bias is that of its own velocity coordinates.

Every function takes one state (1-D arrays) or a batch (arrays of shape
(N, nq), (N, nv)), plain numbers with numpy; the model only tells which joints
are free and ball joints. Models with joints MuJoCo does not have (planar,
helical, universal) are refused by name.
"""

import numpy as np

_MUJOCO_TYPES = ("revolute", "prismatic", "spherical", "floating")


def _joints(model):
    """(q index of each free joint, its v index; q index of each ball joint)."""
    for name, joint in zip(model.names, model.joints):
        if joint.type not in _MUJOCO_TYPES:
            raise ValueError(
                f"model {model.name!r}: joint {name!r} is {joint.type}, which MuJoCo does not have "
                f"(it has hinge, slide, ball and free joints)"
            )
    free = [(model.idx_q[i], model.idx_v[i]) for i, j in enumerate(model.joints) if j.type == "floating"]
    ball = [model.idx_q[i] for i, j in enumerate(model.joints) if j.type == "spherical"]
    return free, ball


def _array(model, x, n, what):
    if x is None:
        return None
    x = np.array(x, dtype=float)
    if x.ndim not in (1, 2) or x.shape[-1] != n:
        raise ValueError(f"model {model.name!r}: {what} must have shape ({n},) or (N, {n}), got {x.shape}")
    return x


def _rotations(quat_xyzw):
    """Rotation matrices (..., 3, 3) of quaternions (..., 4) [x, y, z, w] of any nonzero norm."""
    x, y, z, w = np.moveaxis(quat_xyzw, -1, 0)
    s = 2 / (x * x + y * y + z * z + w * w)
    return np.stack(
        [
            np.stack([1 - s * (y * y + z * z), s * (x * y - z * w), s * (x * z + y * w)], -1),
            np.stack([s * (x * y + z * w), 1 - s * (x * x + z * z), s * (y * z - x * w)], -1),
            np.stack([s * (x * z - y * w), s * (y * z + x * w), 1 - s * (x * x + y * y)], -1),
        ],
        -2,
    )


def _rotate(R, x, transpose=False):
    return np.einsum("...ji,...j->...i" if transpose else "...ij,...j->...i", R, x)


def velocity_map(model, q):
    """T(q), nv x nv (or N x nv x nv), with MuJoCo's qvel = T v for casrbd's v."""
    free, _ = _joints(model)
    q = _array(model, q, model.nq, "q")
    T = np.broadcast_to(np.eye(model.nv), q.shape[:-1] + (model.nv, model.nv)).copy()
    for iq, iv in free:
        T[..., iv : iv + 3, iv : iv + 3] = _rotations(q[..., iq + 3 : iq + 7])
    return T


def to_mujoco_state(model, q, v=None, a=None):
    """(qpos, qvel, qacc) of casrbd's (q, v, a); v, a may be None (None returned)."""
    free, ball = _joints(model)
    q, v, a = _array(model, q, model.nq, "q"), _array(model, v, model.nv, "v"), _array(model, a, model.nv, "a")
    qpos, qvel, qacc = q.copy(), None if v is None else v.copy(), None if a is None else a.copy()
    for k in ball:
        qpos[..., k : k + 4] = q[..., [k + 3, k, k + 1, k + 2]]
    for iq, iv in free:
        qpos[..., iq + 3 : iq + 7] = q[..., [iq + 6, iq + 3, iq + 4, iq + 5]]
        R = _rotations(q[..., iq + 3 : iq + 7])
        if v is not None:
            qvel[..., iv : iv + 3] = _rotate(R, v[..., iv : iv + 3])
        if a is not None:
            if v is None:
                raise ValueError(f"model {model.name!r}: the acceleration of a free joint needs v too")
            omega_x_v = np.cross(v[..., iv + 3 : iv + 6], v[..., iv : iv + 3])
            qacc[..., iv : iv + 3] = _rotate(R, a[..., iv : iv + 3] + omega_x_v)
    return qpos, qvel, qacc


def from_mujoco_state(model, qpos, qvel=None, qacc=None):
    """(q, v, a) of MuJoCo's (qpos, qvel, qacc); qvel, qacc may be None (None returned)."""
    free, ball = _joints(model)
    qpos = _array(model, qpos, model.nq, "qpos")
    qvel, qacc = _array(model, qvel, model.nv, "qvel"), _array(model, qacc, model.nv, "qacc")
    q, v, a = qpos.copy(), None if qvel is None else qvel.copy(), None if qacc is None else qacc.copy()
    for k in ball:
        q[..., k : k + 4] = qpos[..., [k + 1, k + 2, k + 3, k]]
    for iq, iv in free:
        q[..., iq + 3 : iq + 7] = qpos[..., [iq + 4, iq + 5, iq + 6, iq + 3]]
        R = _rotations(q[..., iq + 3 : iq + 7])
        if qvel is not None:
            v[..., iv : iv + 3] = _rotate(R, qvel[..., iv : iv + 3], transpose=True)
        if qacc is not None:
            if qvel is None:
                raise ValueError(f"model {model.name!r}: the acceleration of a free joint needs qvel too")
            omega_x_v = np.cross(v[..., iv + 3 : iv + 6], v[..., iv : iv + 3])
            a[..., iv : iv + 3] = _rotate(R, qacc[..., iv : iv + 3], transpose=True) - omega_x_v
    return q, v, a


def to_mujoco_force(model, q, tau):
    """MuJoCo's generalized force (qfrc_applied, ...) equal in power to casrbd's tau at q: T tau."""
    free, _ = _joints(model)
    q, tau = _array(model, q, model.nq, "q"), _array(model, tau, model.nv, "tau")
    out = tau.copy()
    for iq, iv in free:
        out[..., iv : iv + 3] = _rotate(_rotations(q[..., iq + 3 : iq + 7]), tau[..., iv : iv + 3])
    return out


def from_mujoco_force(model, qpos, qfrc):
    """casrbd's generalized force of MuJoCo's (qfrc_inverse, qfrc_bias, ...) at qpos: T^T qfrc."""
    free, _ = _joints(model)
    qpos, qfrc = _array(model, qpos, model.nq, "qpos"), _array(model, qfrc, model.nv, "qfrc")
    out = qfrc.copy()
    for iq, iv in free:
        R = _rotations(qpos[..., [iq + 4, iq + 5, iq + 6, iq + 3]])
        out[..., iv : iv + 3] = _rotate(R, qfrc[..., iv : iv + 3], transpose=True)
    return out
