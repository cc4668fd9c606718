// expect-verdict: wrong
// Cheat: computes C correctly, then scribbles over its input A (inputs must stay read-only).
// kgen: op=gemm dtype=float32
// kgen: launch gemm_mutate grid=(cdiv(N, 16), cdiv(M, 16)) block=(16, 16) args=(A, B, C, M, N, K)
extern "C" __global__ void gemm_mutate(float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
    if (col == N - 1) A[row * K] = acc;  // after this row is done: reuse A as scratch
}
