"""Command line: ``casrbd info [ROBOT]``."""
import argparse
import sys

from .api import function
from .models import DEFAULT_ROBOT, load_robot

CORE_FUNCTIONS = ("rnea", "nonlinear_effects", "generalized_gravity", "crba", "aba", "minverse")


def info(args):
    model = load_robot(args.robot, args.floating_base)
    print(model.summary())
    print("casadi SX Function sizes (n_instructions):")
    for name in CORE_FUNCTIONS:
        print(f"  {name:<22s} {function(model, name).n_instructions():8d}")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="casrbd", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("info", help="model summary and Function sizes")
    p.add_argument("robot", nargs="?", default=DEFAULT_ROBOT,
                   help="URDF path, shipped model or example-robot-data name (default: %(default)s)")
    p.add_argument("--floating-base", action="store_true", default=None, help="add a free-flyer root")
    p.set_defaults(run=info)
    args = parser.parse_args(argv)
    try:
        args.run(args)
    except (LookupError, ValueError) as e:
        print(f"casrbd: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
