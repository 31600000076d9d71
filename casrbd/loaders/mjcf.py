"""Loading a Model from MJCF, MuJoCo's format, through MuJoCo's own compiler (the only module that
imports ``mujoco``, an optional dependency: ``pip install casrbd[mjcf]``).

MuJoCo compiles the file (defaults and classes, ``<include>``, angles in
degrees, euler/axis-angle/``fromto`` frames, inertias from geoms,
``settotalmass``) and this module reads the compiled ``mjModel`` arrays, so
nothing of the format is interpreted twice. The mapping to casrbd's tree
(Pinocchio's conventions: a frame per joint, placements in the parent
joint's frame, inertias in the joint's frame):

- bodies are links in MuJoCo's order (depth first, in file order), so
  casrbd's joints are MuJoCo's joints in MuJoCo's order and ``idx_q``,
  ``idx_v`` equal ``jnt_qposadr``, ``jnt_dofadr``;
- a body without joints is welded to its parent: merged into the body of the
  nearest moving ancestor and kept as a frame (``builder``);
- a body with joints j1..jn is a chain: j1 at the body's pose in its parent
  (``body_pos``, ``body_quat``) times j1's anchor ``jnt_pos``, each next joint
  at its anchor relative to the previous one (MuJoCo moves each anchor with
  the joints before it), the body frame at minus the last anchor; the links
  between two joints of one body have no mass and no frame;
- hinge -> revolute, slide -> prismatic about/along ``jnt_axis``, ball ->
  spherical, free -> floating, at the world whatever the body's pose;
- a hinge or slide ``ref`` (MuJoCo's ``qpos0``) is folded into the joint's
  placement, so that q = qpos for them, limits (``range``) included;
- body inertias come from the inertial frame (``body_ipos``, ``body_iquat``,
  principal moments ``body_inertia``); bodies and sites are frames;
- ``armature`` is ``dof_armature`` plus, for actuators on a hinge or slide,
  the actuator's ``armature`` times its gear squared (MuJoCo adds both to M);
- gravity is ``<option gravity>``, zero when gravity is disabled;
- position limits are ``range`` where limited; effort limits are a joint's
  ``actuatorfrcrange`` where limited, else the sum over the actuators on a
  hinge or slide of |gear| times the bound on the actuator's force
  (``forcerange`` where limited, else |gain| ``ctrlrange`` for a motor, a
  fixed gain without bias), else none; MJCF has no velocity limits.

Before MuJoCo (``mjcf_documents``): the document, its includes (in the model's folder)
and the files they name are read or checked safely (regular files, UTF-8, no
DOCTYPE/ENTITY, ``max_bytes`` in all), and MuJoCo compiles exactly what was
checked, its warnings going to Python, never to ``MUJOCO_LOG.TXT``.
After MuJoCo (``_check_numbers``): every number that enters the dynamics
must be finite and at most ``MAX_MAGNITUDE`` (1e9, as in URDF) in magnitude,
and every quaternion and hinge or slide axis of unit norm (MuJoCo normalises
them, but leaves a degenerate one, of norm 1e-300 or overflowing, as it is),
else an ``MJCFError`` names the body, joint, site or option and the file;
MuJoCo itself only warns about a NaN, or says nothing.

What the tree cannot represent is reported by an ``MJCFWarning`` naming the
element (an ``MJCFError`` with ``strict=True``, as are MuJoCo's own compiler
warnings): tendons that act (stiffness,
damping, limits, friction, armature, actuated), equality constraints, joint
springs, damping and dry friction, gravity compensation, fluid forces, mocap
bodies (fixed at their pose in the file), flexes, plugins, armature on a free
joint (MuJoCo applies it in its own velocity coordinates) and actuator
armature on other transmissions. Geoms, actuators, sensors, contacts,
limits as constraints, cameras, lights and keyframes do not enter the
dynamics and are skipped. MuJoCo's errors for an invalid file are wrapped in
an ``MJCFError`` naming the file.

q and v are casrbd's (Pinocchio's): quaternions (x, y, z, w) and a free
joint's linear velocity in its local frame, where MuJoCo writes (w, x, y, z)
and the world frame; ``casrbd.loaders.mujoco_state`` (re-exported here) maps
states, accelerations and generalized forces between the two.
"""

