// kgen: op=bmm dtype=float32
// kgen: launch bmm_tiled_f32 grid=(cdiv(N,64), cdiv(M,64), BATCH) block=(256) smem=0 args=(A, B, C, BATCH, M, N, K)
//
// Reference 02 (float32): 64x64 output tiles per block, K in steps of 16 through shared memory,
// and a 4x4 register tile per thread (256 threads). Each step stages A[b] (64x16, stored
// transposed as As[k][m]) and B[b] (16x64) in shared memory with coalesced, guarded loads
// (zero-filled past M, N, K); then every thread does 16 FMAs per pair of float4 shared loads.
// The batch is blockIdx.z.
// Launch: 256 threads per block, grid covers N (x) and M (y) in 64-wide tiles and BATCH (z, up
// to 65535); any M, N, K.
// Expect about 12-18 TFLOP/s at 32 x 1024^3 on an H200 (estimate; a third or less of cuBLAS FP32,
// no double buffering and 4x4 per thread is short of a real SGEMM's 8x8).

#define BM 64
#define BN 64
#define BK 16
#define PAD 4  // keeps rows 16-byte aligned for float4 reads and spreads the transposed stores

__device__ __forceinline__ void fma_row(float (&acc)[4], float a, const float4& b) {
  acc[0] += a * b.x;
  acc[1] += a * b.y;
  acc[2] += a * b.z;
  acc[3] += a * b.w;
}

extern "C" __global__ void __launch_bounds__(256)
bmm_tiled_f32(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
              int BATCH, int M, int N, int K) {
  __shared__ __align__(16) float As[BK][BM + PAD];
  __shared__ __align__(16) float Bs[BK][BN + PAD];
  const int b = blockIdx.z;
  if (b >= BATCH) return;
  const float* a = A + (size_t)b * M * K;
  const float* bb = B + (size_t)b * K * N;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int t = threadIdx.x;
  const int ty = t / 16, tx = t % 16;  // this thread's 4x4 tile: rows ty*4.., cols tx*4..

  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.f;

  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int l = 0; l < 4; ++l) {  // A tile: 64 rows x 16 k, 16 consecutive k per row
      const int idx = t + 256 * l;
      const int r = idx / BK, c = idx % BK;
      const int gr = row0 + r, gk = k0 + c;
      As[c][r] = (gr < M && gk < K) ? a[(size_t)gr * K + gk] : 0.f;
    }
#pragma unroll
    for (int l = 0; l < 4; ++l) {  // B tile: 16 k x 64 cols
      const int idx = t + 256 * l;
      const int r = idx / BN, c = idx % BN;
      const int gk = k0 + r, gc = col0 + c;
      Bs[r][c] = (gk < K && gc < N) ? bb[(size_t)gk * N + gc] : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float4 av = *reinterpret_cast<const float4*>(&As[k][ty * 4]);
      const float4 bv = *reinterpret_cast<const float4*>(&Bs[k][tx * 4]);
      fma_row(acc[0], av.x, bv);
      fma_row(acc[1], av.y, bv);
      fma_row(acc[2], av.z, bv);
      fma_row(acc[3], av.w, bv);
    }
    __syncthreads();
  }

  float* c = C + (size_t)b * M * N;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int gr = row0 + ty * 4 + i;
    if (gr >= M) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int gc = col0 + tx * 4 + j;
      if (gc < N) c[(size_t)gr * N + gc] = acc[i][j];
    }
  }
}
