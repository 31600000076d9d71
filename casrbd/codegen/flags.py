"""Every compiler flag casrbd passes, in one place.

A note on the choices. Libraries are built for the CPU they run on (a library built here runs here:
``-march=native`` gives fused multiply-adds and wide registers), at -O3 without the passes that look for
redundant computations and loads: casadi's graphs are straight-line and already free of common
subexpressions (``ca.cse``), so those passes find next to nothing, yet take most of gcc's time on large
graphs; run times are unchanged. ``-O1`` compiles graphs of 100k instructions and more several times
faster. The GPU kernels' host build checks values and is never timed, so it is compiled at -O0. NVRTC
is asked for ptxas's report (registers and spills per kernel, ``gpu.resources``).
"""

DEFAULT_FLAGS = ("-O3", "-march=native", "-fno-tree-pre", "-fno-code-hoisting", "-fno-gcse-after-reload")
HOST_FLAGS = ("-O0",)
# what every shared library is linked with, after the caller's flags
SHARED = ("-fPIC", "-shared")
LIBRARIES = ("-lm",)
NVRTC_OPTIONS = ("--ptxas-options=-v",)
