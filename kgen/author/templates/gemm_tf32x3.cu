// Builtin author template: float32 gemm on the tensor cores by 3xTF32, for sm_80+.
// Each float32 x is split into two TF32 values, big = tf32(x) and small = tf32(x - big), and A*B is
// taken as small_a*big_b + big_a*small_b + big_a*big_b (small_a*small_b, about 2^-22 relative, is
// dropped): three mma.sync m16n8k8 .tf32 per term, close to float32 accuracy. One TF32 product per
// term (about 2^-11 relative) misses the spec's float32 tolerance at the bench sizes, and the
// search keeps this template only where it passes that tolerance at every test size (validation
// decides, as for any candidate); reports and the bench table name it 3xTF32.
//
// Accumulation: the tensor cores round each mma's sum toward zero, so a chain of mma.sync on one
// accumulator drifts by up to half an ulp of the running sum per instruction, all in one
// direction. Over K = 4096 (1536 instructions) that was 3.7e-3 on an H100, 75 outputs of 16.8M
// over the spec's 1e-3 + 1e-3 |ref| (benchmarks/s20-2026-12-05/). So each BK slice is summed on
// the tensor cores into a fresh partial (a running sum about sqrt(BK) in size, not sqrt(K)), and
// the partial joins the float32 accumulator by an ordinary round-to-nearest add: one add per
// accumulator register per slice, and 4 * MF * NF more registers.
//
// The rest is the mma template's structure (gemm_mma.cu, PIPE 1): a STAGES-deep cp.async ring of
// padded BM x BK and BK x BN tiles, WM x WN warps, guarded loads at the edges and guarded stores;
// any M, N, K. A's fragments come through ldmatrix (a 16x8 float tile is four 8x8 b16 matrices
// whose 32-bit words land where the tf32 A operand wants them); B's, from k-major rows, by plain
// 32-bit shared loads (ldmatrix .trans moves 16-bit elements, so it cannot transpose floats), which
// the row padding (BN + 8 floats) keeps free of bank conflicts.
// Parameters (kgen/author/tf32x3.py): BM, BN, BK block tile; WM x WN warps; STAGES of the ring;
// GROUP block rows per raster group (1: row-major block order).
// Launch: grid=(cdiv(N,BN), cdiv(M,BM)) block=(WM*WN*32) smem=STAGES*(BM*(BK+4)+BK*(BN+8))*4.
// ---- kgen:params begin (the builtin author replaces this block; these defaults let the file compile alone) ----
constexpr int BM = 128, BN = 128, BK = 32, WM = 2, WN = 4;
constexpr int STAGES = 3, GROUP = 8;
#define KGEN_KERNEL gemm_tf32x3_f32
// ---- kgen:params end ----
typedef float T;  // the tile loader's element (tileload.cuh)
#define ZERO 0.f
constexpr int THREADS = WM * WN * 32;
constexpr int WTM = BM / WM, WTN = BN / WN;  // one warp's tile
constexpr int MF = WTM / 16, NF = WTN / 8;   // m16n8k8 fragments per warp
constexpr int KSTEPS = BK / 8;
// A rows padded by 4 floats (16 bytes): the 8 row addresses of an ldmatrix phase fall on distinct
// banks. B rows padded by 8 floats: the (k, n) = (lane % 4, lane / 4) loads of a warp cover all
// 32 banks.
constexpr int LDA = BK + 4, LDB = BN + 8;
constexpr int A_STAGE = BM * LDA, B_STAGE = BK * LDB;
constexpr int A_CHUNKS = BM * BK / 4 / THREADS, B_CHUNKS = BK * BN / 4 / THREADS;  // 16-byte chunks
static_assert(A_CHUNKS * THREADS * 4 == BM * BK && B_CHUNKS * THREADS * 4 == BK * BN,
              "each thread loads whole 16-byte chunks of both tiles");

// ---- kgen:mma begin (tests/emulate.py puts tests/emu/mma_sync.h here: the CPU emulator) ----
#include "cpasync.cuh"

