// expect-verdict: wrong
// Cheat: copies X to Y element for element instead of transposing. Right only where a transpose
// and a copy coincide in memory (M == 1 or N == 1, and 1 x 1); on square sizes (64 x 64,
// 1000 x 1000) kgen's comparison reports "the output equals the transpose of the reference", on
// other shapes the values are simply in the wrong places.
// kgen: op=transpose dtype=float32
// kgen: launch transpose_copy grid=(cdiv(M * N, 256)) block=(256) args=(X, Y, M, N)
extern "C" __global__ void transpose_copy(const float* X, float* Y, int M, int N) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (long long)M * N) Y[i] = X[i];
}
