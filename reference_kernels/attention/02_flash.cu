// kgen: op=attention dtype=float32
// kgen: launch attention_flash_f32 grid=(cdiv(S,64), H, B) block=(128) smem=4*(D*104+32*(cdiv(D,32)*32)+2176) args=(Q, K, V, O, B, H, S, D, causal)
//
// Reference 02 (float32): a flash-attention style tiled kernel on CUDA cores. A block owns 64
// query rows of one (batch, head) and streams the keys/values in tiles of 32 through shared
// memory, never storing the S x S scores. Per tile: S_tile = Q_tile K_tile^T (each of the 128
// threads computes a 4 x 4 block of scores from float4 reads of Q and K kept transposed in
// shared memory), scale by log2(e)/sqrt(D), mask (keys past S, and keys after the query when
// causal), then an online softmax per row: new max, rescale the running sum and the output
// accumulator by exp2(old max - new max), P = exp2(s - max) written to shared memory, and
// O_acc += P V_tile (each thread owns 4 rows x D/8 output columns). At the end O = O_acc / sum.
// Causal blocks stop at their last query's tile, so they do about half the work.
// Dynamic shared memory: Q^T (D x 68) + K^T (D x 36) + V (32 x D rounded up to 32) + P^T
// (32 x 68) floats: 43520 bytes at D=64, 78336 at D=128 (above 48 KB: needs the opt-in, which
// kgen's launcher does; fits sm_80/sm_89/sm_90).
// Launch: 128 threads per block, grid = (cdiv(S, 64), H, B) (H and B up to 65535); any S and
// 1 <= D <= 128 (the accumulator holds 4 x 16 floats per thread).
// Expect about 8-15 TFLOP/s at B=8, H=16, S=2048, D=64..128 on an H200 (estimate; FP32 SIMT
// with no tensor cores and no load/compute overlap).

#define BQ 64       // query rows per block
#define BKV 32      // keys per tile
#define NT 128      // threads
#define QS (BQ + 4)   // row stride of Q^T and P^T (16-byte aligned rows, fewer bank conflicts)
#define KS (BKV + 4)  // row stride of K^T

extern "C" __global__ void __launch_bounds__(NT)
attention_flash_f32(const float* __restrict__ Q, const float* __restrict__ K,
                    const float* __restrict__ V, float* __restrict__ O, int B, int H, int S,
                    int D, int causal) {
  extern __shared__ __align__(16) float smem[];
  const int DP = (D + 31) / 32 * 32;  // V row stride: whole 32-column groups, zero-filled past D
  float* Qt = smem;                   // [D][QS]   Q tile, transposed
  float* Kt = Qt + D * QS;            // [D][KS]   K tile, transposed
  float* Vs = Kt + D * KS;            // [BKV][DP] V tile
  float* Pt = Vs + BKV * DP;          // [BKV][QS] probabilities, transposed

  const int q0 = blockIdx.x * BQ, h = blockIdx.y, b = blockIdx.z;
  if (h >= H || b >= B || D > 128) return;
  const size_t head = ((size_t)b * H + h) * S * D;
  const float* q = Q + head;
  const float* k = K + head;
  const float* v = V + head;
  const int t = threadIdx.x;
  const int ty = t / 8, tx = t % 8;  // rows ty*4..ty*4+3; keys tx*4..tx*4+3; columns tx*4 + 32c
  const float scale = 1.4426950408889634f / sqrtf((float)D);  // log2(e) / sqrt(D): use exp2

  for (int i = t; i < BQ * D; i += NT) {
    const int r = i / D, d = i % D;
    Qt[d * QS + r] = q0 + r < S ? q[(size_t)(q0 + r) * D + d] : 0.f;
  }

  float m[4], l[4], acc[4][16];
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.f;
#pragma unroll
    for (int c = 0; c < 16; ++c) acc[r][c] = 0.f;
  }

  const int kv_end = causal ? min(S, q0 + BQ) : S;
  for (int k0 = 0; k0 < kv_end; k0 += BKV) {
    __syncthreads();  // the Q tile is in; the previous tile's K, V, P are no longer read
    for (int i = t; i < BKV * D; i += NT) {
      const int j = i / D, d = i % D;
      Kt[d * KS + j] = k0 + j < S ? k[(size_t)(k0 + j) * D + d] : 0.f;
    }
    for (int i = t; i < BKV * DP; i += NT) {
      const int j = i / DP, c = i % DP;
      Vs[j * DP + c] = (k0 + j < S && c < D) ? v[(size_t)(k0 + j) * D + c] : 0.f;
    }
    __syncthreads();

    float s[4][4];
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int j = 0; j < 4; ++j) s[r][j] = 0.f;
    for (int d = 0; d < D; ++d) {
      const float4 a = *reinterpret_cast<const float4*>(&Qt[d * QS + ty * 4]);
      const float4 kk = *reinterpret_cast<const float4*>(&Kt[d * KS + tx * 4]);
      const float ar[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        s[r][0] += ar[r] * kk.x;
        s[r][1] += ar[r] * kk.y;
        s[r][2] += ar[r] * kk.z;
        s[r][3] += ar[r] * kk.w;
      }
    }

