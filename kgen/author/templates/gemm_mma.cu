// Builtin author template: tensor-core gemm for float16/bfloat16 on sm_80+.
// mma.sync m16n8k16 with ldmatrix and a multi-stage cp.async pipeline, float32 accumulation, C
// stored in the dtype. C[M,N] = A[M,K] @ B[K,N], all row-major; any M, N, K: blocks wholly inside
// the matrices load with unguarded cp.async; edge blocks, a partial last k-tile and ragged or
// misaligned rows go through a guarded loader (zero-filled cp.async or element by element); stores
// are guarded.
// Parameters (kgen/author/mma.py): BM, BN, BK block tile; WM x WN warps; STAGES of the cp.async
// ring; GROUP block rows per raster group (1: row-major block order); PIPE 1 (ldmatrix then mma
// per k-step) or 2 (double-buffered fragments: the ldmatrix of step k+1 overlaps the mma of step
// k, and the wait for the next tile comes right after the second-to-last step's mma, the CUTLASS
// multistage order, so the tensor cores stay busy across the barrier).
// Launch: grid=(cdiv(N,BN), cdiv(M,BM)) block=(WM*WN*32) smem=STAGES*(BM*(BK+8)+BK*(BN+8))*2.
// ---- kgen:params begin (the builtin author replaces this block; these defaults let the file compile alone) ----
#include <cuda_fp16.h>
typedef __half T;
typedef __half2 T2;
#define MMA_TYPE "f16"
#define PACK2 __floats2half2_rn
#define FROM_F __float2half_rn
#define ZERO __float2half(0.f)
constexpr int BM = 128, BN = 128, BK = 32, WM = 2, WN = 4;
constexpr int STAGES = 3, GROUP = 1, PIPE = 2;
#define KGEN_KERNEL gemm_mma_f16
// ---- kgen:params end ----
constexpr int THREADS = WM * WN * 32;
constexpr int WTM = BM / WM, WTN = BN / WN;  // one warp's tile
constexpr int MF = WTM / 16, NF = WTN / 8;   // m16n8k16 fragments per warp
constexpr int KSTEPS = BK / 16;
// 16 bytes of padding per row put the 8 row addresses of an ldmatrix on distinct banks.
constexpr int LDA = BK + 8, LDB = BN + 8;
constexpr int A_STAGE = BM * LDA, B_STAGE = BK * LDB;
constexpr int A_CHUNKS = BM * BK / 8 / THREADS, B_CHUNKS = BK * BN / 8 / THREADS;  // 16-byte chunks

// ---- kgen:mma begin (tests/emulate.py puts tests/emu/mma_sync.h here: the CPU emulator) ----
#include "cpasync.cuh"

