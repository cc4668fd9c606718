// expect-verdict: wrong
// Bug: a 16x16 tiled gemm that loads its tiles without bounds checks on k (and rows/columns):
// at small K it reads past the end of A and of B. The NaN in its outputs are computed from the
// inputs' guard bands, not the poison left in place: "reads past the end of A" must be said, and
// "never written" must not.
// kgen: op=gemm dtype=float32
// kgen: launch gemm_unguarded grid=(cdiv(N, 16), cdiv(M, 16)) block=(16, 16) args=(A, B, C, M, N, K)
#define T 16
extern "C" __global__ void gemm_unguarded(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < K; t += T) {
        As[threadIdx.y][threadIdx.x] = A[row * K + t + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = B[(t + threadIdx.y) * N + col];
        __syncthreads();
        for (int k = 0; k < T; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
