"""Building a model from links connected by joints, whatever the file format.

A format loader maps its file to ``Link`` and ``Connection`` records and
calls ``build``, which orders the tree, merges fixed links and checks the
physics, raising the loader's error naming the link or joint at fault:

- the tree (``tree_order``): some link, links exist, one parent per link,
  one root, no cycle; depth-first order, children sorted by joint name (as
  urdfdom, hence Pinocchio) or kept in file order;
- fixed connections are merged: the child link's inertia is added to the
  body of the nearest moving ancestor and the link is kept as a frame;
- the inertias (``inertia_problem``): a negative principal moment beyond
  rounding is refused unless the link is merged into a body that is
  physical; slightly negative moments, moments violating the triangle
  inequality and a rotational inertia without mass only warn, as Pinocchio
  loads them;
- the mass matrix: joints whose motion moves no mass make it singular
  (``casrbd.algorithms.passes.articulated.singular_joints``, the articulated-body
  pass of aba itself); such a model still serves kinematics, as Pinocchio's,
  so this warns, and the Functions that need M^-1 refuse to build.
"""

from typing import NamedTuple

import numpy as np

from ..algorithms.passes.articulated import singular_joints
from ..model import Body, Frame, Model
from ..spatial import SE3, Inertia

# the numbers that enter the dynamics (kg, m, kg m^2, rad, m/s^2) may be at most this large in
# magnitude, a billion times any robot's: products of a few of them in the algorithms near overflow
MAX_MAGNITUDE = 1e9
# a principal moment may be this far below zero, relative to the largest one, as
# exporters write five to seven significant digits ...
ROUNDING = 1e-5
# ... plus this much in kg m^2, for inertias that are zero up to an exporter's arithmetic
# (this much below zero passes silently)
ROUNDING_ABS = 1e-10


class LoadError(ValueError):
    """A robot description that casrbd cannot turn into a correct model."""


class LoadWarning(UserWarning):
    """A robot description loaded with a questionable value or an ignored constraint."""


class Link(NamedTuple):
    """A rigid link: its inertia in the link frame, and its rotational inertia about the centre of
    mass in any axes (for the checks); ``frame``: whether the model keeps a frame of it (not for the
    massless links between two joints that a format puts in one body)."""

    name: str
    inertia: Inertia
    I_com: object
    frame: bool = True


class Connection(NamedTuple):
    """A joint from link ``parent`` to link ``child``: ``origin`` the joint frame in the parent link's
    frame, ``joint`` a casrbd joint (None: fixed), position limits or None, armature (nv numbers) or
    None, velocity and effort limits (nv numbers) or None."""

    name: str
    parent: str
    child: str
    origin: SE3
    joint: object
    lower: object = None
    upper: object = None
    armature: object = None
    velocity_limit: object = None
    effort_limit: object = None


def tree_order(links, connections, where, error, sort_children=True):
    """(root link, connections in depth-first order)."""
    names = [link.name for link in links]
    if not names:
        raise error(f"{where}: no link")
    child_joint, children = {}, {name: [] for name in names}
    for c in connections:
        for role, link in (("parent", c.parent), ("child", c.child)):
            if link not in children:
                raise error(f"{where}: joint {c.name!r} names {role} link {link!r}, which does not exist")
        if c.child in child_joint:
            raise error(
                f"{where}: link {c.child!r} has two parents, through joints "
                f"{child_joint[c.child].name!r} and {c.name!r}"
            )
        child_joint[c.child] = c
        children[c.parent].append(c)
    roots = [name for name in names if name not in child_joint]
    if not roots:
        raise error(f"{where}: no root link: {_cycle(names[0], child_joint)}")
    if len(roots) > 1:
        raise error(f"{where}: several root links {roots}; a robot is one tree")

    def below(link):
        kids = sorted(children[link], key=lambda c: c.name) if sort_children else children[link]
        return kids[::-1]

    order, stack = [], below(roots[0])
    while stack:  # iteratively: a deep tree must not hit the recursion limit
        c = stack.pop()
        order.append(c)
        stack.extend(below(c.child))
    if len(order) != len(connections):
        reached = {roots[0]} | {c.child for c in order}
        lost = [name for name in names if name not in reached]
        raise error(
            f"{where}: links {lost} are not reachable from the root link {roots[0]!r}: {_cycle(lost[0], child_joint)}"
        )
    return roots[0], order


