"""A MuJoCo simulation of a casrbd model as the plant of a controller (the only module of ``sim`` that
imports ``mujoco``).

The plant steps MuJoCo at its ``timestep``; every ``1 / rate`` s it measures
the state in casrbd's coordinates (``loaders.mujoco_state``; with sensor
noise if asked), calls the controller and times that call in CPU seconds
(``time.process_time``: the whole process, so run it on one thread). The
controller answers torques on the actuated joints (``actuated_dofs``), held
until its next update, or a law ``law(t, q, v) -> torques`` that the plant
evaluates at every step until then (a feedback around the plan). MuJoCo clamps
the torques to the actuators' ``ctrlrange``; the record keeps what the
controller asked. Pushes are impulses on a body (world frame, at its centre of
mass) spread over one step; a model error is the controller's: give it
another model than the plant's (``scaled_masses``).
"""

import time
from typing import NamedTuple

import numpy as np

from ..functions import function
from ..loaders.mujoco_state import from_mujoco_state, to_mujoco_state
from .mjcf_writer import actuated_dofs, to_mjcf


class Push(NamedTuple):
    """An impulse (N s: 3 linear, or 6 [linear; angular] in N m s) on the body of joint ``body`` at ``time``."""

    time: float
    body: str
    impulse: tuple


class Record(NamedTuple):
    """A closed-loop run: times ``t`` (steps + 1), the true ``q``, ``v`` at them (casrbd's coordinates),
    the torques ``tau`` asked over each step (steps x actuators), the world contact force on each foot
    over each step (steps x feet x 3), the times of the controller's updates and their CPU seconds."""

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    tau: np.ndarray
    contact_forces: np.ndarray
    update_t: np.ndarray
    update_cpu: np.ndarray


def scaled_masses(model, factor):
    """``model`` with every body's inertia (mass, first and second moments) times ``factor``: a model error."""
    return model.with_inertias([type(Y)(factor * Y.mass, factor * Y.h, factor * Y.I) for Y in model.inertias])


class Plant:
    """MuJoCo simulating ``model`` (``to_mjcf``'s model, its arguments taken here: ``timestep``, ``feet``,
    ``foot_radius``, ``friction``, ``ground``, ``integrator``); ``mj_model``, ``mj_data`` are MuJoCo's."""

    def __init__(self, model, timestep=1e-3, feet=(), foot_radius=0.02, friction=1.0, ground=False, integrator="Euler"):
        try:
            import mujoco
        except ImportError as e:
            raise ImportError("casrbd.sim.Plant needs MuJoCo: pip install casrbd[sim]") from e
        self._mujoco, self.model, self.feet, self.timestep = mujoco, model, tuple(feet), timestep
        text = to_mjcf(model, timestep, feet, foot_radius, friction, ground, integrator)
        self.mj_model = mujoco.MjModel.from_xml_string(text)
        self.mj_data = mujoco.MjData(self.mj_model)
        self.actuated = actuated_dofs(model)
        self._foot_geoms = [mujoco.mj_name2id(self.mj_model, mujoco.mjtObj.mjOBJ_GEOM, f) for f in self.feet]

    def reset(self, q, v=None):
        """Sets the state to casrbd's (q, v) (v: zero by default) and time 0."""
        v = np.zeros(self.model.nv) if v is None else v
        qpos, qvel, _ = to_mujoco_state(self.model, q, v)
        self._mujoco.mj_resetData(self.mj_model, self.mj_data)
        self.mj_data.qpos[:], self.mj_data.qvel[:] = qpos, qvel
        self._mujoco.mj_forward(self.mj_model, self.mj_data)

    def state(self):
        """(q, v) now, in casrbd's coordinates."""
        q, v, _ = from_mujoco_state(self.model, self.mj_data.qpos, self.mj_data.qvel)
        return q, v

    def run(self, controller, duration, rate, q0, v0=None, pushes=(), noise=(0.0, 0.0), seed=0):
        """Closed loop from (q0, v0) for ``duration`` s with ``controller(t, q, v)`` called at ``rate`` Hz
        (1 / rate a whole number of timesteps); ``pushes``: ``Push`` records; ``noise``: the standard
        deviations of the normal noise on the measured q (in the tangent space) and v (generator ``seed``).
        Returns a ``Record``."""
        mujoco, m, d, model = self._mujoco, self.mj_model, self.mj_data, self.model
        every = round(1 / (rate * self.timestep))
        if every < 1 or abs(every * rate * self.timestep - 1) > 1e-9:
            raise ValueError(f"rate {rate} Hz: its period must be a whole number of timesteps {self.timestep} s")
        steps = round(duration / self.timestep)
        kicks = {}
        for push in pushes:
            impulse = np.zeros(6)
            impulse[: len(push.impulse)] = push.impulse
            if len(push.impulse) not in (3, 6):
                raise ValueError(f"push at {push.time} s: impulse must have 3 or 6 entries, got {len(push.impulse)}")
            body = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, push.body)
            if body < 0:
                raise ValueError(f"push at {push.time} s: {push.body!r} is not a joint of model {model.name!r}")
            # MuJoCo's xfrc_applied is [force; torque]
            kicks.setdefault(round(push.time / self.timestep), []).append((body, impulse / self.timestep))
        rng, integrate = np.random.default_rng(seed), function(model, "integrate")
        self.reset(q0, v0)
        q, v = self.state()
        ts, qs, vs, taus, forces, update_t, update_cpu = [0.0], [q], [v], [], [], [], []
        for k in range(steps):
            t = k * self.timestep
            if k % every == 0:
                q_meas, v_meas = q, v
                if noise[0]:
                    q_meas = np.array(integrate(q, noise[0] * rng.normal(size=model.nv))).ravel()
                if noise[1]:
                    v_meas = v + noise[1] * rng.normal(size=model.nv)
                start = time.process_time()
                command = controller(t, q_meas, v_meas)
                update_cpu.append(time.process_time() - start)
                update_t.append(t)
            tau = np.asarray(command(t, q, v) if callable(command) else command, dtype=float).ravel()
            if tau.shape != (len(self.actuated),):
                raise ValueError(f"the controller answered {tau.shape[0]} torques, expected {len(self.actuated)}")
            d.ctrl[:] = tau
            for body, wrench in kicks.get(k, ()):
                d.xfrc_applied[body] = wrench
            mujoco.mj_step(m, d)
            d.xfrc_applied[:] = 0
            q, v = self.state()
            ts.append(t + self.timestep), qs.append(q), vs.append(v), taus.append(tau)
            forces.append(self._contact_forces())
        arrays = (ts, qs, vs, taus, np.reshape(forces, (steps, len(self.feet), 3)), update_t, update_cpu)
        return Record(*(np.array(x, dtype=float) for x in arrays))

    def _contact_forces(self):
        """The world force on each foot geom from its contacts now (MuJoCo's contact frame rotated out)."""
        mujoco, m, d = self._mujoco, self.mj_model, self.mj_data
        out, local = np.zeros((len(self.feet), 3)), np.zeros(6)
        for i in range(d.ncon):
            contact = d.contact[i]
            for n, geom in enumerate(self._foot_geoms):
                if geom in (contact.geom1, contact.geom2):
                    mujoco.mj_contactForce(m, d, i, local)
                    # the force on geom2 from geom1, its normal the frame's first row
                    f = contact.frame.reshape(3, 3).T @ local[:3]
                    out[n] += f if geom == contact.geom2 else -f
        return out
