// Builtin author template: one reduction of X over one dim, float32 math for every dtype. X is, in
// memory, [OUTER, R, INNER] (OUTER: the product of the dims before the reduced one, INNER: of
// those after); Y is [OUTER, INNER]. KGEN_OP 0: sum; 1: mean; 2: max; 3: min; 4: prod (each in
// T); 5: argmax; 6: argmin (int64, the first index on ties, 0 for a row with no number).
// KGEN_OP 7-10, the norms, write Y with X's shape: X less a center, times a factor, of each
// (OUTER, INNER) column, 7: 1 / sum|x| (l1norm), 8: 1 / sqrt(sum x^2) (l2norm), 9: 1 / sqrt(mean
// x^2 + KGEN_EPS) (rmsnorm), each with center 0; 10: the mean and 1 / sqrt(var + KGEN_EPS), the
// biased variance (layernorm without weights; Welford states); a second pass re-reads X (its
// block's part, likely still in L2).
// Two layouts, fixed per op by where the reduced dim is:
//   ROWS 0 (the reduced dim is not X's last): TX threads side by side along INNER, each owning
//   VEC adjacent columns (read as one access: consecutive threads, consecutive bytes), and TY
//   threads splitting R between them, combined through shared memory. A block covers
//   TX * VEC columns of one OUTER index: grid = OUTER * cdiv(INNER, TX * VEC).
//   ROWS 1 (the reduced dim is X's last: each output is a contiguous row of R): TX threads
//   (whole warps) per row, reading VEC elements per access; TY rows per block; warp shuffles,
//   then shared memory between the warps of a row. grid = cdiv(OUTER, TY).
// UNROLL accesses per thread are issued before any is used (loads in flight); HINT 1 reads X
// evict-first (__ldcs: each element is used once). The vector path needs the contiguous extent
// (INNER, or R for ROWS 1) to be a multiple of VEC and X aligned to the access; otherwise the
// same code reads one element at a time. Max and min use fmaxf/fminf (a NaN is skipped, not
// propagated). Any sizes.
// Launch: grid as above, block=(TX*TY) smem=0 args=(X, Y, the sizes in DIMS).
// ---- kgen:params begin (the builtin author replaces this block; these defaults let the file compile alone) ----
typedef float T;
#define KGEN_OP 0
constexpr int TX = 32, TY = 8, VEC = 4, UNROLL = 4, ROWS = 0, HINT = 0, MIN_BLOCKS = 4;
#define SPLIT 0  // 1 (ROWS 1 only): the split-row kernels too, for few long rows
// X's sizes as kernel arguments, and OUTER, R and INNER over them
#define DIMS int d_B, int d_R, int d_C
#define OUTER ((long long)(d_B))
#define RLEN (d_R)
#define INNER (d_C)
// ---- kgen:params end ----
#include "memops.cuh"
#ifndef KGEN_EPS
#define KGEN_EPS 0.f
#endif

constexpr unsigned FULL = 0xffffffffu;
constexpr bool NORM = KGEN_OP >= 7;
#if KGEN_OP == 5 || KGEN_OP == 6
typedef long long Out;
#else
typedef T Out;
#endif

