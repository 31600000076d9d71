"""Activations and terms: a residual as a cost ``weight * activation(r)`` or a constraint ``lower <= r <= upper``."""

import casadi as ca
import numpy as np

from .residuals import as_vector


class Quadratic:
    """0.5 |r|^2."""

    def __call__(self, r, bounds):
        return 0.5 * ca.sumsqr(r)

    def key(self):
        return ("quadratic",)


class WeightedQuadratic:
    """0.5 sum w_i r_i^2 (Crocoddyl's weighted quadratic activation)."""

    def __init__(self, weights):
        self.weights = np.asarray(weights, dtype=float).ravel()

    def __call__(self, r, bounds):
        w = as_vector(self.weights, r.numel(), "WeightedQuadratic's weights")
        return 0.5 * ca.dot(ca.DM(w), r * r)

    def key(self):
        return ("weighted_quadratic", tuple(self.weights))


class QuadraticBarrier:
    """0.5 |r - clip(r, lower, upper)|^2: zero inside the box (Crocoddyl's quadratic barrier); the bounds
    default to the residual's natural ones."""

    def __init__(self, lower=None, upper=None):
        self.lower, self.upper = lower, upper

    def __call__(self, r, bounds):
        lower = bounds[0] if self.lower is None else as_vector(self.lower, r.numel(), "QuadraticBarrier's lower")
        upper = bounds[1] if self.upper is None else as_vector(self.upper, r.numel(), "QuadraticBarrier's upper")
        return 0.5 * ca.sumsqr(r - ca.fmin(ca.fmax(r, ca.DM(lower)), ca.DM(upper)))

    def key(self):
        return ("barrier", _frozen(self.lower), _frozen(self.upper))


def _frozen(values):
    return None if values is None else tuple(np.asarray(values, dtype=float).ravel())


class Cost:
    """``weight * activation(residual)``; ``weight`` and ``reference`` (the residual's, default zero) are
    parameters of the stage: knots that differ only in them share one stage Function."""

    def __init__(self, residual, weight=1.0, activation=None, reference=None, name=None):
        self.residual, self.weight = residual, float(weight)
        self.activation = activation or Quadratic()
        self.reference, self.name = reference, name or residual.name

    def key(self):
        return ("cost", self.name, self.residual.key(), self.activation.key())


class Constraint:
    """A hard constraint ``lower <= residual <= upper`` (equality where they are equal; default: the
    residual's natural bounds); ``reference`` as in ``Cost``."""

    def __init__(self, residual, lower=None, upper=None, reference=None, name=None):
        self.residual, self.lower, self.upper = residual, lower, upper
        self.reference, self.name = reference, name or residual.name

    def bounds(self, model, size):
        natural = self.residual.bounds(model)
        if (self.lower is None or self.upper is None) and natural is None:
            raise ValueError(f"constraint {self.name!r}: give lower and upper (the residual has no natural bounds)")
        lower = natural[0] if self.lower is None else self.lower
        upper = natural[1] if self.upper is None else self.upper
        return as_vector(lower, size, f"constraint {self.name!r}'s lower"), as_vector(
            upper, size, f"constraint {self.name!r}'s upper"
        )

    def key(self):
        return ("constraint", self.name, self.residual.key(), _frozen(self.lower), _frozen(self.upper))
