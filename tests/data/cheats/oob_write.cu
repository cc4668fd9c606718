// expect-verdict: wrong
// Cheat: correct results, but the last threads also write one row past the end of C.
// kgen: op=gemm dtype=float32
// kgen: launch gemm_oob grid=(cdiv(N, 16), cdiv(M, 16)) block=(16, 16) args=(A, B, C, M, N, K)
extern "C" __global__ void gemm_oob(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
    if (row == M - 1) C[(row + 1) * N + col] = acc;  // off by one row: past the output
}
