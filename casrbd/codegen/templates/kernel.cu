extern "C" __global__ void ${name}(${params}, const long long N) {
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= N) return;
${offsets}${body}
}
