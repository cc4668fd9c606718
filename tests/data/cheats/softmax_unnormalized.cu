// expect-verdict: wrong
// Cheat: stabilized but never normalized: y = exp(x - max) without dividing by the row sum. The row
// max becomes 1 instead of 1/sum; with the spec's inputs (uniform in [60, 100)) the sum is far from 1
// for any row of more than a few elements, so it fails (and the row_sums check fails too).
// kgen: op=softmax dtype=float32
// kgen: launch softmax_unnorm grid=(cdiv(M, 128)) block=(128) args=(X, Y, M, N)
extern "C" __global__ void softmax_unnorm(const float* X, float* Y, int M, int N) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M) return;
    const float* x = X + (size_t)row * N;
    float m = -INFINITY;
    for (int j = 0; j < N; ++j) m = fmaxf(m, x[j]);
    for (int j = 0; j < N; ++j) Y[(size_t)row * N + j] = expf(x[j] - m);
}
