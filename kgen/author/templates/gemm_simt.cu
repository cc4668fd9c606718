// Builtin author template: register-blocked SIMT gemm, float32 accumulation.
// C[M,N] = A[M,K] @ B[K,N], all row-major; any M, N, K. float32 uses float4 global loads when K/N
// are multiples of 4 and the pointers are 16-byte aligned (a guarded scalar path otherwise);
// float16/bfloat16 (the fallback where tensor cores are not used) load scalars and convert to
// float in shared memory.
// Parameters (kgen/author/simt.py): BM, BN, BK block tile; TM x TN thread tile; STAGES 1 or 2
// (2: the next tile is fetched into registers while this one is computed); VEC 4 (float4) or 1;
// SWZ 0 (A tile padded by 4 floats per row) or 1 (unpadded, 4-float groups XOR-swizzled by row:
// the transposed stores stay free of bank conflicts for every BK, where padding alone leaves
// 2-way conflicts at BK=16 and 4-way at BK=32).
// SK 0: one tile per CTA. SK 1: persistent, one CTA per SM, stream-K (streamk.cuh, SK_SPREAD 1):
// where the tiles do not fill whole rounds, the last T % G + G of them are cut along K and dealt
// evenly over all G CTAs, the partial sums passed between CTAs through a static workspace, so
// that no SM waits out a partial last round. Its main loop reads close to SK 0's in SASS (see the
// kernel), but it costs about 4% a tile on an H100. kgen's sk=2 and sk=3 render the kernel
// twice, this build named *_sk and then the same text with KGEN_STREAM_K 0 (the one-tile grid).
// sk=2 launches one of them per size: the one-tile grid where its last round is nearly full.
// sk=3, the float32 default (ROUNDS 1: both kernels take the SM count), launches both in turn:
// the one-tile grid for the tiles before the last ones (its CTAs past them return at once),
// then the persistent kernel, which skips those and cuts the rest over every SM (SK_SPREAD 2,
// sk_one_tile_tiles in streamk.cuh), so only the cut tiles pay its cost (kgen/author/simt.py;
// the timings are in benchmarks/findings.md).
// Launch: SK 0: grid=(cdiv(N,BN), cdiv(M,BM)); SK 1: grid=(min(#SMs, cdiv(M,BM)*cdiv(N,BN))),
// at most one CTA per SM (the owners of cut tiles wait for CTAs that must be resident);
// block=((BM/TM)*(BN/TN)) smem=STAGES*BK*(LDA+BN)*4 (dynamic shared memory, so that tiles above
// the 48 KiB static limit can be used: 128x256x16, the float32 default, needs 49,664 bytes).
// ---- kgen:params begin (the builtin author replaces this block; these defaults let the file compile alone) ----
typedef float T;
constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
constexpr int STAGES = 2, VEC = 4, SWZ = 0;
#define SK 0
#define ROUNDS 0
#define KGEN_KERNEL gemm_simt_f32
// ---- kgen:params end ----
constexpr int THREADS_M = BM / TM, THREADS_N = BN / TN, THREADS = THREADS_M * THREADS_N;
constexpr int LDA = SWZ ? BM : BM + 4;  // padded: the transposed stores land on distinct banks
constexpr int A_LOADS = BM * BK / (4 * THREADS);  // 4-element chunks each thread moves per tile
constexpr int B_LOADS = BK * BN / (4 * THREADS);
constexpr bool WIDE = VEC == 4 && sizeof(T) == 4;  // float4 global access only for float32
// Ask ptxas to fit two blocks per SM (<= 128 registers at 256 threads): one hides the other's
// syncs. Not with 8x16 thread tiles, which would spill.
constexpr int MIN_BLOCKS = (THREADS <= 256 && TM * TN <= 64) ? 2 : 1;

