/* Call one generated Function from NTHREADS threads at once, each with its own arrays, and check
   that every result is bit-identical to the single-threaded result on the same inputs.
   Build: cc -include lib.h -DFUNCTION=f threads.c lib.c -lm -pthread
   Run:   ./threads inputs.bin     prints "calls N mismatches M", exits 1 if M > 0 */
#include <pthread.h>
#include <string.h>
#include "call.h"

#define NTHREADS 8
#define NSTATES 16   /* distinct inputs: the base inputs, shifted */
#define ROUNDS 200

static const fun_t fun = FUN_T(FUNCTION);
static casadi_real *states[NSTATES], *reference[NSTATES];
static pthread_barrier_t start;

static void *worker(void *mismatches) {
  call_t c = call_new(&fun);
  int r, s;
  pthread_barrier_wait(&start);  /* all threads call at the same time */
  for (r = 0; r < ROUNDS; ++r) {
    for (s = 0; s < NSTATES; ++s) {
      memcpy(c.in, states[s], c.nnz_in * sizeof *c.in);
      if (call_eval(&fun, &c) || memcmp(c.out, reference[s], c.nnz_out * sizeof *c.out))
        ++*(long *)mismatches;
    }
  }
  call_free(&c);
  return NULL;
}

int main(int argc, char **argv) {
  pthread_t threads[NTHREADS];
  long mismatches[NTHREADS] = {0}, total = 0;
  call_t c = call_new(&fun);
  casadi_int i;
  int s, t;
  if (argc != 2 || call_read(&c, argv[1])) return 2;
  for (s = 0; s < NSTATES; ++s) {
    states[s] = malloc(c.nnz_in * sizeof *c.in);
    for (i = 0; i < c.nnz_in; ++i) states[s][i] = c.in[i] + 0.01 * s * (double)(i % 5);
    memcpy(c.in, states[s], c.nnz_in * sizeof *c.in);
    if (call_eval(&fun, &c)) return 3;
    reference[s] = malloc(c.nnz_out * sizeof *c.out);
    memcpy(reference[s], c.out, c.nnz_out * sizeof *c.out);
  }
  pthread_barrier_init(&start, NULL, NTHREADS);
  for (t = 0; t < NTHREADS; ++t) pthread_create(&threads[t], NULL, worker, &mismatches[t]);
  for (t = 0; t < NTHREADS; ++t) {
    pthread_join(threads[t], NULL);
    total += mismatches[t];
  }
  pthread_barrier_destroy(&start);
  printf("calls %ld mismatches %ld\n", (long)NTHREADS * ROUNDS * NSTATES, total);
  for (s = 0; s < NSTATES; ++s) { free(states[s]); free(reference[s]); }
  call_free(&c);
  return total > 0;
}
