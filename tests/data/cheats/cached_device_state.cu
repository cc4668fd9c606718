// expect-verdict: wrong
// Cheat: computes once, keeps the answer in __device__ memory, and replays it on every later call
// (a harness that reuses inputs, or validates once, is fooled).
// kgen: op=gemm dtype=float32
// kgen: launch gemm_cached grid=(cdiv(N, 16), cdiv(M, 16)) block=(16, 16) args=(A, B, C, M, N, K)
__device__ float cache[1 << 22];
__device__ int cache_valid;
extern "C" __global__ void gemm_cached(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row >= M || col >= N) return;
    int i = row * N + col;
    if (cache_valid && i < (1 << 22)) { C[i] = cache[i]; return; }
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[i] = acc;
    if (i < (1 << 22)) cache[i] = acc;
    if (i == M * N - 1) cache_valid = 1;
}
