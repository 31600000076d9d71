/* Helpers of the test drivers: a generated casadi Function as a table of its C entry points, and
   one evaluation's arrays sized exactly as its _work function asks (so that AddressSanitizer and
   valgrind see any access past them). Include the generated header(s) first. */
#include <stdio.h>
#include <stdlib.h>

typedef struct {
  const char *name;
  int (*eval)(const casadi_real **arg, casadi_real **res, casadi_int *iw, casadi_real *w, int mem);
  int (*work)(casadi_int *sz_arg, casadi_int *sz_res, casadi_int *sz_iw, casadi_int *sz_w);
  casadi_int (*n_in)(void);
  casadi_int (*n_out)(void);
  const casadi_int *(*sparsity_in)(casadi_int i);
  const casadi_int *(*sparsity_out)(casadi_int i);
} fun_t;

/* through a second macro, so that f may itself be a macro naming the Function */
#define FUN_T(f) FUN_T_(f)
#define FUN_T_(f) {#f, f, f##_work, f##_n_in, f##_n_out, f##_sparsity_in, f##_sparsity_out}

/* nonzeros of casadi's compact pattern: [nrow, ncol, 1] when dense, else [nrow, ncol, colind..., row...] */
static casadi_int nnz(const casadi_int *sp) { return sp[2] == 1 ? sp[0] * sp[1] : sp[2 + sp[1]]; }

typedef struct {
  const casadi_real **arg;
  casadi_real **res, *w;
  casadi_int *iw;
  casadi_real *in, *out;   /* every input's (output's) nonzeros in order; arg[i] (res[i]) point into them */
  casadi_int nnz_in, nnz_out;
} call_t;

static call_t call_new(const fun_t *f) {
  call_t c;
  casadi_int sz_arg, sz_res, sz_iw, sz_w, i;
  f->work(&sz_arg, &sz_res, &sz_iw, &sz_w);
  c.arg = calloc(sz_arg, sizeof *c.arg);
  c.res = calloc(sz_res, sizeof *c.res);
  c.iw = malloc(sz_iw * sizeof *c.iw);
  c.w = malloc(sz_w * sizeof *c.w);
  c.nnz_in = c.nnz_out = 0;
  for (i = 0; i < f->n_in(); ++i) c.nnz_in += nnz(f->sparsity_in(i));
  for (i = 0; i < f->n_out(); ++i) c.nnz_out += nnz(f->sparsity_out(i));
  c.in = malloc(c.nnz_in * sizeof *c.in);
  c.out = malloc(c.nnz_out * sizeof *c.out);
  c.nnz_in = c.nnz_out = 0;
  for (i = 0; i < f->n_in(); ++i) { c.arg[i] = c.in + c.nnz_in; c.nnz_in += nnz(f->sparsity_in(i)); }
  for (i = 0; i < f->n_out(); ++i) { c.res[i] = c.out + c.nnz_out; c.nnz_out += nnz(f->sparsity_out(i)); }
  return c;
}

/* SX Functions keep no memory between calls: mem 0 is theirs, and checkout is not needed */
static int call_eval(const fun_t *f, call_t *c) { return f->eval(c->arg, c->res, c->iw, c->w, 0); }

static void call_free(call_t *c) {
  free(c->arg); free(c->res); free(c->iw); free(c->w); free(c->in); free(c->out);
}

/* the inputs' nonzeros, as doubles, from a file */
static int call_read(call_t *c, const char *path) {
  FILE *file = fopen(path, "rb");
  size_t n;
  if (!file) return 1;
  n = fread(c->in, sizeof *c->in, c->nnz_in, file);
  fclose(file);
  return n != (size_t)c->nnz_in;
}