// One output's running state: the value so far and, for argmax/argmin, where it was found.
// `add` takes the element at index r of the reduced dim (each thread visits its indices in
// increasing order, so a strict comparison keeps its first extreme); `with` combines two states
// (the smaller index wins a tie: the first extreme of the whole row).
struct State {
  float v;  // layernorm: the mean of `count` elements, m2 their squares about it
  int i;
#if KGEN_OP == 10
  float count, m2;
#endif
  static __device__ State none() {
#if KGEN_OP <= 1 || KGEN_OP >= 7
    return {0.f, 0};
#elif KGEN_OP == 2 || KGEN_OP == 5
    return {-INFINITY, 0x7fffffff};
#elif KGEN_OP == 3 || KGEN_OP == 6
    return {INFINITY, 0x7fffffff};
#else
    return {1.f, 0};
#endif
  }
  __device__ __forceinline__ void add(float x, int r) {
#if KGEN_OP <= 1
    v += x;
#elif KGEN_OP == 7
    v += fabsf(x);
#elif KGEN_OP == 10
    count += 1.f;
    const float d = x - v;
    v += __fdividef(d, count);  // 2 ulp at most: a memory-bound loop need not pay for IEEE division
    m2 = fmaf(d, x - v, m2);
#elif KGEN_OP >= 8
    v = fmaf(x, x, v);
#elif KGEN_OP == 2
    v = fmaxf(v, x);
#elif KGEN_OP == 3
    v = fminf(v, x);
#elif KGEN_OP == 4
    v *= x;
#elif KGEN_OP == 5
    if (x > v) v = x, i = r;
#else
    if (x < v) v = x, i = r;
#endif
  }
  __device__ __forceinline__ State with(State o) const {
#if KGEN_OP == 10
    const float t = count + o.count;  // Chan et al.'s merge of two (count, mean, m2)
    if (o.count == 0.f) return *this;
    const float d = o.v - v, w = o.count / t;
    return {fmaf(d, w, v), 0, t, m2 + o.m2 + d * d * count * w};
#elif KGEN_OP <= 1 || KGEN_OP >= 7
    return {v + o.v, 0};
#elif KGEN_OP == 2
    return {fmaxf(v, o.v), 0};
#elif KGEN_OP == 3
    return {fminf(v, o.v), 0};
#elif KGEN_OP == 4
    return {v * o.v, 0};
#elif KGEN_OP == 5
    return (o.v > v || (o.v == v && o.i < i)) ? o : *this;
#else
    return (o.v < v || (o.v == v && o.i < i)) ? o : *this;
#endif
  }
  __device__ __forceinline__ State shfl(int o) const {
#if KGEN_OP == 10
    return {__shfl_xor_sync(FULL, v, o), 0, __shfl_xor_sync(FULL, count, o),
            __shfl_xor_sync(FULL, m2, o)};
#else
    return {__shfl_xor_sync(FULL, v, o), __shfl_xor_sync(FULL, i, o)};
#endif
  }
  // The output for a reduced dim of n elements.
  __device__ __forceinline__ Out result(int n) const {
#if KGEN_OP == 1
    return from_f<T>(v / (float)n);
#elif KGEN_OP == 5 || KGEN_OP == 6
    return i < n ? i : 0;
#else
    return from_f<T>(v);
#endif
  }
  // The norms' factor for a reduced dim of n elements (x / sum is x times 1 / sum, within an
  // ulp or two).
  __device__ __forceinline__ float factor(int n) const {
#if KGEN_OP == 7
    return 1.f / v;
#elif KGEN_OP == 8
    return rsqrtf(v);
#elif KGEN_OP == 10
    return rsqrtf(m2 / (float)n + KGEN_EPS);
#else
    return rsqrtf(v / (float)n + KGEN_EPS);
#endif
  }
  // What the norms subtract before they scale: layernorm's mean, else 0.
  __device__ __forceinline__ float center() const { return KGEN_OP == 10 ? v : 0.f; }
};

// ROWS 0: rows r0, r0 + TY, ... (UNROLL of them, those below R) of this thread's VEC columns
// c0.. (x points at column c0 of row 0), every access issued before any is used.
template <bool FAST>
__device__ __forceinline__ void load_rows(const T* __restrict__ x, int r0, int R, int inner,
                                          int c0, float (&f)[UNROLL][VEC]) {
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const int r = r0 + u * TY;
    if (r >= R) continue;
    const T* p = x + (size_t)r * inner;
    if constexpr (FAST) {
      load_vec<VEC, HINT>(p, f[u]);
    } else {
#pragma unroll
      for (int k = 0; k < VEC; ++k) f[u][k] = c0 + k < inner ? to_f(ld<HINT>(p + k)) : 0.f;
    }
  }
}

