// expect-verdict: crash
// Fault: writes through pointers nobody allocated (the null page, and 1 GiB past C): an illegal
// address that ends the kernel with a sticky CUDA error.
// kgen: op=gemm dtype=float32
// kgen: launch gemm_wild grid=(cdiv(N, 16), cdiv(M, 16)) block=(16, 16) args=(A, B, C, M, N, K)
extern "C" __global__ void gemm_wild(const float* A, const float* B, float* C, int M, int N, int K) {
    int t = threadIdx.y * 16 + threadIdx.x;
    float* wild = (t & 1) ? C + (1ll << 28) + t : (float*)(0x100ull + 4ull * t);
    *wild = 1.0f;
}
