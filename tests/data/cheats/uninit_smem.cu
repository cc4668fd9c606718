// expect-verdict: wrong
// Bug: the tiled loads skip out-of-range elements instead of storing 0, so the last K tile reads
// uninitialized (stale) shared memory.
// kgen: op=gemm dtype=float32
// kgen: launch gemm_stale grid=(cdiv(N, 16), cdiv(M, 16)) block=(16, 16) args=(A, B, C, M, N, K)
#define T 16
extern "C" __global__ void gemm_stale(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < K; t += T) {
        if (row < M && t + threadIdx.x < K) As[threadIdx.y][threadIdx.x] = A[row * K + t + threadIdx.x];
        if (col < N && t + threadIdx.y < K) Bs[threadIdx.y][threadIdx.x] = B[(t + threadIdx.y) * N + col];
        __syncthreads();
        for (int k = 0; k < T; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
