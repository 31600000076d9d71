"""Loading a Model from URDF (the only module that imports urdf_parser_py): the format mapping.

Only the part of URDF that defines the dynamics is read: ``_SCHEMA`` lists
the elements and attributes kept, and everything else (visual, collision,
material, transmission, gazebo, sensors, vendor attributes) is stripped
before urdf_parser_py sees the file, because it rejects some real files over
those and prints a line on stderr for every attribute it does not know.

What is kept is checked, and a problem raises ``URDFError`` naming the link,
joint or element at fault. The rules, in the order they apply:

- the document (``casrbd.loaders.xml``): at most ``max_bytes``, UTF-8 text,
  no DOCTYPE/ENTITY, well-formed XML, a ``<robot>`` root;
- the elements (``_check_elements``): unique names, known joint types,
  parent and child links, one of each scalar child, ``<mass>`` and
  ``<inertia>`` in every ``<inertial>``, finite numbers of the right count,
  and in ``_BOUNDED`` elements (the ones that enter the dynamics) none larger
  than ``MAX_MAGNITUDE`` in magnitude; a mimic names an existing joint;
- the numbers (``_link``, ``_connection``): mass >= 0, axes with a
  direction (normalised, with a warning if their norm is not 1 up to
  ``AXIS_ROUNDING``), lower <= upper, planar joints normal to z;
- the tree, the inertias and the mass matrix: ``casrbd.loaders.builder``.

Mimic joints are independent joints, as in Pinocchio's default, with a warning.
"""

import warnings
import xml.etree.ElementTree as ET

import numpy as np

from ..joints import FORMAT_TYPES, JOINT_TYPES, FreeFlyer, Screw
from ..spatial import SE3, Inertia
from .builder import MAX_MAGNITUDE, Connection, Link, LoadError, LoadWarning, build
from .xml import MAX_BYTES, element_tree, read_text, short_path

_INERTIA_KEYS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
# tag: ({attribute: how many numbers, 0 for text}, child tags); anything else is stripped
_SCHEMA = {
    "robot": ({"name": 0, "version": 0}, {"link", "joint"}),
    "link": ({"name": 0}, {"inertial"}),
    "inertial": ({}, {"origin", "mass", "inertia"}),
    "origin": ({"xyz": 3, "rpy": 3}, set()),
    "mass": ({"value": 1}, set()),
    "inertia": (dict.fromkeys(_INERTIA_KEYS, 1), set()),
    "joint": ({"name": 0, "type": 0}, {"origin", "parent", "child", "axis", "limit", "mimic"}),
    "parent": ({"link": 0}, set()),
    "child": ({"link": 0}, set()),
    "axis": ({"xyz": 3}, set()),
    "limit": (dict.fromkeys(("lower", "upper", "effort", "velocity"), 1), set()),
    "mimic": ({"joint": 0, "multiplier": 1, "offset": 1}, set()),
}
# the numbers of these elements enter the dynamics, bounded by MAX_MAGNITUDE (builder)
_BOUNDED = ("origin", "mass", "inertia", "axis")
_URDF_TYPES = tuple(FORMAT_TYPES["urdf"])
# an axis whose norm is this close to 1 is a unit axis written with few digits, normalised silently
AXIS_ROUNDING = 1e-3


class URDFError(LoadError):
    """A URDF that casrbd cannot turn into a correct model."""


class URDFWarning(LoadWarning):
    """A URDF loaded with a questionable value or an ignored constraint."""