#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int qi = q0 + ty * 4 + r;
      float mx = -INFINITY;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int kj = k0 + tx * 4 + j;
        const bool masked = kj >= S || (causal && kj > qi);
        s[r][j] = masked ? -INFINITY : s[r][j] * scale;
        mx = fmaxf(mx, s[r][j]);
      }
      // the 8 threads of a row are 8 consecutive lanes
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
      const float mn = fmaxf(m[r], mx);
      // -inf guards: a row with no visible key yet keeps sum 0 and never makes NaN
      const float alpha = m[r] == -INFINITY ? 0.f : exp2f(m[r] - mn);
      float rs = 0.f;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float p = s[r][j] == -INFINITY ? 0.f : exp2f(s[r][j] - mn);
        Pt[(tx * 4 + j) * QS + ty * 4 + r] = p;
        rs += p;
      }
      rs += __shfl_xor_sync(0xffffffffu, rs, 1);
      rs += __shfl_xor_sync(0xffffffffu, rs, 2);
      rs += __shfl_xor_sync(0xffffffffu, rs, 4);
      l[r] = l[r] * alpha + rs;
      m[r] = mn;
#pragma unroll
      for (int c = 0; c < 16; ++c) acc[r][c] *= alpha;
    }
    __syncthreads();  // P complete

    for (int j = 0; j < BKV; ++j) {
      const float4 p = *reinterpret_cast<const float4*>(&Pt[j * QS + ty * 4]);
      const float pr[4] = {p.x, p.y, p.z, p.w};
#pragma unroll
      for (int cg = 0; cg < 4; ++cg) {
        if (cg * 32 < D) {
          const float4 vv = *reinterpret_cast<const float4*>(&Vs[j * DP + cg * 32 + tx * 4]);
#pragma unroll
          for (int r = 0; r < 4; ++r) {
            acc[r][cg * 4 + 0] += pr[r] * vv.x;
            acc[r][cg * 4 + 1] += pr[r] * vv.y;
            acc[r][cg * 4 + 2] += pr[r] * vv.z;
            acc[r][cg * 4 + 3] += pr[r] * vv.w;
          }
        }
      }
    }
  }

#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int qi = q0 + ty * 4 + r;
    if (qi >= S) continue;
    const float inv = 1.f / l[r];
    float* o = O + head + (size_t)qi * D;
#pragma unroll
    for (int cg = 0; cg < 4; ++cg)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int c = cg * 32 + tx * 4 + e;
        if (c < D) o[c] = acc[r][cg * 4 + e] * inv;
      }
  }
}
