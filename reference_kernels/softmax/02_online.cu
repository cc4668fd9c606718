// kgen: op=softmax dtype=float32
// kgen: launch softmax_online_f32 grid=(M) block=(256) smem=0 args=(X, Y, M, N)
//
// Reference 02 (float32): one 256-thread block per row, online softmax. Pass 1 reads the row once
// and keeps a running (max, sum of exp(x - max)) per thread, rescaling the sum whenever the max
// grows; the pairs are merged across the warp with shuffles and across the block through shared
// memory. Pass 2 reads the row again (from L2: a row is at most a few hundred KB and the block is
// still on it) and writes exp(x - max) / sum.
// Launch: 256 threads per block, one block per row, grid = M (x); any M, N. Loads and stores are
// float4 when N % 4 == 0 and both pointers are 16-byte aligned, scalar otherwise.
// Coalesced and vectorized, DRAM traffic is one read and one write of the row: expect about
// 3-3.5 TB/s at M=16384, N=4096 on an H200 (estimate; ~0.3 ms for 512 MB).

#define THREADS 256

// Merge (m2, s2) into (m, s): both are "max, sum of exp(x - max)" over disjoint sets of elements.
// An empty set is (-inf, 0); the equality tests keep exp(-inf - -inf) = NaN out of it.
__device__ __forceinline__ void merge_ms(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  s = (m == mn ? s : s * expf(m - mn)) + (m2 == mn ? s2 : s2 * expf(m2 - mn));
  m = mn;
}

// Every thread of the block gets the merged (max, sum) of the whole block.
__device__ __forceinline__ void block_merge_ms(float& m, float& s) {
  __shared__ float sm[THREADS / 32], ss[THREADS / 32];
  for (int o = 16; o > 0; o >>= 1)
    merge_ms(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    sm[warp] = m;
    ss[warp] = s;
  }
  __syncthreads();
  m = lane < THREADS / 32 ? sm[lane] : -INFINITY;
  s = lane < THREADS / 32 ? ss[lane] : 0.f;
  for (int o = 16; o > 0; o >>= 1)  // every warp reduces the 8 partials itself: no second sync
    merge_ms(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
}

extern "C" __global__ void __launch_bounds__(THREADS)
softmax_online_f32(const float* __restrict__ X, float* __restrict__ Y, int M, int N) {
  const int row = blockIdx.x;
  if (row >= M) return;  // the whole block leaves together
  const float* x = X + (size_t)row * N;
  float* y = Y + (size_t)row * N;
  const bool vec = (N % 4 == 0) &&
                   (((unsigned long long)X | (unsigned long long)Y) & 15ull) == 0;

  // Pass 1: running max and rescaled sum.
  float m = -INFINITY, s = 0.f;
  if (vec) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
    for (int i = threadIdx.x; i < N / 4; i += THREADS) {
      const float4 v = x4[i];
      const float mn = fmaxf(m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
      s = s * expf(m - mn) + (expf(v.x - mn) + expf(v.y - mn)) + (expf(v.z - mn) + expf(v.w - mn));
      m = mn;
    }
  } else {
    for (int j = threadIdx.x; j < N; j += THREADS) {
      const float v = x[j];
      const float mn = fmaxf(m, v);
      s = s * expf(m - mn) + expf(v - mn);
      m = mn;
    }
  }
  block_merge_ms(m, s);
  const float inv = 1.f / s;

  // Pass 2: normalize and store.
  if (vec) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (int i = threadIdx.x; i < N / 4; i += THREADS) {
      const float4 v = x4[i];
      y4[i] = make_float4(expf(v.x - m) * inv, expf(v.y - m) * inv, expf(v.z - m) * inv,
                          expf(v.w - m) * inv);
    }
  } else {
    for (int j = threadIdx.x; j < N; j += THREADS) y[j] = expf(x[j] - m) * inv;
  }
}
