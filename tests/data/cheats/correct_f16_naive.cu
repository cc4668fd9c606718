// expect-verdict: pass
// A correct naive float16 gemm with float32 accumulation (one thread per output).
// kgen: op=gemm dtype=float16
// kgen: launch gemm_f16 grid=(cdiv(N, 16), cdiv(M, 16)) block=(16, 16) args=(A, B, C, M, N, K)
#include <cuda_fp16.h>
extern "C" __global__ void gemm_f16(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += __half2float(A[row * K + k]) * __half2float(B[k * N + col]);
    C[row * N + col] = __float2half(acc);
}
