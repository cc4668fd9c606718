// expect-verdict: crash
// Fault: a float store through a pointer one byte off its alignment (misaligned address).
// kgen: op=gemm dtype=float32
// kgen: launch gemm_misaligned grid=(cdiv(N, 16), cdiv(M, 16)) block=(16, 16) args=(A, B, C, M, N, K)
extern "C" __global__ void gemm_misaligned(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row >= M || col >= N) return;
    float* odd = (float*)((char*)(C + row * N + col) + 1);
    *odd = A[row * K] * B[col];
}
