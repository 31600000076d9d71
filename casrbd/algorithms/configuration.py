"""Configuration-space operations, joint by joint on each joint's manifold."""

import casadi as ca
import numpy as np

from ..spec import Out, Spec, configuration, tangent


def neutral(model):
    return np.concatenate([j.neutral() for j in model.joints]) if model.joints else np.zeros(0)


def random_configuration(model, rng=None):
    """Uniform within finite joint limits, else within [-pi, pi] (angles) or [-1, 1] (lengths);
    uniformly random unit quaternions."""
    rng = np.random.default_rng(rng)
    parts = [
        j.random(rng, model.lower[model.q_slice(i)], model.upper[model.q_slice(i)]) for i, j in enumerate(model.joints)
    ]
    return np.concatenate(parts) if parts else np.zeros(0)


def integrate(model, q, v):
    """q (+) v: the configuration reached from q after unit time at velocity v."""
    return ca.vertcat(*[j.integrate(q[model.q_slice(i)], v[model.v_slice(i)]) for i, j in enumerate(model.joints)])


def difference(model, q0, q1):
    """q1 (-) q0: the velocity that integrates q0 to q1 in unit time."""
    return ca.vertcat(*[j.difference(q0[model.q_slice(i)], q1[model.q_slice(i)]) for i, j in enumerate(model.joints)])


def tangent_map(model, q):
    """nv x nq derivative of the tangent coordinates with respect to the raw configuration."""
    return ca.diagcat(*[j.tangent_map(q[model.q_slice(i)]) for i, j in enumerate(model.joints)])


SPECS = (
    Spec("integrate", integrate, (configuration(), tangent("v")), (Out("q_next", "vector"),)),
    Spec("difference", difference, (configuration("q0"), configuration("q1")), (Out("dq", "vector"),)),
)
