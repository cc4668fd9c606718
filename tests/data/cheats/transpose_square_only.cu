// expect-verdict: wrong
// Bug: a transpose that uses N as the leading dimension on both sides (Y[j * N + i] instead of
// Y[j * M + i]), i.e. it assumes a square matrix. Exactly right whenever M == N (64 x 64,
// 1000 x 1000 pass), wrong on every non-square size with M, N > 1 (7 x 3, 127 x 129, ...): values
// land in the wrong places and some outputs keep the NaN poison. Stores that would fall past the
// end of Y are dropped, so the verdict is `wrong` rather than a crash. Test sizes must not all be
// square.
// kgen: op=transpose dtype=float32
// kgen: launch transpose_sq grid=(cdiv(N, 32), cdiv(M, 8)) block=(32, 8) args=(X, Y, M, N)
extern "C" __global__ void transpose_sq(const float* X, float* Y, int M, int N) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= M || j >= N) return;
    size_t dst = (size_t)j * N + i;  // should be j * M + i
    if (dst < (size_t)M * N) Y[dst] = X[(size_t)i * N + j];
}
