"""Loading a Model from URDF (the only module that imports urdf_parser_py).

Only the part of URDF that defines the dynamics is read: ``_SCHEMA`` lists
the elements and attributes kept, and everything else (visual, collision,
material, transmission, gazebo, sensors, vendor attributes) is stripped
before urdf_parser_py sees the file, because it rejects some real files over
those and prints a line on stderr for every attribute it does not know.

What is kept is checked, and a problem raises ``URDFError`` naming the link,
joint or element at fault. The rules, in the order they apply:

- the size (``_read``): at most ``max_bytes``, UTF-8 text;
- the document (``_parse``, ``_xml_tree``): no DOCTYPE/ENTITY, well-formed
  XML, a ``<robot>`` root;
- the elements (``_check_elements``): unique names, known joint types,
  parent and child links, one of each scalar child, ``<mass>`` and
  ``<inertia>`` in every ``<inertial>``, finite numbers of the right count,
  and in ``_BOUNDED`` elements (the ones that enter the dynamics) none larger
  than ``MAX_MAGNITUDE`` in magnitude;
- the tree (``_tree``): some link, links exist, one parent per link, one
  root, no cycle;
- the numbers (``_link_inertia``, ``_make_joint``): mass >= 0, axes with a
  direction (normalised, with a warning if their norm is not 1 up to
  ``AXIS_ROUNDING``), lower <= upper, planar joints normal to z;
- the inertias (``_inertia_problem``, ``_check_inertias``): a negative
  principal moment beyond rounding is refused unless the link is merged into
  a body that is physical; slightly negative moments, moments violating
  the triangle inequality and a rotational inertia without mass only warn
  (``URDFWarning``), as Pinocchio loads them;
- the bodies (``_check_masses``): a joint that has a motion moving no mass
  (its subtree is massless, or the joints below it can undo its motion, as
  under a massless floating root) makes the mass matrix singular; such a
  model still serves kinematics (Pinocchio loads it too), so this warns,
  naming the joints.

Fixed joints are merged: the child link's inertia is added to the body of
the nearest moving ancestor joint and the link is kept as a frame. Mimic
joints are independent joints, as in Pinocchio's default, with a warning.
"""
import os
import re
import warnings
import xml.etree.ElementTree as ET
import xml.parsers.expat as expat

import casadi as ca
import numpy as np

from .algorithms.configuration import integrate, neutral
from .algorithms.kinematics import joint_placements
from .joints import JOINT_TYPES, FreeFlyer
from .model import Frame, Model
from .spatial import SE3, Inertia

MAX_BYTES = 20_000_000
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
# the numbers of these elements enter the dynamics; beyond this magnitude (kg, m, kg m^2, rad), a
# billion times any robot's, products of a few of them in the algorithms near overflow
_BOUNDED = ("origin", "mass", "inertia", "axis")
MAX_MAGNITUDE = 1e9
_URDF_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
# a principal moment may be this far below zero, relative to the largest one, as
# URDF exporters write five to seven significant digits ...
ROUNDING = 1e-5
# ... plus this much in kg m^2, for inertias that are zero up to an exporter's arithmetic
# (this much below zero passes silently)
ROUNDING_ABS = 1e-10
# an axis whose norm is this close to 1 is a unit axis written with few digits, normalised silently
AXIS_ROUNDING = 1e-3


class URDFError(ValueError):
    """A URDF that casrbd cannot turn into a correct model."""


class URDFWarning(UserWarning):
    """A URDF loaded with a questionable value or an ignored constraint."""


def load_urdf(source, floating_base=False, max_bytes=MAX_BYTES):
    """Model from a URDF file path, an XML string or XML bytes; ``floating_base`` adds a
    free-flyer root named ``root_joint`` (as Pinocchio's ``JointModelFreeFlyer`` root).

    A string is read as XML when it starts with ``<`` (after white space and a
    byte-order mark), else as a path; bytes are always the document. Documents
    over ``max_bytes`` (default ``MAX_BYTES``: 20 MB, a hundred times the largest URDF
    in example-robot-data) are refused before they are parsed.

    Raises ``URDFError`` for a URDF that does not describe a tree of physical
    bodies, and warns (``URDFWarning``) for questionable values it accepts; a
    path that cannot be read raises ``OSError``."""
    text, where = _read(source, max_bytes)
    robot = _parse(text, where)
    notes = []
    model = _build(robot, where, floating_base, notes)
    for note in notes:
        warnings.warn(f"{where}: {note}", URDFWarning, stacklevel=2)
    return model


