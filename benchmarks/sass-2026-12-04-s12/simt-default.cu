// kgen: op=gemm dtype=float32
// kgen: choices template=simt tile=128x256x16 thread=8x16 stages=2 vec=4
// kgen: launch gemm_simt_f32 grid=(cdiv(N,256), cdiv(M,128)) block=(256) smem=49664 args=(A, B, C, M, N, K)
// Written by kgen's builtin author (rule-based templates + search, not a language model).
// SIMT gemm, block tile 128x256x16, thread tile 8x16, 2-stage shared memory, float32 accumulation; any M, N, K.
// C[M,N] = A[M,K] @ B[K,N], all row-major.

typedef float T;
constexpr int BM = 128, BN = 256, BK = 16, TM = 8, TN = 16;
constexpr int STAGES = 2, VEC = 4, SWZ = 0;
#define SK 0
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
#define SK_SPREAD 1  // see streamk.cuh
constexpr int SK_SLOTS = 160;  // CTAs (SMs) the workspace serves; more SMs: no cut tiles
__device__ float4 kgen_sk_work[SK_SLOTS * BM * BN / 4];
__device__ unsigned kgen_sk_flag[SK_SLOTS];
#else
#define KGEN_STREAM_K 0
#endif
// Shared by the builtin author's persistent gemm templates (wgmma, simt): which (tile, k-block)
// units one CTA of a persistent grid works on, and the flags that pass partial tiles between CTAs.
// A template includes this file by name; kgen pastes it in when it renders the template.
//
// The includer defines, before the #include:
//   KGEN_STREAM_K  1: tiles may be cut along K (stream-K); 0: whole tiles only.
//   SK_SLOTS       CTAs the partial-tile workspace serves (more CTAs: nothing is cut).
//   SK_PIECES      CTAs per cut tile, on average (SK_SPREAD = 0 only).
//   SK_SPREAD      which tiles are cut (below).
//
// With T tiles on G CTAs, whole tiles go round-robin (t = c, c + G, ...). When T % G != 0 the
// last round leaves SMs idle (133 tiles on 132 SMs: the one left over takes a whole round), so
// with stream-K the last tiles are cut along K instead, and each CTA takes one contiguous range
// of their (tile, k-block) sequence:
//   SK_SPREAD = 1: the last T % G + G tiles, dealt evenly over all G CTAs (the "data-parallel +
//     two-tile stream-K" hybrid of Osama et al., PPoPP 2023), so every CTA ends at the same
//     k-block count. Each CTA's range is then longer than a tile, so a tile is cut at most once
//     (two pieces). The CTAs work at different k offsets of different tiles, so that they share
//     less in L2: right for the SIMT kernel, whose loads are light; the wgmma kernel, which
//     streams operands about eight times as fast, ran slower for it (H200, bfloat16: 4096^3 0.205
//     against 0.182 ms, 2688x2048x8192 0.201 against 0.134 ms).
//   SK_SPREAD = 0: only where few are left over (2 (T % G) <= G): those T % G tiles, about
//     SK_PIECES CTAs each; otherwise the last round stays whole.
// A cut tile's pieces: the owner's, from k-block 0, is the last unit of its CTA c; the
// contributors' are the first cut unit of CTAs c+1, ... (each starting inside the tile). A
// contributor does its piece first, publishes the float32 partial tile to its CTA's workspace
// slot and raises the slot's flag; the owner does its piece last, waits for each contributor's
// flag, adds the partials and stores the tile. No CTA waits before it has published, so the
// waits cannot deadlock while every CTA is resident (a persistent grid of at most one CTA per SM
// is).

