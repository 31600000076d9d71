"""Model-predictive path integral control (MPPI) of the 7-dof arm reaching a moving target, thousands
of rollouts per control step through one batched kernel.

Every control step samples ``--rollouts`` torque sequences around the nominal one, rolls each one out
over ``--horizon`` steps, and moves the nominal sequence to the average of the samples weighted by
exp(-cost / temperature) (Williams, Aldrich & Theodorou, JGCD 2017). One step of a rollout is a
casadi Function built from casrbd's symbolic aba and frame placement: gravity compensation plus the
sampled torque, a semi-implicit Euler step and the cost (tool to target, velocity, torque), compiled
by ``casrbd.gpu`` as one kernel over all rollouts, or by ``casrbd.fast``'s CPU batch when there is no
GPU. The first torque of the nominal sequence drives the arm (the same step, one state), and the
control rate reached is printed.

    python examples/mppi_gpu.py                        # 4096 rollouts, horizon 32, 100 control steps
    python examples/mppi_gpu.py --rollouts 64 --horizon 10 --steps 30    # what the tests run on the CPU
"""

import argparse
import time

import casadi as ca
import numpy as np

import casrbd
from casrbd import fast, gpu
from casrbd.models import load_robot

DT = 0.02  # control period and rollout step (s)
# controls in joint-acceleration units: tau = g(q) + m (u - DAMPING v), m the diagonal of M at the neutral
# configuration, so that one spread and one damping (which keeps explicit steps stable) suit every joint
SIGMA, LIMIT, DAMPING = 20.0, 60.0, 5.0
TEMPERATURE = 0.5  # of the exp(-cost / temperature) weights, relative to the spread of the costs
CENTRE, RADIUS, OMEGA = np.array([0.45, 0.0, 0.85]), 0.15, 1.0  # the target's circle (m, rad/s)


def step_function(model):
    """(q, v, u, target) -> (q+, v+, cost): semi-implicit Euler on aba with tau = g(q) + m (u - DAMPING v)."""
    q, v, u, target = (ca.SX.sym(n, k) for n, k in (("q", model.nq), ("v", model.nv), ("u", model.nv), ("p", 3)))
    m = 1 / np.diag(casrbd.minverse(model, casrbd.neutral(model)))
    a = casrbd.aba(model, q, v, casrbd.generalized_gravity(model, q) + m * (u - DAMPING * v))
    v_next = v + DT * a
    q_next = q + DT * v_next  # revolute joints: q and v have the same coordinates
    tool = casrbd.frame_placement(model, q_next, "tool")[:3, 3]
    cost = ca.sumsqr(tool - target) + 1e-3 * ca.sumsqr(v_next) + 1e-6 * ca.sumsqr(u)
    names = (["q", "v", "u", "p"], ["q_next", "v_next", "c"])
    return ca.Function("mppi_step", [q, v, u, target], [q_next, v_next, cost], *names)


def target_at(t):
    return CENTRE + RADIUS * np.array([np.cos(OMEGA * t), np.sin(OMEGA * t), 0.0])


def distance(model, q, t):
    return np.linalg.norm(np.asarray(casrbd.frame_placement(model, q, "tool"))[:3, 3] - target_at(t))


def backend(f):
    """(array module, batched step): the GPU kernel when there is a GPU, else the CPU batch."""
    ok, why = gpu.available()
    if ok:
        import cupy

        print(f"GPU: {why}, casrbd.gpu kernel in double precision")
        return cupy, gpu.compile_function(f)
    print(f"no GPU ({why}): rollouts on the CPU with casrbd.fast's batch (one core)")
    return np, fast.BatchFunction(fast.compile_function(f))


def mppi(model, rollouts, horizon, steps):
    xp, step = backend(step_function(model))
    rng = xp.random.default_rng(0)
    nv, to_host = model.nv, getattr(xp, "asnumpy", np.asarray)
    q, v = np.asarray(casrbd.neutral(model), dtype=float), np.zeros(nv)
    nominal = xp.zeros((horizon, nv))
    distances, start = [distance(model, q, 0.0)], None
    for k in range(steps + 1):
        if k == 1:  # the first step compiles or loads the kernel: time from the second on
            start = time.perf_counter()
        t = k * DT
        noise = SIGMA * rng.standard_normal((horizon, rollouts, nv))
        U = xp.clip(nominal[:, None, :] + noise, -LIMIT, LIMIT)
        Q, V = xp.tile(xp.asarray(q), (rollouts, 1)), xp.tile(xp.asarray(v), (rollouts, 1))
        cost = xp.zeros(rollouts)
        for h in range(horizon):
            P = xp.tile(xp.asarray(target_at(t + (h + 1) * DT)), (rollouts, 1))
            Q, V, c = step(Q, V, U[h], P)
            cost += c[:, 0]
        spread = float(cost.std()) + 1e-12
        w = xp.exp(-(cost - cost.min()) / (TEMPERATURE * spread))
        nominal = xp.einsum("k,hkn->hn", w / w.sum(), U)
        u = to_host(nominal[0])
        nominal = xp.concatenate([nominal[1:], nominal[-1:]])  # shift, repeating the last torque
        one = step(q[None], v[None], u[None], target_at(t + DT)[None])
        q, v = to_host(one[0])[0], to_host(one[1])[0]
        distances.append(distance(model, q, t + DT))
    seconds = time.perf_counter() - start
    rate = steps / seconds
    print(
        f"{steps} control steps of {rollouts} rollouts x {horizon} steps: {rate:.1f} control steps/s "
        f"({rate * rollouts * horizon:.3g} states/s); tool to target {distances[0]:.3f} m -> {distances[-1]:.3f} m"
    )
    return {"initial_distance": distances[0], "final_distance": distances[-1], "rate": rate}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=4096)
    parser.add_argument("--horizon", type=int, default=32)
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args(argv)
    return mppi(load_robot("arm7"), args.rollouts, args.horizon, args.steps)


if __name__ == "__main__":
    RESULT = main()
