"""The frozen model: topology, joints, bodies and constants, with everything derived from them
computed once when it is built.

A ``Model`` is immutable (assigning an attribute raises) and its numeric arrays are read-only
copies, so two models share nothing mutable and a Function cached for a model (``casrbd.function``)
cannot go stale. Variants are new models: ``with_gravity``, ``with_inertias``.
Bodies are given as ``Body`` records in tree order (every parent before its children); the
model keeps them as parallel tuples, as Pinocchio's ``Model`` does (``names``, ``joints``,
``parents``, ``placements``, ``inertias``), with the index sets of the tree (``idx_q``,
``idx_v``, ``children``, ``supports``, ``subtree``, ``dof_parents``) and the algorithm frames
(``casrbd.algorithm_frames``). Inertias and placements may be casadi expressions: nothing here
forces them to numbers.
"""

import functools
import weakref
from typing import NamedTuple

import casadi as ca
import numpy as np

from .algorithm_frames import algorithm_frames
from .spatial import SE3, Frozen, Inertia, constant


class Body(NamedTuple):
    """A joint and the body it carries: the input of ``Model``.

    ``parent``: index of the parent body (-1: the world); ``placement``: the joint frame in the
    parent's joint frame (SE3); ``inertia``: the body's inertia in the joint frame (fixed links
    merged in); ``lower``, ``upper``: position limits (nq numbers, or None for none);
    ``armature``: the rotor inertia reflected on each of the joint's nv velocities (added to the
    mass matrix's diagonal, as Pinocchio's ``model.armature``; None for none); ``velocity_limit``,
    ``effort_limit``: bounds on the magnitude of each velocity and generalized force (nv numbers
    >= 0, or None for none: infinite), as Pinocchio's ``velocityLimit`` and ``effortLimit``.

    Limits are kept as the description gives them, and descriptions often fill them with
    placeholders (solo12's URDF: +-10 rad, 1000 rad/s, 1000 N m). ``Model.placeholder_limits``
    flags the likely ones by a fixed rule, on revolute joints (where the units say what is
    physical): a position limit beyond a full turn (|limit| > 2 pi rad, past the rounding of 2 pi:
    the UR arms' +-2 pi are real), a velocity bound of ``PLACEHOLDER_BOUND`` (1000) rad/s or more,
    an effort bound of 1000 N m or more; ``casrbd info`` marks them "placeholder?". Nothing is
    changed: the caller decides what to bound."""

    name: str
    joint: object
    parent: int
    placement: SE3
    inertia: Inertia = Inertia.zero()
    lower: object = None
    upper: object = None
    armature: object = None
    velocity_limit: object = None
    effort_limit: object = None


# on a revolute joint, a velocity (rad/s) or effort (N m) bound this large, or a position limit beyond
# a full turn, is likely a placeholder of the description (``Model.placeholder_limits``)
PLACEHOLDER_BOUND = 1000.0
PLACEHOLDER_TURN = 2 * np.pi + 1e-6


class Frame(NamedTuple):
    """A named placement in the frame of joint ``joint`` (-1: the world)."""

    name: str
    joint: int
    placement: SE3


