"""Every compiler flag casrbd passes, in one place.

A note on the choices (the figures behind them: benchmarks/README.md, "Compilers and flags"). Code is
built for the CPU it runs on (a library built here runs here): ``-march=native`` gives fused
multiply-adds and wide registers. ``DEFAULT_FLAGS``: -O3 without the passes that look for redundant
computations and loads: casadi's graphs are straight-line and already free of common subexpressions
(``ca.cse``), so those passes find next to nothing, yet take most of gcc's time on large graphs; run
times are unchanged. ``COMPILE_FLAGS``, the optimal-control default where casadi compiles a whole NLP
(second derivatives of 1e5 to 1e6 instructions, on which -O2 and -O3 take minutes): -O1, which
``-march=native``'s fused multiply-adds bring near -O3's speed. ``STAGE_FLAGS``, for a stage library too
large for -O3 (over ``STAGE_O3_MAX`` SX instructions, where -O3's time grows faster than the code), or
for a stage without controls (called at a few knots): -O1 without its redundancy eliminations, which
find nothing in such code and take much of gcc's time (``stage_flags`` picks). ``("-O1",)`` compiles
graphs of 100k instructions and more several times faster than ``DEFAULT_FLAGS``, for a library to build
quickly or copy elsewhere. The GPU kernels' host build checks values and is never timed, so it is
compiled at -O0. NVRTC is asked for ptxas's report (registers and spills per kernel, ``gpu.resources``).
"""

DEFAULT_FLAGS = ("-O3", "-march=native", "-fno-tree-pre", "-fno-code-hoisting", "-fno-gcse-after-reload")
COMPILE_FLAGS = ("-O1", "-march=native")
STAGE_FLAGS = (
    *COMPILE_FLAGS,
    "-fno-tree-dominator-opts",
    "-fno-tree-fre",
    "-fno-tree-forwprop",
    "-fno-dse",
    "-fno-tree-dse",
    "-fno-tree-pta",
    "-fno-forward-propagate",
)
# the largest stage library (``library.sx_instructions``) compiled at DEFAULT_FLAGS: all of a quadruped's,
# none of a humanoid's running stages
STAGE_O3_MAX = 200_000
HOST_FLAGS = ("-O0",)
# what every shared library is linked with, after the caller's flags
SHARED = ("-fPIC", "-shared")
LIBRARIES = ("-lm",)
NVRTC_OPTIONS = ("--ptxas-options=-v",)


def stage_flags(instructions, controlled=True):
    """The compiler flags of a stage library of that many SX instructions (``STAGE_O3_MAX``);
    ``controlled=False``, a stage without controls (an impulse, a terminal cost), which a problem calls
    at a few knots only: ``STAGE_FLAGS`` whatever its size, as -O3's compile time would not pay."""
    return DEFAULT_FLAGS if controlled and instructions <= STAGE_O3_MAX else STAGE_FLAGS