def _read(source, max_bytes):
    """(text, how to name it in messages) of a path, an XML string or XML bytes, within ``max_bytes``."""
    if isinstance(source, str) and source.lstrip("\ufeff").lstrip().startswith("<"):
        where = "URDF string"
        if len(source) > max_bytes:  # a character is at least a byte: no need to encode
            raise URDFError(f"{where}: larger than the limit of {max_bytes} bytes (max_bytes)")
        try:
            data = source.encode("utf-8")
        except UnicodeEncodeError as e:
            raise URDFError(f"{where}: not text: lone surrogate {source[e.start]!r} at offset {e.start}") from None
    elif isinstance(source, (bytes, bytearray)):
        data, where = bytes(source), "URDF bytes"
    else:
        where = os.fspath(source)
        with open(where, "rb") as fh:
            data = fh.read(max_bytes + 1)  # one byte more tells a file over the limit
    if len(data) > max_bytes:
        raise URDFError(f"{where}: larger than the limit of {max_bytes} bytes (max_bytes)")
    try:
        return data.decode("utf-8-sig"), where
    except UnicodeDecodeError as e:
        raise URDFError(f"{where}: not UTF-8 text: byte {data[e.start]:#04x} at offset {e.start}") from None


def _parse(text, where):
    # entity expansion is a denial-of-service and file-disclosure vector, and URDF needs none:
    # refused here before any parser sees the text, and again by the parser (_xml_tree)
    found = re.search(r"<!DOCTYPE|<!ENTITY", text, re.IGNORECASE)
    if found:
        line = text.count("\n", 0, found.start()) + 1
        raise URDFError(f"{where}: line {line}: DOCTYPE and ENTITY declarations are refused")
    root = _xml_tree(text, where)
    if root.tag != "robot":
        raise URDFError(f"{where}: root element is <{root.tag}>, expected <robot>")
    _strip(root)
    _check_elements(root, where)
    from urdf_parser_py.urdf import URDF
    try:
        return URDF.from_xml_string(ET.tostring(root, encoding="unicode"))
    except Exception as e:  # urdf_parser_py raises bare Exceptions with the element path
        raise URDFError(f"{where}: {e}") from None


def _xml_tree(text, where):
    """The element tree of ``text``, parsed by an expat parser that stops at a DOCTYPE, so that
    no entity can be declared, let alone expanded (ElementTree's parser hides these hooks).
    Namespaces are not processed, as in urdfdom: ``xacro:property`` is a tag like any other."""
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate()

    def refuse(*_):
        raise URDFError(f"{where}: line {parser.CurrentLineNumber}: DOCTYPE and ENTITY declarations are refused")
    parser.StartDoctypeDeclHandler = parser.EntityDeclHandler = refuse
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = builder.end
    try:
        parser.Parse(text, True)
    except expat.ExpatError as e:
        raise URDFError(f"{where}: malformed XML at line {e.lineno}, column {e.offset}: "
                        f"{expat.ErrorString(e.code)}") from None
    return builder.close()


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
    if inertial is not None and (inertial.find("mass") is None or inertial.find("mass").get("value") is None
                                 or inertial.find("inertia") is None):
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
                raise URDFError(f"{where}: {owner} has {tags.count(tag)} <{tag}> elements in <{el.tag}>; "
                                f"one is allowed")
        bound = MAX_MAGNITUDE if el.tag in _BOUNDED else np.inf
        for key, count in _SCHEMA[el.tag][0].items():
            text = el.get(key)
            if count and text is not None and not _numbers_ok(text, count, bound):
                raise URDFError(f"{where}: {owner} has <{el.tag} {key}=\"{text}\">; "
                                f"{count} finite number{'s' if count > 1 else ''} expected"
                                + (f", none beyond {bound:g} in magnitude" if bound < np.inf else ""))


def _numbers_ok(text, count, bound):
    try:
        values = [float(x) for x in text.split()]
    except ValueError:
        return False
    return len(values) == count and all(np.abs(values) <= bound)


