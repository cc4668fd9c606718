// kgen: op=gemm dtype=float32
// kgen: launch gemm_naive_f32 grid=(cdiv(N,16), cdiv(M,16)) block=(16, 16) smem=0 args=(A, B, C, M, N, K)
//
// Reference 01 (float32): the textbook kernel, one thread per output element.
// Launch: 16x16 threads per block, grid covers N (x) and M (y); any M, N, K.
// Each thread walks a row of A and a column of B straight from global memory; neighbouring threads
// (consecutive columns) read B coalesced and A as a broadcast, so it leans on L1/L2 and is memory
// bound. Expect a few TFLOP/s at 4096^3 on an H200 (well under 10% of cuBLAS FP32).

extern "C" __global__ void gemm_naive_f32(const float* __restrict__ A, const float* __restrict__ B,
                                          float* __restrict__ C, int M, int N, int K) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
  C[(size_t)row * N + col] = acc;
}