// ROWS 0: this thread's VEC columns c0.. of OUTER index o, its share of R (r = ty, ty + TY, ...).
// Each of UNROLL accesses is issued before any is added.
template <bool FAST>
__device__ __forceinline__ void columns(const T* __restrict__ X, Out* __restrict__ Y,
                                        long long outer, int R, int inner, State* red) {
  constexpr int SPAN = TX * VEC;  // columns per block
  const int tiles = (inner + SPAN - 1) / SPAN;
  const long long o = blockIdx.x / tiles;
  const int tx = threadIdx.x % TX, ty = threadIdx.x / TX;
  const int c0 = (int)(blockIdx.x % tiles) * SPAN + tx * VEC;
  const bool live = c0 < inner;
  const T* x = X + (size_t)o * R * inner + (live ? c0 : 0);
  State s[VEC];
#pragma unroll
  for (int k = 0; k < VEC; ++k) s[k] = State::none();
  for (int r0 = ty; live && r0 < R; r0 += TY * UNROLL) {
    float f[UNROLL][VEC];
    load_rows<FAST>(x, r0, R, inner, c0, f);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int r = r0 + u * TY;
      if (r >= R) continue;
#pragma unroll
      for (int k = 0; k < VEC; ++k) s[k].add(f[u][k], r);
    }
  }
  if constexpr (TY > 1) {  // rows ty > 0 hand their states to row 0: [TY-1][VEC][TX], no conflicts
    if (ty > 0) {
#pragma unroll
      for (int k = 0; k < VEC; ++k) red[((ty - 1) * VEC + k) * TX + tx] = s[k];
    }
    __syncthreads();
    if (ty > 0 && !NORM) return;
    if (ty == 0) {
      for (int j = 0; j < TY - 1; ++j) {
#pragma unroll
        for (int k = 0; k < VEC; ++k) s[k] = s[k].with(red[(j * VEC + k) * TX + tx]);
      }
    }
  }
  if constexpr (NORM) {  // row 0's factors (and centers) to every row, then each row scales its
    __shared__ float scale[VEC * TX];  // share of R
#if KGEN_OP == 10
    __shared__ float centers[VEC * TX];
#endif
    if (ty == 0) {
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        scale[k * TX + tx] = s[k].factor(R);
#if KGEN_OP == 10
        centers[k * TX + tx] = s[k].center();
#endif
      }
    }
    __syncthreads();
    float g[VEC], c[VEC];
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      g[k] = scale[k * TX + tx];
#if KGEN_OP == 10
      c[k] = centers[k * TX + tx];
#else
      c[k] = 0.f;
#endif
    }
    Out* y = Y + (size_t)o * R * inner + (live ? c0 : 0);
    for (int r0 = ty; live && r0 < R; r0 += TY * UNROLL) {  // the first pass's order and depth
      float f[UNROLL][VEC];
      load_rows<FAST>(x, r0, R, inner, c0, f);
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const int r = r0 + u * TY;
        if (r >= R) continue;
#pragma unroll
        for (int k = 0; k < VEC; ++k) f[u][k] = (f[u][k] - c[k]) * g[k];
        Out* q = y + (size_t)r * inner;
        if constexpr (FAST) {
          store_vec<VEC>(q, f[u]);
        } else {
#pragma unroll
          for (int k = 0; k < VEC; ++k)
            if (c0 + k < inner) q[k] = from_f<T>(f[u][k]);
        }
      }
    }
  } else {
    Out* y = Y + (size_t)o * inner;
#pragma unroll
    for (int k = 0; k < VEC; ++k)
      if (c0 + k < inner) y[c0 + k] = s[k].result(R);
  }
}

