// kgen: op=argmax dtype=float32
// kgen: launch argmax_naive_f32 grid=(cdiv(M,128)) block=(128) smem=0 args=(X, I, M, N)
//
// Reference 01 (float32): the textbook kernel, one thread per row, a forward scan that moves the
// best index only on a strictly greater value, so ties keep the first (lowest) index.
// Launch: 128 threads per block, grid covers M (x); any M, N. I is int64 (long long).
// Neighbouring threads walk different rows (strided, uncoalesced loads) and only M threads run:
// expect well under 100 GB/s at M=16384, N=4096 on an H200 (estimate).

extern "C" __global__ void argmax_naive_f32(const float* __restrict__ X,
                                            long long* __restrict__ I, int M, int N) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M) return;
  const float* x = X + (size_t)row * N;
  float best = x[0];
  int arg = 0;
  for (int j = 1; j < N; ++j) {
    if (x[j] > best) {
      best = x[j];
      arg = j;
    }
  }
  I[row] = arg;
}
