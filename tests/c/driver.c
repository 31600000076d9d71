/* Evaluate generated Functions once each on inputs from files and print their outputs.
   Build: cc -include lib1.h [-include lib2.h] -DFUNCTIONS='FUN_T(f1), FUN_T(f2)' driver.c lib1.c [lib2.c] -lm
   Run:   ./driver f1_inputs.bin f2_inputs.bin
   Prints, per Function, "# " and its name, then the nonzeros of its outputs in order, one per line. */
#include "call.h"

static const fun_t functions[] = {FUNCTIONS};

int main(int argc, char **argv) {
  int k, n = sizeof functions / sizeof functions[0];
  casadi_int i;
  if (argc != n + 1) {
    fprintf(stderr, "usage: %s INPUTS... (one file per Function)\n", argv[0]);
    return 2;
  }
  for (k = 0; k < n; ++k) {
    call_t c = call_new(&functions[k]);
    if (call_read(&c, argv[k + 1]) || call_eval(&functions[k], &c)) return 3;
    printf("# %s\n", functions[k].name);
    for (i = 0; i < c.nnz_out; ++i) printf("%.17g\n", c.out[i]);
    call_free(&c);
  }
  return 0;
}
