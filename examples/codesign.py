"""Co-design of a two-link arm: its motors' sizes and its swing-up motion, optimised together.

The arm swings in a vertical plane (joints about y, q = 0 horizontal, q1 = pi/2 hanging down) and
carries a payload at its tip. Each joint's motor has a mass m_i and a torque limit kappa m_i (a
family of geared motors with the torque density kappa); the elbow motor sits on link 1, so its mass
changes link 1's inertial parameters, pi_1 = pi_1^0 + m_2 pi_point(elbow): the forward dynamics are
``casrbd.function(model, "aba", parameters=True, jacobian="analytical")``, with pi an expression of
the design. The arm must go from hanging at rest to upright at rest in ``duration`` seconds (RK4
multiple shooting as examples/swingup.py). The cost is the motors' total mass plus a small effort
term (``casrbd.ocp.codesign``).

The reference is the sequential design: plan the minimum-effort motion for given motors, size each
motor for its peak torque, and repeat with the new elbow motor until the sizes settle. Optimising both
at once finds a motion that needs smaller motors.

    python examples/codesign.py --nodes 50 [--plot codesign.png]
"""

import casadi as ca
import common
import numpy as np

import casrbd
from casrbd import ocp
from casrbd.joints import Revolute
from casrbd.models import point_mass, rod
from casrbd.ocp.codesign import codesign, sequential_design
from casrbd.parameters import model_parameters, with_parameters
from casrbd.sim import simulate_aba
from casrbd.spatial import SE3

L1, L2 = 0.4, 0.4  # link lengths, m
KAPPA = 15.0  # torque per motor mass, Nm/kg
M_MIN, M_MAX = 0.05, 5.0  # motor mass bounds, kg
START, GOAL = np.array([np.pi / 2, 0.0]), np.array([-np.pi / 2, 0.0])


def build_arm():
    """The arm without the elbow motor: link 1 a 0.5 kg rod, link 2 a 0.3 kg rod with a 0.5 kg payload."""
    bodies = [
        casrbd.Body("shoulder", Revolute([0, 1, 0]), -1, SE3.identity(), rod(0.5, L1)),
        casrbd.Body("elbow", Revolute([0, 1, 0]), 0, SE3(np.eye(3), [L1, 0, 0]), rod(0.3, L2) + point_mass(0.5, L2)),
    ]
    return casrbd.Model("codesign_arm", bodies)


def parameters(model, m2):
    """pi of the arm with an elbow motor of mass m2 (numbers or a casadi expression): linear in m2."""
    elbow_motor = np.concatenate([point_mass(1.0, L1).dynamic_parameters(), np.zeros(10)])
    return ca.DM(model_parameters(model)) + m2 * ca.DM(elbow_motor)


def simulate(model, result, substeps=1):
    """The optimised torques replayed on the arm built with those motors (a numeric model: aba with its
    own inertias), ``substeps`` RK4 steps per interval: the final state."""
    arm = with_parameters(model, parameters(model, result["motors"][1]))
    return simulate_aba(arm, np.r_[START, 0, 0], result["tau"], result["dt"], substeps)


def run(nodes=50, duration=1.2, verbose=False):
    """The sequential design, then the co-design from its solution, and the co-design replayed on the
    designed arm (its final state's errors with the transcription's RK4 steps and with 10 per interval);
    with the co-design's motion (t, q)."""
    model = build_arm()
    arm = (lambda m: parameters(model, m[1]), START, GOAL, KAPPA)  # pi(motors), start, goal, torque density
    seq, history = sequential_design(model, *arm, M_MIN, nodes, duration, verbose=verbose)
    co = codesign(model, *arm, (M_MIN, M_MAX), nodes, duration, verbose=verbose, guess=seq)
    replay = [np.abs(simulate(model, co, k) - np.r_[GOAL, 0, 0]).max() for k in (1, 10)]
    r = {"model": model, "sequential": seq, "history": history, "codesign": co, "replay": replay}
    return {**r, "kappa": KAPPA, "t": co["t"], "q": co["q"]}


def report(r):
    """Prints each round of the sequential design, the co-design's motors, its peak torques against their
    limits and the final state errors of its replays on the designed arm."""
    seq, co = r["sequential"], r["codesign"]
    print("sequential design (plan minimum effort, size motors for the peak torques, repeat):")
    for k, m in enumerate(r["history"]):
        print(f"  round {k + 1}: motors {m[0]:.3f} kg + {m[1]:.3f} kg = {m.sum():.3f} kg")
    print(f"co-design ({ocp.format_stats(co['stats'])}):")
    print(f"  motors {co['motors'][0]:.3f} kg + {co['motors'][1]:.3f} kg = {co['motors'].sum():.3f} kg")
    print(
        f"  peak torques {np.abs(co['tau']).max(axis=0).round(3)} Nm, limits {(KAPPA * co['motors']).round(3)} Nm; "
        f"total motor mass {co['motors'].sum() / seq['motors'].sum():.2f}x the sequential design's"
    )
    print(
        f"  replayed on the designed arm (numeric model): final state error {r['replay'][0]:.2e} (rad, rad/s) with "
        f"the same RK4 steps, {r['replay'][1]:.2e} with 10 steps per interval (the transcription's error)"
    )


def plot(r, path):
    co, seq = r["codesign"], r["sequential"]
    series = {"q [rad]": co["q"], "tau [Nm] co-design": co["tau"], "tau [Nm] sequential": seq["tau"]}
    common.plot_series(path, co["t"], series, title="two-link arm: co-designed motors and swing-up")


def main(argv=None):
    p = common.parser(__doc__, 50, "shooting intervals", "write q and the torques over time", derivatives=())
    p.add_argument("--duration", type=float, default=1.2, help="seconds (default 1.2)")
    args = p.parse_args(argv)
    r = run(**common.arguments(args, run))
    report(r)
    common.outputs(args, r, plot)
    return 0 if r["codesign"]["stats"]["success"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
