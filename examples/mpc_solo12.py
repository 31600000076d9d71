"""Solo12 standing balance under base pushes: contact-dynamics MPC with MuJoCo as the plant.

MuJoCo simulates solo12 at 1 kHz on a ground plane, a sphere at each foot (``casrbd.sim.Plant``); the
controller updates at ``--rate`` Hz: ``--nodes`` semi-implicit Euler steps over ``constraint_dynamics``
with the four feet in rigid contact (Baumgarte damping), a cost pulling the state to the standing
posture, the torques to the standing ones and the contact forces into their friction pyramids (a
quadratic barrier), torques bounded (``TORQUE``, solo12's motors), solved with ``ocp.mpc.Horizon`` (one
warm-started IPOPT iteration per update; stages compiled to C unless ``--no-compiled``) and applied with a
joint PD around the plan between updates. Two pushes hit the base.

    python examples/mpc_solo12.py --plot mpc_solo12.png --html mpc_solo12.html
"""

import argparse

import casadi as ca
import common
import numpy as np

import casrbd
from casrbd.models import feet_on_ground, reference_configurations
from casrbd.ocp import QuadraticBarrier, compile_stages, gauss_newton_stage
from casrbd.ocp.legged import SOLO_FEET as FEET
from casrbd.ocp.mpc import MPC, Horizon
from casrbd.sim import Plant, Push

RADIUS, TORQUE, KD = 0.02, 2.7, 50.0
CONE = np.array([[1, 0, -0.7], [-1, 0, -0.7], [0, 1, -0.7], [0, -1, -0.7], [0, 0, 1]])  # mu = 0.7
PUSHES = (Push(0.5, "root_joint", (1.0, 0.0, 0.0)), Push(1.5, "root_joint", (0.0, -1.0, 0.0)))
W_Q = np.r_[[100.0] * 3, [100.0] * 3, [1.0] * 12]  # weights of q (-) q_standing: base position, orientation, joints


def standing(model):
    """The standing configuration with the foot spheres on the ground, and its static joint torques (least
    norm, with the contact forces)."""
    q = feet_on_ground(model, reference_configurations("solo12")["straight_standing"], FEET)
    q[2] += RADIUS
    J = np.vstack([np.asarray(casrbd.frame_jacobian(model, q, f, "local_world_aligned"))[:3] for f in FEET])
    A = np.hstack([np.vstack([np.zeros((6, 12)), np.eye(12)]), J.T])
    tau_lam = np.linalg.lstsq(A, np.ravel(casrbd.generalized_gravity(model, q)), rcond=None)[0]
    return q, tau_lam[:12]


def balance_horizon(model, q_ref, u_ref, nodes, dt, compiled):
    nq, nv = model.nq, model.nv
    x, u = ca.MX.sym("x", nq + nv), ca.MX.sym("u", 12)
    q, v = x[:nq], x[nq:]
    contacts = {"contacts": [(f, "3d") for f in FEET], "reference": "local_world_aligned"}
    a, lam = casrbd.function(model, "constraint_dynamics", jacobian="analytical", kd=KD, **contacts)(
        q, v, ca.vertcat(ca.MX.zeros(6), u)
    )
    v_next = v + a * dt
    x_next = ca.vertcat(casrbd.function(model, "integrate")(q, v_next * dt), v_next)
    dq = casrbd.function(model, "difference")(q_ref, q)
    inner = ca.Function("solo_inner", [x, u], [x_next, ca.vertcat(dq, lam)])
    xs, us, p, y = ca.SX.sym("x", nq + nv), ca.SX.sym("u", 12), ca.SX.sym("p", 0), ca.SX.sym("y", nv + 12)
    cone = ca.vec(ca.mtimes(CONE, ca.reshape(y[nv:], 3, 4)))
    running = 0.5 * ca.sumsqr(np.sqrt(W_Q) * y[:nv]) + 0.5 * ca.sumsqr(xs[nq:]) + 5 * ca.sumsqr(us - u_ref)
    running += 100 * QuadraticBarrier(np.tile([-np.inf] * 4 + [0], 4), np.tile([0.0] * 4 + [np.inf], 4))(cone, None)
    cost = ca.Function("solo_cost", [xs, us, p, y], [dt * running])
    u0, y_end = ca.MX.sym("u", 0), ca.SX.sym("y", nv)
    inner_end = ca.Function("solo_end_inner", [x, u0], [x, dq])
    end = 10 * (0.5 * ca.sumsqr(np.sqrt(W_Q) * y_end) + 0.5 * ca.sumsqr(xs[nq:]))
    cost_end = ca.Function("solo_end_cost", [xs, ca.SX.sym("u", 0), p, y_end], [end])
    stages = [gauss_newton_stage("solo", cost, inner), gauss_newton_stage("solo_end", cost_end, inner_end)]
    if compiled:  # then solved as SX around the C
        stages = compile_stages(stages, "solo_balance")
    x_bounds = [np.r_[model.lower, [-np.inf] * nv], np.r_[model.upper, [np.inf] * nv]]
    return Horizon(*stages, nodes, x_bounds, [[-TORQUE] * 12, [TORQUE] * 12], np.zeros(0), expand=compiled)