def _tree(robot, where):
    """(root link, joints in depth-first order): children by joint name, as urdfdom (hence Pinocchio)."""
    names = [link.name for link in robot.links]
    if not names:
        raise URDFError(f"{where}: <robot> has no <link>")
    child_joint, children = {}, {name: [] for name in names}
    for joint in robot.joints:
        for role, link in (("parent", joint.parent), ("child", joint.child)):
            if link not in children:
                raise URDFError(f"{where}: joint {joint.name!r} names {role} link {link!r}, which does not exist")
        if joint.child in child_joint:
            raise URDFError(f"{where}: link {joint.child!r} has two parents, through joints "
                            f"{child_joint[joint.child].name!r} and {joint.name!r}")
        child_joint[joint.child] = joint
        children[joint.parent].append(joint)
    roots = [name for name in names if name not in child_joint]
    if not roots:
        raise URDFError(f"{where}: no root link: {_cycle(names[0], child_joint)}")
    if len(roots) > 1:
        raise URDFError(f"{where}: several root links {roots}; a URDF is one tree")
    order, stack = [], sorted(children[roots[0]], key=lambda j: j.name, reverse=True)
    while stack:  # iteratively: a deep tree must not hit the recursion limit
        joint = stack.pop()
        order.append(joint)
        stack.extend(sorted(children[joint.child], key=lambda j: j.name, reverse=True))
    if len(order) != len(robot.joints):
        reached = {roots[0]} | {j.child for j in order}
        lost = [name for name in names if name not in reached]
        raise URDFError(f"{where}: links {lost} are not reachable from the root link {roots[0]!r}: "
                        f"{_cycle(lost[0], child_joint)}")
    return roots[0], order


def _cycle(link, child_joint):
    """The cycle met walking up from ``link`` (every link on the way has a parent)."""
    path = {}
    while link not in path:
        path[link] = len(path)
        link = child_joint[link].parent
    cycle = list(path)[path[link]:]
    return f"joints {[child_joint[name].name for name in cycle]} form a cycle through links {cycle}"


def _rpy_matrix(rpy):
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    R = np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                  [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                  [-sp, cp * sr, cp * cr]])
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


def _numeric_inertia(Y):
    return Inertia(float(Y.mass), np.array(Y.h, dtype=float).reshape(3), np.array(Y.I, dtype=float))


def _link_inertia(link, where):
    """(inertia in the link frame, mass, rotational inertia about the centre of mass in URDF axes)."""
    inertial = link.inertial
    if inertial is None:
        return Inertia.zero(), 0.0, np.zeros((3, 3))
    m = inertial.mass
    if m < 0:
        raise URDFError(f"{where}: link {link.name!r} has mass {m}; a mass >= 0 is required")
    I = np.array(inertial.inertia.to_matrix(), dtype=float)
    X = _origin(inertial.origin)
    return Inertia.from_com(m, X.p, X.R @ I @ X.R.T), m, I


def _inertia_problem(mass, I):
    """None, or (fatal, what is wrong) for a mass and rotational inertia about the centre of mass."""
    moments = np.linalg.eigvalsh(I)
    scale = np.abs(moments).max()
    text = f"principal moments of inertia {np.array2string(moments, precision=4)}"
    tol = ROUNDING * scale + ROUNDING_ABS
    if moments[0] < -tol:
        return True, f"has a negative principal moment of inertia ({text}), which no body has"
    if moments[0] < -ROUNDING_ABS:
        return False, f"has a slightly negative principal moment of inertia ({text}), taken as rounding"
    if moments[2] > moments[0] + moments[1] + tol:
        return False, f"has {text} that violate the triangle inequality (the largest exceeds the sum of the others)"
    if mass == 0 and moments[2] > ROUNDING_ABS:
        return False, f"has mass 0 but {text}, which no body has; kept as a rotational inertia"
    return None


def _physical(body):
    problem = _inertia_problem(body.mass, body.inertia_com if body.mass > 0 else body.I)
    return problem is None or not problem[0]


def _build(robot, where, floating_base, notes):
    root, order = _tree(robot, where)
    links = {link.name: link for link in robot.links}
    joints, frames, suspects = [], [], []

    def link_inertia(name, body):
        Y, m, I = _link_inertia(links[name], where)
        problem = _inertia_problem(m, I)
        if problem:
            suspects.append((name, body, *problem))
        return Y

    if floating_base:
        joints.append(FreeFlyer("root_joint", -1, SE3.identity(), inertia=link_inertia(root, 0)))
        frames.append(Frame(root, 0, SE3.identity()))
    else:
        link_inertia(root, -1)
        frames.append(Frame(root, -1, SE3.identity()))
    body_of = {root: (len(joints) - 1, SE3.identity())}  # link -> (joint index, placement in its frame)
    for uj in order:
        parent_joint, parent_placement = body_of[uj.parent]
        placement = parent_placement * _origin(uj.origin)
        if uj.type == "fixed":
            inertia = link_inertia(uj.child, parent_joint)
            body_of[uj.child] = (parent_joint, placement)
            frames.append(Frame(uj.child, parent_joint, placement))
            if parent_joint >= 0:
                owner = joints[parent_joint]
                owner.inertia = owner.inertia + _numeric_inertia(placement.act_inertia(inertia))
        else:
            inertia = link_inertia(uj.child, len(joints))
            joints.append(_make_joint(uj, parent_joint, placement, inertia, where, notes))
            body_of[uj.child] = (len(joints) - 1, SE3.identity())
            frames.append(Frame(uj.child, len(joints) - 1, SE3.identity()))
    _check_inertias(joints, suspects, where, notes)
    _note_mimics(order, notes)
    model = Model(robot.name or "robot", joints, frames)
    _check_masses(model, notes)
    return model


