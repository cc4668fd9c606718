// Warp sum with the pre-Volta shuffle intrinsics (removed: they need the _sync form).
extern "C" __global__ void warp_sum(const float* __restrict__ x, float* __restrict__ out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? x[i] : 0.f;
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down(v, offset);
  v = __shfl(v, 0);
  if (threadIdx.x % 32 == 0) atomicAdd(out, v);
}
