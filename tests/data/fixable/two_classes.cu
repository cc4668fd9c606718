// kgen: op=gemm dtype=float16
// kgen: launch gemm_tiny grid=(cdiv(N,16), cdiv(M,16)) block=(16, 16) args=(A, B, C, M, N, K)
// A naive float16 gemm with two independent mistakes: no cuda_fp16.h and a misspelt variable.

extern "C" __global__ void gemm_tiny(const __half* A, const __half* B, __half* C, int M, int N, int K) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  float accum = 0.f;
  for (int k = 0; k < K; ++k) accum += __half2float(A[row * K + k]) * __half2float(B[k * N + col]);
  C[row * N + col] = __float2half(acum);
}
