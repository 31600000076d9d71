"""Loading a Model from URDF (the only module that imports urdf_parser_py).

Elements that do not matter for dynamics (visual, collision, material,
transmission, gazebo, sensors) are stripped before urdf_parser_py reads the
file, because it rejects some real files over them. Everything that defines
the kinematic tree and the inertias is checked, and a problem raises
``URDFError`` naming the link, joint or element at fault.

Fixed joints are merged: the child link's inertia is added to the body of
the nearest moving ancestor joint and the link is kept as a frame.
"""
import os
import re
import warnings
import xml.etree.ElementTree as ET

import casadi as ca
import numpy as np

from .algorithms.configuration import neutral
from .algorithms.crba import composite_inertias
from .algorithms.kinematics import joint_placements
from .joints import JOINT_TYPES, FreeFlyer
from .model import Frame, Model
from .spatial import SE3, Inertia

MAX_BYTES = 20_000_000
_KEEP = {"robot": {"link", "joint"},
         "link": {"inertial"},
         "joint": {"origin", "parent", "child", "axis", "limit", "mimic"}}
_URDF_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")


class URDFError(ValueError):
    """A URDF that casrbd cannot turn into a correct model."""


def load_urdf(source, floating_base=False):
    """Model from a URDF file path or XML string; ``floating_base`` adds a free-flyer root
    named ``root_joint`` (as Pinocchio's ``JointModelFreeFlyer`` root)."""
    text, where = _read(source)
    robot = _parse(text, where)
    return _build(robot, where, floating_base)


def _read(source):
    if isinstance(source, bytes):
        source = source.decode("utf-8")
    if isinstance(source, str) and source.lstrip().startswith("<"):
        text, where = source, "URDF string"
    else:
        path = os.fspath(source)
        if os.path.getsize(path) > MAX_BYTES:
            raise URDFError(f"{path}: file larger than {MAX_BYTES} bytes")
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        where = path
    if len(text) > MAX_BYTES:
        raise URDFError(f"{where}: larger than {MAX_BYTES} bytes")
    return text, where


def _parse(text, where):
    # entity expansion is a denial-of-service and file-disclosure vector, and URDF needs none
    if re.search(r"<!DOCTYPE|<!ENTITY", text):
        raise URDFError(f"{where}: DOCTYPE and ENTITY declarations are refused")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        line, col = e.position
        raise URDFError(f"{where}: malformed XML at line {line}, column {col}: {e}") from None
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
    keep = _KEEP.get(element.tag)
    for child in list(element):
        if keep is not None and child.tag not in keep:
            element.remove(child)
        else:
            _strip(child)


def _check_elements(root, where):
    for kind in ("link", "joint"):
        seen = set()
        for el in root.findall(kind):
            name = el.get("name")
            if not name:
                raise URDFError(f"{where}: a <{kind}> has no name")
            if name in seen:
                raise URDFError(f"{where}: duplicate {kind} name {name!r}")
            seen.add(name)
    for el in root.findall("joint"):
        name, jtype = el.get("name"), el.get("type")
        if jtype not in _URDF_TYPES:
            raise URDFError(f"{where}: joint {name!r} has unknown type {jtype!r}; "
                            f"supported: {', '.join(_URDF_TYPES)}")
        for tag in ("parent", "child"):
            node = el.find(tag)
            if node is None or not node.get("link"):
                raise URDFError(f"{where}: joint {name!r} has no <{tag} link=...>")


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
    inertial = link.inertial
    if inertial is None:
        return Inertia.zero()
    m = inertial.mass
    if m is None or not np.isfinite(m) or m < 0:
        raise URDFError(f"{where}: link {link.name!r} has mass {m!r}; a finite mass >= 0 is required")
    if inertial.inertia is None:
        raise URDFError(f"{where}: link {link.name!r} has a mass but no <inertia>")
    I = np.array(inertial.inertia.to_matrix(), dtype=float)
    if not np.all(np.isfinite(I)):
        raise URDFError(f"{where}: link {link.name!r} has a non-finite inertia")
    eig = np.linalg.eigvalsh(I)
    if eig[0] < -1e-12 * max(1.0, eig[-1]):
        raise URDFError(f"{where}: link {link.name!r} has an inertia that is not positive "
                        f"semi-definite (eigenvalues {eig.tolist()})")
    X = _origin(inertial.origin)
    return Inertia.from_com(m, X.p, X.R @ I @ X.R.T)


