// expect-verdict: wrong
// Bug: the grid is rounded down (N // 16 blocks), so the partial edge tiles are never computed
// once M or N exceed a tile; tiny sizes pass, 127x129 leaves its last rows/columns unwritten.
// kgen: op=gemm dtype=float32
// kgen: launch gemm_edge grid=(max(1, N // 16), max(1, M // 16)) block=(16, 16) args=(A, B, C, M, N, K)
extern "C" __global__ void gemm_edge(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}
