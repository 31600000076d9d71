extern "C" void casrbd_host_run(void* const* x, void* const* y, long long N) {
  blockIdx.x = 0;
  blockDim.x = 1;
  for (threadIdx.x = 0; threadIdx.x < N; ++threadIdx.x) {
${calls}  }
}
