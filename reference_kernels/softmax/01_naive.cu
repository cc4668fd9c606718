// kgen: op=softmax dtype=float32
// kgen: launch softmax_naive_f32 grid=(cdiv(M,128)) block=(128) smem=0 args=(X, Y, M, N)
//
// Reference 01 (float32): the textbook kernel, one thread per row, three passes over its row:
// the max, the sum of exp(x - max), then y = exp(x - max) / sum.
// Launch: 128 threads per block, grid covers M (x); any M, N.
// Neighbouring threads walk different rows, so every load is strided by N (uncoalesced) and the
// row is read three times; with only M threads in flight the GPU is mostly idle. Expect well
// under 100 GB/s at M=16384, N=4096 on an H200 (estimate; about 3% of the ~4 TB/s a coalesced
// kernel reaches).

extern "C" __global__ void softmax_naive_f32(const float* __restrict__ X, float* __restrict__ Y,
                                             int M, int N) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M) return;
  const float* x = X + (size_t)row * N;
  float* y = Y + (size_t)row * N;
  float m = -INFINITY;
  for (int j = 0; j < N; ++j) m = fmaxf(m, x[j]);
  float s = 0.f;
  for (int j = 0; j < N; ++j) s += expf(x[j] - m);
  const float inv = 1.f / s;
  for (int j = 0; j < N; ++j) y[j] = expf(x[j] - m) * inv;
}
