"""Contact sets: what ``constraint_dynamics`` and ``impulse_dynamics`` take, checked when their
Function is built.

A contact is (frame name or index, type), or (frame, type, anchor) with the anchor that the
Baumgarte gain kp pulls the contact frame to (Pinocchio's ``RigidConstraintModel`` with joint2 the
world and joint2_placement the anchor); the type is a name in ``types.CONTACT_TYPES``: "3d" (a point,
anchored at a world point) or "6d" (a frame, anchored at a 4 x 4 placement). ``resolve_contacts``
turns a sequence of them into a ``ContactSet`` (hashable: the Function is cached per contact set),
refusing unknown frames and types and duplicate frames; ``check_contacts`` refuses a set whose
contact Jacobian is rank deficient (redundant contacts: the forces are not unique), found at a
generic configuration as ``articulated.singular_joints`` finds a singular mass matrix, unless a
damping is given.
"""

from typing import NamedTuple

import casadi as ca
import numpy as np

from ...model import per_model
from ...spec import REQUIRED, Option
from ..configuration import integrate, neutral
from ..passes.world import local_jacobian, world_pass
from .types import CONTACT_TYPES

REFERENCES = ("local", "local_world_aligned")


class Contact(NamedTuple):
    frame: int
    type: str  # its name in CONTACT_TYPES
    name: str  # the frame's name
    anchor: tuple = None  # what kp pulls to, flattened (a world point; a 4 x 4 placement, row-major)

    @property
    def kind(self):
        """Its ``types.ContactType``."""
        return CONTACT_TYPES[self.type]

    @property
    def rows(self):
        return self.kind.rows

    def select(self, m):
        """The rows of a motion or force (set) that this contact constrains."""
        return self.kind.select(m)


class ContactSet(tuple):
    """Resolved contacts; named by their frames and types (the Function's name carries it)."""

    def __str__(self):
        anchors = f"_a{abs(hash(tuple(c.anchor for c in self))) % 10**8}" if any(c.anchor for c in self) else ""
        return "_".join(f"{c.name}_{c.type}" for c in self) + anchors or "none"


def _anchor(entry, kind, anchor):
    t = CONTACT_TYPES[kind]
    try:
        x = np.asarray(anchor, dtype=float)
    except (TypeError, ValueError, OverflowError):  # OverflowError: a Python int beyond float's range
        x = np.full(1, np.nan)
    if x.shape != t.anchor_shape or not np.all(np.isfinite(x)):
        raise ValueError(f"contact {entry!r}: the anchor of a {kind} contact must be {t.anchor_what}, got {anchor!r}")
    refused = t.check_anchor(x)
    if refused:
        raise ValueError(f"contact {entry!r}: {refused}")
    return tuple(x.ravel().tolist())


KNOWN = " | ".join(map(repr, CONTACT_TYPES))  # '3d' | '6d'


def resolve_contacts(model, contacts):
    """``contacts``: a sequence of (frame name or index, type[, anchor]) -> ``ContactSet``."""
    if isinstance(contacts, (str, bytes)) or not hasattr(contacts, "__iter__"):
        raise TypeError(f"contacts must be a sequence of (frame, {KNOWN}) pairs, got {contacts!r}")
    out, seen = [], {}
    for entry in contacts:
        if not isinstance(entry, (tuple, list)) or len(entry) not in (2, 3):
            raise ValueError(f"contact {entry!r}: expected (frame, {KNOWN}) or (frame, type, anchor)")
        if not isinstance(entry[0], (str, int, np.integer)):  # before a dict lookup (unhashable)
            raise TypeError(f"contact {entry!r}: the frame must be a name or an index, got {type(entry[0]).__name__}")
        frame, kind = model.frame_index(entry[0]), entry[1]
        if not isinstance(kind, str) or kind not in CONTACT_TYPES:
            raise ValueError(f"contact {entry!r}: unknown type {kind!r}; valid: {', '.join(map(repr, CONTACT_TYPES))}")
        name = model.frames[frame].name
        if frame in seen:
            raise ValueError(f"duplicate contact on frame {name!r}: {seen[frame]!r} and {entry!r}")
        seen[frame] = entry
        anchor = _anchor(entry, kind, entry[2]) if len(entry) == 3 and entry[2] is not None else None
        out.append(Contact(frame, kind, name, anchor))
    return ContactSet(out)


# the largest gain or damping accepted: a time constant of a microsecond (kp = 1e12 / s^2) is far
# beyond any contact model, and products with states and inertias stay within float's range
MAX_GAIN = 1e12


def _number(what, low=0.0, high=MAX_GAIN):
    def resolve(model, value):
        try:
            x = float(value)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"{what} must be a number, got {value!r}") from None
        if not low <= x <= high:  # NaN and infinities fail too
            raise ValueError(f"{what} must be a finite number in [{low:g}, {high:g}], got {value!r}")
        return x

    return Option(0.0, resolve=resolve)


CONTACTS = Option(REQUIRED, resolve=resolve_contacts)
REFERENCE = Option("local", REFERENCES)
OPTIONS = {
    "contacts": CONTACTS,
    "reference": REFERENCE,
    "kp": _number("kp (Baumgarte position gain)"),
    "kd": _number("kd (Baumgarte velocity gain)"),
    "damping": _number("damping"),
}
IMPULSE_OPTIONS = {
    "contacts": CONTACTS,
    "reference": REFERENCE,
    "restitution": _number("restitution", 0.0, 1.0),
    "damping": _number("damping"),
}


@per_model
def redundancy(model, contacts):
    """None if the contact Jacobian has full row rank at a generic configuration (fixed seed), else
    (the first contact whose rows are dependent on those before it, the rank, the number of rows)."""
    q = integrate(model, ca.DM(neutral(model)), ca.DM(np.random.default_rng(0).uniform(-1, 1, model.nv)))
    w = world_pass(model, q)
    rows = np.zeros((0, model.nv))
    for c in contacts:
        J = local_jacobian(model, w, c.frame)
        rows = np.vstack([rows, np.array(c.select(ca.DM(J)))])
        s = np.linalg.svd(rows, compute_uv=False)
        rank = int(np.sum(s > 1e-9 * max(1.0, s[0] if s.size else 1.0)))
        if rank < rows.shape[0]:
            return c, rank, rows.shape[0]
    return None


def check_contacts(model, contacts, damping, kp=0.0, what="constraint_dynamics"):
    """Refuse a rank-deficient contact set without damping, and kp without anchors."""
    if kp and any(c.anchor is None for c in contacts):
        missing = [c.name for c in contacts if c.anchor is None]
        raise ValueError(
            f"{what}: kp = {kp} needs an anchor for every contact, as (frame, type, anchor); none for {missing}"
        )
    bad = redundancy(model, contacts)
    if bad is not None and not damping:
        c, rank, n = bad
        before = [(d.name, d.type) for d in contacts[: contacts.index(c)]]
        raise ValueError(
            f"{what}: the contact Jacobian of model {model.name!r} is rank deficient at a generic configuration "
            f"(rank {rank} < {n} rows): contact {(c.name, c.type)} is redundant with {before}; the contact forces "
            f"are then not unique. Remove it, or give damping > 0 (regularised forces, Pinocchio's proximal mu)"
        )
