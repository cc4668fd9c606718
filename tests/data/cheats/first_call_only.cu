// expect-verdict: wrong
// Cheat: writes the output on the first call only; later calls return at once (stale output).
// kgen: op=gemm dtype=float32
// kgen: launch gemm_once grid=(cdiv(N, 16), cdiv(M, 16)) block=(16, 16) args=(A, B, C, M, N, K)
__device__ int calls_done;
extern "C" __global__ void gemm_once(const float* A, const float* B, float* C, int M, int N, int K) {
    if (calls_done) return;
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
    if (row == M - 1 && col == N - 1) calls_done = 1;
}
