"""A MuJoCo model (MJCF text) of a casrbd ``Model``: the same tree, so MuJoCo can be its plant.

The writer is the inverse of ``loaders.mjcf`` for the joints MuJoCo has:

- each casrbd joint is a MuJoCo body (named after the joint) with one joint
  of the same name at its origin: the body's pose in its parent's is the
  joint placement times the joint's transform at q = 0 (a screw joint's
  ``offset``), so the body frame is casrbd's joint frame and qpos = q for
  hinges and slides; revolute -> hinge, prismatic -> slide, spherical ->
  ball, floating -> free (at the world, with an identity placement);
- the body inertia is written about its centre of mass, in the joint frame
  (``fullinertia``; MuJoCo diagonalises it), geoms carry no mass;
- ``armature`` is the joint's, position limits its ``range``; every hinge and
  slide gets a torque actuator (``motor``, gear 1, ``ctrlrange`` the effort
  limit where finite), in joint order;
- frames are sites; ``feet`` frames carry a collision sphere each, centred
  at the frame; ``ground``: a plane at z = 0. Nothing else collides.

Quaternions and a free joint's velocity differ between the two
(``loaders.mujoco_state`` maps states and forces).
"""

import xml.etree.ElementTree as ET

import numpy as np

from ..spatial import SE3

KINDS = {"revolute": "hinge", "prismatic": "slide", "spherical": "ball", "floating": "free"}
ACTUATED = ("hinge", "slide")
INTEGRATORS = ("Euler", "implicitfast", "implicit", "RK4")


def _numbers(x):
    return " ".join(repr(float(v)) for v in np.asarray(x, dtype=float).ravel())


def _pose(element, X):
    """pos and xyaxes (the rotation's first two columns) of the SE3 X, unless they are the identity."""
    R, p = np.asarray(X.R, dtype=float), np.asarray(X.p, dtype=float).ravel()
    if np.any(p):
        element.set("pos", _numbers(p))
    if not np.array_equal(R, np.eye(3)):
        element.set("xyaxes", _numbers(R[:, :2].T))


def _numeric(model):
    for name, Y, X in zip(model.names, model.inertias, model.placements):
        for value in (Y.mass, Y.h, Y.I, X.R, X.p):
            try:
                np.asarray(value, dtype=float)
            except (TypeError, ValueError, NotImplementedError):
                raise ValueError(f"model {model.name!r}: joint {name!r} has symbolic inertia or placement") from None


def joint_kinds(model):
    """MuJoCo's joint type of each joint; a joint type MuJoCo lacks raises, naming the joint."""
    kinds = []
    for name, joint in zip(model.names, model.joints):
        if joint.type not in KINDS:
            raise ValueError(
                f"model {model.name!r}: joint {name!r} is {joint.type}, which MuJoCo does not have "
                f"(it has hinge, slide, ball and free joints)"
            )
        kinds.append(KINDS[joint.type])
    return kinds


def to_mjcf(model, timestep=1e-3, feet=(), foot_radius=0.02, friction=1.0, ground=False, integrator="Euler"):
    """MJCF text of ``model`` (see the module docstring) with ``<option timestep integrator gravity>``.

    ``feet``: frame names that get a collision sphere of ``foot_radius`` (friction coefficient
    ``friction``); ``ground``: a plane at z = 0 that they touch. Raises ``ValueError`` naming the joint
    for a joint MuJoCo lacks, a floating joint off the world or not at the world origin, armature on a
    free joint or differing among a ball joint's three velocities, a body without mass, or a symbolic
    model; naming the frame for an unknown foot."""
    kinds = joint_kinds(model)
    _numeric(model)
    if integrator not in INTEGRATORS:
        raise ValueError(f"integrator must be one of {INTEGRATORS}, got {integrator!r}")
    if not timestep > 0:
        raise ValueError(f"timestep must be positive, got {timestep!r}")
    if not foot_radius > 0:
        raise ValueError(f"foot_radius must be positive, got {foot_radius!r}")
    root = ET.Element("mujoco", model=model.name)
    ET.SubElement(root, "compiler", angle="radian", inertiafromgeom="false", autolimits="true")
    option = ET.SubElement(root, "option", timestep=repr(float(timestep)), integrator=integrator)
    option.set("gravity", _numbers(model.gravity))
    world = ET.SubElement(root, "worldbody")
    if ground:
        ET.SubElement(world, "geom", name="ground", type="plane", size="0 0 1", friction=f"{friction} 0.005 0.0001")
    bodies = []
    for i, (name, joint, kind) in enumerate(zip(model.names, model.joints, kinds)):
        parent = world if model.parents[i] < 0 else bodies[model.parents[i]]
        body = ET.SubElement(parent, "body", name=name)
        bodies.append(body)
        X = model.placements[i]
        if kind == "free":
            if model.parents[i] >= 0 or not (
                np.array_equal(np.asarray(X.R, dtype=float), np.eye(3)) and not np.any(np.asarray(X.p, dtype=float))
            ):
                raise ValueError(f"model {model.name!r}: floating joint {name!r} must be at the world origin")
        else:
            _pose(body, X * joint.transform([0.0]) if kind in ACTUATED else X)
        Y = model.inertias[i]
        mass = float(Y.mass)
        if not mass > 0:
            raise ValueError(f"model {model.name!r}: joint {name!r} carries no mass, which MuJoCo refuses")
        I = np.asarray(Y.inertia_com, dtype=float)
        ET.SubElement(
            body,
            "inertial",
            pos=_numbers(Y.com),
            mass=repr(mass),
            fullinertia=_numbers([I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]]),
        )
        element = ET.SubElement(body, "joint", name=name, type=kind)
        armature = model.armature[model.v_slice(i)]
        if kind == "free" and np.any(armature):
            raise ValueError(f"model {model.name!r}: free joint {name!r} has armature, which MuJoCo applies otherwise")
        if np.ptp(armature) > 0:
            raise ValueError(f"model {model.name!r}: ball joint {name!r} has differing armatures {armature.tolist()}")
        if np.any(armature):
            element.set("armature", repr(float(armature[0])))
        if kind in ACTUATED:
            element.set("axis", _numbers(joint.axis))
            lo, hi = model.lower[model.q_slice(i)][0], model.upper[model.q_slice(i)][0]
            if np.isfinite(lo) and np.isfinite(hi):
                element.set("range", _numbers([lo, hi]))
    names = {f.name for f in model.frames}
    for foot in feet:
        if foot not in names:
            raise ValueError(f"model {model.name!r}: foot frame {foot!r} is not a frame of the model")
    for frame in model.frames:
        parent = world if frame.joint < 0 else bodies[frame.joint]
        _pose(ET.SubElement(parent, "site", name=frame.name), frame.placement)
        if frame.name in feet:
            sphere = ET.SubElement(parent, "geom", name=frame.name, type="sphere", size=repr(float(foot_radius)))
            sphere.set("friction", f"{friction} 0.005 0.0001")
            _pose(sphere, SE3(np.eye(3), frame.placement.p))
    actuators = ET.SubElement(root, "actuator")
    for i, (name, kind) in enumerate(zip(model.names, kinds)):
        if kind in ACTUATED:
            motor = ET.SubElement(actuators, "motor", name=name, joint=name, gear="1")
            effort = model.effort_limit[model.v_slice(i)][0]
            if np.isfinite(effort):
                motor.set("ctrlrange", _numbers([-effort, effort]))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode")


def actuated_dofs(model):
    """The v indices of the hinges and slides: the actuators' dofs, in actuator order."""
    return [model.idx_v[i] for i, kind in enumerate(joint_kinds(model)) if kind in ACTUATED]
