// expect-verdict: timeout
// Fault: a loop whose exit condition reads memory that never changes; the kernel never ends.
// kgen: op=gemm dtype=float32
// kgen: launch gemm_spin grid=(cdiv(N, 16), cdiv(M, 16)) block=(16, 16) args=(A, B, C, M, N, K)
extern "C" __global__ void gemm_spin(const float* A, const float* B, float* C, int M, int N, int K) {
    volatile const float* a = A;
    float x = 0.0f;
    while (a[0] == a[0] || a[0] != a[0]) x += 1.0f;  // always true, even for NaN
    if (blockIdx.x == 0 && threadIdx.x == 0 && M < 0) C[0] = x;
}