class Model(Frozen):
    """A kinematic tree; see the module docstring."""

    __slots__ = (
        "name",
        "names",
        "joints",
        "parents",
        "placements",
        "inertias",
        "lower",
        "upper",
        "armature",
        "velocity_limit",
        "effort_limit",
        "frames",
        "gravity",
        "nq",
        "nv",
        "idx_q",
        "idx_v",
        "children",
        "supports",
        "subtree",
        "dof_parents",
        "algorithm_frames",
        "_joint_index",
        "_frame_index",
        "__weakref__",
    )

    def __init__(self, name, bodies, frames=(), gravity=(0.0, 0.0, -9.81)):
        bodies, frames = tuple(bodies), tuple(Frame(*f) for f in frames)
        try:
            g = np.asarray(gravity, dtype=float)
        except (TypeError, ValueError):
            g = np.full(1, np.nan)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ValueError(f"model {name!r}: gravity must be 3 finite numbers, got {gravity!r}")
        names = [b.name for b in bodies]
        if len(set(names)) != len(names):
            raise ValueError(
                f"model {name!r}: duplicate joint names {sorted({n for n in names if names.count(n) > 1})}"
            )
        idx_q, idx_v, nq, nv = [], [], 0, 0
        lower, upper, armature, velocity, effort = [], [], [], [], []
        for i, b in enumerate(bodies):
            if not -1 <= b.parent < i:
                raise ValueError(
                    f"model {name!r}: joint {b.name!r} has parent index {b.parent}, "
                    f"which does not come before it in tree order"
                )
            idx_q.append(nq)
            idx_v.append(nv)
            nq, nv = nq + b.joint.nq, nv + b.joint.nv
            for limits, given, fill in ((lower, b.lower, -np.inf), (upper, b.upper, np.inf)):
                x = np.full(b.joint.nq, fill) if given is None else np.asarray(given, dtype=float).reshape(-1)
                if x.shape != (b.joint.nq,):
                    raise ValueError(
                        f"model {name!r}: joint {b.name!r} has {b.joint.nq} coordinates, but limits of shape {x.shape}"
                    )
                limits.append(x)
            x = np.zeros(b.joint.nv) if b.armature is None else np.asarray(b.armature, dtype=float).reshape(-1)
            if x.shape != (b.joint.nv,) or not np.all(np.isfinite(x)) or np.any(x < 0):
                raise ValueError(
                    f"model {name!r}: joint {b.name!r} has {b.joint.nv} velocities; its armature must be "
                    f"{b.joint.nv} finite numbers >= 0, got {b.armature!r}"
                )
            armature.append(x)
            for bounds, given, what in ((velocity, b.velocity_limit, "velocity"), (effort, b.effort_limit, "effort")):
                x = np.full(b.joint.nv, np.inf) if given is None else np.asarray(given, dtype=float).reshape(-1)
                if x.shape != (b.joint.nv,) or np.any(np.isnan(x)) or np.any(x < 0):
                    raise ValueError(
                        f"model {name!r}: joint {b.name!r} has {b.joint.nv} velocities; its {what} limit must be "
                        f"{b.joint.nv} numbers >= 0 (inf: none), got {given!r}"
                    )
                bounds.append(x)
        parents = tuple(b.parent for b in bodies)
        supports = []
        for i, p in enumerate(parents):
            supports.append((supports[p] if p >= 0 else ()) + (i,))
        # the tree of the velocity coordinates: a joint's dofs form a chain below its parent's last dof
        dof_parents = tuple(
            k - 1 if k > idx_v[i] else (idx_v[p] + bodies[p].joint.nv - 1 if p >= 0 else -1)
            for i, (b, p) in enumerate(zip(bodies, parents))
            for k in range(idx_v[i], idx_v[i] + b.joint.nv)
        )
        for f in frames:
            if not -1 <= f.joint < len(bodies):
                raise ValueError(
                    f"model {name!r}: frame {f.name!r} is attached to joint {f.joint}, which does not exist"
                )
        super().__init__(
            name=name,
            names=tuple(names),
            joints=tuple(b.joint for b in bodies),
            parents=parents,
            placements=tuple(b.placement for b in bodies),
            inertias=tuple(b.inertia for b in bodies),
            lower=constant(np.concatenate(lower) if lower else np.zeros(0)),
            upper=constant(np.concatenate(upper) if upper else np.zeros(0)),
            armature=constant(np.concatenate(armature) if armature else np.zeros(0)),
            velocity_limit=constant(np.concatenate(velocity) if velocity else np.zeros(0)),
            effort_limit=constant(np.concatenate(effort) if effort else np.zeros(0)),
            frames=frames,
            gravity=constant(g),
            nq=nq,
            nv=nv,
            idx_q=tuple(idx_q),
            idx_v=tuple(idx_v),
            children=tuple(tuple(k for k, p in enumerate(parents) if p == i) for i in range(len(bodies))),
            supports=tuple(supports),
            subtree=tuple(tuple(k for k in range(len(bodies)) if i in supports[k]) for i in range(len(bodies))),
            dof_parents=dof_parents,
            _joint_index={n: i for i, n in enumerate(names)},
            _frame_index={f.name: i for i, f in enumerate(frames)},
        )
        object.__setattr__(self, "algorithm_frames", algorithm_frames(self))

    @property
    def njoints(self):
        return len(self.joints)

    @property
    def bodies(self):
        """The ``Body`` records the model was built from."""
        return tuple(
            Body(
                self.names[i],
                self.joints[i],
                self.parents[i],
                self.placements[i],
                self.inertias[i],
                self.lower[self.q_slice(i)],
                self.upper[self.q_slice(i)],
                self.armature[self.v_slice(i)],
                self.velocity_limit[self.v_slice(i)],
                self.effort_limit[self.v_slice(i)],
            )
            for i in range(self.njoints)
        )

    def _replace(self, bodies=None, **changes):
        args = {"name": self.name, "frames": self.frames, "gravity": self.gravity, **changes}
        return Model(args.pop("name"), self.bodies if bodies is None else bodies, **args)

    def with_gravity(self, gravity):
        """The same model under another gravity (3 numbers, m/s^2)."""
        return self._replace(gravity=gravity)

    def with_inertias(self, inertias):
        """The same model with other body inertias (one ``Inertia`` per joint, numeric or symbolic)."""
        inertias = tuple(inertias)
        if len(inertias) != self.njoints:
            raise ValueError(f"model {self.name!r}: {len(inertias)} inertias given for {self.njoints} bodies")
        return self._replace([b._replace(inertia=Y) for b, Y in zip(self.bodies, inertias)])

    def with_armature(self, armature):
        """The same model with another armature: nv numbers >= 0, or a dict {joint name: value(s)}
        (other joints keep theirs)."""
        values = np.array(self.armature)
        if isinstance(armature, dict):
            for name, x in armature.items():
                values[self.v_slice(self.joint_index(name))] = x
        else:
            x = np.asarray(armature, dtype=float)
            if x.shape != (self.nv,):
                raise ValueError(f"model {self.name!r}: armature must have shape ({self.nv},), got {x.shape}")
            values = x
        return self._replace([b._replace(armature=values[self.v_slice(i)]) for i, b in enumerate(self.bodies)])

    def joint_armature(self, i):
        """The armature of joint i's velocities as a column, or None where it is zero (so that graphs of
        models without armature do not change)."""
        x = self.armature[self.v_slice(i)]
        return ca.DM(x) if np.any(x) else None

    def joint_index(self, name):
        try:
            return self._joint_index[name]
        except KeyError:
            raise KeyError(f"model {self.name!r} has no joint {name!r}; joints: {list(self._joint_index)}") from None

    def frame_index(self, frame):
        """Index of a frame given by name or index."""
        if isinstance(frame, (int, np.integer)):
            if not 0 <= frame < len(self.frames):
                raise IndexError(f"model {self.name!r} has {len(self.frames)} frames, no frame {frame}")
            return int(frame)
        try:
            return self._frame_index[frame]
        except KeyError:
            raise KeyError(f"model {self.name!r} has no frame {frame!r}; frames: {list(self._frame_index)}") from None

    def v_slice(self, i):
        return slice(self.idx_v[i], self.idx_v[i] + self.joints[i].nv)

    def q_slice(self, i):
        return slice(self.idx_q[i], self.idx_q[i] + self.joints[i].nq)

    def placeholder_limits(self):
        """{joint name: the kinds of its limits ("position", "velocity", "effort") that are likely
        placeholders}, by the rule of ``Body``'s docstring; joints without any are left out."""
        out = {}
        for i, name in enumerate(self.names):
            if self.joints[i].type != "revolute":
                continue
            q, v = self.q_slice(i), self.v_slice(i)
            for kind, x, bound in (
                ("position", np.concatenate([self.lower[q], self.upper[q]]), PLACEHOLDER_TURN),
                ("velocity", self.velocity_limit[v], PLACEHOLDER_BOUND),
                ("effort", self.effort_limit[v], PLACEHOLDER_BOUND),
            ):
                x = np.abs(x[np.isfinite(x)])  # infinite: no limit
                if np.any(x >= bound):
                    out.setdefault(name, []).append(kind)
        return out

    @property
    def mass(self):
        return sum(Y.mass for Y in self.inertias)

    def __repr__(self):
        return f"Model({self.name!r}, njoints={self.njoints}, nq={self.nq}, nv={self.nv})"

    def summary(self):
        mass = self.mass
        mass = f"{mass:.4g} kg" if isinstance(mass, (int, float)) else "symbolic"
        lines = [
            f"model {self.name}: nq = {self.nq}, nv = {self.nv}, {self.njoints} joints, "
            f"{len(self.frames)} frames, mass {mass}"
        ]
        for i, j in enumerate(self.joints):
            parent = self.names[self.parents[i]] if self.parents[i] >= 0 else "world"
            lines.append(
                f"  {i:3d} {self.names[i]:<32s} {j.type:<10s} parent {parent:<28s} "
                f"idx_q {self.idx_q[i]:3d} nq {j.nq}  idx_v {self.idx_v[i]:3d} nv {j.nv}"
            )
        return "\n".join(lines)


def per_model(fn):
    """Cache ``fn(model, *args)`` (hashable args) for as long as the model lives: models are
    immutable, so a cached result never goes stale."""
    store = weakref.WeakKeyDictionary()

    @functools.wraps(fn)
    def cached(model, *args):
        results = store.setdefault(model, {})
        if args not in results:
            results[args] = fn(model, *args)
        return results[args]

    return cached
