"""Export the forward dynamics of the shipped arm7 model as C code.

    python examples/standalone_c/export.py OUTDIR

writes OUTDIR/arm7_aba.c and OUTDIR/arm7_aba.h, which main.c (beside this
file) includes and calls; README.md gives the gcc command.
"""

import sys

import casrbd
from casrbd import codegen
from casrbd.models import load_robot


def main(outdir):
    model = load_robot("arm7")
    aba = casrbd.function(model, "aba")  # (q, v, tau) -> a; its C symbol is its name, arm7_aba
    source, header = codegen.generate([aba], outdir, aba.name())
    print(f"wrote {source} and {header}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
