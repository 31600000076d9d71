"""The frozen model: topology, constants and index sets computed once."""
import numpy as np



class Frame:
    """A named placement attached to a joint (``joint`` = -1: the world)."""

    def __init__(self, name, joint, placement):
        self.name = name
        self.joint = joint
        self.placement = placement

    def __repr__(self):
        return f"Frame({self.name!r}, joint={self.joint})"


class Model:
    """A kinematic tree of joints in tree order (every parent before its children).

    Index sets (``supports``, ``subtree``, ``children``) are computed here once.
    Changing ``gravity`` drops the Functions cached for the model.
    """

    def __init__(self, name, joints, frames=(), gravity=(0.0, 0.0, -9.81)):
        self.name = name
        self.joints = tuple(joints)
        self.frames = tuple(frames)
        self._cache = {}
        self.gravity = gravity
        names = [j.name for j in self.joints]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"model {name!r}: duplicate joint names {dup}")
        self.nq = self.nv = 0
        for i, joint in enumerate(self.joints):
            if not -1 <= joint.parent < i:
                raise ValueError(f"model {name!r}: joint {joint.name!r} has parent index {joint.parent}, "
                                 f"which does not come before it in tree order")
            joint.idx_q, joint.idx_v = self.nq, self.nv
            self.nq += joint.nq
            self.nv += joint.nv
        self.parents = tuple(j.parent for j in self.joints)
        self.children = tuple(tuple(k for k, p in enumerate(self.parents) if p == i)
                              for i in range(len(self.joints)))
        supports = []
        for i, p in enumerate(self.parents):
            supports.append((supports[p] if p >= 0 else ()) + (i,))
        self.supports = tuple(supports)
        self.subtree = tuple(tuple(k for k in range(len(self.joints)) if i in self.supports[k])
                             for i in range(len(self.joints)))
        # the tree of the velocity coordinates: a joint's dofs form a chain below its parent's last dof
        self.dof_parents = tuple(k - 1 if k > j.idx_v else (self.joints[j.parent].idx_v + self.joints[j.parent].nv - 1
                                                             if j.parent >= 0 else -1)
                                 for j in self.joints for k in range(j.idx_v, j.idx_v + j.nv))
        self._joint_index = {n: i for i, n in enumerate(names)}
        self._frame_index = {f.name: i for i, f in enumerate(self.frames)}

    @property
    def njoints(self):
        return len(self.joints)

    @property
    def gravity(self):
        return self._gravity.copy()

    @gravity.setter
    def gravity(self, g):
        g = np.asarray(g, dtype=float)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ValueError(f"model {self.name!r}: gravity must be 3 finite numbers, got {g!r}")
        self._gravity = g
        self._cache.clear()

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
        j = self.joints[i]
        return slice(j.idx_v, j.idx_v + j.nv)

    def q_slice(self, i):
        j = self.joints[i]
        return slice(j.idx_q, j.idx_q + j.nq)

    @property
    def mass(self):
        return sum(j.inertia.mass for j in self.joints)

    def __repr__(self):
        return f"Model({self.name!r}, njoints={self.njoints}, nq={self.nq}, nv={self.nv})"

    def summary(self):
        lines = [f"model {self.name}: nq = {self.nq}, nv = {self.nv}, {self.njoints} joints, "
                 f"{len(self.frames)} frames, mass {self.mass:.4g} kg"]
        for i, j in enumerate(self.joints):
            parent = self.joints[j.parent].name if j.parent >= 0 else "world"
            lines.append(f"  {i:3d} {j.name:<32s} {j.type:<10s} parent {parent:<28s} "
                         f"idx_q {j.idx_q:3d} nq {j.nq}  idx_v {j.idx_v:3d} nv {j.nv}")
        return "\n".join(lines)
