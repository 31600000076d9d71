"""Crocoddyl's solo12 trot and jump (``SimpleQuadrupedalGaitProblem``) rebuilt in casadi with casrbd.

The same knots, dynamics and costs as Crocoddyl 3.2's ``utils/quadruped.py``,
built by ``casrbd.ocp.legged``: running knots step the contact dynamics of their
stance feet (3-D point contacts in world axes, Baumgarte gain kd = 50 on the
feet's velocity, ``aba`` in flight) by semi-implicit Euler, v+ = v + a dt,
q+ = q (+) v+ dt; a touchdown is an impulse knot (``impulse_dynamics``). Costs
per knot: CoM and swing-foot tracking, the friction cone of each stance foot
and the state bounds as quadratic barriers, weighted state and control
regularisation, times dt at running knots. This file only picks the gait's
sizes: ``ocp.Problem`` declares the knots stage by stage (fatrop solves it by a
Riccati recursion, IPOPT as well: ``--solver``); ``--hessian gauss-newton``
writes out the stages' Jacobian and Gauss-Newton Hessian (no curvature of the
dynamics and the residuals, as in Crocoddyl's FDDP); ``--compiled`` compiles
the few distinct stage Functions with them. The guess: the standing state at
every knot, quasi-static torques.

    python examples/quadruped_gait.py --problem jump --solver ipopt --hessian gauss-newton --compiled
"""

import argparse

import common
import numpy as np

from casrbd import ocp
from casrbd.models import load_robot
from casrbd.ocp import legged

FEET, STANDING = legged.SOLO_FEET, legged.SOLO_STANDING
HESSIANS = ocp.HESSIAN_MODELS
# Crocoddyl's examples/quadrupedal_gaits_fwddyn.py: step length and height, dt, knots per step and support
GAITS = {
    "trot": {"length": 0.06, "height": 0.03, "dt": 1e-2, "step_knots": 25, "support_knots": 2},
    "jump": {"height": 0.15, "span": (0.0, 0.3, 0.0), "dt": 1e-2, "ground": 10, "flying": 20},
}


def solve(problem="trot", solver="fatrop", hessian="gauss-newton", compiled=False, verbose=False, **sizes):
    """Solve Crocoddyl's ``problem`` ("trot" or "jump", ``sizes`` to change its arguments) for solo12;
    returns a dict with the model, the gait's steps (``knots``: feet, dt, targets), states xs (knots x 37),
    controls us (a list, empty at impulses), contact forces, the stage Functions and the solver's stats."""
    model = load_robot("solo12")
    schedule = {"trot": legged.trot, "jump": legged.jump}[problem]
    steps = schedule(model, STANDING, **{**GAITS[problem], **sizes})
    x0 = np.r_[STANDING, np.zeros(model.nv)]
    knots, terminal = legged.quadruped_knots(model, steps, x0)
    built = ocp.Problem(model, x0, knots, terminal, hessian=hessian, compiled=compiled, name=f"solo12_{problem}")
    sol = built.solve(solver, verbose=verbose)
    return common.knots_result(model, steps, built, sol)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", choices=tuple(GAITS), default="trot")
    parser.add_argument("--solver", choices=ocp.SOLVERS, default="fatrop")
    parser.add_argument("--hessian", choices=HESSIANS, default="gauss-newton")
    parser.add_argument("--compiled", action="store_true", help="the stage Functions as C (Gauss-Newton Hessian)")
    parser.add_argument("--verbose", action="store_true", help="the solver's iteration log")
    parser.add_argument("--html", metavar="PATH", help="write the motion as an HTML animation")
    args = parser.parse_args(argv)
    result = solve(args.problem, args.solver, args.hessian, args.compiled, args.verbose)
    modes = f"{args.solver}, {args.hessian} Hessian" + (", compiled stages" if args.compiled else "")
    print(f"solo12 {args.problem} ({modes}): {ocp.format_stats(result['stats'])}")
    if args.html:
        common.write_knots_html(args.html, result["model"], result["knots"], result["xs"], "solo12")
    return 0 if result["stats"]["success"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