import os
import warnings

import numpy as np

from ..joints import FORMAT_TYPES, JOINT_TYPES, rotation_about
from ..spatial import SE3, Inertia, quaternion_matrix
from .builder import MAX_MAGNITUDE, Connection, Link, LoadError, LoadWarning, build
from .mjcf_documents import compile_checked
from .mujoco_state import from_mujoco_force, from_mujoco_state, to_mujoco_force, to_mujoco_state, velocity_map
from .xml import MAX_BYTES, short_path

__all__ = [
    "MJCFError",
    "MJCFWarning",
    "from_mujoco_force",
    "from_mujoco_state",
    "load_mjcf",
    "mujoco_model",
    "to_mujoco_force",
    "to_mujoco_state",
    "velocity_map",
]


class MJCFError(LoadError):
    """An MJCF file that MuJoCo rejects or that casrbd cannot turn into a correct model."""


class MJCFWarning(LoadWarning):
    """An MJCF file loaded without something it describes (see ``casrbd.loaders.mjcf``)."""


def load_mjcf(source, strict=False, max_bytes=MAX_BYTES):
    """Model from an MJCF file path, an XML string or XML bytes, compiled by MuJoCo.

    A string is read as XML when it starts with ``<``, else as a path; the
    files a document includes, and its meshes, are found as MuJoCo finds them
    (relative to a path's folder). Documents and included files over
    ``max_bytes`` in all, files that are not regular files and DOCTYPE or
    ENTITY declarations are refused before MuJoCo sees them (``loaders.xml``);
    non-finite or absurd numbers, after MuJoCo compiled them.
    Joints, bodies and sites keep their names (bodies and sites become frames);
    unnamed ones are called ``joint<k>``, ``body<k>``, ``site<k>`` after
    MuJoCo's index. ``strict``: raise ``MJCFError`` instead of warning for what
    the model cannot represent and for MuJoCo's compiler warnings. Raises ``MJCFError`` (with MuJoCo's message)
    for a file MuJoCo rejects, ``OSError`` for a path that cannot be read and
    ``ImportError`` when MuJoCo is not installed."""
    mj, m, notes, root, where = compile_checked(source, max_bytes, MJCFError)
    is_path = where not in ("MJCF string", "MJCF bytes")
    if strict and notes:
        raise MJCFError(f"{where}: " + "; ".join(notes))
    name = root.get("model") or (os.path.splitext(os.path.basename(where))[0] if is_path else "mjcf")
    kinds = _Kinds(mj)
    _check_numbers(kinds, m, where)
    links, connections = _tree(kinds, m, notes)
    unsupported = _unsupported(kinds, m)
    if strict and unsupported:
        raise MJCFError(f"{where}: " + "; ".join(unsupported))
    gravity = np.zeros(3) if m.opt.disableflags & kinds.no_gravity else np.array(m.opt.gravity, dtype=float)
    model, more = build(name, links, connections, where, MJCFError, sort_children=False, gravity=gravity)
    if model.idx_q != tuple(m.jnt_qposadr) or model.idx_v != tuple(m.jnt_dofadr):  # the state maps rely on it
        raise AssertionError(f"{where}: casrbd's joint order differs from MuJoCo's")
    for note in notes + unsupported + more:
        warnings.warn(f"{short_path(where)}: {note}", MJCFWarning, stacklevel=2)
    return model


def mujoco_model(source, max_bytes=MAX_BYTES):
    """MuJoCo's compiled ``mjModel`` of an MJCF path, string or bytes, read and checked as ``load_mjcf``
    reads it (its compiler warnings dropped, never written to ``MUJOCO_LOG.TXT``)."""
    return compile_checked(source, max_bytes, MJCFError)[1]


