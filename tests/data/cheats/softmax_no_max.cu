// expect-verdict: wrong
// Cheat: skips the max subtraction: y = exp(x) / sum(exp(x)). Mathematically equal, but the spec
// draws X uniform in [60, 100) and float32 exp overflows above ~88.7: exp(x) is inf, inf / inf is
// NaN, and NaN never passes. (With inputs in [-1, 1) this kernel would pass: the init is what
// catches it.)
// kgen: op=softmax dtype=float32
// kgen: launch softmax_nomax grid=(cdiv(M, 128)) block=(128) args=(X, Y, M, N)
extern "C" __global__ void softmax_nomax(const float* X, float* Y, int M, int N) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M) return;
    const float* x = X + (size_t)row * N;
    float s = 0.0f;
    for (int j = 0; j < N; ++j) s += expf(x[j]);
    for (int j = 0; j < N; ++j) Y[(size_t)row * N + j] = expf(x[j]) / s;
}
