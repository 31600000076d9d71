"""Models by name and synthetic models for tests and scaling benchmarks.

``load_robot`` resolves a model shipped with the package (``arm7``, the
default), an example-robot-data robot (found through the installed
distribution's files; it is a test extra, never downloaded) or a URDF or MJCF
path; a robot's name wins over a file of that name in the current directory
(write ``./solo12`` for the file). ``reference_configurations`` reads the named
poses of the robots whose example-robot-data package ships an SRDF
(``EXAMPLE_SRDFS``), ``load_robot(..., rotors=True)`` its rotor armature.
``load_arm`` gives the arm of the reaching problems (the Panda with its fingers
fixed, else ``arm7``) with its tool frame; ``feet_on_ground`` sets a floating base's
height; ``rod`` and ``point_mass`` are the inertias of hand-built models.
``random_tree`` builds kinematic trees of any size, branching and joint mix
with random placements and physically valid random inertias (after
spatial_v2's autoTree).
"""

import os
import re
import xml.etree.ElementTree as ET
from importlib import metadata, resources

import numpy as np

from .joints import JOINT_TYPES
from .loaders import LoadError, load_mjcf, load_urdf
from .loaders.srdf import load_srdf
from .loaders.xml import read_head
from .model import Body, Frame, Model
from .spatial import SE3, Inertia, quaternion_matrix

SHIPPED = ("arm7",)
DEFAULT_ROBOT = "arm7"

# example_robot_data.load's names (its robots_loader.ROBOTS) -> (path under its robots/, free-flyer root), plus
# the two names casrbd used before; ur3 is the UR3 (the loader's table gives it the UR5's class)
EXAMPLE_ROBOTS = {
    "a1": ("a1_description/urdf/a1.urdf", True),
    "alex_nub_hands": ("alex_description/urdf/alex_nub_hands.urdf", False),
    "alex_psyonic_hands": ("alex_description/urdf/alex_psyonic_hands.urdf", False),
    "alex_sake_hands": ("alex_description/urdf/alex_sake_hands.urdf", False),
    "allegro_left_hand": ("allegro_hand_description/urdf/allegro_left_hand.urdf", False),
    "allegro_right_hand": ("allegro_hand_description/urdf/allegro_right_hand.urdf", False),
    "anymal": ("anymal_b_simple_description/robots/anymal.urdf", True),
    "anymal_c": ("anymal_c_simple_description/urdf/anymal.urdf", True),
    "anymal_kinova": ("anymal_b_simple_description/robots/anymal-kinova.urdf", True),
    "asr_twodof": ("asr_twodof_description/urdf/TwoDofs.urdf", False),
    "b1": ("b1_description/urdf/b1.urdf", True),
    "b1_z1": ("b1_description/urdf/b1-z1.urdf", True),
    "baxter": ("baxter_description/urdf/baxter.urdf", False),
    "bluevolta_bravo7_gripper": ("bluevolta_description/urdf/bluevolta_bravo7_gripper.urdf", True),
    "bluevolta_bravo7_no_ee": ("bluevolta_description/urdf/bluevolta_bravo7_no_ee.urdf", True),
    "bolt": ("bolt_description/robots/bolt.urdf", True),
    "borinot": ("borinot_description/urdf/borinot_flying_arm_2.urdf", True),
    "bravo7_gripper": ("bravo7_description/urdf/bravo7_gripper.urdf", False),
    "bravo7_no_ee": ("bravo7_description/urdf/bravo7_no_ee.urdf", False),
    "double_pendulum": ("double_pendulum_description/urdf/double_pendulum.urdf", False),
    "double_pendulum_continuous": ("double_pendulum_description/urdf/double_pendulum_continuous.urdf", False),
    "double_pendulum_simple": ("double_pendulum_description/urdf/double_pendulum_simple.urdf", False),
    "falcon_bravo7_gripper": ("falcon_description/urdf/falcon_bravo7_gripper.urdf", True),
    "falcon_bravo7_no_ee": ("falcon_description/urdf/falcon_bravo7_no_ee.urdf", True),
    "finger_edu": ("finger_edu_description/robots/finger_edu.urdf", False),
    "go1": ("go1_description/urdf/go1.urdf", True),
    "go2": ("go2_description/urdf/go2.urdf", True),
    "hector": ("hector_description/robots/quadrotor_base.urdf", True),
    "hextilt": ("hextilt_description/urdf/hextilt_flying_arm_5.urdf", True),
    "hyq": ("hyq_description/robots/hyq_no_sensors.urdf", True),
    "icub": ("icub_description/robots/icub.urdf", True),
    "icub_reduced": ("icub_description/robots/icub_reduced.urdf", True),
    "iris": ("iris_description/robots/iris_simple.urdf", True),
    "kinova": ("kinova_description/robots/kinova.urdf", False),
    "laikago": ("laikago_description/urdf/laikago.urdf", True),
    "panda": ("panda_description/urdf/panda.urdf", False),
    "panda_collision": ("panda_description/urdf/panda_collision.urdf", False),
    "pr2": ("pr2_description/urdf/pr2.urdf", True),
    "quadruped": ("quadruped_description/urdf/quadruped.urdf", True),
    "romeo": ("romeo_description/urdf/romeo.urdf", True),
    "simple_humanoid": ("simple_humanoid_description/urdf/simple_humanoid.urdf", True),
    "simple_humanoid_classical": ("simple_humanoid_description/urdf/simple_humanoid_classical.urdf", True),
    "solo8": ("solo_description/robots/solo.urdf", True),
    "solo12": ("solo_description/robots/solo12.urdf", True),
    "talos": ("talos_data/robots/talos_reduced.urdf", True),
    "talos_arm": ("talos_data/robots/talos_left_arm.urdf", False),
    "talos_box": ("talos_data/robots/talos_reduced_box.urdf", True),
    "talos_full": ("talos_data/robots/talos_full_v2.urdf", True),
    "talos_full_box": ("talos_data/robots/talos_full_v2_box.urdf", True),
    "talos_full_v2": ("talos_data/robots/talos_full_v2.urdf", True),
    "talos_reduced": ("talos_data/robots/talos_reduced.urdf", True),
    "tiago": ("tiago_description/robots/tiago.urdf", False),
    "tiago_dual": ("tiago_description/robots/tiago_dual.urdf", False),
    "tiago_no_hand": ("tiago_description/robots/tiago_no_hand.urdf", False),
    "tiago_pro": ("tiago_pro_description/robots/tiago_pro.urdf", False),
    "ur10": ("ur_description/urdf/ur10_robot.urdf", False),
    "ur10_limited": ("ur_description/urdf/ur10_joint_limited_robot.urdf", False),
    "ur3": ("ur_description/urdf/ur3_robot.urdf", False),
    "ur3_gripper": ("ur_description/urdf/ur3_gripper.urdf", False),
    "ur3_limited": ("ur_description/urdf/ur3_joint_limited_robot.urdf", False),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False),
    "ur5_gripper": ("ur_description/urdf/ur5_gripper.urdf", False),
    "ur5_limited": ("ur_description/urdf/ur5_joint_limited_robot.urdf", False),
    "z1": ("z1_description/urdf/z1.urdf", False),
}
# names example_robot_data.load accepts that casrbd cannot load from a file, and why
NOT_LOADABLE = {
    "cassie": "an SDF model (casrbd reads URDF and MJCF)",
    "talos_legs": "cut from talos by example_robot_data's Python loader; load 'talos' and keep the legs",
}

