"""Knots: what moves the state over one interval (Crocoddyl's differential and integrated action models).

A knot has its dynamics (``contact_dynamics`` of a contact set, free flight or an arm with ``aba``,
``impulse_dynamics`` at a touchdown), its interval ``dt``, its integrator and its terms (``Cost``,
``Constraint`` of the residuals). The state is x = [q; v]; the control u is the actuated joints'
torques (the joints past a free-flyer root, else all).
"""

import functools

import casadi as ca

from ..algorithms.contact.types import CONTACT_TYPES
from ..functions import function
from ..spec import INTEGRATORS, choice
from .residuals import actuated


class Dynamics:
    """``kind`` "contact": ``constraint_dynamics`` of ``contacts`` ((frame, "3d" | "6d"), or frame names:
    3-D) with Baumgarte gain ``kd`` on their velocity, ``aba`` without contacts; "impulse": the velocity
    jump of ``impulse_dynamics`` on ``contacts`` (no control, no time). Forces (impulses) in ``reference``
    axes, 3 per 3-D contact and 6 ([f; tau]) per 6-D one, in the order of ``contacts``."""

    def __init__(self, kind, contacts=(), kd=0.0, reference="local_world_aligned", damping=1e-12):
        choice("kind", kind, ("contact", "impulse"))
        self.kind, self.kd, self.reference, self.damping = kind, float(kd), reference, float(damping)
        self.contacts = tuple((c, "3d") if isinstance(c, str) else tuple(c) for c in contacts)
        for frame, kind_ in self.contacts:
            choice(f"contact {frame!r}'s type", kind_, tuple(CONTACT_TYPES))
        if kind == "impulse" and not self.contacts:
            raise ValueError("impulse dynamics need contacts (the landing feet)")

    @property
    def frames(self):
        return tuple(frame for frame, _ in self.contacts)

    def force_slices(self):
        """{frame: slice of the forces vector}."""
        out, start = {}, 0
        for frame, kind in self.contacts:
            size = CONTACT_TYPES[kind].rows
            out[frame], start = slice(start, start + size), start + size
        return out

    def key(self):
        return (self.kind, self.contacts, self.kd, self.reference, self.damping)

    def __eq__(self, other):
        return isinstance(other, Dynamics) and self.key() == other.key()

    def __hash__(self):
        return hash(self.key())


def contact_dynamics(contacts, kd=0.0, reference="local_world_aligned"):
    """The dynamics with ``contacts`` rigid ((frame, "3d" | "6d") or frame names, 3-D)."""
    return Dynamics("contact", contacts, kd, reference)


def free_dynamics():
    """No contact: ``aba`` (flight, or a fixed-base arm)."""
    return Dynamics("contact")


def impulse(contacts, reference="local_world_aligned", damping=1e-12):
    """The impulse of ``contacts`` landing (``impulse_dynamics``): an impulse knot, no control."""
    return Dynamics("impulse", contacts, reference=reference, damping=damping)


class Knot:
    """One interval: ``dynamics``, ``dt`` (ignored by an impulse), ``terms`` (``Cost``, ``Constraint``),
    ``integrator`` (``INTEGRATORS``: Crocoddyl's semi-implicit Euler v+ = v + a dt, q+ = q (+) v+ dt;
    explicit Euler; RK4 on the manifold), ``guess``: its control's initial guess (default zero)."""

    def __init__(self, dynamics, dt, terms=(), integrator="semi-implicit", guess=None):
        choice("integrator", integrator, INTEGRATORS)
        self.dynamics, self.terms, self.integrator, self.guess = dynamics, tuple(terms), integrator, guess
        self.dt = 0.0 if dynamics.kind == "impulse" else float(dt)
        if dynamics.kind != "impulse" and not self.dt > 0:
            raise ValueError(f"a knot's dt must be positive (an impulse takes none), got {dt!r}")
        names = [t.name for t in self.terms]
        if len(set(names)) != len(names):
            raise ValueError(f"a knot's terms need distinct names, got {names}")

    @property
    def kind(self):
        return "impulse" if self.dynamics.kind == "impulse" else "running"


def control_size(model, kind):
    """The control's size at a knot of ``kind`` ("running": the actuated joints; "impulse", "terminal": 0)."""
    return model.nv - actuated(model)[1] if kind == "running" else 0


@functools.cache
def transition(model, dynamics, dt, integrator, second_order):
    """(x, u) -> (x_next, forces) of a knot: an MX Function of calls of casrbd Functions (their Jacobians
    analytical; ``second_order`` of the contact dynamics: "ad" where nothing asks for it)."""
    nq, nv, (_, start) = model.nq, model.nv, actuated(model)
    impulse_ = dynamics.kind == "impulse"
    x, u = ca.MX.sym("x", nq + nv), ca.MX.sym("u", 0 if impulse_ else nv - start)
    q, v = x[:nq], x[nq:]
    options = {"contacts": list(dynamics.contacts), "reference": dynamics.reference, "second_order": second_order}
    if impulse_:
        step = function(model, "impulse_dynamics", jacobian="analytical", damping=dynamics.damping, **options)
        v_next, lam = step(q, v)
        return ca.Function("impulse", [x, u], [ca.vertcat(q, v_next), lam], ["x", "u"], ["x_next", "forces"])
    tau = ca.vertcat(ca.MX.zeros(start), u)
    if dynamics.contacts:
        fd = function(model, "constraint_dynamics", jacobian="analytical", kd=dynamics.kd, **options)
    else:
        aba = function(model, "aba", jacobian="analytical", second_order=second_order)
        fd = lambda q, v, tau: (aba(q, v, tau), ca.MX(0, 1))  # noqa: E731
    integrate = function(model, "integrate")
    a, lam = fd(q, v, tau)
    if integrator == "semi-implicit":
        v_next = v + a * dt
        q_next = integrate(q, v_next * dt)
    elif integrator == "euler":
        q_next, v_next = integrate(q, v * dt), v + a * dt
    else:  # RK4 with the tangent increments of each stage taken at q (Crocoddyl's IntegratedActionModelRK)
        vs, accs = [v], [a]
        for c in (0.5, 0.5, 1.0):
            qc, vc = integrate(q, c * dt * vs[-1]), v + c * dt * accs[-1]
            vs.append(vc)
            accs.append(fd(qc, vc, tau)[0])
        q_next = integrate(q, dt / 6 * (vs[0] + 2 * vs[1] + 2 * vs[2] + vs[3]))
        v_next = v + dt / 6 * (accs[0] + 2 * accs[1] + 2 * accs[2] + accs[3])
    return ca.Function("step", [x, u], [ca.vertcat(q_next, v_next), lam], ["x", "u"], ["x_next", "forces"])