def _build(robot, where, floating_base):
    links = {link.name: link for link in robot.links}
    child_joint = {}
    children = {name: [] for name in links}
    for joint in robot.joints:
        for role, link in (("parent", joint.parent), ("child", joint.child)):
            if link not in links:
                raise URDFError(f"{where}: joint {joint.name!r} names {role} link {link!r}, which does not exist")
        if joint.child in child_joint:
            raise URDFError(f"{where}: link {joint.child!r} has two parents, through joints "
                            f"{child_joint[joint.child].name!r} and {joint.name!r}")
        child_joint[joint.child] = joint
        children[joint.parent].append(joint)
    for siblings in children.values():  # urdfdom's (hence Pinocchio's) order: by joint name
        siblings.sort(key=lambda j: j.name)
    roots = [name for name in links if name not in child_joint]
    if len(roots) != 1:
        if not roots:
            raise URDFError(f"{where}: no root link: the joints form a cycle")
        raise URDFError(f"{where}: several root links {roots}; a URDF is one tree")

    joints, frames = [], []
    root = roots[0]
    root_inertia = _link_inertia(links[root], where)
    if floating_base:
        joints.append(FreeFlyer("root_joint", -1, SE3.identity(), inertia=root_inertia))
        frames.append(Frame(root, 0, SE3.identity()))
    else:
        frames.append(Frame(root, -1, SE3.identity()))
    body_of = {root: (len(joints) - 1, SE3.identity())}  # link -> (joint index, placement in its frame)
    stack = list(reversed(children[root]))
    reached = {root}
    while stack:  # depth first, iteratively: a deep tree must not hit the recursion limit
        uj = stack.pop()
        reached.add(uj.child)
        parent_joint, parent_placement = body_of[uj.parent]
        placement = parent_placement * _origin(uj.origin)
        inertia = _link_inertia(links[uj.child], where)
        if uj.type == "fixed":
            body_of[uj.child] = (parent_joint, placement)
            frames.append(Frame(uj.child, parent_joint, placement))
            if parent_joint >= 0:
                owner = joints[parent_joint]
                owner.inertia = owner.inertia + _numeric_inertia(placement.act_inertia(inertia))
        else:
            joints.append(_make_joint(uj, parent_joint, placement, inertia, where))
            body_of[uj.child] = (len(joints) - 1, SE3.identity())
            frames.append(Frame(uj.child, len(joints) - 1, SE3.identity()))
        stack.extend(reversed(children[uj.child]))
    if len(reached) != len(links):
        raise URDFError(f"{where}: links {sorted(set(links) - reached)} are not reachable from the root "
                        f"{root!r}: their joints form a cycle")
    model = Model(robot.name or "robot", joints, frames)
    _check_masses(model, where)
    return model


def _make_joint(uj, parent, placement, inertia, where):
    cls = JOINT_TYPES[uj.type]
    kwargs = {"inertia": inertia}
    if uj.mimic is not None:
        warnings.warn(f"{where}: joint {uj.name!r} mimics {uj.mimic.joint!r}; the mimic constraint "
                      f"is ignored and the joint is independent (as Pinocchio's default)", stacklevel=3)
    if uj.type in ("revolute", "prismatic") and uj.limit is not None:
        lo, hi = uj.limit.lower, uj.limit.upper
        lo = -np.inf if lo is None else lo
        hi = np.inf if hi is None else hi
        if lo > hi:
            raise URDFError(f"{where}: joint {uj.name!r} has lower limit {lo} > upper limit {hi}")
        kwargs.update(lower=[lo], upper=[hi])
    if uj.type in ("revolute", "continuous", "prismatic", "planar"):
        axis = np.array([1.0, 0, 0] if uj.axis is None else uj.axis, dtype=float)
        norm = np.linalg.norm(axis)
        if not np.isfinite(norm) or norm < 1e-9:
            raise URDFError(f"{where}: joint {uj.name!r} has axis {axis.tolist()}, which has no direction")
        axis = axis / norm
        axis[np.abs(axis) < 1e-14] = 0.0
        if uj.type == "planar":
            if not np.allclose(axis, [0, 0, 1]):
                raise URDFError(f"{where}: planar joint {uj.name!r} has normal {axis.tolist()}; "
                                f"only planes normal to the joint's z axis are supported")
        else:
            kwargs["axis"] = axis
    return cls(uj.name, parent, placement, **kwargs)


def _check_masses(model, where):
    """Every moving joint must move some mass or inertia, or M is singular."""
    liMi, _ = joint_placements(model, ca.DM(neutral(model)))
    for joint, Ic in zip(model.joints, composite_inertias(model, liMi)):
        D = np.array(ca.mtimes(joint.S.T, Ic.act(joint.S)))
        if np.linalg.eigvalsh(D)[0] <= 1e-12:
            raise URDFError(f"{where}: joint {joint.name!r} moves no mass or inertia (the links of its "
                            f"subtree lack <inertial>), so the mass matrix is singular")
