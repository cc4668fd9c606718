// kgen: op=transpose dtype=float32
// kgen: launch transpose_naive_f32 grid=(cdiv(N,32), cdiv(M,8)) block=(32, 8) smem=0 args=(X, Y, M, N)
//
// Reference 01 (float32): the textbook kernel, one thread per element: Y[j * M + i] = X[i * N + j].
// Launch: 32x8 threads per block, grid covers N (x) and M (y, up to 65535 * 8 rows); any M, N.
// Threads along x read consecutive X elements (coalesced) but write Y with a stride of M floats,
// so every store touches its own 32-byte sector: expect about 0.6-1 TB/s at 8192 x 8192 on an
// H200 (estimate; a quarter or less of the tiled kernel).

extern "C" __global__ void transpose_naive_f32(const float* __restrict__ X,
                                               float* __restrict__ Y, int M, int N) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;  // column of X, row of Y
  const int i = blockIdx.y * blockDim.y + threadIdx.y;  // row of X, column of Y
  if (i < M && j < N) Y[(size_t)j * M + i] = X[(size_t)i * N + j];
}