struct Schedule {
  int nkb, stride, t_dp, whole, users, i, hi, sk0, q, r;
  __host__ __device__ Schedule(int ntiles, int nkb_, int c, int g) : nkb(nkb_), stride(g), t_dp(c) {
    int cut = 0;
    users = 0;
#if KGEN_STREAM_K
    // cut * nkb < 2 * SK_SLOTS * nkb must stay an int: K up to BK * (2^30 / SK_SLOTS).
    const int left = ntiles > g && g <= SK_SLOTS && nkb < (1 << 30) / SK_SLOTS ? ntiles % g : 0;
#if SK_SPREAD
    if (left) {
      cut = left + g;
      users = g;
    }
#else
    if (left && 2 * left <= g) {
      // Every extra piece costs the owner a read of a partial tile on its critical path (one
      // tile left over on the H200, 2432x1792x4096, dealt over 64 CTAs ran 1.7x slower than
      // leaving it whole), hence about SK_PIECES pieces, up to two more: the CTAs' k-block
      // ranges are rounded and need not start on a tile.
      cut = left;
      users = cut * min(SK_PIECES, g / cut);
    }
#endif
#endif
    whole = ntiles - cut;
    // CTA c's k-blocks of the cut tiles: q each, the first r CTAs one more (no 64-bit divide).
    sk0 = whole * nkb;
    q = users ? cut * nkb / users : 0;
    r = users ? cut * nkb % users : 0;
    i = start(c);
    hi = start(c + 1);
  }
  // Where CTA cc's range of the cut tiles' (tile, k-block) sequence begins (CTAs past `users`
  // have none).
  __host__ __device__ __forceinline__ int start(int cc) const {
    cc = min(cc, users);
    return sk0 + cc * q + min(cc, r);
  }
  // The next unit: tile t, k-blocks [kb0, kb1); false when this CTA has no work left.
  __host__ __device__ __forceinline__ bool next(int& t, int& kb0, int& kb1) {
    if (t_dp < whole) {
      t = t_dp;
      kb0 = 0;
      kb1 = nkb;
      t_dp += stride;
      return true;
    }
    if (i < hi) {
      t = i / nkb;
      kb0 = i - t * nkb;
      kb1 = min(nkb, hi - t * nkb);
      i = t * nkb + kb1;
      return true;
    }
    return false;
  }
  // For the owner (CTA c) of cut tile t: one past the last CTA with a piece of it.
  __host__ __device__ __forceinline__ int contributors_end(int t, int c) const {
    int e = c + 1;
    while (e < stride && start(e) < (t + 1) * nkb) ++e;
    return e;
  }
};

#if KGEN_STREAM_K
// Contributor, one thread, after its group's partial-tile stores and a __threadfence by every
// storing thread and a barrier: the slot is ready.
__device__ __forceinline__ void sk_raise(unsigned* flag) { atomicExch(flag, 1u); }
// Owner, one thread, before its group's barrier and reads: wait for the flag and lower it again
// for the next launch (every flag is down when a launch ends).
__device__ __forceinline__ void sk_wait(unsigned* flag) {
  while (atomicCAS(flag, 1u, 0u) != 1u) __nanosleep(64);
  __threadfence();
}
#endif

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
gemm_simt_f32(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,
            int M, int N, int K) {
  extern __shared__ __align__(16) float smem[];
  float (*As)[BK][LDA] = reinterpret_cast<float (*)[BK][LDA]>(smem);
  float (*Bs)[BK][BN] = reinterpret_cast<float (*)[BK][BN]>(smem + STAGES * BK * LDA);
  const int tid = threadIdx.x, tx = tid % THREADS_N, ty = tid / THREADS_N;
  const bool wideA = (K % 4 == 0) && aligned16(A);
  const bool wideB = (N % 4 == 0) && aligned16(B);
  const bool wideC = WIDE && (N % 4 == 0) && aligned16(C);
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
  if (tid == 0) *work = Schedule(((M + BM - 1) / BM) * tiles_n, nkb, blockIdx.x, gridDim.x);
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
        plainA = wideA && am + BM <= rows && k0 + BK <= K;
        plainB = wideB && bn + BN <= cols && k0 + BK <= K;
      }
      if (plainA) {
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i) {
          const int f = tid + i * THREADS, r = f / (BK / 4), kc = (f % (BK / 4)) * 4;
          ra[i] = *reinterpret_cast<const float4*>(Ab + (size_t)(am + r) * K + k0 + kc);
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
          rb[i] = *reinterpret_cast<const float4*>(Bb + (size_t)(k0 + r) * N + bn + nc);
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