__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ void put(float* p, float v) { *p = v; }
#ifdef KGEN_HALF
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
__device__ __forceinline__ void put(__half* p, float v) { *p = __float2half_rn(v); }
#endif
#ifdef KGEN_BF16
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ void put(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
#endif

// Four consecutive elements row[col..col+3] as floats; zero at and past `limit`.
__device__ __forceinline__ float4 load4(const T* row, int col, int limit, bool wide) {
  if constexpr (WIDE) {
    if (wide && col + 3 < limit) return *reinterpret_cast<const float4*>(row + col);
  }
  float4 v;
  v.x = col + 0 < limit ? to_f(row[col + 0]) : 0.f;
  v.y = col + 1 < limit ? to_f(row[col + 1]) : 0.f;
  v.z = col + 2 < limit ? to_f(row[col + 2]) : 0.f;
  v.w = col + 3 < limit ? to_f(row[col + 3]) : 0.f;
  return v;
}

// Column of A-tile element (k, col) in shared memory. Swizzled: the 4-float group col/4 of row k
// moves to group (col/4) ^ ((k/4) * (32/BK)), so the k-rows one warp stores to at once start on
// different banks; a group stays whole, so the float4 reads stay aligned.
__device__ __forceinline__ int acol(int k, int col) {
  if constexpr (SWZ) return ((((col >> 2) ^ ((k >> 2) * (32 / BK)))) << 2) | (col & 3);
  return col;
}

__device__ __forceinline__ bool aligned16(const void* p) {
  return (reinterpret_cast<unsigned long long>(p) & 15) == 0;
}

// Stream-K's workspace: a float32 partial tile per CTA slot (128 KB for 128x256; 20 MiB in all),
// static so that the launch contract needs no extra buffer; zero at module load, and every flag
// is down again when a launch ends. Two launches of one module must not run at once (they would
// share it); kgen launches one at a time.
#if SK
#define KGEN_STREAM_K 1
#define SK_SPREAD (ROUNDS ? 2 : 1)  // see streamk.cuh
constexpr int SK_SLOTS = 160;  // CTAs (SMs) the workspace serves; more SMs: no cut tiles
__device__ float4 kgen_sk_work[SK_SLOTS * BM * BN / 4];
__device__ unsigned kgen_sk_flag[SK_SLOTS];
#else
#define KGEN_STREAM_K 0
#endif
#include "streamk.cuh"
// ROUNDS 1: the kernel takes the SM count (the launch contract's SMS) as a last argument.
#if ROUNDS
#define SMS_PARAM , int sms
#else
#define SMS_PARAM
#endif

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
KGEN_KERNEL(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,
            int M, int N, int K SMS_PARAM) {
  // How an interior tile's plain loads index A and B: with 32-bit element indices where they
  // reach (fewer than 2^31 elements, 8 GiB of float32). ptxas recomputes 64-bit index arithmetic
  // each k-tile at the register cap rather than hold it: in the one-tile grid it cost 33
  // instructions and 52 issue cycles a k-tile. The persistent kernel indexes only B's loads so:
  // with A's too, ptxas allocated its main loop's registers with three times the FFMA
  // register-bank conflicts, and it ran 5% slower (benchmarks/findings.md, twenty-sixth session).
#if KGEN_STREAM_K
  typedef size_t AIndex;
#else
  typedef unsigned AIndex;
#endif
  typedef unsigned BIndex;
#if ROUNDS && !KGEN_STREAM_K
  // The tiles before those the persistent launch cuts (row-major, as the grid is laid out; see
  // sk_one_tile_tiles). Read once here: held across the k-loop, a tile index from a division
  // costs the loop its register allocation (benchmarks/findings.md).
  if ((int)(blockIdx.y * gridDim.x + blockIdx.x) >= sk_one_tile_tiles(gridDim.x * gridDim.y, sms))
    return;
#endif
  extern __shared__ __align__(16) float smem[];
  float (*As)[BK][LDA] = reinterpret_cast<float (*)[BK][LDA]>(smem);
  float (*Bs)[BK][BN] = reinterpret_cast<float (*)[BK][BN]>(smem + STAGES * BK * LDA);
  const int tid = threadIdx.x, tx = tid % THREADS_N, ty = tid / THREADS_N;
  const bool wideA = (K % 4 == 0) && aligned16(A);
  const bool wideB = (N % 4 == 0) && aligned16(B);
  const bool wideC = WIDE && (N % 4 == 0) && aligned16(C);
  // Whether the 32-bit indices reach (the one-tile grid guards both loads where either does not).
#if KGEN_STREAM_K
  const bool fitsA = true, fitsB = (size_t)K * N < (1u << 31);
#else
  const bool fitsA = (size_t)M * K < (1u << 31) && (size_t)K * N < (1u << 31), fitsB = fitsA;
#endif
  const int nkb = (K + BK - 1) / BK;  // k-tiles
  float4 ra[A_LOADS], rb[B_LOADS];
  float acc[TM][TN];
#if KGEN_STREAM_K
  // Persistent: this CTA's units (tile t, k-tiles [kb0, kb1)) come from the Schedule
  // (streamk.cuh), tiles in row-major order as the one-tile grid runs them. Thread 0 steps the
  // schedule in shared memory and writes each unit there: held in registers across the k-loop,
  // the schedule made the 8x16 thread tile spill. Nor does the k-loop hold the unit (below).
  const int tiles_n = (N + BN - 1) / BN;
  __shared__ __align__(16) unsigned char work_raw[sizeof(Schedule)];
  __shared__ int unit[5];  // t (-1: no more), kb0, kb1, m0, n0
  Schedule* work = reinterpret_cast<Schedule*>(work_raw);
  if (tid == 0) {
    const int tiles = ((M + BM - 1) / BM) * tiles_n;
    *work = Schedule(tiles, nkb, blockIdx.x, gridDim.x);
#if ROUNDS
    work->t_dp += sk_one_tile_tiles(tiles, sms);  // the one-tile grid ran those
#endif
  }
#pragma unroll 1
  for (;;) {
    __syncthreads();  // every thread has read the last unit
    if (tid == 0) {
      int t, kb0, kb1;
      const bool more = work->next(t, kb0, kb1);
      unit[0] = more ? t : -1;
      if (more) {
        unit[1] = kb0;
        unit[2] = kb1;
        unit[3] = (t / tiles_n) * BM;
        unit[4] = (t % tiles_n) * BN;
      }
    }
    __syncthreads();
    if (unit[0] < 0) break;
    const int kb0 = unit[1], kb1 = unit[2];
    // The k-loop sees the unit's tile only through its corner in A and B (Ab, Bb) and counts its
    // k-tiles from 0; the epilogue reads the origin again. The first version held the origin and
    // ran kb0..kb1: at the 255-register cap ptxas then issued ten of a k-tile's 16 fragment loads
    // from shared memory 13-17 cycles before their use, and it ran 7% slower per tile than the
    // one-tile grid. This form reads as the one-tile grid's in SASS (benchmarks.sass_loop,
    // benchmarks/sass-2026-12-04-s12); it is not yet timed.
    const T* __restrict__ const Ab = A + (size_t)unit[3] * K;
    const T* __restrict__ const Bb = B + unit[4];
    const int am = 0, bn = 0, rows = M - unit[3], cols = N - unit[4];
#else
  {
    const int kb0 = 0, kb1 = nkb, tile_m0 = blockIdx.y * BM, tile_n0 = blockIdx.x * BN;
    // The one-tile grid adds its origin in each access (its SASS as timed).
    const T* __restrict__ const Ab = A;
    const T* __restrict__ const Bb = B;
    const int am = tile_m0, bn = tile_n0, rows = M, cols = N;
#endif
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

    // Global -> registers. A tile that lies wholly inside its matrix, with 16-byte rows, takes
    // plain float4 loads behind one uniform branch; the guarded loads (a branch per chunk) are
    // for the edges only. Per-chunk guards in the loop cost the float32 default 4% on the H200
    // (4096^3: 3.04 ms guarded, 2.92 ms so). Row am + r of Ab, column bn + c of Bb; rows and cols
    // bound those indices.
    auto fetch = [&](int k0) {
      bool plainA = false, plainB = false;
      if constexpr (WIDE) {
        plainA = wideA && fitsA && am + BM <= rows && k0 + BK <= K;
        plainB = wideB && fitsB && bn + BN <= cols && k0 + BK <= K;
      }
      if (plainA) {
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i) {
          const int f = tid + i * THREADS, r = f / (BK / 4), kc = (f % (BK / 4)) * 4;
          ra[i] = *reinterpret_cast<const float4*>(Ab + ((AIndex)(am + r) * K + k0 + kc));
        }
      } else {
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i) {
          const int f = tid + i * THREADS, r = f / (BK / 4), kc = (f % (BK / 4)) * 4;
          const int gr = am + r;
          ra[i] = load4(Ab + (size_t)(gr < rows ? gr : 0) * K, k0 + kc, gr < rows ? K : 0, wideA);
        }
      }
      if (plainB) {
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i) {
          const int f = tid + i * THREADS, r = f / (BN / 4), nc = (f % (BN / 4)) * 4;
          rb[i] = *reinterpret_cast<const float4*>(Bb + ((BIndex)(k0 + r) * N + bn + nc));
        }
      } else {
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i) {
          const int f = tid + i * THREADS, r = f / (BN / 4), nc = (f % (BN / 4)) * 4;
          const int gk = k0 + r;
          rb[i] = load4(Bb + (size_t)(gk < K ? gk : 0) * N, bn + nc, gk < K ? cols : 0, wideB);
        }
      }
    };
    auto stash = [&](int buf) {
#pragma unroll
      for (int i = 0; i < A_LOADS; ++i) {
        const int f = tid + i * THREADS, r = f / (BK / 4), kc = (f % (BK / 4)) * 4;
        As[buf][kc + 0][acol(kc + 0, r)] = ra[i].x;
        As[buf][kc + 1][acol(kc + 1, r)] = ra[i].y;
        As[buf][kc + 2][acol(kc + 2, r)] = ra[i].z;
        As[buf][kc + 3][acol(kc + 3, r)] = ra[i].w;
      }
#pragma unroll
      for (int i = 0; i < B_LOADS; ++i) {
        const int f = tid + i * THREADS, r = f / (BN / 4), nc = (f % (BN / 4)) * 4;
        *reinterpret_cast<float4*>(&Bs[buf][r][nc]) = rb[i];
      }
    };
    auto compute = [&](int buf) {
#pragma unroll
      for (int kk = 0; kk < BK; ++kk) {
        float a[TM], b[TN];
        // Thread tiles are split in 4-wide strips spread over the block tile: one warp's float4
        // reads of a k-row are then contiguous (no bank conflicts).
#pragma unroll
        for (int c = 0; c < TM / 4; ++c) {
          const float4 v =
              *reinterpret_cast<const float4*>(&As[buf][kk][acol(kk, c * THREADS_M * 4 + ty * 4)]);
          a[c * 4 + 0] = v.x; a[c * 4 + 1] = v.y; a[c * 4 + 2] = v.z; a[c * 4 + 3] = v.w;
        }
#pragma unroll
        for (int c = 0; c < TN / 4; ++c) {
          const float4 v =
              *reinterpret_cast<const float4*>(&Bs[buf][kk][c * THREADS_N * 4 + tx * 4]);
          b[c * 4 + 0] = v.x; b[c * 4 + 1] = v.y; b[c * 4 + 2] = v.z; b[c * 4 + 3] = v.w;
        }
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
      }
    };

    // Every k-tile ends with a barrier, so the next unit may refill either buffer at once.
    fetch(kb0 * BK);
    stash(0);
    __syncthreads();
    // Two forms of one loop: ptxas schedules them differently at the register cap, and each kernel
    // keeps the one its SASS reads best in (the one-tile grid: the form it was timed with).
