// kgen: op=attention dtype=float32
// kgen: launch attention_naive_f32 grid=(cdiv(S,128), H, B) block=(128) smem=0 args=(Q, K, V, O, B, H, S, D, causal)
//
// Reference 01 (float32): the textbook kernel, one thread per (batch, head, query row), a
// two-pass softmax over the keys it may see (all S, or 0..i when causal): pass 1 finds the
// largest score q.k / sqrt(D); pass 2 sums p = exp(score - max) and accumulates p * v in
// registers, 64 output columns at a time (recomputing the scores for each chunk), then stores
// acc / sum. Nothing is staged in shared memory.
// Launch: 128 threads per block, grid = (cdiv(S, 128), H, B) (H and B up to 65535); any S, and
// any D (D <= 64: one chunk; D = 128: two).
// The 32 queries of a warp read the same key row at the same time (broadcast) but each walks its
// own Q row; all reads are from L1/L2. It computes every score 2 (D=64) or 3 (D=128) times.
// Expect about 0.3-0.7 TFLOP/s by the spec's flop count at B=8, H=16, S=2048, D=64 on an H200
// (estimate; 0.1-0.2 s, and two to three times that at D=128).

#define DC 64  // output columns per pass-2 chunk (registers)

__device__ __forceinline__ float dot(const float* __restrict__ a, const float* __restrict__ b,
                                     int n) {
  float s = 0.f;
  for (int d = 0; d < n; ++d) s += a[d] * b[d];
  return s;
}

extern "C" __global__ void __launch_bounds__(128)
attention_naive_f32(const float* __restrict__ Q, const float* __restrict__ K,
                    const float* __restrict__ V, float* __restrict__ O, int B, int H, int S,
                    int D, int causal) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int h = blockIdx.y, b = blockIdx.z;
  if (i >= S || h >= H || b >= B) return;
  const size_t head = ((size_t)b * H + h) * S * D;
  const float* q = Q + head + (size_t)i * D;
  const float* k = K + head;
  const float* v = V + head;
  float* o = O + head + (size_t)i * D;
  const float scale = 1.f / sqrtf((float)D);
  const int n = causal ? i + 1 : S;  // keys 0..n-1

  float m = -INFINITY;
  for (int j = 0; j < n; ++j) m = fmaxf(m, dot(q, k + (size_t)j * D, D) * scale);

  for (int c0 = 0; c0 < D; c0 += DC) {
    float acc[DC];
#pragma unroll
    for (int c = 0; c < DC; ++c) acc[c] = 0.f;
    float l = 0.f;
    for (int j = 0; j < n; ++j) {
      const float p = expf(dot(q, k + (size_t)j * D, D) * scale - m);
      l += p;
      const float* vj = v + (size_t)j * D + c0;
#pragma unroll
      for (int c = 0; c < DC; ++c)
        if (c0 + c < D) acc[c] += p * vj[c];
    }
    const float inv = 1.f / l;
#pragma unroll
    for (int c = 0; c < DC; ++c)
      if (c0 + c < D) o[c0 + c] = acc[c] * inv;
  }
}
