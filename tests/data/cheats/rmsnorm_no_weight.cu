// expect-verdict: wrong
// Bug: ignores weight: y = x * rsqrt(mean(x^2) + eps). The spec draws weight uniform in
// [0.5, 1.5), so most outputs are off by far more than the tolerance (a weight of all ones would
// hide this bug: the init is what catches it).
// kgen: op=rmsnorm dtype=float32
// kgen: launch rmsnorm_noweight grid=(cdiv(M, 128)) block=(128) args=(X, weight, Y, M, N, eps)
extern "C" __global__ void rmsnorm_noweight(const float* X, const float* weight, float* Y, int M,
                                            int N, float eps) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M) return;
    const float* x = X + (size_t)row * N;
    float sq = 0.0f;
    for (int j = 0; j < N; ++j) sq += x[j] * x[j];
    float r = rsqrtf(sq / N + eps);
    for (int j = 0; j < N; ++j) Y[(size_t)row * N + j] = x[j] * r;
}
