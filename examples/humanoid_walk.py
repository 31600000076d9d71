"""Talos walks two steps: Crocoddyl's biped walking problem (``SimpleBipedGaitProblem``) in casadi.

The knots of Crocoddyl 3.2's ``createWalkingProblem(x0, 0.6, 0.1, 0.03, 15, 4)``
on the whole-body talos_reduced (38 dofs, the SRDF's rotor inertias) from its
half-sitting pose, built by ``casrbd.ocp.legged``: double support, the right
foot steps half a stride, double support, the left foot a whole one. Running
knots step the contact dynamics of their stance soles (6-D contacts, wrenches in
world axes, Baumgarte gain kd = 30 on the soles' spatial velocity;
``constraint_dynamics``) by semi-implicit Euler; a touchdown is an impulse knot
(``impulse_dynamics`` on the landing sole), the last one also the terminal knot.
Costs: CoM tracking, the swing sole's placement (log6 of its error), each stance
sole's wrench cone (friction, centre of pressure, yaw torque: Caron et al. 2015,
as Crocoddyl's ``WrenchCone``) as a quadratic barrier, weighted state and control
regularisation, times dt at running knots; ``--hard``: the wrench cones as hard
constraints. Gauss-Newton stages (``ocp.Problem``), compiled with ``--compiled``.

    python examples/humanoid_walk.py --compiled --html walk.html    # fatrop; --solver ipopt
"""

import argparse

import common

from casrbd import ocp
from casrbd.ocp import legged

FEET, KD = legged.TALOS_FEET, legged.TALOS_KD
# Crocoddyl's examples/bipedal_walk.py: step length and height, dt, knots per step and per double support
WALK = {"length": 0.6, "height": 0.1, "dt": 0.03, "step_knots": 15, "support_knots": 4}


def solve(solver="fatrop", compiled=False, verbose=False, hard=False, **sizes):
    """Solve the walk (``sizes``: ``legged.walk``'s arguments); returns a dict with the model, the walk's
    steps (``knots``), states xs (knots x 77), controls us (empty at impulses), the soles' wrenches, the
    stage Functions and the solver's stats."""
    model, x0 = legged.load_talos()
    steps = legged.walk(model, x0[: model.nq], **{**WALK, **sizes})
    knots, terminal = legged.biped_knots(model, steps, x0, hard)
    built = ocp.Problem(model, x0, knots, terminal, compiled=compiled, name="talos_walk")
    sol = built.solve(solver, verbose=verbose)
    return common.knots_result(model, steps, built, sol)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solver", choices=ocp.SOLVERS, default="fatrop")
    parser.add_argument("--compiled", action="store_true", help="the stage Functions as C")
    parser.add_argument("--hard", action="store_true", help="the wrench cones as hard constraints")
    parser.add_argument("--verbose", action="store_true", help="the solver's iteration log")
    parser.add_argument("--html", metavar="PATH", help="write the motion as an HTML animation")
    args = parser.parse_args(argv)
    result = solve(args.solver, args.compiled, args.verbose, args.hard)
    modes = args.solver + (", compiled stages" if args.compiled else "") + (", hard cones" if args.hard else "")
    print(f"talos walk ({modes}): {ocp.format_stats(result['stats'])}")
    if args.html:
        common.write_knots_html(args.html, result["model"], result["knots"], result["xs"], "talos_reduced")
    return 0 if result["stats"]["success"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
