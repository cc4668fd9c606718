// kgen: op=softmax dtype=float16
// kgen: launch softmax_online_f16 grid=(M) block=(256) smem=0 args=(X, Y, M, N)
//
// Reference 02 (float16): the float32 online kernel with float16 storage. One 256-thread block
// per row; pass 1 keeps a running (max, sum of exp(x - max)) per thread in float32 and merges them
// across the block, pass 2 re-reads the row (from L2) and writes exp(x - max) / sum rounded to
// float16 once. Elements are widened to float32 on load; no math is done in half precision.
// Launch: 256 threads per block, one block per row, grid = M (x); any M, N. Loads and stores move
// 8 halves (16 bytes) at a time when N % 8 == 0 and both pointers are 16-byte aligned, one half at
// a time otherwise.
// Expect about 3-3.5 TB/s at M=16384, N=4096 on an H200 (estimate; ~0.15 ms for 256 MB).

#include <cuda_fp16.h>

#define THREADS 256

__device__ __forceinline__ void merge_ms(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  s = (m == mn ? s : s * expf(m - mn)) + (m2 == mn ? s2 : s2 * expf(m2 - mn));
  m = mn;
}

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
  for (int o = 16; o > 0; o >>= 1)
    merge_ms(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
}

extern "C" __global__ void __launch_bounds__(THREADS)
softmax_online_f16(const __half* __restrict__ X, __half* __restrict__ Y, int M, int N) {
  const int row = blockIdx.x;
  if (row >= M) return;
  const __half* x = X + (size_t)row * N;
  __half* y = Y + (size_t)row * N;
  const bool vec = (N % 8 == 0) &&
                   (((unsigned long long)X | (unsigned long long)Y) & 15ull) == 0;

  float m = -INFINITY, s = 0.f;
  if (vec) {
    const uint4* x8 = reinterpret_cast<const uint4*>(x);
    for (int i = threadIdx.x; i < N / 8; i += THREADS) {
      const uint4 raw = x8[i];
      const __half2* h = reinterpret_cast<const __half2*>(&raw);
      float v[8];
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const float2 f = __half22float2(h[k]);
        v[2 * k] = f.x;
        v[2 * k + 1] = f.y;
      }
      float mx = v[0];
#pragma unroll
      for (int k = 1; k < 8; ++k) mx = fmaxf(mx, v[k]);
      const float mn = fmaxf(m, mx);
      float part = 0.f;
#pragma unroll
      for (int k = 0; k < 8; ++k) part += expf(v[k] - mn);
      s = s * expf(m - mn) + part;
      m = mn;
    }
  } else {
    for (int j = threadIdx.x; j < N; j += THREADS) {
      const float v = __half2float(x[j]);
      const float mn = fmaxf(m, v);
      s = s * expf(m - mn) + expf(v - mn);
      m = mn;
    }
  }
  block_merge_ms(m, s);
  const float inv = 1.f / s;

  if (vec) {
    const uint4* x8 = reinterpret_cast<const uint4*>(x);
    uint4* y8 = reinterpret_cast<uint4*>(y);
    for (int i = threadIdx.x; i < N / 8; i += THREADS) {
      const uint4 raw = x8[i];
      const __half2* h = reinterpret_cast<const __half2*>(&raw);
      uint4 out;
      __half2* o = reinterpret_cast<__half2*>(&out);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const float2 f = __half22float2(h[k]);
        o[k] = __floats2half2_rn(expf(f.x - m) * inv, expf(f.y - m) * inv);
      }
      y8[i] = out;
    }
  } else {
    for (int j = threadIdx.x; j < N; j += THREADS)
      y[j] = __float2half_rn(expf(__half2float(x[j]) - m) * inv);
  }
}
