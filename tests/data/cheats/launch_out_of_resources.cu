// expect-verdict: launch_error
// Fault: each thread keeps 64 partial sums in registers (well over 64 registers per thread), but
// the launch asks for 1024 threads per block: 1024 x ~100 registers exceeds the 65536 per SM, so
// the launch itself must fail cleanly (too many resources requested).
// kgen: op=gemm dtype=float32
// kgen: launch gemm_fat grid=(cdiv(N, 32), cdiv(M, 32)) block=(32, 32) args=(A, B, C, M, N, K)
#define R 64
extern "C" __global__ void gemm_fat(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * 32 + threadIdx.y, col = blockIdx.x * 32 + threadIdx.x;
    if (row >= M || col >= N) return;
    float part[R];
#pragma unroll
    for (int r = 0; r < R; ++r) part[r] = 0.0f;
    for (int k = 0; k + R <= K; k += R) {
#pragma unroll
        for (int r = 0; r < R; ++r) part[r] += A[row * K + k + r] * B[(k + r) * N + col];
    }
    float acc = 0.0f;
    for (int k = K - K % R; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
#pragma unroll
    for (int r = 0; r < R; ++r) acc += part[r] * (1.0f + r * 1e-30f);
    C[row * N + col] = acc;
}