def load_urdf(source, floating_base=False, max_bytes=MAX_BYTES):
    """Model from a URDF file path, an XML string or XML bytes; ``floating_base`` adds a
    free-flyer root named ``root_joint`` (as Pinocchio's ``JointModelFreeFlyer`` root).

    A string is read as XML when it starts with ``<`` (after white space and a
    byte-order mark), else as a path; bytes are always the document. Documents
    over ``max_bytes`` (default 20 MB, a hundred times the largest URDF in
    example-robot-data) are refused before they are parsed.

    Raises ``URDFError`` for a URDF that does not describe a tree of physical
    bodies, and warns (``URDFWarning``, naming a file deep in a package from
    the package's folder: ``loaders.xml.short_path``) for questionable values it
    accepts; a path that cannot be read raises ``OSError``."""
    text, where = read_text(source, max_bytes, "URDF", URDFError)
    robot = _parse(text, where)
    notes = []
    links = [_link(link, where) for link in robot.links]
    connections = [_connection(uj, where, notes) for uj in robot.joints]
    _note_mimics(robot.joints, where, notes)
    model, more = build(
        robot.name or "robot", links, connections, where, URDFError, FreeFlyer() if floating_base else None
    )
    for note in notes + more:
        warnings.warn(f"{short_path(where)}: {note}", URDFWarning, stacklevel=2)
    return model


def _parse(text, where):
    root = element_tree(text, where, URDFError)
    if root.tag != "robot":
        raise URDFError(f"{where}: root element is <{root.tag}>, expected <robot>")
    _strip(root)
    _check_elements(root, where)
    from urdf_parser_py.urdf import URDF

    try:
        return URDF.from_xml_string(ET.tostring(root, encoding="unicode"))
    except Exception as e:  # urdf_parser_py raises bare Exceptions with the element path
        raise URDFError(f"{where}: {e}") from None


def _strip(element):
    attributes, children = _SCHEMA[element.tag]
    for key in list(element.attrib):
        if key not in attributes:
            del element.attrib[key]
    for child in list(element):
        if child.tag in children:
            _strip(child)
        else:
            element.remove(child)


def _check_elements(root, where):
    for kind, check in (("link", _check_link), ("joint", _check_joint)):
        seen = set()
        for el in root.findall(kind):
            name = el.get("name")
            if not name:
                raise URDFError(f"{where}: a <{kind}> has no name")
            if name in seen:
                raise URDFError(f"{where}: duplicate {kind} name {name!r}")
            seen.add(name)
            _check_children(el, f"{kind} {name!r}", where)
            check(el, name, where)


def _check_link(el, name, where):
    inertial = el.find("inertial")
    if inertial is not None and (
        inertial.find("mass") is None or inertial.find("mass").get("value") is None or inertial.find("inertia") is None
    ):
        raise URDFError(f"{where}: link {name!r} has an <inertial> without <mass value=...> and <inertia .../>")


def _check_joint(el, name, where):
    jtype = el.get("type")
    if jtype not in _URDF_TYPES:
        raise URDFError(f"{where}: joint {name!r} has unknown type {jtype!r}; supported: {', '.join(_URDF_TYPES)}")
    for tag in ("parent", "child"):
        node = el.find(tag)
        if node is None or not node.get("link"):
            raise URDFError(f"{where}: joint {name!r} has no <{tag} link=...>")


def _check_children(top, owner, where):
    """One of each child element, and every numeric attribute a finite number of the right count
    (at most ``MAX_MAGNITUDE`` in magnitude in the ``_BOUNDED`` elements)."""
    for el in top.iter():
        tags = [child.tag for child in el]
        for tag in dict.fromkeys(tags):
            if tags.count(tag) > 1:
                raise URDFError(
                    f"{where}: {owner} has {tags.count(tag)} <{tag}> elements in <{el.tag}>; one is allowed"
                )
        bound = MAX_MAGNITUDE if el.tag in _BOUNDED else np.inf
        for key, count in _SCHEMA[el.tag][0].items():
            text = el.get(key)
            if count and text is not None and not _numbers_ok(text, count, bound):
                raise URDFError(
                    f'{where}: {owner} has <{el.tag} {key}="{text}">; '
                    f"{count} finite number{'s' if count > 1 else ''} expected"
                    + (f", none beyond {bound:g} in magnitude" if bound < np.inf else "")
                )


