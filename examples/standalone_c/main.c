/* Forward dynamics of the arm7 model from a plain C program: the joint accelerations at one state.
   arm7_aba.c and arm7_aba.h come from export.py; README.md gives the build command. */
#include <stdio.h>
#include <stdlib.h>
#include "arm7_aba.h"

#define NV 7

static void print(const char *name, const casadi_real *x) {
  int i;
  printf("%-3s =", name);
  for (i = 0; i < NV; ++i) printf(" %.17g", x[i]);
  printf("\n");
}

int main(void) {
  const casadi_real q[NV] = {0.1, -0.4, 0.3, -1.2, 0.5, 0.8, -0.2};   /* joint angles, rad */
  const casadi_real v[NV] = {0.5, -0.3, 0.2, 0.1, -0.6, 0.4, 0.3};    /* joint velocities, rad/s */
  const casadi_real tau[NV] = {1.0, 20.0, -2.0, 5.0, 0.5, -0.3, 0.1}; /* joint torques, N m */
  casadi_real a[NV];                                                  /* joint accelerations, rad/s^2 */
  casadi_int sz_arg, sz_res, sz_iw, sz_w;
  const casadi_real **arg;
  casadi_real **res, *w;
  casadi_int *iw;
  int mem, status;

  /* work arrays, sized as the generated code asks (sz_iw and sz_w may be 0) */
  arm7_aba_work(&sz_arg, &sz_res, &sz_iw, &sz_w);
  arg = malloc(sz_arg * sizeof *arg);
  res = malloc(sz_res * sizeof *res);
  iw = malloc(sz_iw * sizeof *iw);
  w = malloc(sz_w * sizeof *w);
  if (!arg || !res) return 1;

  /* inputs and outputs in the order of the Function: (q, v, tau) -> (a) */
  arg[0] = q;
  arg[1] = v;
  arg[2] = tau;
  res[0] = a;
  mem = arm7_aba_checkout();
  status = arm7_aba(arg, res, iw, w, mem);
  arm7_aba_release(mem);
  if (status) {
    fprintf(stderr, "arm7_aba failed\n");
    return 1;
  }

  print("q", q);
  print("v", v);
  print("tau", tau);
  print("a", a);
  free(arg);
  free(res);
  free(iw);
  free(w);
  return 0;
}