__device__ __forceinline__ void ldmatrix_x4(unsigned* r, const float* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)));
}
// x as big + small, both TF32 (round to nearest); the residual x - big is exact in float32.
__device__ __forceinline__ void split(unsigned x, unsigned& big, unsigned& small) {
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(big) : "f"(__uint_as_float(x)));
  const float rest = __uint_as_float(x) - __uint_as_float(big);
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(small) : "f"(rest));
}
__device__ __forceinline__ void mma1688(float* d, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// ---- kgen:mma end ----
#include "raster.cuh"

#include "tileload.cuh"

// One warp's k-step at column kk of a stage: fragments loaded and split, then three products
// per fragment pair, the small terms first.
__device__ __forceinline__ void mma_step(float (&sum)[MF][NF][4], const float* as,
                                         const float* bs, int wm, int wn, int lane, int kk) {
  unsigned a_big[MF][4], a_small[MF][4], b_big[NF][2], b_small[NF][2];
#pragma unroll
  for (int i = 0; i < MF; ++i) {
    unsigned raw[4];
    ldmatrix_x4(raw, as + (wm * WTM + i * 16 + lane % 16) * LDA + kk + (lane / 16) * 4);
#pragma unroll
    for (int e = 0; e < 4; ++e) split(raw[e], a_big[i][e], a_small[i][e]);
  }
  const int k = kk + lane % 4, n = wn * WTN + lane / 4;
#pragma unroll
  for (int j = 0; j < NF; ++j) {
    split(__float_as_uint(bs[k * LDB + n + j * 8]), b_big[j][0], b_small[j][0]);
    split(__float_as_uint(bs[(k + 4) * LDB + n + j * 8]), b_big[j][1], b_small[j][1]);
  }
#pragma unroll
  for (int i = 0; i < MF; ++i)
#pragma unroll
    for (int j = 0; j < NF; ++j) {
      mma1688(sum[i][j], a_small[i], b_big[j]);
      mma1688(sum[i][j], a_big[i], b_small[j]);
      mma1688(sum[i][j], a_big[i], b_big[j]);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
KGEN_KERNEL(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
            int M, int N, int K) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  float* As = reinterpret_cast<float*>(smem_raw);
  float* Bs = As + STAGES * A_STAGE;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / WN, wn = warp % WN;
  int tile_m, tile_n;
  grouped_tile(GROUP, tile_m, tile_n);
  const int m0 = tile_m * BM, n0 = tile_n * BN;
  const bool fastA = (K % 4 == 0) && aligned16(A);
  const bool fastB = (N % 4 == 0) && aligned16(B);

  // Chunk i of a thread's A share is row a_row + i * A_RSTEP at column a_col (B likewise), the
  // same assignment the guarded path computes from c = tid + i * THREADS.
  constexpr int A_CPR = BK / 4, B_CPR = BN / 4;  // 16-byte chunks per row
  constexpr int A_RSTEP = THREADS / A_CPR, B_RSTEP = THREADS / B_CPR;
  const int a_row = tid / A_CPR, a_col = tid % A_CPR * 4;
  const int b_row = tid / B_CPR, b_col = tid % B_CPR * 4;
  // A block whose tiles lie wholly inside the matrices takes an unguarded cp.async path.
  const bool interior = fastA && fastB && m0 + BM <= M && n0 + BN <= N;
  const float* a_src = A + (size_t)(m0 + a_row) * K + a_col;
  const float* b_src = B + (size_t)b_row * N + n0 + b_col;

  auto load_tile = [&](int stage, int kt) {
    const int k0 = kt * BK;
    float* as = As + stage * A_STAGE;
    float* bs = Bs + stage * B_STAGE;
    if (interior && k0 + BK <= K) {
#pragma unroll
      for (int i = 0; i < A_CHUNKS; ++i)
        cp_async16(as + (a_row + i * A_RSTEP) * LDA + a_col, a_src + (size_t)i * A_RSTEP * K + k0,
                   16);
#pragma unroll
      for (int i = 0; i < B_CHUNKS; ++i)
        cp_async16(bs + (b_row + i * B_RSTEP) * LDB + b_col,
                   b_src + (size_t)(k0 + i * B_RSTEP) * N, 16);
      return;
    }
    load_tile_guarded(as, bs, A, B, m0, n0, M, N, K, k0, tid, fastA, fastB);
  };

  float acc[MF][NF][4], part[MF][NF][4];
#pragma unroll
  for (int i = 0; i < MF; ++i)
#pragma unroll
    for (int j = 0; j < NF; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

  const int tiles = (K + BK - 1) / BK;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < tiles) load_tile(s, s);
    cp_async_commit();  // one commit group per tile, empty ones too, so the waits below count
  }
  for (int t = 0; t < tiles; ++t) {
    cp_async_wait<STAGES - 2>();  // tile t has landed
    __syncthreads();              // ... for every thread, and tile t-1's buffer is free again
    const int next = t + STAGES - 1;
    if (next < tiles) load_tile(next % STAGES, next);
    cp_async_commit();
    const float* as = As + (t % STAGES) * A_STAGE;
    const float* bs = Bs + (t % STAGES) * B_STAGE;
#pragma unroll
    for (int i = 0; i < MF; ++i)
#pragma unroll
      for (int j = 0; j < NF; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) part[i][j][e] = 0.f;
#pragma unroll
    for (int ks = 0; ks < KSTEPS; ++ks) mma_step(part, as, bs, wm, wn, lane, ks * 8);
    // The slice's partial joins the accumulator rounded to nearest (see the top of the file).
#pragma unroll
    for (int i = 0; i < MF; ++i)
#pragma unroll
      for (int j = 0; j < NF; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] += part[i][j][e];
  }
  cp_async_wait<0>();

  const bool pairs = (N % 2 == 0) && (reinterpret_cast<unsigned long long>(C) & 7) == 0;
#pragma unroll
  for (int i = 0; i < MF; ++i)
#pragma unroll
    for (int j = 0; j < NF; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // c0,c1 on row lane/4; c2,c3 eight rows below
        const int row = m0 + wm * WTM + i * 16 + lane / 4 + h * 8;
        const int col = n0 + wn * WTN + j * 8 + (lane % 4) * 2;
        if (row >= M) continue;
        float* out = C + (size_t)row * N + col;
        if (pairs && col + 1 < N) {
          *reinterpret_cast<float2*>(out) = make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
        } else {
          if (col < N) out[0] = acc[i][j][2 * h];
          if (col + 1 < N) out[1] = acc[i][j][2 * h + 1];
        }
      }
}