def run(rate=100, nodes=8, dt=0.02, duration=2.5, kp=3.0, kd=0.1, compiled=True):
    """The closed loop: a dict with the model, the plant's ``record`` and the plans."""
    model = casrbd.load_robot("solo12")
    q0, u0 = standing(model)
    mpc = MPC(balance_horizon(model, q0, u0, nodes, dt, compiled), dt, kp, kd, (slice(7, None), slice(6, None)))
    plant = Plant(model, feet=FEET, foot_radius=RADIUS, ground=True)
    record = plant.run(mpc, duration, rate, q0, pushes=PUSHES)
    return {"model": model, "q0": q0, "record": record, "plans": mpc.plans, "t": record.t, "q": record.q, "rate": rate}


def summary(result):
    r, q0 = result["record"], result["q0"]
    cpu = 1e3 * r.update_cpu[1:]
    drift = np.linalg.norm(r.q[:, :2] - q0[:2], axis=1)
    return [
        f"solo12 balance: {len(r.update_cpu)} updates at {result['rate']} Hz, plant 1 kHz, pushes "
        + ", ".join(f"{np.linalg.norm(p.impulse)} N s at {p.time} s" for p in PUSHES),
        f"update CPU time (warm): median {np.median(cpu):.1f} ms, 99th percentile {np.percentile(cpu, 99):.1f} ms, "
        f"worst {cpu.max():.1f} ms",
        f"base height min {r.q[:, 2].min():.3f} m (standing {q0[2]:.3f}); largest horizontal drift "
        f"{1e3 * drift.max():.1f} mm, at the end {1e3 * drift[-1]:.1f} mm; final base speed "
        f"{np.linalg.norm(r.v[-1, :3]):.3f} m/s; min vertical foot force {r.contact_forces[:, :, 2].min():.2f} N; "
        f"max |tau| {np.abs(r.tau).max():.2f} Nm",
    ]


def plot(result, path):
    r = result["record"]
    series = {"base position [m]": r.q[:, :3], "foot forces z [N]": r.contact_forces[:, :, 2], "tau [Nm]": r.tau}
    common.plot_series(path, r.t, series, "solo12: contact-dynamics MPC, MuJoCo plant, base pushes")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rate", type=int, default=100, help="controller updates per second (default 100)")
    p.add_argument("--nodes", type=int, default=8, help="horizon intervals of 20 ms (default 8)")
    p.add_argument("--duration", type=float, default=2.5, help="simulated seconds (default 2.5)")
    p.add_argument("--compiled", action=argparse.BooleanOptionalAction, default=True, help="stages as C")
    p.add_argument("--plot", metavar="PATH.png", help="write the base position, foot forces and torques")
    p.add_argument("--html", metavar="PATH.html", help="write the motion as an HTML animation")
    args = p.parse_args(argv)
    result = run(args.rate, args.nodes, duration=args.duration, compiled=args.compiled)
    print("\n".join(summary(result)))
    common.record_outputs(args, result, plot, "solo12")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
