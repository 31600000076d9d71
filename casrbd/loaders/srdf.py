"""Reading an SRDF (MoveIt's semantic robot description) for a model: its named configurations
(``<group_state>``) and its rotor parameters (``<rotor_params>``), as Pinocchio's
``loadReferenceConfigurations`` and ``loadRotorParameters`` read them.

- a ``<group_state name=...>`` is a configuration of the whole model: the neutral one
  (``Joint.neutral``) with the values of the joints it names, ``value`` holding the joint's nq
  numbers (a free-flyer root: x y z qx qy qz qw, as written);
- a ``<rotor_params>`` ``<joint name mass gear_ratio>`` gives the armature ``mass * gear_ratio**2``
  of a one-dof joint (``mass`` is the rotor's inertia, in kg m^2, as Pinocchio reads it; the
  armature is what example-robot-data sets for Talos).

The document is read by ``loaders.xml`` (regular file, size limit, UTF-8, no DOCTYPE). An unknown
joint, a wrong count of values, a non-finite or negative number, a pose named twice raise
``SRDFError`` naming the file, the pose (or ``rotor_params``) and the joint. One SRDF often serves
several variants of a robot (example-robot-data's ``talos.srdf``: the full robot, the reduced one,
an arm): ``strict=False`` skips the joints the model lacks, as Pinocchio does.
"""

from typing import NamedTuple

import numpy as np

from .builder import LoadError
from .xml import MAX_BYTES, element_tree, read_text


class SRDFError(LoadError):
    """An SRDF that does not fit the model it is read for."""


class SRDF(NamedTuple):
    """What casrbd reads of an SRDF: ``reference_configurations`` {pose name: q (nq,), read-only} and
    ``armature`` {joint name: rotor inertia * gear ratio**2} (empty without ``<rotor_params>``)."""

    reference_configurations: dict
    armature: dict


def load_srdf(source, model, strict=True, max_bytes=MAX_BYTES):
    """The reference configurations and rotor armature of ``model`` in an SRDF path, XML string or
    bytes (see the module docstring); ``strict=False`` skips joints the model lacks."""
    text, where = read_text(source, max_bytes, "SRDF", SRDFError)
    root = element_tree(text, where, SRDFError)
    if root.tag != "robot":
        raise SRDFError(f"{where}: root element is <{root.tag}>, expected <robot>")
    poses = {}
    for state in root.findall("group_state"):
        name = state.get("name")
        if not name:
            raise SRDFError(f"{where}: a <group_state> has no name")
        if name in poses:
            raise SRDFError(f"{where}: pose {name!r} is defined twice")
        poses[name] = _configuration(state, model, strict, f"{where}: pose {name!r}")
    armature = {}
    for params in root.findall("rotor_params"):
        for element in params.findall("joint"):
            i = _joint(element, model, strict, f"{where}: rotor_params")
            if i is None:
                continue
            name, owner = model.names[i], f"{where}: rotor_params: joint {model.names[i]!r}"
            if model.joints[i].nv != 1:
                raise SRDFError(f"{owner} has {model.joints[i].nv} velocities; one expected")
            inertia, ratio = (_numbers(element, key, 1, owner)[0] for key in ("mass", "gear_ratio"))
            if inertia < 0:
                raise SRDFError(f"{owner} has rotor inertia (mass) {inertia} < 0")
            armature[name] = inertia * ratio**2
    return SRDF(poses, armature)


def _configuration(state, model, strict, owner):
    q = np.concatenate([np.asarray(joint.neutral(), dtype=float).reshape(-1) for joint in model.joints] or [[]])
    for element in state.findall("joint"):
        i = _joint(element, model, strict, owner)
        if i is not None:
            q[model.q_slice(i)] = _numbers(element, "value", model.joints[i].nq, f"{owner}: joint {model.names[i]!r}")
    q.setflags(write=False)
    return q


def _joint(element, model, strict, owner):
    """The index of the model's joint an element names, or None for one the model lacks (not strict)."""
    name = element.get("name")
    if not name:
        raise SRDFError(f"{owner}: a <joint> has no name")
    if name in model.names:
        return model.names.index(name)
    if strict:
        raise SRDFError(f"{owner}: joint {name!r} is not a joint of model {model.name!r}")
    return None


def _numbers(element, key, count, owner):
    text = element.get(key)
    try:
        x = np.array([float(v) for v in (text or "").split()])
    except ValueError:
        x = None
    if x is None or len(x) != count or not np.all(np.isfinite(x)):
        raise SRDFError(f'{owner}: {key}="{text}"; {count} finite number{"s" if count > 1 else ""} expected')
    return x