# the SRDF of a robot (under example-robot-data's robots/), as example_robot_data.load reads it; one file
# serves the variants of a robot (talos.srdf: the full, reduced and arm models), each reading its own joints
_SOLO, _TALOS, _UR5 = "solo_description/srdf/solo.srdf", "talos_data/srdf/talos.srdf", "ur_description/srdf/ur5.srdf"
EXAMPLE_SRDFS = {
    "a1": "a1_description/srdf/a1.srdf",
    "anymal": "anymal_b_simple_description/srdf/anymal.srdf",
    "anymal_c": "anymal_c_simple_description/srdf/anymal.srdf",
    "anymal_kinova": "anymal_b_simple_description/srdf/anymal-kinova.srdf",
    "b1": "b1_description/srdf/b1.srdf",
    "b1_z1": "b1_description/srdf/b1-z1.srdf",
    "bolt": "bolt_description/srdf/bolt.srdf",
    "finger_edu": "finger_edu_description/srdf/finger_edu.srdf",
    "go1": "go1_description/srdf/go1.srdf",
    "hyq": "hyq_description/srdf/hyq.srdf",
    "icub": "icub_description/srdf/icub.srdf",
    "icub_reduced": "icub_description/srdf/icub.srdf",
    "kinova": "kinova_description/srdf/kinova.srdf",
    "panda": "panda_description/srdf/panda.srdf",
    "simple_humanoid": "simple_humanoid_description/srdf/simple_humanoid.srdf",
    "simple_humanoid_classical": "simple_humanoid_description/srdf/simple_humanoid_classical.srdf",
    "solo8": _SOLO,
    "solo12": _SOLO,
    **dict.fromkeys(("talos", "talos_arm", "talos_box", "talos_full", "talos_full_box", "talos_full_v2"), _TALOS),
    "talos_reduced": _TALOS,
    "ur3_gripper": "ur_description/srdf/ur3_gripper.srdf",
    "ur5": _UR5,
    "ur5_gripper": "ur_description/srdf/ur5_gripper.srdf",
    "ur5_limited": _UR5,
    "z1": "z1_description/srdf/z1.srdf",
}

