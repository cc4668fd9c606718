// expect-verdict: wrong
// Bug: an exclusive scan instead of the inclusive one: Y[i, j] = sum_{k < j} X[i, k], so Y[i, 0] is
// 0 and every output lacks its own element. With normal(0, 1) inputs that is off by |x| (about
// 0.8 on average), far beyond the tolerance, at every size (even 1 x 1).
// kgen: op=cumsum dtype=float32
// kgen: launch cumsum_excl grid=(cdiv(M, 128)) block=(128) args=(X, Y, M, N)
extern "C" __global__ void cumsum_excl(const float* X, float* Y, int M, int N) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M) return;
    float s = 0.0f;
    for (int j = 0; j < N; ++j) {
        Y[(size_t)row * N + j] = s;  // written before adding x[j]
        s += X[(size_t)row * N + j];
    }
}
