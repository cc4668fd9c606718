// kgen: op=log_softmax dtype=float32
// kgen: launch log_softmax_block_f32 grid=(M) block=(256) smem=0 args=(X, Y, M, N)
//
// Reference 02 (float32): one 256-thread block per row, threads striding the row together, so a
// warp's loads are consecutive (coalesced). Pass 1: the row max, reduced with warp shuffles and
// then across the block's 8 warps through shared memory. Pass 2: the sum of exp(x - max), reduced
// the same way. Pass 3: y = x - (max + log sum). Passes 2 and 3 re-read the row, mostly from L2
// (a row of 4096 floats is 16 KB).
// Launch: 256 threads per block, one block per row, grid = M (x); any M, N. Scalar accesses.
// Expect about 2-3 TB/s of useful traffic at M=16384, N=4096 on an H200 (estimate: coalesced
// but scalar, and three sweeps of the row, two of them from L2).

#define THREADS 256

// op(a, b) over the block; every thread gets the result. `buf` holds one value per warp; the
// second barrier keeps the next call from overwriting it while a slow warp still reads.
template <class Op>
__device__ __forceinline__ float block_reduce(float v, float* buf, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) buf[warp] = v;
  __syncthreads();
  v = buf[0];
  for (int w = 1; w < THREADS / 32; ++w) v = op(v, buf[w]);
  __syncthreads();
  return v;
}

extern "C" __global__ void __launch_bounds__(THREADS)
log_softmax_block_f32(const float* __restrict__ X, float* __restrict__ Y, int M, int N) {
  __shared__ float buf[THREADS / 32];
  const int row = blockIdx.x;
  if (row >= M) return;  // the whole block leaves together
  const float* x = X + (size_t)row * N;
  float* y = Y + (size_t)row * N;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < N; j += THREADS) m = fmaxf(m, x[j]);
  m = block_reduce(m, buf, [](float a, float b) { return fmaxf(a, b); });
  float s = 0.f;
  for (int j = threadIdx.x; j < N; j += THREADS) s += expf(x[j] - m);
  s = block_reduce(s, buf, [](float a, float b) { return a + b; });
  const float shift = m + logf(s);
  for (int j = threadIdx.x; j < N; j += THREADS) y[j] = x[j] - shift;
}