ALL_JOINT_TYPES = tuple(JOINT_TYPES)
# the joint types the analytical derivative algorithms support (constant motion subspace)
CONSTANT_SUBSPACE_TYPES = tuple(n for n, cls in JOINT_TYPES.items() if cls.constant_subspace)


def example_robot_data_dir():
    """The ``robots/`` folder of the installed example-robot-data, or None."""
    try:
        files = metadata.distribution("example-robot-data").files or []
    except metadata.PackageNotFoundError:
        return None
    for f in files:
        if "robots" in f.parts and f.suffix == ".urdf":
            path = f.locate()
            for _ in range(len(f.parts) - 1 - f.parts.index("robots")):  # up to the first robots/ of its path
                path = path.parent
            return str(path)
    return None


def robot_format(path):
    """The format of a robot file: "mjcf" when its root element is <mujoco>, else "urdf"."""
    head = read_head(path, 65536, LoadError).decode("utf-8", errors="replace")
    # the first element's tag, after the XML declaration, comments and processing instructions
    first = re.search(r"<(?![?!])\s*([\w:.-]+)", re.sub(r"<!--.*?-->", "", head, flags=re.DOTALL))
    return "mjcf" if first and first.group(1) == "mujoco" else "urdf"


def robot_path(name):
    """(URDF or MJCF path, free-flyer root) of a robot name or file path; a name wins over a file of that
    name in the current directory."""
    if not isinstance(name, (str, os.PathLike)):
        raise TypeError(f"robot must be a robot name or a file path (str or os.PathLike), got {type(name).__name__}")
    name = os.fspath(name)
    if isinstance(name, bytes):
        raise TypeError(f"robot must be a robot name or a file path as str, got bytes {name!r}")
    if name not in SHIPPED and name not in EXAMPLE_ROBOTS and name not in NOT_LOADABLE and os.path.exists(name):
        return name, False
    if name in SHIPPED:
        return str(resources.files("casrbd") / "data" / f"{name}.urdf"), False
    if name in NOT_LOADABLE:
        raise LookupError(f"robot {name!r} of example-robot-data is {NOT_LOADABLE[name]}")
    if name in EXAMPLE_ROBOTS:
        base = example_robot_data_dir()
        if base is None:
            raise LookupError(
                f"robot {name!r} comes from example-robot-data, which is not installed "
                f"(pip install example-robot-data, or the test extras)"
            )
        rel, floating = EXAMPLE_ROBOTS[name]
        path = os.path.join(base, rel)
        if not os.path.isfile(path):
            raise LookupError(f"robot {name!r}: the installed example-robot-data has no {rel}")
        return path, floating
    raise LookupError(f"unknown robot {name!r}: not a file, nor one of {list(SHIPPED) + list(EXAMPLE_ROBOTS)}")


def load_robot(name=DEFAULT_ROBOT, floating_base=None, rotors=False):
    """Model of a robot name (see ``robot_path``), URDF or MJCF path; legged robots get a free-flyer root.
    An MJCF file (root element <mujoco>) says itself where its free joints are: ``floating_base`` must
    then be left to None or False. ``rotors``: with the rotor armature of the robot's SRDF
    (``<rotor_params>``, example-robot-data's Talos), set on the joints it names."""
    path, floating = robot_path(name)
    if robot_format(path) == "mjcf":
        if floating_base:
            raise ValueError(f"{path}: an MJCF file has its own free joints; floating_base applies to URDF only")
        model = load_mjcf(path)
    else:
        model = load_urdf(path, floating if floating_base is None else floating_base)
    if rotors:
        armature = _srdf(name, model).armature
        if not armature:
            raise LookupError(f"robot {name!r}: its SRDF {srdf_path(name)} has no <rotor_params>")
        model = model.with_armature(armature)
    return model


def srdf_path(name):
    """The SRDF of an example-robot-data robot name (``EXAMPLE_SRDFS``)."""
    robot_path(name)  # a known robot, example-robot-data installed
    if name not in EXAMPLE_SRDFS:
        raise LookupError(f"robot {name!r}: no SRDF known for it; robots with one: {', '.join(sorted(EXAMPLE_SRDFS))}")
    return os.path.join(example_robot_data_dir(), EXAMPLE_SRDFS[name])


def reference_configurations(name):
    """{pose name: q (nq,), read-only} of a robot name's SRDF (``EXAMPLE_SRDFS``; solo12: ``standing``,
    talos: ``half_sitting``), for ``load_robot(name)``'s model."""
    return _srdf(name, load_robot(name)).reference_configurations


# the arms of the reaching examples and tests: their tool frame
ARM_TOOLS = {"panda": "panda_hand_tcp", "arm7": "tool"}


