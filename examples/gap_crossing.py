"""Solo12 leaps over a gap: a new problem on ``casrbd.ocp`` in a few lines.

A schedule (``legged.Step``): four feet on the ground, a push-off, a flight whose first knots lift the
centre of mass, a touchdown (impulse) with every foot ``gap`` metres further on, the ground again.
``legged.quadruped_knots`` gives its knots Crocoddyl's terms (CoM and foot tracking, regularisation,
state bounds, friction cones as barriers) and hard torque limits ``tau_max``; the flight knots get a
hard clearance of the feet above the ground. The stage Functions are compiled (Gauss-Newton stages);
fatrop starts from the solution of the same knots without the torque limits and the clearance (Crocoddyl's
problem, as FDDP solves it): from the standing guess it stalls.
``--hard-cones`` makes the friction cones hard constraints as well.

    python examples/gap_crossing.py --gap 0.1 --html gap.html
"""

import argparse

import common
import numpy as np

from casrbd import ocp
from casrbd.models import load_robot
from casrbd.ocp import legged


def solve(
    gap=0.1,
    height=0.05,
    tau_max=2.5,
    dt=0.02,
    ground=5,
    flight=6,
    solver="fatrop",
    hard_cones=False,
    flags=None,
    verbose=False,
):
    """Leap ``gap`` m forward; returns a dict with the model, the knots, states xs, controls us, contact
    forces, the largest constraint violation and the solver's stats."""
    model, q0 = load_robot("solo12"), legged.SOLO_STANDING
    x0 = np.r_[q0, np.zeros(model.nv)]
    feet, com = legged.feet_and_com(model, q0, legged.SOLO_FEET)
    up = [legged.Step((), dt, com + [gap / 2 * (k + 1) / flight, 0, height * (k + 1) / flight]) for k in range(flight)]
    landing = legged.Step(legged.SOLO_FEET, 0.0, None, tuple((f, feet[f] * [1, 1, 0] + [gap, 0, 0]) for f in feet))
    steps = [legged.Step(legged.SOLO_FEET, dt)] * ground + up + [legged.Step((), dt)] * flight + [landing]
    steps += [legged.Step(legged.SOLO_FEET, dt, com + [gap, 0, 0])] * ground
    knots, terminal = legged.quadruped_knots(model, steps, x0, hard=hard_cones, tau_max=tau_max)
    clearance = [ocp.Constraint(ocp.FootClearance(f, 0.005)) for f in legged.SOLO_FEET]
    knots = [ocp.Knot(k.dynamics, k.dt, [*k.terms, *clearance]) if s.feet == () else k for k, s in zip(knots, steps)]
    # started from the solution without torque limits and clearance (cones as barriers): Crocoddyl's FDDP's
    start = ocp.Problem(model, x0, *legged.quadruped_knots(model, steps, x0), compiled=True, name="gap", flags=flags)
    options = {"start": start, "options": legged.HARD_OPTIONS}
    problem = ocp.Problem(model, x0, knots, terminal, compiled=True, name="gap", flags=flags, **options)
    sol = problem.solve(solver, verbose=verbose)
    return common.knots_result(model, steps, problem, sol)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gap", type=float, default=0.1, help="the gap's width in m (default 0.1)")
    parser.add_argument("--solver", choices=ocp.SOLVERS, default="fatrop")
    parser.add_argument("--hard-cones", action="store_true", help="the friction cones as hard constraints")
    parser.add_argument("--verbose", action="store_true", help="the solver's iteration log")
    parser.add_argument("--html", metavar="PATH", help="write the motion as an HTML animation")
    args = parser.parse_args(argv)
    r = solve(args.gap, solver=args.solver, hard_cones=args.hard_cones, verbose=args.verbose)
    print(
        f"solo12 over a {args.gap} m gap ({args.solver}, hard torque limits and clearance): "
        f"{ocp.format_stats(r['stats'])}, largest violation {r['violation']:.1e}"
    )
    if args.html:
        common.write_knots_html(args.html, r["model"], r["knots"], r["xs"], "solo12")
    return 0 if r["stats"]["success"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
