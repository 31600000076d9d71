"""Build time (CPU seconds) and graph sizes of ``casrbd.function(model, name, jacobian="analytical")``:
the Function, its custom Jacobian and, where installed, the analytical adjoint and its Jacobian (the
contracted Hessian), on a fresh model each time (no cached Function).

python -m benchmarks.build_times [ROBOT ...]
"""

import sys
import time

import casrbd
from casrbd.models import load_robot

ROBOTS = ("arm7", "solo12", "talos_reduced")
# the contact set of each robot: its feet (an arm holds its tool against the world)
CONTACTS = {
    "arm7": (("tool", "6d"),),
    "solo12": tuple((f, "3d") for f in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")),
    "talos_reduced": (("left_sole_link", "6d"), ("right_sole_link", "6d")),
}
FUNCTIONS = ("rnea", "aba", "constraint_dynamics")


def sizes(f):
    """n_instructions of f, jac_f, adj1_f and jac_adj1_f ('-' where not installed)."""
    out = [f.n_instructions(), f.jacobian().n_instructions()]
    try:
        adj = f.reverse(1)
        out += [adj.n_instructions(), adj.jacobian().n_instructions()]
    except RuntimeError:
        out += ["-", "-"]
    return out


def main(names=None):
    print("| robot | function | build CPU s | f | jac | adj1 | jac_adj1 |")
    print("|---|---|---|---|---|---|---|")
    for robot in names or ROBOTS:
        for name in FUNCTIONS:
            model = load_robot(robot)
            options = {"contacts": CONTACTS[robot], "kd": 50.0} if name == "constraint_dynamics" else {}
            t0 = time.process_time()
            f = casrbd.function(model, name, jacobian="analytical", **options)
            build = time.process_time() - t0
            row = [robot, name, f"{build:.2f}", *map(str, sizes(f))]
            print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