def load_arm(robot=None):
    """(model, tool frame) of a 7-dof arm for reaching: ``"panda"``, example-robot-data's Panda with its finger
    joints fixed (closed, their mass merged into the hand), or the shipped ``"arm7"``; None: the Panda where
    example-robot-data is installed, else arm7."""
    if robot is None:
        try:
            robot_path("panda")
            robot = "panda"
        except LookupError:  # example-robot-data is not installed
            robot = "arm7"
    if robot not in ARM_TOOLS:
        raise ValueError(f"arm {robot!r}: expected one of {sorted(ARM_TOOLS)} (or None)")
    if robot == "arm7":
        return load_robot("arm7"), ARM_TOOLS[robot]
    root = ET.parse(robot_path(robot)[0]).getroot()
    for joint in root.iter("joint"):
        if "finger" in joint.get("name"):
            joint.set("type", "fixed")
            for mimic in joint.findall("mimic"):
                joint.remove(mimic)
    return load_urdf(ET.tostring(root, encoding="unicode")), ARM_TOOLS[robot]


def feet_on_ground(model, q, feet):
    """A copy of the floating-base configuration ``q`` raised or lowered so that the lowest of the frames
    ``feet`` is at z = 0."""
    from .api import frame_placement

    q = np.array(q, dtype=float)
    q[2] -= min(frame_placement(model, q, f)[2, 3] for f in feet)
    return q


def rod(mass, length):
    """The inertia of a thin rod along x from its joint: com at length / 2, m l^2 / 12 about y and z."""
    return Inertia.from_com(mass, [length / 2, 0, 0], np.diag([1e-5, 1, 1]) * mass * length**2 / 12)


def point_mass(mass, x):
    """The inertia of a point mass on the x axis at ``x`` from its joint."""
    return Inertia.from_com(mass, [x, 0, 0], np.zeros((3, 3)))


def _srdf(name, model):
    # the SRDF may be shared with variants that have joints this one lacks
    return load_srdf(srdf_path(name), model, strict=False)


def random_inertia(rng):
    """Mass in [0.5, 2] kg, com within 0.2 m, and a rotational inertia that is a
    rigid body's (principal moments obey the triangle inequality)."""
    mass = rng.uniform(0.5, 2.0)
    second_moments = rng.uniform(0.005, 0.05, 3)
    R = _random_rotation(rng)
    I_com = R @ (np.eye(3) * second_moments.sum() - np.diag(second_moments)) @ R.T
    return Inertia.from_com(mass, rng.uniform(-0.2, 0.2, 3), I_com)


def _random_rotation(rng):
    return np.array(quaternion_matrix(rng.normal(size=4)))


def random_tree(n_bodies, joint_types=CONSTANT_SUBSPACE_TYPES, branching=1, seed=0, name=None):
    """A tree of ``n_bodies`` bodies.

    ``branching``: 1 for a serial chain, b > 1 for a complete b-ary tree
    (parent of body i is (i - 1) // b), ``None`` for random parents.
    ``joint_types`` (names of ``casrbd.joints.JOINT_TYPES``) cycle over the
    bodies in order, each with random parameters (``Joint.sample``); one-dof
    joints get limits [-2, 2]; placements are random.
    """
    unknown = set(joint_types) - set(JOINT_TYPES)
    if unknown:
        raise ValueError(f"unknown joint types {sorted(unknown)}; valid: {sorted(JOINT_TYPES)}")
    if n_bodies < 1:
        raise ValueError(f"random_tree needs at least one body, got n_bodies={n_bodies}")
    rng = np.random.default_rng(seed)
    bodies, frames = [], []
    for i in range(n_bodies):
        if i == 0:
            parent = -1
        elif branching is None:
            parent = int(rng.integers(0, i))
        else:
            parent = (i - 1) // branching
        jtype = joint_types[i % len(joint_types)]
        placement = SE3(_random_rotation(rng), rng.uniform(-0.5, 0.5, 3)) if i else SE3.identity()
        inertia = random_inertia(rng)
        joint = JOINT_TYPES[jtype].sample(rng)
        limits = ([-2.0], [2.0]) if joint.nq == 1 else (None, None)
        bodies.append(Body(f"j{i}_{jtype}", joint, parent, placement, inertia, *limits))
        frames.append(Frame(f"body{i}", i, SE3.identity()))
        frames.append(Frame(f"tip{i}", i, SE3(_random_rotation(rng), rng.uniform(-0.3, 0.3, 3))))
    branch = "random" if branching is None else branching
    return Model(name or f"tree{n_bodies}_b{branch}_s{seed}", bodies, frames)


def serial_chain(n_bodies, joint_type="revolute", seed=0):
    return random_tree(n_bodies, (joint_type,), branching=1, seed=seed, name=f"chain{n_bodies}_{joint_type}")
