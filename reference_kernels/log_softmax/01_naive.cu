// kgen: op=log_softmax dtype=float32
// kgen: launch log_softmax_naive_f32 grid=(cdiv(M,128)) block=(128) smem=0 args=(X, Y, M, N)
//
// Reference 01 (float32): one thread per row, three passes over its row: the max m, the sum s of
// exp(x - m), then y = x - (m + log s).
// Launch: 128 threads per block, grid covers M (x); any M, N.
// Each thread walks its own row, so a warp's loads are N elements apart (uncoalesced), the row is
// read three times, and only M threads are in flight. Expect well under 100 GB/s at M=16384,
// N=4096 on an H200 (estimate, as the naive softmax).

extern "C" __global__ void log_softmax_naive_f32(const float* __restrict__ X,
                                                 float* __restrict__ Y, int M, int N) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M) return;
  const float* x = X + (size_t)row * N;
  float* y = Y + (size_t)row * N;
  float m = -INFINITY;
  for (int j = 0; j < N; ++j) m = fmaxf(m, x[j]);
  float s = 0.f;
  for (int j = 0; j < N; ++j) s += expf(x[j] - m);
  const float shift = m + logf(s);
  for (int j = 0; j < N; ++j) y[j] = x[j] - shift;
}