// ROWS 1: this thread's state over nv accesses of V elements from x (its accesses tx, tx + TX,
// ...), the element at x[j] being index base + j of the reduced dim.
template <int V>
__device__ __forceinline__ State row_state(const T* __restrict__ x, int nv, int base, int tx,
                                           bool live) {
  State s = State::none();
  for (int i0 = tx; i0 < nv; i0 += TX * UNROLL) {
    float f[UNROLL][V];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int i = i0 + u * TX;
      if (live && i < nv) load_vec<V, HINT>(x + (size_t)i * V, f[u]);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int i = i0 + u * TX;
      if (!live || i >= nv) continue;
#pragma unroll
      for (int k = 0; k < V; ++k) s.add(f[u][k], base + i * V + k);
    }
  }
  return s;
}

// ROWS 1, a norm's second pass: y = (x - c) times g over nv accesses of V elements (this
// thread's: tx, tx + TX, ...), in the first pass's order.
template <int V>
__device__ __forceinline__ void scale_row(const T* __restrict__ x, Out* __restrict__ y, int nv,
                                          float g, float c, int tx) {
  for (int i0 = tx; i0 < nv; i0 += TX * UNROLL) {
    float f[UNROLL][V];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int i = i0 + u * TX;
      if (i < nv) load_vec<V, HINT>(x + (size_t)i * V, f[u]);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int i = i0 + u * TX;
      if (i >= nv) continue;
#pragma unroll
      for (int k = 0; k < V; ++k) f[u][k] = (f[u][k] - c) * g;
      store_vec<V>(y + (size_t)i * V, f[u]);
    }
  }
}

// ROWS 1: row o = blockIdx.x * TY + ty, its accesses tx, tx + TX, ... of V elements each.
template <int V>
__device__ __forceinline__ void rows(const T* __restrict__ X, Out* __restrict__ Y,
                                     long long outer, int R, State* red) {
  const int tx = threadIdx.x % TX, ty = threadIdx.x / TX;
  const long long o = (long long)blockIdx.x * TY + ty;
  const bool live = o < outer;
  const T* x = X + (size_t)(live ? o : 0) * R;
  const int nv = R / V;  // accesses in the row
  State s = row_state<V>(x, nv, 0, tx, live);
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) s = s.with(s.shfl(d));
  if constexpr (TX > 32) {  // the row's warps meet in shared memory; its first thread combines
    constexpr int WARPS = TX / 32;
    if ((tx & 31) == 0) red[ty * WARPS + (tx >> 5)] = s;
    __syncthreads();
    if (tx == 0)
      for (int j = 1; j < WARPS; ++j) s = s.with(red[ty * WARPS + j]);
    if constexpr (NORM) {  // every thread of the row needs the total (the lanes of each warp
      __syncthreads();     // have their warp's from the butterfly above)
      if (tx == 0) red[ty * WARPS] = s;
      __syncthreads();
      s = red[ty * WARPS];
    }
  }
  if constexpr (NORM) {  // the row again, each element times the factor, in the first pass's order
    const float g = s.factor(R);
    if (live) scale_row<V>(x, Y + (size_t)o * R, nv, g, s.center(), tx);
  } else if (live && tx == 0) {
    Y[o] = s.result(R);
  }
}

#if SPLIT  // ROWS 1 only
// Split rows, for few long rows (the launch lines pick it where the rows are fewer than a quarter
// of the SMs): row blockIdx.y is cut into S = cdiv(R, SLICE) slices of SLICE = TX * VEC * UNROLL
// * 4 elements, a block of TX threads each. The first launch (KGEN_KERNEL_parts, grid (S, OUTER))
// reduces each slice to a state in `parts`. The second (KGEN_KERNEL_finish) combines a row's S
// states, in the same order in every block (so to the same bits): for a reduction one block per
// row (grid (1, OUTER)) writes Y; for a norm each block (grid (S, OUTER), run in reverse order so
// the first find the slices the first launch read last still in L2) scales its slice. `parts` is
// a static workspace: one file's launches on one stream at a time.
constexpr int SLICE = TX * VEC * UNROLL * 4;
constexpr int MAX_PARTS = 1 << 16;  // the launch lines pick this path only where OUTER * S fits
__device__ State parts[MAX_PARTS];

