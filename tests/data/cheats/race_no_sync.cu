// expect-verdict: wrong
// Bug: a 32x32 tiled kernel without __syncthreads(): warps read tiles other warps have not loaded
// yet, or already overwrote with the next tile. Wrong on some runs, right on others by luck.
// kgen: op=gemm dtype=float32
// kgen: launch gemm_race grid=(cdiv(N, 32), cdiv(M, 32)) block=(32, 32) args=(A, B, C, M, N, K)
#define T 32
extern "C" __global__ void gemm_race(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < K; t += T) {
        As[threadIdx.y][threadIdx.x] = (row < M && t + threadIdx.x < K) ? A[row * K + t + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (col < N && t + threadIdx.y < K) ? B[(t + threadIdx.y) * N + col] : 0.0f;
        // missing __syncthreads() here
        for (int k = 0; k < T; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        // and here
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
