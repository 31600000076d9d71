/* casrbd.codegen.memoize: ${name}'s outputs kept per input, in a table of ${sets} sets of ${ways} entries
   (allocated per thread on first use); a hit is an input equal bit for bit to one stored in its set */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
static int ${raw}(const casadi_real** arg, casadi_real** res, casadi_int* iw, casadi_real* w, int mem);
static _Thread_local casadi_real* ${raw}_table;
static int ${raw}_holds(const casadi_real* slot, const casadi_real** arg, const casadi_int* n_in) {
  casadi_int i, j, k;
  casadi_real x;
  if (slot[0] == 0) return 0;
  for (i = 0, k = 1; i < ${inputs}; ++i) {
    for (j = 0; j < n_in[i]; ++j, ++k) {
      x = arg[i] ? arg[i][j] : 0;
      if (memcmp(slot + k, &x, sizeof x)) return 0;
    }
  }
  return 1;
}
static int ${fn}(const casadi_real** arg, casadi_real** res, casadi_int* iw, casadi_real* w, int mem) {
  static const casadi_int n_in[] = {${n_in}}, n_out[] = {${n_out}};
  casadi_real *set, *slot = 0, *outputs[${outputs}], x;
  uint64_t h = 1469598103934665603u, bits;
  casadi_int i, j, k;
  if (!${raw}_table) ${raw}_table = (casadi_real*)calloc(${sets} * ${ways} * ${stride}, sizeof(casadi_real));
  if (!${raw}_table) return ${raw}(arg, res, iw, w, mem);
  for (i = 0; i < ${inputs}; ++i) {
    for (j = 0; j < n_in[i]; ++j) {
      x = arg[i] ? arg[i][j] : 0;
      memcpy(&bits, &x, sizeof bits);
      h = (h ^ bits) * 1099511628211u;
    }
  }
  set = ${raw}_table + (h % ${sets}) * ${ways} * ${stride};
  for (i = 0; i < ${ways} && !slot; ++i) {
    if (${raw}_holds(set + i * ${stride}, arg, n_in)) slot = set + i * ${stride};
  }
  k = ${first_output};  /* an entry: its flag, the inputs, then the outputs */
  if (!slot) {  /* a miss: an empty entry of the set, else one chosen by the hash's high bits */
    for (i = 0; i < ${ways} && !slot; ++i) {
      if (set[i * ${stride}] == 0) slot = set + i * ${stride};
    }
    if (!slot) slot = set + (casadi_int)((h >> 40) % ${ways}) * ${stride};
    for (i = 0, j = 0; i < ${outputs}; ++i) {
      outputs[i] = slot + k + j;
      j += n_out[i];
    }
    slot[0] = 0;
    if (${raw}(arg, outputs, iw, w, mem)) return 1;
    for (i = 0, k = 1; i < ${inputs}; ++i) {
      for (j = 0; j < n_in[i]; ++j, ++k) slot[k] = arg[i] ? arg[i][j] : 0;
    }
    slot[0] = 1;
  }
  for (i = 0; i < ${outputs}; ++i) {
    if (res[i]) memcpy(res[i], slot + k, n_out[i] * sizeof(casadi_real));
    k += n_out[i];
  }
  return 0;
}
