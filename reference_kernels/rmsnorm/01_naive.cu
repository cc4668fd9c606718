// kgen: op=rmsnorm dtype=float32
// kgen: launch rmsnorm_naive_f32 grid=(cdiv(M,128)) block=(128) smem=0 args=(X, weight, Y, M, N, eps)
//
// Reference 01 (float32): the textbook kernel, one thread per row, two passes over its row: the
// mean of x^2, then y = x * rsqrt(mean + eps) * weight.
// Launch: 128 threads per block, grid covers M (x); any M, N.
// Neighbouring threads walk different rows (strided, uncoalesced loads) and only M threads run:
// expect well under 100 GB/s at M=16384, N=4096 on an H200 (estimate).

extern "C" __global__ void rmsnorm_naive_f32(const float* __restrict__ X,
                                             const float* __restrict__ weight,
                                             float* __restrict__ Y, int M, int N, float eps) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M) return;
  const float* x = X + (size_t)row * N;
  float* y = Y + (size_t)row * N;
  float sq = 0.f;
  for (int j = 0; j < N; ++j) sq += x[j] * x[j];
  const float r = rsqrtf(sq / N + eps);
  for (int j = 0; j < N; ++j) y[j] = x[j] * r * weight[j];
}
