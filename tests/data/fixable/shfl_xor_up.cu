// Butterfly and prefix steps written with the removed non-_sync shuffles.
extern "C" __global__ void scan_warp(const float* __restrict__ x, float* __restrict__ y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int lane = threadIdx.x % 32;
  float v = i < n ? x[i] : 0.f;
  for (int d = 1; d < 32; d *= 2) {
    const float up = __shfl_up(v, d);
    if (lane >= d) v += up;
  }
  const float total = v + __shfl_xor(v, 1) - __shfl_xor(v, 1);
  if (i < n) y[i] = total;
}
