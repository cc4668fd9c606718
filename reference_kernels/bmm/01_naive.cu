// kgen: op=bmm dtype=float32
// kgen: launch bmm_naive_f32 grid=(cdiv(N,16), cdiv(M,16), BATCH) block=(16, 16) smem=0 args=(A, B, C, BATCH, M, N, K)
//
// Reference 01 (float32): the textbook kernel, one thread per output element, the batch in
// blockIdx.z. Each thread walks a row of A[b] and a column of B[b] straight from global memory.
// Launch: 16x16 threads per block, grid covers N (x), M (y, up to 65535 * 16) and BATCH (z, up to
// 65535); any M, N, K.
// Consecutive threads read B coalesced and A as a broadcast; no reuse beyond L1/L2: expect a few
// TFLOP/s at 32 x 1024^3 on an H200 (estimate; well under 10% of cuBLAS FP32).

extern "C" __global__ void bmm_naive_f32(const float* __restrict__ A, const float* __restrict__ B,
                                         float* __restrict__ C, int BATCH, int M, int N, int K) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int b = blockIdx.z;
  if (b >= BATCH || row >= M || col >= N) return;
  const float* a = A + (size_t)b * M * K + (size_t)row * K;
  const float* bb = B + (size_t)b * K * N + col;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += a[k] * bb[(size_t)k * N];
  C[(size_t)b * M * N + (size_t)row * N + col] = acc;
}