class _Kinds:
    """MuJoCo's enumeration values as plain ints (its enums do not compare with numpy integers)."""

    def __init__(self, mj):
        self.joint = {int(v): k.replace("mjJNT_", "").lower() for k, v in mj.mjtJoint.__members__.items()}
        self.FREE, self.BALL, self.SLIDE, self.HINGE = (int(getattr(mj.mjtJoint, f"mjJNT_{k}")) for k in
                                                        ("FREE", "BALL", "SLIDE", "HINGE"))  # fmt: skip
        self.TRN_JOINT, self.TRN_TENDON = int(mj.mjtTrn.mjTRN_JOINT), int(mj.mjtTrn.mjTRN_TENDON)
        self.no_gravity = int(mj.mjtDisableBit.mjDSBL_GRAVITY)
        self.GAIN_FIXED, self.BIAS_NONE = int(mj.mjtGain.mjGAIN_FIXED), int(mj.mjtBias.mjBIAS_NONE)
        self.equality = {int(v): k.replace("mjEQ_", "").lower() for k, v in mj.mjtEq.__members__.items()}


# a quaternion or axis that MuJoCo normalised is of unit norm to rounding; one it could not normalise
# (norm below its mjMINVAL, or overflowing) is left as it was in the file
UNIT_ROUNDING = 1e-6


def _check_numbers(kinds, m, where):
    """Every compiled number that enters the dynamics finite and within MAX_MAGNITUDE, quaternions
    and hinge and slide axes of unit norm; else an MJCFError naming the element and the value."""
    body = [m.body(b).name or f"body{b}" for b in range(m.nbody)]
    joint = [m.joint(j).name or f"joint{j}" for j in range(m.njnt)]
    site = [m.site(k).name or f"site{k}" for k in range(m.nsite)]
    screw = [j for j in range(m.njnt) if int(m.jnt_type[j]) in (kinds.HINGE, kinds.SLIDE)]
    limited = [j for j in range(m.njnt) if m.jnt_limited[j]]
    armature = _armature(kinds, m)
    bounded = (
        ("body", body, "pos", m.body_pos),
        ("body", body, "inertial pos (ipos)", m.body_ipos),
        ("body", body, "mass", m.body_mass),
        ("body", body, "principal moments of inertia", m.body_inertia),
        ("joint", joint, "pos", m.jnt_pos),
        ("joint", [joint[j] for j in screw], "ref", [m.qpos0[m.jnt_qposadr[j]] for j in screw]),
        ("joint", [joint[j] for j in limited], "range", [m.jnt_range[j] for j in limited]),
        ("joint", [joint[m.dof_jntid[i]] for i in range(m.nv)], "armature (with its actuators')", armature),
        ("site", site, "pos", m.site_pos),
        ("option", ["gravity"], "value", [m.opt.gravity]),
    )
    for kind, names, what, rows in bounded:
        for name, x in zip(names, rows):
            x = np.asarray(x, dtype=float).reshape(-1)
            if not np.all(np.abs(x) <= MAX_MAGNITUDE):  # NaN fails too
                raise MJCFError(
                    f"{where}: {kind} {name!r} has {what} {x.tolist()}; finite numbers expected, "
                    f"none beyond {MAX_MAGNITUDE:g} in magnitude"
                )
    unit = (
        ("body", body, "quat", m.body_quat),
        ("body", body, "inertial quat (iquat)", m.body_iquat),
        ("joint", [joint[j] for j in screw], "axis", [m.jnt_axis[j] for j in screw]),
        ("site", site, "quat", m.site_quat),
    )
    for kind, names, what, rows in unit:
        for name, x in zip(names, rows):
            x = np.asarray(x, dtype=float).reshape(-1)
            norm = np.linalg.norm(x) if np.all(np.isfinite(x)) else np.nan
            if not abs(norm - 1) <= UNIT_ROUNDING:
                raise MJCFError(
                    f"{where}: {kind} {name!r} has {what} {x.tolist()} of norm {norm:.3g} after MuJoCo's compiler, "
                    f"which normalises every quaternion and axis it can: it has no direction (degenerate or not "
                    f"finite in the file)"
                )


