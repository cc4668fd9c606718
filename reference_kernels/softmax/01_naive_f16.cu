// kgen: op=softmax dtype=float16
// kgen: launch softmax_naive_f16 grid=(cdiv(M,128)) block=(128) smem=0 args=(X, Y, M, N)
//
// Reference 01 (float16): one thread per row, three passes (max, sum of exp(x - max), write);
// every element is widened to float32 on load, all math is float32, and each result is rounded
// to float16 once when it is stored.
// Launch: 128 threads per block, grid covers M (x); any M, N.
// Strided (uncoalesced) loads and only M threads in flight, as in the float32 naive kernel:
// expect well under 100 GB/s at M=16384, N=4096 on an H200 (estimate).

#include <cuda_fp16.h>

extern "C" __global__ void softmax_naive_f16(const __half* __restrict__ X, __half* __restrict__ Y,
                                             int M, int N) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M) return;
  const __half* x = X + (size_t)row * N;
  __half* y = Y + (size_t)row * N;
  float m = -INFINITY;
  for (int j = 0; j < N; ++j) m = fmaxf(m, __half2float(x[j]));
  float s = 0.f;
  for (int j = 0; j < N; ++j) s += expf(__half2float(x[j]) - m);
  const float inv = 1.f / s;
  for (int j = 0; j < N; ++j) y[j] = __float2half_rn(expf(__half2float(x[j]) - m) * inv);
}
