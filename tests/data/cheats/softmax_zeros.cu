// expect-verdict: wrong
// Cheat: writes 0 to every output without reading X. Every row must sum to 1 and every output is
// at least 1/N-ish for the spec's inputs, far above atol, so it fails at every size.
// kgen: op=softmax dtype=float32
// kgen: launch softmax_zeros grid=(cdiv(M * N, 256)) block=(256) args=(X, Y, M, N)
extern "C" __global__ void softmax_zeros(const float* X, float* Y, int M, int N) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (long long)M * N) Y[i] = 0.0f;
}
