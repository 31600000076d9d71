"""Graph sizes and build times of the contact-dynamics derivatives and of the forward-dynamics derivatives.

    python -m benchmarks.contact_sizes [ROBOT ...]    # arm7 solo12 hyq talos_reduced talos_full_v2 tree

Per robot and contact set (the feet: 6-D soles for talos, 3-D points for the quadrupeds; the tool as a
6-D frame for arm7; three leaves on different branches for the random tree), the ``n_instructions()``
of the SX Functions ``constraint_dynamics_derivatives``, the analytical Jacobian of
``constraint_dynamics``, ``impulse_dynamics_derivatives`` and ``aba_derivatives``, each with the
seconds it took to build (the model's Function cache is empty at the first build of each). Markdown
on stdout; run it on two checkouts to compare.
"""

import sys
import time
import warnings

import casrbd
from casrbd.models import load_robot, random_tree

ROBOTS = ("arm7", "solo12", "hyq", "talos_reduced", "talos_full_v2", "tree")
SOLES = (("left_sole_link", "6d"), ("right_sole_link", "6d"))
CONTACTS = {
    "arm7": (("tool", "6d"),),
    "solo12": tuple((f, "3d") for f in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")),
    "hyq": tuple((f, "3d") for f in ("lf_foot", "rf_foot", "lh_foot", "rh_foot")),
    "talos_reduced": SOLES,
    "talos_full_v2": SOLES,
    # leaves on three branches of the tree below, which meet at its second body
    "tree": (("tip3", "3d"), ("tip9", "3d"), ("tip10", "6d")),
}
COLUMNS = ("constraint_dynamics_derivatives", "constraint_dynamics jacobian", "impulse_dynamics_derivatives")


def model(name):
    if name == "tree":
        return random_tree(12, branching=None, seed=13)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # talos' mimic joints
        return load_robot(name)


def timed(build):
    start = time.perf_counter()
    f = build()
    return f"{f.n_instructions()} ({time.perf_counter() - start:.1f} s)"


def row(name):
    m, contacts = model(name), CONTACTS[name]
    return [
        name,
        str(m.nv),
        " ".join(f"{frame}:{kind}" for frame, kind in contacts),
        timed(lambda: casrbd.function(m, "constraint_dynamics_derivatives", contacts=contacts)),
        timed(lambda: casrbd.function(m, "constraint_dynamics", jacobian="analytical", contacts=contacts).jacobian()),
        timed(lambda: casrbd.function(m, "impulse_dynamics_derivatives", contacts=contacts)),
        timed(lambda: casrbd.function(m, "aba_derivatives")),
    ]


def main(names=None):
    head = ["robot", "nv", "contacts", *COLUMNS, "aba_derivatives"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name in names or ROBOTS:
        print("| " + " | ".join(row(name)) + " |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
