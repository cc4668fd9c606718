// kgen: op=layernorm dtype=float32
// kgen: launch layernorm_block_f32 grid=(M) block=(256) smem=0 args=(X, weight, bias, Y, M, N, eps)
//
// Reference 02 (float32): one 256-thread block per row, three coalesced passes over the row:
// block-reduce the sum (-> mean), block-reduce sum((x - mean)^2) (-> variance, two-pass so the
// mean of 3 does not cancel digits away), then write (x - mean) * rstd * weight + bias. Passes 2
// and 3 re-read the row from L2 (the block is still on it), so DRAM sees one read and one write.
// Reductions: warp shuffles, then the 8 warp partials through shared memory.
// Launch: 256 threads per block, one block per row, grid = M (x); any M, N. float4 loads and
// stores (X, Y, weight, bias) when N % 4 == 0 and every pointer is 16-byte aligned, scalar
// otherwise.
// Expect about 3-3.5 TB/s at M=16384, N=4096 on an H200 (estimate; ~0.3 ms for 512 MB).

#define THREADS 256

// Sum over the block; every thread gets the total. `buf` must not be in use by another reduction
// that some thread may still be reading (each call site passes its own buffer).
__device__ __forceinline__ float block_sum(float v, float* buf) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) buf[warp] = v;
  __syncthreads();
  v = lane < THREADS / 32 ? buf[lane] : 0.f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

extern "C" __global__ void __launch_bounds__(THREADS)
layernorm_block_f32(const float* __restrict__ X, const float* __restrict__ weight,
                    const float* __restrict__ bias, float* __restrict__ Y, int M, int N,
                    float eps) {
  __shared__ float red_sum[THREADS / 32], red_sq[THREADS / 32];
  const int row = blockIdx.x;
  if (row >= M) return;
  const float* x = X + (size_t)row * N;
  float* y = Y + (size_t)row * N;
  const bool vec = (N % 4 == 0) &&
                   (((unsigned long long)X | (unsigned long long)Y | (unsigned long long)weight |
                     (unsigned long long)bias) & 15ull) == 0;
  const float4* x4 = reinterpret_cast<const float4*>(x);

  float s = 0.f;
  if (vec) {
    for (int i = threadIdx.x; i < N / 4; i += THREADS) {
      const float4 v = x4[i];
      s += (v.x + v.y) + (v.z + v.w);
    }
  } else {
    for (int j = threadIdx.x; j < N; j += THREADS) s += x[j];
  }
  const float mean = block_sum(s, red_sum) / N;

  float q = 0.f;
  if (vec) {
    for (int i = threadIdx.x; i < N / 4; i += THREADS) {
      const float4 v = x4[i];
      const float a = v.x - mean, b = v.y - mean, c = v.z - mean, d = v.w - mean;
      q += (a * a + b * b) + (c * c + d * d);
    }
  } else {
    for (int j = threadIdx.x; j < N; j += THREADS) {
      const float a = x[j] - mean;
      q += a * a;
    }
  }
  const float rstd = rsqrtf(block_sum(q, red_sq) / N + eps);

  if (vec) {
    const float4* w4 = reinterpret_cast<const float4*>(weight);
    const float4* b4 = reinterpret_cast<const float4*>(bias);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (int i = threadIdx.x; i < N / 4; i += THREADS) {
      const float4 v = x4[i], w = w4[i], b = b4[i];
      y4[i] = make_float4((v.x - mean) * rstd * w.x + b.x, (v.y - mean) * rstd * w.y + b.y,
                          (v.z - mean) * rstd * w.z + b.z, (v.w - mean) * rstd * w.w + b.w);
    }
  } else {
    for (int j = threadIdx.x; j < N; j += THREADS)
      y[j] = (x[j] - mean) * rstd * weight[j] + bias[j];
  }
}