def _check_inertias(joints, suspects, where, notes):
    """Refuse a non-physical link inertia only if the body it is merged into is non-physical too."""
    for link, body, fatal, text in suspects:
        if not fatal:
            notes.append(f"link {link!r} {text}")
        elif body < 0:
            notes.append(f"link {link!r} {text}; it is fixed to the world, so it does not enter the dynamics")
        elif not _physical(joints[body].inertia):
            raise URDFError(f"{where}: link {link!r} {text}, and so does the body of joint "
                            f"{joints[body].name!r} it belongs to")
        else:
            notes.append(f"link {link!r} {text}; kept because the body of joint {joints[body].name!r} "
                         f"it is merged into is physical")


def _note_mimics(order, notes):
    mimics = [f"{j.name!r} (mimics {j.mimic.joint!r})" for j in order if j.mimic is not None]
    if mimics:
        notes.append(f"mimic constraints are ignored and these joints are independent "
                     f"(as Pinocchio's default): {', '.join(mimics)}")


def _make_joint(uj, parent, placement, inertia, where, notes):
    cls = JOINT_TYPES[uj.type]
    kwargs = {"inertia": inertia}
    if uj.type in ("revolute", "prismatic") and uj.limit is not None:
        lo, hi = uj.limit.lower, uj.limit.upper  # urdfdom and urdf_parser_py default both to 0
        if lo > hi:
            raise URDFError(f"{where}: joint {uj.name!r} has lower limit {lo} > upper limit {hi}")
        kwargs.update(lower=[lo], upper=[hi])
    if uj.type in ("revolute", "continuous", "prismatic", "planar"):
        axis = np.array([1.0, 0, 0] if uj.axis is None else uj.axis, dtype=float)
        norm = np.linalg.norm(axis)
        if norm < 1e-9:
            raise URDFError(f"{where}: joint {uj.name!r} has axis {axis.tolist()}, which has no direction")
        if abs(norm - 1) > AXIS_ROUNDING:
            notes.append(f"joint {uj.name!r} has axis {axis.tolist()} of norm {norm:.6g}; normalised")
        axis = axis / norm
        axis[np.abs(axis) < 1e-14] = 0.0
        if uj.type == "planar":
            if not np.allclose(axis, [0, 0, 1]):
                raise URDFError(f"{where}: planar joint {uj.name!r} has normal {axis.tolist()}; "
                                f"only planes normal to the joint's z axis are supported")
        else:
            kwargs["axis"] = axis
    return cls(uj.name, parent, placement, **kwargs)


def _check_masses(model, notes):
    """M is singular exactly when some D_i = S_i^T I^A_i S_i of ABA is (det M is their product):
    a joint whose subtree has no mass, or one whose motion the joints below it can undo without
    moving mass (a massless floating root over a revolute joint). ABA's inertia pass runs on
    numbers at a generic configuration (fixed seed), with pseudo-inverses so that a singular D_i
    does not spoil its ancestors'; singular there means singular almost everywhere."""
    if not model.joints:
        return
    v = np.random.default_rng(0).uniform(-1, 1, model.nv)
    liMi, _ = joint_placements(model, integrate(model, ca.DM(neutral(model)), ca.DM(v)))
    IA = [np.array(j.inertia.matrix()) for j in model.joints]
    idle = []
    for i in reversed(range(model.njoints)):
        joint = model.joints[i]
        U = IA[i] @ joint.S
        D = joint.S.T @ U
        if np.linalg.eigvalsh(D)[0] <= 1e-12 + 1e-11 * np.abs(IA[i]).max():  # kg, kg m^2; rounding
            idle.append(joint.name)
        if joint.parent >= 0:
            Ia = IA[i] - U @ np.linalg.pinv(D, hermitian=True) @ U.T
            IA[joint.parent] = IA[joint.parent] + np.array(liMi[i].act_inertia(ca.DM(Ia)))
    if idle:
        notes.append(f"joints {idle[::-1]} have a motion that moves no mass or inertia, with the joints below them "
                     f"free (links without <inertial>? a massless root link under floating_base=True?), so the "
                     f"mass matrix is singular: kinematics work, but aba, minverse and the forward-dynamics "
                     f"derivatives are undefined for this model")