#if KGEN_STREAM_K
    const int nk = kb1 - kb0;
    for (int kt = 0; kt < nk; ++kt) {
      const int buf = STAGES == 2 ? (kt & 1) : 0;
      if (STAGES == 2) {
        if (kt + 1 < nk) fetch((kb0 + kt + 1) * BK);  // global loads in flight during the math
        compute(buf);
        if (kt + 1 < nk) stash(buf ^ 1);
        __syncthreads();
      } else {
        compute(buf);
        __syncthreads();
        if (kt + 1 < nk) {
          fetch((kb0 + kt + 1) * BK);
          stash(0);
        }
        __syncthreads();
      }
    }
#else
    for (int kt = kb0; kt < kb1; ++kt) {
      const int buf = STAGES == 2 ? ((kt - kb0) & 1) : 0;
      if (STAGES == 2) {
        if (kt + 1 < kb1) fetch((kt + 1) * BK);  // global loads in flight during the math
        compute(buf);
        if (kt + 1 < kb1) stash(buf ^ 1);
        __syncthreads();
      } else {
        compute(buf);
        __syncthreads();
        if (kt + 1 < kb1) {
          fetch((kt + 1) * BK);
          stash(0);
        }
        __syncthreads();
      }
    }
#endif
#if KGEN_STREAM_K
    // A piece of a cut tile: a contributor publishes its partial tile to its slot (named by its
    // CTA); the owner adds its contributors' slots [from0, from1) and stores. One pass over the
    // accumulators with the stores: separate publish and absorb passes cost ptxas the register
    // allocation of the main loop (about half the FFMAs with a register-bank conflict).
    const int tile_m0 = unit[3], tile_n0 = unit[4];
    const bool publish = kb0 > 0;
    int from0 = 0, from1 = 0;
    if (kb1 - kb0 < nkb && !publish) {
      from0 = blockIdx.x + 1;
      from1 = work->contributors_end(unit[0], blockIdx.x);
      if (tid < from1 - from0) sk_wait(&kgen_sk_flag[from0 + tid]);
      __syncthreads();
    }
