// Passes validation at gemm's test sizes (all under 1024), then, at a bench size, scribbles over
// its input A after computing C: caught by the checks after the first bench run, which compare the
// buffers with the inputs drawn on the GPU.
// kgen: op=gemm dtype=float32
// kgen: launch gemm_mutate_big grid=(cdiv(N, 16), cdiv(M, 16)) block=(16, 16) args=(A, B, C, M, N, K)
extern "C" __global__ void gemm_mutate_big(float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
    if (M >= 1024 && col == N - 1) A[row * K + K - 1] = 0.5f;  // only at a bench size
}
