// kgen: op=max dtype=float32
// kgen: launch max_naive_f32 grid=(cdiv(M,128)) block=(128) smem=0 args=(X, Y, M, N)
//
// Reference 01 (float32): the textbook kernel, one thread per row, a sequential running max that
// starts at the row's first element.
// Launch: 128 threads per block, grid covers M (x); any M, N.
// Neighbouring threads walk different rows (strided, uncoalesced loads) and only M threads run:
// expect well under 100 GB/s at M=16384, N=4096 on an H200 (estimate).

extern "C" __global__ void max_naive_f32(const float* __restrict__ X, float* __restrict__ Y,
                                         int M, int N) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M) return;
  const float* x = X + (size_t)row * N;
  float m = x[0];
  for (int j = 1; j < N; ++j) m = fmaxf(m, x[j]);
  Y[row] = m;
}
