// kgen: op=gemm dtype=float16
// kgen: launch gemm_naive_f16 grid=(cdiv(N,16), cdiv(M,16)) block=(16, 16) smem=0 args=(A, B, C, M, N, K)
//
// Reference 01 (float16): one thread per output element, float32 accumulation, result rounded to
// float16 once at the end. Launch: 16x16 threads per block, grid covers N (x) and M (y); any M, N, K.
// No tiling and no tensor cores: expect a few TFLOP/s at 4096^3 on an H200, around 1% of cuBLAS
// FP16/BF16 (which uses tensor cores).

#include <cuda_fp16.h>

extern "C" __global__ void gemm_naive_f16(const __half* __restrict__ A, const __half* __restrict__ B,
                                          __half* __restrict__ C, int M, int N, int K) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k)
    acc += __half2float(A[(size_t)row * K + k]) * __half2float(B[(size_t)k * N + col]);
  C[(size_t)row * N + col] = __float2half_rn(acc);
}
