// expect-verdict: pass
// Correct split-K in two launches: zero C, then 4 K-slices accumulate with atomicAdd.
// Exercises several launch lines run in order (timed as a whole, through a CUDA graph).
// kgen: op=gemm dtype=float32
// kgen: launch zero_c grid=(cdiv(M * N, 256)) block=(256) args=(C, M, N)
// kgen: launch gemm_splitk grid=(cdiv(N, 16), cdiv(M, 16), 4) block=(16, 16) args=(A, B, C, M, N, K)
extern "C" __global__ void zero_c(float* C, int M, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < M * N) C[i] = 0.0f;
}
extern "C" __global__ void gemm_splitk(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row >= M || col >= N) return;
    int slice = (K + gridDim.z - 1) / gridDim.z;
    int k0 = blockIdx.z * slice, k1 = min(K, k0 + slice);
    float acc = 0.0f;
    for (int k = k0; k < k1; ++k) acc += A[row * K + k] * B[k * N + col];
    atomicAdd(&C[row * N + col], acc);
}