def _cycle(link, child_joint):
    """The cycle met walking up from ``link`` (every link on the way has a parent)."""
    path = {}
    while link not in path:
        path[link] = len(path)
        link = child_joint[link].parent
    cycle = list(path)[path[link] :]
    return f"joints {[child_joint[name].name for name in cycle]} form a cycle through links {cycle}"


def inertia_problem(mass, I):
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
    problem = inertia_problem(body.mass, body.inertia_com if body.mass > 0 else body.I)
    return problem is None or not problem[0]


def _numeric(Y):
    return Inertia(float(Y.mass), np.array(Y.h, dtype=float).reshape(3), np.array(Y.I, dtype=float))


def build(
    name, links, connections, where, error=LoadError, root_joint=None, sort_children=True, gravity=(0.0, 0.0, -9.81)
):
    """(model, notes) from the links and connections; ``root_joint``: a joint (e.g. a free flyer)
    named ``root_joint`` between the world and the root link, else the root link is the world's;
    ``sort_children``: children in joint-name order (urdfdom's), else in the order given."""
    root, order = tree_order(links, connections, where, error, sort_children)
    links = {link.name: link for link in links}
    bodies, frames, suspects, notes = [], [], [], []
    inertias = []

    def link_inertia(link, body):
        problem = inertia_problem(links[link].inertia.mass, links[link].I_com)
        if problem:
            suspects.append((link, body, *problem))
        return links[link].inertia

    if root_joint is not None:
        bodies.append(["root_joint", root_joint, -1, SE3.identity(), None, None, None, None, None])
        inertias.append(link_inertia(root, 0))
        frames.append(Frame(root, 0, SE3.identity()))
    else:
        link_inertia(root, -1)
        frames.append(Frame(root, -1, SE3.identity()))
    body_of = {root: (len(bodies) - 1, SE3.identity())}  # link -> (body index, placement in its frame)
    for c in order:
        parent, parent_placement = body_of[c.parent]
        placement = parent_placement * c.origin
        if c.joint is None:
            Y = link_inertia(c.child, parent)
            body_of[c.child] = (parent, placement)
            if links[c.child].frame:
                frames.append(Frame(c.child, parent, placement))
            if parent >= 0:
                inertias[parent] = inertias[parent] + _numeric(placement.act_inertia(Y))
        else:
            inertias.append(link_inertia(c.child, len(bodies)))
            bodies.append([c.name, c.joint, parent, placement, *c[5:]])  # and the limits and armature
            body_of[c.child] = (len(bodies) - 1, SE3.identity())
            if links[c.child].frame:
                frames.append(Frame(c.child, len(bodies) - 1, SE3.identity()))
    _check_inertias(bodies, inertias, suspects, where, error, notes)
    records = [Body(n, j, p, X, Y, *limits) for (n, j, p, X, *limits), Y in zip(bodies, inertias)]
    model = Model(name, records, frames, gravity)
    idle = singular_joints(model)
    if idle:
        notes.append(
            f"joints {list(idle)} have a motion that moves no mass or inertia, with the joints below them "
            f"free (links without inertia? a massless root link under a free flyer?), so the "
            f"mass matrix is singular: kinematics work, but aba, minverse and the forward-dynamics "
            f"derivatives refuse this model"
        )
    return model, notes


def _check_inertias(bodies, inertias, suspects, where, error, notes):
    """Refuse a non-physical link inertia only if the body it is merged into is non-physical too."""
    for link, body, fatal, text in suspects:
        if not fatal:
            notes.append(f"link {link!r} {text}")
        elif body < 0:
            notes.append(f"link {link!r} {text}; it is fixed to the world, so it does not enter the dynamics")
        elif not _physical(inertias[body]):
            raise error(
                f"{where}: link {link!r} {text}, and so does the body of joint {bodies[body][0]!r} it belongs to"
            )
        else:
            notes.append(
                f"link {link!r} {text}; kept because the body of joint {bodies[body][0]!r} "
                f"it is merged into is physical"
            )