def _rotation(quat_wxyz):
    """Rotation matrix of a w-first quaternion, with entries within 1e-14 of 0 or +-1 made exact so
    that casadi folds them."""
    w, x, y, z = np.asarray(quat_wxyz, dtype=float)
    R = np.array(quaternion_matrix([x, y, z, w]))
    for v in (0.0, 1.0, -1.0):
        R[np.abs(R - v) < 1e-14] = v
    return R


def _pose(quat_wxyz, pos):
    return SE3(_rotation(quat_wxyz), np.array(pos, dtype=float))


def _translation(p):
    return SE3(np.eye(3), np.asarray(p, dtype=float))


def _unique(names, prefix, taken):
    """``names`` with ``prefix<k>`` for the empty ones, made unique against ``taken`` (updated)."""
    out = []
    for k, name in enumerate(names):
        name = name or f"{prefix}{k}"
        while name in taken:
            name += "_"
        taken.add(name)
        out.append(name)
    return out


def _joint(kinds, m, j):
    """(casrbd joint, lower, upper, the placement factor of its reference position) of joint j."""
    kind = kinds.joint[int(m.jnt_type[j])]
    joint_type = JOINT_TYPES[FORMAT_TYPES["mjcf"][kind]]
    if kind in ("free", "ball"):  # MuJoCo ignores a ball's ref; its range is a cone, no bound on q
        return joint_type(), None, None, SE3.identity()
    axis = np.array(m.jnt_axis[j], dtype=float)
    axis[np.abs(axis) < 1e-14] = 0.0
    axis /= np.linalg.norm(axis)
    ref = float(m.qpos0[m.jnt_qposadr[j]])
    limits = ([float(m.jnt_range[j, 0])], [float(m.jnt_range[j, 1])]) if m.jnt_limited[j] else (None, None)
    if kind == "hinge":  # MuJoCo turns by qpos - ref: the turn by -ref goes into the placement
        return joint_type(axis), *limits, SE3(rotation_about(axis, np.cos(ref), -np.sin(ref)), np.zeros(3))
    return joint_type(axis), *limits, _translation(-ref * axis)


def _screw_actuators(kinds, m):
    """Actuators acting on one hinge or slide: {actuator: joint}."""
    out = {}
    for u in range(m.nu):
        j = int(m.actuator_trnid[u, 0])
        if int(m.actuator_trntype[u]) == kinds.TRN_JOINT and int(m.jnt_type[j]) in (kinds.HINGE, kinds.SLIDE):
            out[u] = j
    return out


def _armature(kinds, m):
    """dof_armature plus actuator armature x gear^2 of the actuators on a hinge or slide (as MuJoCo's M)."""
    armature = np.array(m.dof_armature, dtype=float)
    rotor = getattr(m, "actuator_armature", np.zeros(m.nu))
    for u, j in _screw_actuators(kinds, m).items():
        armature[m.jnt_dofadr[j]] += rotor[u] * m.actuator_gear[u, 0] ** 2
    return armature


