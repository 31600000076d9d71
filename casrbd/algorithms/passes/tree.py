"""Shared pieces of the recursive algorithms over the tree.

The recursions in local frames (``local.py``, aba, crba, minverse) run in the model's algorithm
frames (``casrbd.algorithm_frames``): ``placements`` gives the placement ``liMi`` of body i in
its parent at q, ``motion_subspaces`` the S_i there, ``forces_to_bodies`` brings external forces
in. The world pass (``world.py``) gains nothing from local frames and composes the joint frames
(``joint_placements``, ``joint_subspaces``), which are cheaper to chain when a URDF's axes are
coordinate axes. ``world_placements`` chains placements into ``oMi``; ``subtree_sums`` is the one
accumulation from the leaves to the root. Joint-space blocks are gathered in dicts and
``assemble``d; derivative sets are 6 x nv with structural zeros outside the columns of the joints
that move them (``columns``).

External forces, everywhere in casrbd: a 6 x njoints matrix, column i the spatial force
[force; torque] applied to the body of joint i, expressed in joint i's frame (Pinocchio's
``fext``, one column per joint in ``model.joints`` order).
"""

import casadi as ca
import numpy as np

from ...spatial import SE3Chain
from .memo import shared


@shared
def placements(model, q):
    """liMi: the placement of body i's algorithm frame in its parent's at q, for every body;
    a chain of two factors where the constant part rotates about x only."""
    F = model.algorithm_frames
    X = []
    for i, joint in enumerate(F.joints):
        K, J = F.placements[i], joint.transform(q[model.q_slice(i)])
        X.append(SE3Chain([K, J]) if F.chained[i] else K * J)
    return X


@shared
def motion_subspaces(model, q):
    """S_i in body i's algorithm frame (constant, or at q)."""
    return [
        j.motion_subspace(None if j.constant_subspace else q[model.q_slice(i)])
        for i, j in enumerate(model.algorithm_frames.joints)
    ]


def joint_placements(model, q):
    """liMi in the joint frames: the joint's placement times its motion."""
    return [X * j.transform(q[model.q_slice(i)]) for i, (X, j) in enumerate(zip(model.placements, model.joints))]


def joint_subspaces(model, q):
    """S_i in joint i's frame."""
    return [j.motion_subspace(None if j.constant_subspace else q[model.q_slice(i)]) for i, j in enumerate(model.joints)]


def joint_biases(model, q, v):
    """c_J of every joint (None where S is constant and c_J vanishes)."""
    return [
        None if j.constant_subspace else j.bias(q[model.q_slice(i)], v[model.v_slice(i)])
        for i, j in enumerate(model.algorithm_frames.joints)
    ]


def compose(X, Y):
    """X Y for an SE3 X and an SE3 or chain Y, factor by factor (each is cheap on its own)."""
    for factor in Y.factors if isinstance(Y, SE3Chain) else (Y,):
        X = X * factor
    return X


def world_placements(model, liMi):
    """oMi from liMi, as single SE3s."""
    oMi = []
    for i, X in enumerate(liMi):
        p = model.parents[i]
        oMi.append((X.se3() if isinstance(X, SE3Chain) else X) if p < 0 else compose(oMi[p], X))
    return oMi


def subtree_sums(model, values, carry=None):
    """Every body's value summed over its subtree, leaves first; ``carry(i, x)`` brings body i's
    sum into its parent's frame (None: all values are in one frame)."""
    out = list(values)
    for i in reversed(range(model.njoints)):
        p = model.parents[i]
        if p >= 0:
            out[p] = out[p] + (out[i] if carry is None else carry(i, out[i]))
    return out


def base_acceleration(model):
    """a_0 = -a_g as a spatial motion: gravity enters as a fictitious base acceleration."""
    return np.concatenate([-model.gravity, np.zeros(3)]).reshape(6, 1)


def root_gravity(model, liMi, r):
    """g_r = R^T g, gravity in the axes of root body r."""
    return ca.mtimes(liMi[r].R.T, model.gravity)


def forces_to_bodies(model, f_ext):
    """The columns of the 6 x njoints external forces (joint frames) in the algorithm frames, or None."""
    if f_ext is None:
        return None
    return [G.inv_act_force(f_ext[:, i]) for i, G in enumerate(model.algorithm_frames.G)]


def free_flyer_roots(model):
    """The roots whose joint moves freely (S the identity): their tree can be worked in their frame."""
    return [i for i, j in enumerate(model.joints) if model.parents[i] < 0 and j.full_motion]


def require_constant_subspaces(model, algorithm):
    """Refuse a joint whose motion subspace depends on q: ``algorithm`` assumes dS/dq = 0."""
    for i, joint in enumerate(model.joints):
        if not joint.constant_subspace:
            raise NotImplementedError(
                f"{algorithm} supports joints with a constant motion subspace only; joint {model.names[i]!r} "
                f"({joint.type}) of model {model.name!r} has one that depends on q (casadi's AD of the "
                f"dynamics handles it: method='ad')"
            )


def columns(model, i, X):
    """A set holding X in the columns of joint i's velocities, structural zeros elsewhere."""
    s = model.v_slice(i)
    return ca.horzcat(ca.DM(X.shape[0], s.start), X, ca.DM(X.shape[0], model.nv - s.stop))


def assemble(model, blocks):
    """nv x nv matrix from a dict of joint blocks; missing blocks are structural zeros."""
    if not model.njoints:  # casadi 3.7 makes an empty blockcat 0 x 1
        return ca.DM(0, 0)
    return ca.blockcat(
        [
            [blocks.get((i, k), ca.DM(ji.nv, jk.nv)) for k, jk in enumerate(model.joints)]
            for i, ji in enumerate(model.joints)
        ]
    )


def dof_ancestors(model, i):
    """The velocity coordinates that support coordinate i, nearest first."""
    j = model.dof_parents[i]
    while j >= 0:
        yield j
        j = model.dof_parents[j]
