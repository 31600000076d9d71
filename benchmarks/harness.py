"""C timing harness for generated code.

A casadi Function's Python call costs several microseconds, more than the
work of a compiled RNEA, so compiled code is timed from C: ``time_c``
generates the Function's C file, compiles it to an object (the gcc time
reported), links it with a small driver that reads the inputs from a file,
calibrates the number of calls per batch to about ``batch_seconds``, and
prints the time per call of each of ``repeat`` batches. The generated C, its
object and the linked driver are one entry of ``casrbd.cache`` (kind
"benchmark", listed and pruned by ``casrbd cache``), keyed by a hash like
``casrbd.codegen``'s libraries and recording the seconds gcc took to build the
object and its peak memory, so a resumed benchmark still reports them; an
entry that fails its checks is rebuilt with a ``CacheWarning``.
"""

import hashlib
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import casadi as ca
import numpy as np

from casrbd import cache, codegen
from casrbd.codegen.library import BENCHMARKS

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "NAME.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* casadi's compact sparsity: [nrow, ncol, 1] when dense, else [nrow, ncol, colind..., row...] */
static casadi_int nnz(const casadi_int *sp) { return sp[2] == 1 ? sp[0] * sp[1] : sp[2 + sp[1]]; }

int main(int argc, char **argv) {
  casadi_int n_in = FUN_n_in(), n_out = FUN_n_out(), sz_arg, sz_res, sz_iw, sz_w, i, k;
  FUN_work(&sz_arg, &sz_res, &sz_iw, &sz_w);
  const casadi_real **arg = malloc(sizeof(casadi_real *) * sz_arg);
  casadi_real **res = malloc(sizeof(casadi_real *) * sz_res);
  casadi_int *iw = malloc(sizeof(casadi_int) * (sz_iw + 1));
  casadi_real *w = malloc(sizeof(casadi_real) * (sz_w + 1));
  FILE *f = fopen(argv[1], "rb");
  for (i = 0; i < n_in; ++i) {
    casadi_real *x = malloc(sizeof(casadi_real) * (nnz(FUN_sparsity_in(i)) + 1));
    if (fread(x, sizeof(casadi_real), nnz(FUN_sparsity_in(i)), f) != (size_t)nnz(FUN_sparsity_in(i))) return 2;
    arg[i] = x;
  }
  fclose(f);
  for (i = 0; i < n_out; ++i) res[i] = malloc(sizeof(casadi_real) * (nnz(FUN_sparsity_out(i)) + 1));
  int repeat = atoi(argv[2]);
  double batch = atof(argv[3]), sink = 0, *t = malloc(sizeof(double) * repeat);
  long calls = 1;
  for (;;) {  /* calibrate: double the calls until a batch lasts `batch` seconds */
    double t0 = now();
    for (k = 0; k < calls; ++k) FUN(arg, res, iw, w, 0);
    if (now() - t0 > batch) break;
    calls *= 2;
  }
  for (i = 0; i < repeat; ++i) {
    double t0 = now();
    for (k = 0; k < calls; ++k) { FUN(arg, res, iw, w, 0); sink += res[0][0]; }
    t[i] = (now() - t0) / calls;
  }
  qsort(t, repeat, sizeof(double), cmp);
  printf("%.6e %.6e %ld %g\n", t[0], t[repeat / 2], calls, sink);
  for (i = 0; i < n_out; ++i) {  /* the outputs, to check them against casadi's VM */
    for (k = 0; k < nnz(FUN_sparsity_out(i)); ++k) printf("%.17g ", res[i][k]);
    printf("\n");
  }
  return 0;
}
"""


class Timing(NamedTuple):
    min: float  # seconds per call, fastest batch
    median: float  # seconds per call, median batch
    calls: int  # calls per batch
    gcc_seconds: float  # compile time of the generated code (measured when it was compiled)
    gcc_peak_mib: float  # the compiler's peak resident memory (MiB), measured likewise
    cached: bool  # the object was compiled by an earlier run
    outputs: list  # the outputs of the compiled call, nonzeros per output


# runs the compiler and prints the peak resident memory of its process tree (kB): cc1, not the driver,
# holds the memory, and RUSAGE_CHILDREN's maximum reaches it through the driver, which waits for it
PEAK = (
    "import resource, subprocess, sys; code = subprocess.run(sys.argv[1:]).returncode; "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(code)"
)


# how the driver is compiled and linked with the object (in the key: another way rebuilds)
DRIVER_FLAGS = ("-O2",)
LINK = ("-lm",)


def _complete(entry):
    """The entry, once it holds the driver and gcc's measurements (else a BadEntry: rebuilt)."""
    measured = all(isinstance(entry.info.get(k), (int, float)) for k in ("seconds", "peak_mib"))
    if "driver" not in entry.hashes or not measured:
        raise cache.BadEntry(entry.path / cache.MANIFEST, "is not a whole benchmark build (driver, gcc's measurements)")
    return entry