def _effort_limits(kinds, m):
    """The effort limit of every dof (see the module docstring), inf where there is none."""
    effort = np.full(m.nv, np.inf)
    actuated = {}
    for u, j in _screw_actuators(kinds, m).items():
        if m.actuator_forcelimited[u]:
            bound = np.abs(m.actuator_forcerange[u]).max()
        elif (m.actuator_ctrllimited[u] and int(m.actuator_gaintype[u]) == kinds.GAIN_FIXED
              and int(m.actuator_biastype[u]) == kinds.BIAS_NONE):  # fmt: skip
            bound = abs(m.actuator_gainprm[u, 0]) * np.abs(m.actuator_ctrlrange[u]).max()
        else:
            bound = np.inf
        actuated[j] = actuated.get(j, 0.0) + abs(m.actuator_gear[u, 0]) * bound
    for j, bound in actuated.items():
        effort[m.jnt_dofadr[j]] = bound
    for j in np.flatnonzero(getattr(m, "jnt_actfrclimited", np.zeros(m.njnt))):
        dofs = slice(m.jnt_dofadr[j], m.jnt_dofadr[j] + (3 if int(m.jnt_type[j]) == kinds.BALL else 1))
        effort[dofs] = np.minimum(effort[dofs], np.abs(m.jnt_actfrcrange[j]).max())
    return effort


def _tree(kinds, m, notes):
    """Links (bodies, sites, the massless links between the joints of one body) and connections, in
    MuJoCo's body order; renamed sites are noted."""
    taken = set()
    bodies = _unique([m.body(b).name for b in range(m.nbody)], "body", taken)
    sites = _unique([m.site(k).name for k in range(m.nsite)], "site", taken)
    for k in range(m.nsite):
        if m.site(k).name and sites[k] != m.site(k).name:
            notes.append(f"site {m.site(k).name!r} has the name of a body or site; its frame is {sites[k]!r}")
    joints = _unique([m.joint(j).name for j in range(m.njnt)], "joint", set())
    armature, effort = _armature(kinds, m), _effort_limits(kinds, m)
    links, connections = [Link(bodies[0], Inertia.zero(), np.zeros((3, 3)))], []
    for b in range(1, m.nbody):
        R_i = _rotation(m.body_iquat[b])
        I_com = R_i @ np.diag(m.body_inertia[b]) @ R_i.T
        links.append(Link(bodies[b], Inertia.from_com(float(m.body_mass[b]), m.body_ipos[b], I_com), I_com))
        parent, origin, anchor = bodies[m.body_parentid[b]], _pose(m.body_quat[b], m.body_pos[b]), np.zeros(3)
        last = m.body_jntadr[b] + m.body_jntnum[b] - 1
        for j in range(m.body_jntadr[b], last + 1):
            p = np.array(m.jnt_pos[j], dtype=float)
            joint, lower, upper, ref = _joint(kinds, m, j)
            if joint.type == "floating":  # the compiler allows it at the top level, alone
                origin, p = SE3.identity(), np.zeros(3)
            else:  # each anchor is in the body frame as moved by the joints before it
                origin = origin * _translation(p - anchor) * ref
            child = bodies[b]
            if j < last or p.any():  # a massless link between two joints, or before the body frame
                child = _unique([f"{bodies[b]}:{joints[j]}"], "", taken)[0]
                links.append(Link(child, Inertia.zero(), np.zeros((3, 3)), frame=False))
            dofs = slice(m.jnt_dofadr[j], m.jnt_dofadr[j] + joint.nv)
            connections.append(
                Connection(joints[j], parent, child, origin, joint, lower, upper, armature[dofs], None, effort[dofs])
            )
            parent, origin, anchor = child, SE3.identity(), p
        if parent != bodies[b]:  # a body without joints, or a body frame off its last joint's anchor
            weld = origin * _translation(-anchor)
            connections.append(Connection(f"{bodies[b]} (weld)", parent, bodies[b], weld, None))
    for k in range(m.nsite):
        links.append(Link(sites[k], Inertia.zero(), np.zeros((3, 3))))
        origin = _pose(m.site_quat[k], m.site_pos[k])
        connections.append(Connection(f"{sites[k]} (site)", bodies[m.site_bodyid[k]], sites[k], origin, None))
    return links, connections


def _rows(m, field, n):
    """Per row of an mjModel array, whether it has a nonzero entry (none when this MuJoCo lacks it)."""
    x = getattr(m, field, None)
    if x is None or n == 0:
        return np.zeros(n, dtype=bool)
    return np.any(np.asarray(x).reshape(n, -1) != 0, axis=1)


