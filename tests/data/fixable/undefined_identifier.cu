// A block reduction with a typo in a variable name.
extern "C" __global__ void row_sum(const float* __restrict__ x, float* __restrict__ out, int n) {
  __shared__ float partial[256];
  const int tid = threadIdx.x;
  float acc = 0.f;
  for (int i = tid; i < n; i += blockDim.x) acc += x[(size_t)blockIdx.x * n + i];
  partial[tid] = acc;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (tid < stride) partial[tid] += partial[tid + strid];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = partial[0];
}