def compile_object(fun, flags=codegen.DEFAULT_FLAGS):
    """The Function's generated C compiled to ``NAME.o`` and linked with the driver into ``driver``, in an
    entry of the store; (entry directory, gcc seconds, gcc peak MiB, cached)."""
    name = fun.name()
    compiler = codegen.find_compiler()
    # the layout (the C as written), the driver and how it is linked, the Function
    parts = [codegen.CACHE_LAYOUT, ca.__version__, compiler, *flags, DRIVER, *DRIVER_FLAGS, *LINK, fun.serialize()]
    key = hashlib.sha256("\0".join(parts).encode()).hexdigest()
    entry = cache.load(BENCHMARKS, name, key, _complete)
    if entry is not None:
        return entry.path, entry.info["seconds"], entry.info["peak_mib"], True
    build = cache.begin(BENCHMARKS, name, key)
    try:
        directory = build.directory
        source, _ = codegen.generate([fun], directory, name)
        obj = directory / f"{name}.o"
        start = time.perf_counter()
        cmd = [sys.executable, "-c", PEAK, compiler, *flags, "-c", str(source), "-o", str(obj)]
        peak_kb = int(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split()[-1])
        seconds = time.perf_counter() - start
        driver = directory / "driver.c"
        driver.write_text(DRIVER.replace("NAME", name).replace("FUN", name))
        link = [compiler, *DRIVER_FLAGS, "-I", str(directory), str(driver), str(obj), "-o", str(directory / "driver")]
        subprocess.run([*link, *LINK], check=True)
        entry = build.commit({"seconds": seconds, "peak_mib": peak_kb / 1024})
    finally:
        if build.persistent:
            build.abandon()  # a no-op once committed
    return entry.path, seconds, peak_kb / 1024, False


def time_c(fun, inputs, flags=codegen.DEFAULT_FLAGS, repeat=15, batch_seconds=0.02):
    """Time one call of the compiled Function on numeric ``inputs`` (dense, one per Function input)."""
    values = [
        np.asarray(ca.DM(x).nonzeros() if isinstance(x, ca.DM) else np.ravel(x, order="F"), dtype=float) for x in inputs
    ]
    for i, x in enumerate(values):
        if x.size != fun.nnz_in(i):
            raise ValueError(f"time_c: input {fun.name_in(i)!r} has {x.size} entries, expected {fun.nnz_in(i)}")
    build, gcc_seconds, gcc_peak_mib, cached = compile_object(fun, flags)
    with tempfile.TemporaryDirectory(prefix="casrbd-bench-") as tmp:  # the entry is never written after commit
        data = Path(tmp) / "inputs.bin"
        np.concatenate(values).astype("<f8").tofile(data)
        out = subprocess.run(
            [str(build / "driver"), str(data), str(repeat), str(batch_seconds)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.splitlines()
    t_min, t_med, calls, _ = out[0].split()
    outputs = [np.array(line.split(), dtype=float) for line in out[1:]]
    return Timing(float(t_min), float(t_med), int(calls), gcc_seconds, gcc_peak_mib, cached, outputs)
