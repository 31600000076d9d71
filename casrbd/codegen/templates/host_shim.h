#include <math.h>
#define __global__
#define __device__
#define __forceinline__ inline
static struct { long long x; } threadIdx, blockIdx, blockDim;