// Every thread of the block (TX threads: whole warps) gets the block's combined state.
__device__ __forceinline__ State block_all(State s, State* red) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) s = s.with(s.shfl(d));
  if constexpr (TX > 32) {
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
    __syncthreads();
    s = State::none();
    for (int j = 0; j < TX / 32; ++j) s = s.with(red[j]);
  }
  return s;
}

template <int V>
__device__ __forceinline__ void slice_parts(const T* __restrict__ X, int R, State* red) {
  const int o = blockIdx.y, s = blockIdx.x, first = s * SLICE;
  const int nv = min(SLICE, R - first) / V;
  const State st = block_all(row_state<V>(X + (size_t)o * R + first, nv, first, threadIdx.x,
                                          true), red);
  if (threadIdx.x == 0) parts[o * gridDim.x + s] = st;
}

template <int V>
__device__ __forceinline__ void slice_finish(const T* __restrict__ X, Out* __restrict__ Y, int R,
                                             State* red) {
  const int S = (R + SLICE - 1) / SLICE;
  const int b = gridDim.x * gridDim.y - 1 - (int)(blockIdx.y * gridDim.x + blockIdx.x);
  const int o = b / gridDim.x, s = b % gridDim.x;  // reverse order (norms: gridDim.x is S)
  State st = State::none();
  for (int j = threadIdx.x; j < S; j += TX) st = st.with(parts[o * S + j]);
  st = block_all(st, red);
  if constexpr (NORM) {
    const float g = st.factor(R);
    const int first = s * SLICE, nv = min(SLICE, R - first) / V;
    scale_row<V>(X + (size_t)o * R + first, Y + (size_t)o * R + first, nv, g, st.center(),
                 threadIdx.x);
  } else if (threadIdx.x == 0) {
    Y[o] = st.result(R);
  }
}

// X's vector path as the main kernel takes it (the norms also store vectors).
__device__ __forceinline__ bool rows_fast(const T* X, const Out* Y, int R) {
  return R % VEC == 0 && aligned_to(X, VEC * (int)sizeof(T)) &&
         (!NORM || aligned_to(Y, VEC * (int)sizeof(T)));
}

extern "C" __global__ void __launch_bounds__(TX) KGEN_KERNEL_parts(const T* __restrict__ X,
                                                                  Out* __restrict__ Y, DIMS) {
  __shared__ State red[TX / 32];
  const int R = RLEN;
  if (rows_fast(X, Y, R))
    slice_parts<VEC>(X, R, red);
  else
    slice_parts<1>(X, R, red);
}

extern "C" __global__ void __launch_bounds__(TX) KGEN_KERNEL_finish(const T* __restrict__ X,
                                                                   Out* __restrict__ Y, DIMS) {
  __shared__ State red[TX / 32];
  const int R = RLEN;
  if (rows_fast(X, Y, R))
    slice_finish<VEC>(X, Y, R, red);
  else
    slice_finish<1>(X, Y, R, red);
}
#endif

extern "C" __global__ void __launch_bounds__(TX * TY, MIN_BLOCKS)
    KGEN_KERNEL(const T* __restrict__ X, Out* __restrict__ Y, DIMS) {
  const long long outer = OUTER;
  const int R = RLEN, inner = INNER;
  // one buffer for both paths: the states handed over between threads (see columns and rows)
  constexpr int SLOTS = ROWS ? TY * (TX / 32) : (TY - 1) * VEC * TX;
  __shared__ State red[SLOTS > 1 ? SLOTS : 1];
  const bool fast = (ROWS ? R : inner) % VEC == 0 && aligned_to(X, VEC * (int)sizeof(T)) &&
                    (!NORM || aligned_to(Y, VEC * (int)sizeof(T)));  // the norms store vectors
  if constexpr (ROWS) {
    if (fast)
      rows<VEC>(X, Y, outer, R, red);
    else
      rows<1>(X, Y, outer, R, red);
  } else {
    if (fast)
      columns<true>(X, Y, outer, R, inner, red);
    else
      columns<false>(X, Y, outer, R, inner, red);
  }
}