__device__ __forceinline__ void ldmatrix_x4(unsigned* r, const T* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned* r, const T* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)));
}
__device__ __forceinline__ void mma16816(float* d, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." MMA_TYPE "." MMA_TYPE ".f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// ---- kgen:mma end ----
#include "raster.cuh"

#include "tileload.cuh"

// One warp's A and B fragments for the 16-wide k-step at column kk of a stage.
__device__ __forceinline__ void load_frags(unsigned (&af)[MF][4], unsigned (&bf)[NF][2],
                                           const T* as, const T* bs, int wm, int wn, int lane,
                                           int kk) {
#pragma unroll
  for (int i = 0; i < MF; ++i)
    ldmatrix_x4(af[i], as + (wm * WTM + i * 16 + lane % 16) * LDA + kk + (lane / 16) * 8);
#pragma unroll
  for (int j = 0; j < NF; j += 2) {
    unsigned r[4];  // .trans turns the k-major B rows into the col-major mma operand
    ldmatrix_x4_trans(r, bs + (kk + lane % 16) * LDB + wn * WTN + j * 8 + (lane / 16) * 8);
    bf[j][0] = r[0]; bf[j][1] = r[1]; bf[j + 1][0] = r[2]; bf[j + 1][1] = r[3];
  }
}

__device__ __forceinline__ void mma_step(float (&acc)[MF][NF][4], const unsigned (&af)[MF][4],
                                         const unsigned (&bf)[NF][2]) {
#pragma unroll
  for (int i = 0; i < MF; ++i)
#pragma unroll
    for (int j = 0; j < NF; ++j) mma16816(acc[i][j], af[i], bf[j]);
}

extern "C" __global__ void __launch_bounds__(THREADS)
KGEN_KERNEL(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,
            int M, int N, int K) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* As = reinterpret_cast<T*>(smem_raw);
  T* Bs = As + STAGES * A_STAGE;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / WN, wn = warp % WN;
  int tile_m, tile_n;
  grouped_tile(GROUP, tile_m, tile_n);
  const int m0 = tile_m * BM, n0 = tile_n * BN;
  const bool fastA = (K % 8 == 0) && aligned16(A);
  const bool fastB = (N % 8 == 0) && aligned16(B);

  // Chunk i of a thread's A share is row a_row + i * A_RSTEP at column a_col (B likewise), the
  // same assignment the guarded path below computes from c = tid + i * THREADS.
  constexpr int A_CPR = BK / 8, B_CPR = BN / 8;  // 16-byte chunks per row
  constexpr int A_RSTEP = THREADS / A_CPR, B_RSTEP = THREADS / B_CPR;
  const int a_row = tid / A_CPR, a_col = tid % A_CPR * 8;
  const int b_row = tid / B_CPR, b_col = tid % B_CPR * 8;
  // A block whose tiles lie wholly inside the matrices takes an unguarded cp.async path: fewer
  // live registers and instructions in the main loop. Its pointers are only used there.
  const bool interior = fastA && fastB && m0 + BM <= M && n0 + BN <= N;
  const T* a_src = A + (size_t)(m0 + a_row) * K + a_col;
  const T* b_src = B + (size_t)b_row * N + n0 + b_col;

  auto load_tile = [&](int stage, int kt) {
    const int k0 = kt * BK;
    T* as = As + stage * A_STAGE;
    T* bs = Bs + stage * B_STAGE;
    if (interior && k0 + BK <= K) {
#pragma unroll
      for (int i = 0; i < A_CHUNKS; ++i)
        cp_async16(as + (a_row + i * A_RSTEP) * LDA + a_col, a_src + (size_t)i * A_RSTEP * K + k0,
                   16);
#pragma unroll
      for (int i = 0; i < B_CHUNKS; ++i)
        cp_async16(bs + (b_row + i * B_RSTEP) * LDB + b_col, b_src + (size_t)(k0 + i * B_RSTEP) * N,
                   16);
      return;
    }
    load_tile_guarded(as, bs, A, B, m0, n0, M, N, K, k0, tid, fastA, fastB);
  };

  float acc[MF][NF][4];
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
  if constexpr (PIPE == 2) {
    cp_async_wait<STAGES - 2>();  // tile 0 has landed
    __syncthreads();
    unsigned af[2][MF][4], bf[2][NF][2];  // fragments of this k-step and of the next one
    int rs = 0, ws = STAGES - 1;           // the stage read (tile t), the stage written
    load_frags(af[0], bf[0], As, Bs, wm, wn, lane, 0);
    for (int t = 0; t < tiles; ++t) {
#pragma unroll
      for (int ks = 0; ks < KSTEPS; ++ks) {
        // The next step's fragments: this tile's, or on the last step the next tile's first
        // (rs has moved on by then; past the last tile they are read but never used).
        load_frags(af[(ks + 1) % 2], bf[(ks + 1) % 2], As + rs * A_STAGE, Bs + rs * B_STAGE,
                   wm, wn, lane, (ks + 1) % KSTEPS * 16);
        if (ks == 0) {
          // Stage ws held tile t-1, whose last ldmatrix came before the previous barrier.
          if (t + STAGES - 1 < tiles) load_tile(ws, t + STAGES - 1);
          cp_async_commit();
          ws = ws + 1 == STAGES ? 0 : ws + 1;
        }
        mma_step(acc, af[ks % 2], bf[ks % 2]);
        if (ks == KSTEPS - 2) {
          cp_async_wait<STAGES - 2>();  // tile t+1 has landed ...
          __syncthreads();              // ... for every thread; and every warp has read tile t
          rs = rs + 1 == STAGES ? 0 : rs + 1;
        }
      }
    }
    cp_async_wait<0>();
  } else {
    for (int t = 0; t < tiles; ++t) {
      cp_async_wait<STAGES - 2>();  // tile t has landed
      __syncthreads();              // ... for every thread, and tile t-1's buffer is free again
      const int next = t + STAGES - 1;
      if (next < tiles) load_tile(next % STAGES, next);
      cp_async_commit();
      const T* as = As + (t % STAGES) * A_STAGE;
      const T* bs = Bs + (t % STAGES) * B_STAGE;
#pragma unroll
      for (int ks = 0; ks < KSTEPS; ++ks) {
        unsigned af[MF][4], bf[NF][2];
        load_frags(af, bf, as, bs, wm, wn, lane, ks * 16);
        mma_step(acc, af, bf);
      }
    }
    cp_async_wait<0>();
  }

  const bool pairs = (N % 2 == 0) && (reinterpret_cast<unsigned long long>(C) & 3) == 0;
#pragma unroll
  for (int i = 0; i < MF; ++i)
#pragma unroll
    for (int j = 0; j < NF; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // c0,c1 on row lane/4; c2,c3 eight rows below
        const int row = m0 + wm * WTM + i * 16 + lane / 4 + h * 8;
        const int col = n0 + wn * WTN + j * 8 + (lane % 4) * 2;
        if (row >= M) continue;
        T* out = C + (size_t)row * N + col;
        if (pairs && col + 1 < N) {
          *reinterpret_cast<T2*>(out) = PACK2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
        } else {
          if (col < N) out[0] = FROM_F(acc[i][j][2 * h]);
          if (col + 1 < N) out[1] = FROM_F(acc[i][j][2 * h + 1]);
        }
      }
}