def _named(names, mask):
    return ", ".join(repr(n) for n in dict.fromkeys(n for n, x in zip(names, mask) if x))


def _unsupported(kinds, m):
    """What the compiled model describes and a kinematic tree cannot represent, one note each."""
    notes = []
    joint = [m.joint(j).name or f"joint{j}" for j in range(m.njnt)]
    dof_joint = [joint[m.dof_jntid[i]] for i in range(m.nv)]
    body = [m.body(b).name or f"body{b}" for b in range(m.nbody)]
    for what, mask, names in (
        ("springs (stiffness)", _rows(m, "jnt_stiffness", m.njnt) | _rows(m, "jnt_stiffnesspoly", m.njnt), joint),
        ("damping", _rows(m, "dof_damping", m.nv) | _rows(m, "dof_dampingpoly", m.nv), dof_joint),
        ("dry friction (frictionloss)", _rows(m, "dof_frictionloss", m.nv), dof_joint),
    ):
        if mask.any():
            notes.append(f"joint {what} not modelled, of joints {_named(names, mask)}")
    free = np.array([int(m.jnt_type[m.dof_jntid[i]]) == kinds.FREE for i in range(m.nv)], dtype=bool)
    if np.any(_rows(m, "dof_armature", m.nv) & free):
        notes.append(
            f"free joints {_named(dof_joint, _rows(m, 'dof_armature', m.nv) & free)} have armature, which "
            f"MuJoCo applies to its world-frame linear velocity: kept as casrbd's (Pinocchio's) armature, whose "
            f"bias differs from MuJoCo's by armature * (angular velocity x linear velocity)"
        )
    acting = {}
    for field, what in (("stiffness", "stiffness"), ("stiffnesspoly", "stiffness"), ("damping", "damping"),
                        ("dampingpoly", "damping"), ("limited", "limits"), ("frictionloss", "frictionloss"),
                        ("armature", "armature")):  # fmt: skip
        for t in np.flatnonzero(_rows(m, "tendon_" + field, m.ntendon)):
            acting.setdefault(t, []).append(what)
    for u in range(m.nu):
        if int(m.actuator_trntype[u]) == kinds.TRN_TENDON:
            acting.setdefault(m.actuator_trnid[u, 0], []).append("an actuator")
    for t, what in sorted(acting.items()):
        notes.append(
            f"tendon {m.tendon(t).name or f'tendon{t}'!r} not modelled (it has {', '.join(dict.fromkeys(what))})"
        )
    for e in range(m.neq):
        kind = kinds.equality.get(int(m.eq_type[e]), "of another kind")
        notes.append(f"equality constraint {m.eq(e).name or f'equality{e}'!r} ({kind}) not modelled")
    rotor = _rows(m, "actuator_armature", m.nu)
    others = [u for u in np.flatnonzero(rotor) if u not in _screw_actuators(kinds, m)]
    if others:
        named = ", ".join(repr(m.actuator(u).name or f"actuator{u}") for u in others)
        notes.append(f"armature of actuators {named} not modelled (only actuators on one hinge or slide)")
    for what, mask in (
        ("gravity compensation (gravcomp) not modelled, of bodies", _rows(m, "body_gravcomp", m.nbody)),
        ("mocap bodies are fixed at their pose in the file:", np.asarray(m.body_mocapid) >= 0),
    ):
        if mask.any():
            notes.append(f"{what} {_named(body, mask)}")
    if m.opt.density or m.opt.viscosity or np.any(m.opt.wind):
        notes.append(
            f"fluid forces not modelled (density {m.opt.density:g}, viscosity {m.opt.viscosity:g}, "
            f"wind {np.asarray(m.opt.wind).tolist()})"
        )
    for what, count in (("flexes (deformable bodies)", m.nflex), ("plugins", m.nplugin)):
        if count:
            notes.append(f"{count} {what} not modelled")
    return notes
