// kgen: op=rmsnorm dtype=bfloat16
// kgen: launch rmsnorm_naive_bf16 grid=(cdiv(M,128)) block=(128) smem=0 args=(X, weight, Y, M, N, eps)
//
// Reference 01 (bfloat16): one thread per row, two passes (mean of x^2, then scale by rsqrt and
// weight). X and weight are bfloat16, widened to float32 on load; the sum of squares and the
// scaling are float32; each output is rounded to bfloat16 once when stored.
// Launch: 128 threads per block, grid covers M (x); any M, N.
// Strided loads and only M threads in flight: expect well under 100 GB/s at M=16384, N=4096 on an
// H200 (estimate).

#include <cuda_bf16.h>

extern "C" __global__ void rmsnorm_naive_bf16(const __nv_bfloat16* __restrict__ X,
                                              const __nv_bfloat16* __restrict__ weight,
                                              __nv_bfloat16* __restrict__ Y, int M, int N,
                                              float eps) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M) return;
  const __nv_bfloat16* x = X + (size_t)row * N;
  __nv_bfloat16* y = Y + (size_t)row * N;
  float sq = 0.f;
  for (int j = 0; j < N; ++j) {
    const float v = __bfloat162float(x[j]);
    sq += v * v;
  }
  const float r = rsqrtf(sq / N + eps);
  for (int j = 0; j < N; ++j)
    y[j] = __float2bfloat16_rn(__bfloat162float(x[j]) * r * __bfloat162float(weight[j]));
}
