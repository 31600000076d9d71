"""Markdown tables of n_instructions() of the SX Functions, per robot.

python -m benchmarks.graph_sizes [ROBOT ...]
"""

import sys

import casrbd
from casrbd.models import load_robot, random_tree

ROBOTS = ("arm7", "ur5", "panda", "double_pendulum", "solo12", "hyq", "talos_reduced", "talos_full_v2")
# the joint mix of the first version's tree (its "continuous" was a revolute joint without limits), so
# sizes compare across versions
TREE_TYPES = ("revolute", "revolute", "prismatic", "spherical", "planar", "floating")
CORE = ("rnea", "aba", "crba", "minverse")
DERIVATIVES = (
    ("rnea_derivatives", {"method": "chain_rule"}),
    ("rnea_derivatives", {"method": "idsva"}),
    ("rnea_derivatives", {"method": "ad"}),
    ("aba_derivatives", {"method": "chain_rule"}),
    ("aba_derivatives", {"method": "idsva"}),
    ("aba_derivatives", {"method": "idsva", "minv_product": "dmm"}),
    ("aba_derivatives", {"method": "idsva", "minv_product": "aza"}),
    ("aba_derivatives", {"method": "ad"}),
)


def models(names):
    for name in names:
        if name == "tree":
            yield (
                "random tree (12 bodies, every joint type of v0.1)",
                random_tree(12, TREE_TYPES, branching=None, seed=0),
            )
        else:
            yield name, load_robot(name)


def main(names=None):
    names = names or ROBOTS + ("tree",)
    head = (
        ["robot", "nv"]
        + list(CORE)
        + ["ID " + o["method"] for n, o in DERIVATIVES[:3]]
        + ["FD " + "/".join(o.values()) for n, o in DERIVATIVES[3:]]
    )
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for label, model in models(names):
        row = [label, str(model.nv)]
        row += [str(casrbd.function(model, name).n_instructions()) for name in CORE]
        row += [str(casrbd.function(model, name, **opts).n_instructions()) for name, opts in DERIVATIVES]
        print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