def _numbers_ok(text, count, bound):
    try:
        values = [float(x) for x in text.split()]
    except ValueError:
        return False
    return len(values) == count and all(np.abs(values) <= bound)


def _rpy_matrix(rpy):
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    R = np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )
    # exact zeros and ones let casadi fold the constant placements
    for v in (0.0, 1.0, -1.0):
        R[np.abs(R - v) < 1e-14] = v
    return R


def _origin(origin):
    if origin is None:
        return SE3.identity()
    xyz = np.zeros(3) if origin.xyz is None else np.array(origin.xyz, dtype=float)
    rpy = np.zeros(3) if origin.rpy is None else np.array(origin.rpy, dtype=float)
    return SE3(_rpy_matrix(rpy), xyz)


def _link(link, where):
    """The link's inertia in its frame, and its rotational inertia about the centre of mass (URDF axes)."""
    inertial = link.inertial
    if inertial is None:
        return Link(link.name, Inertia.zero(), np.zeros((3, 3)))
    m = inertial.mass
    if m < 0:
        raise URDFError(f"{where}: link {link.name!r} has mass {m}; a mass >= 0 is required")
    I = np.array(inertial.inertia.to_matrix(), dtype=float)
    X = _origin(inertial.origin)
    return Link(link.name, Inertia.from_com(m, X.p, X.R @ I @ X.R.T), I)


def _axis(uj, where, notes):
    axis = np.array([1.0, 0, 0] if uj.axis is None else uj.axis, dtype=float)
    norm = np.linalg.norm(axis)
    if norm < 1e-9:
        raise URDFError(f"{where}: joint {uj.name!r} has axis {axis.tolist()}, which has no direction")
    if abs(norm - 1) > AXIS_ROUNDING:
        notes.append(f"joint {uj.name!r} has axis {axis.tolist()} of norm {norm:.6g}; normalised")
    axis = axis / norm
    axis[np.abs(axis) < 1e-14] = 0.0
    return axis


def _connection(uj, where, notes):
    kind = FORMAT_TYPES["urdf"][uj.type]
    lower = upper = joint = velocity = effort = None
    if kind is not None:
        if uj.limit is not None:  # as urdfdom, hence Pinocchio: on every moving joint that has a <limit>
            velocity, effort = [uj.limit.velocity or 0.0], [uj.limit.effort or 0.0]
        if uj.type in ("revolute", "prismatic") and uj.limit is not None:
            lower, upper = uj.limit.lower, uj.limit.upper  # urdfdom and urdf_parser_py default both to 0
            if lower > upper:
                raise URDFError(f"{where}: joint {uj.name!r} has lower limit {lower} > upper limit {upper}")
            lower, upper = [lower], [upper]
        if issubclass(JOINT_TYPES[kind], Screw):
            joint = JOINT_TYPES[kind](_axis(uj, where, notes))
        else:
            normal = _axis(uj, where, notes) if uj.type == "planar" else None
            if normal is not None and not np.allclose(normal, [0, 0, 1]):
                raise URDFError(
                    f"{where}: planar joint {uj.name!r} has normal {normal.tolist()}; "
                    f"only planes normal to the joint's z axis are supported"
                )
            joint = JOINT_TYPES[kind]()
    if velocity is not None and joint.nv != 1:
        velocity = effort = None
    return Connection(uj.name, uj.parent, uj.child, _origin(uj.origin), joint, lower, upper, None, velocity, effort)


def _note_mimics(joints, where, notes):
    names = {j.name for j in joints}
    for j in joints:
        if j.mimic is not None and j.mimic.joint not in names:
            raise URDFError(f"{where}: joint {j.name!r} mimics joint {j.mimic.joint!r}, which does not exist")
    mimics = [f"{j.name!r} (mimics {j.mimic.joint!r})" for j in joints if j.mimic is not None]
    if mimics:
        notes.append(
            f"mimic constraints are ignored and these joints are independent "
            f"(as Pinocchio's default): {', '.join(mimics)}"
        )