#endif
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int row = tile_m0 + (i / 4) * THREADS_M * 4 + ty * 4 + (i % 4);
#pragma unroll
      for (int c = 0; c < TN / 4; ++c) {
        float4 v = make_float4(acc[i][c * 4 + 0], acc[i][c * 4 + 1], acc[i][c * 4 + 2],
                               acc[i][c * 4 + 3]);
#if KGEN_STREAM_K
        // Each thread's accumulators in order, so the owner's same thread reads them back with no
        // fragment arithmetic (and every access is a coalesced 16-byte one).
        float4* const slot = kgen_sk_work + (i * (TN / 4) + c) * THREADS + tid;
        if (publish) {
          __stcg(slot + static_cast<size_t>(blockIdx.x) * (BM * BN / 4), v);
          continue;
        }
#pragma unroll 1
        for (int f = from0; f < from1; ++f) {
          const float4 p = __ldcg(slot + static_cast<size_t>(f) * (BM * BN / 4));  // another SM's
          v.x += p.x;
          v.y += p.y;
          v.z += p.z;
          v.w += p.w;
        }
#endif
        if (row >= M) continue;
        const int col = tile_n0 + c * THREADS_N * 4 + tx * 4;
        T* out = C + (size_t)row * N + col;
        if constexpr (WIDE) {
          if (wideC && col + 3 < N) {
            *reinterpret_cast<float4*>(out) = v;
            continue;
          }
        }
        if (col < N) put(out, v.x);
        if (col + 1 < N) put(out + 1, v.y);
        if (col + 2 < N) put(out + 2, v.z);
        if (col + 3 < N) put(out + 3, v.w);
      }
    }
#if KGEN_STREAM_K
    if (publish) {
      __threadfence();  // each thread's stores are visible device-wide before the flag goes up
      __syncthreads();
      if (tid == 0) sk_raise(&kgen_sk_flag[blockIdx.x]);
    }
#endif
  }
}
