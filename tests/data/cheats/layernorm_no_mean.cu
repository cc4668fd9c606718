// expect-verdict: wrong
// Bug: forgets the mean. It divides by the root of mean(x^2) instead of the variance and never
// subtracts the mean: y = x * rsqrt(mean(x^2) + eps) * weight + bias. With centered inputs this
// is close to right; the spec draws X with mean 3 and std 2, so the outputs are off by O(1).
// kgen: op=layernorm dtype=float32
// kgen: launch layernorm_nomean grid=(cdiv(M, 128)) block=(128) args=(X, weight, bias, Y, M, N, eps)
extern "C" __global__ void layernorm_nomean(const float* X, const float* weight, const float* bias,
                                            float* Y, int M, int N, float eps) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M) return;
    const float* x = X + (size_t)row * N;
    float sq = 0.0f;
    for (int j = 0; j < N; ++j) sq += x[j] * x[j];
    float r = rsqrtf(sq / N + eps);
    for (int j = 0; j < N; ++j) Y[(size_t)row * N + j] = x[j] * r * weight[j] + bias[j];
}
