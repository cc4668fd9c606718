// Builtin author template: row-wise reductions and normalizations over the last dim of X[M,N],
// float32 math for every dtype. KGEN_OP 0: sum -> Y[M]; 1: max -> Y[M] (the element itself, so
// exact); 2: argmax -> I[M] int64 (ties: the first index); 3: softmax -> Y[M,N]; 4: layernorm
// (weight, bias, eps) -> Y[M,N]; 5: rmsnorm (weight, eps) -> Y[M,N]; 6: log_softmax -> Y[M,N].
// Parameters (kgen/author/rowwise.py), per file: VEC elements per access (VEC * sizeof(T) <= 16
// bytes); ONLINE (softmax, log_softmax, layernorm, streamed rows only): 1 = one pass for the
// statistics (online max and rescaled sum; Welford mean and M2), 0 = two passes (max then sum; mean
// then centered squares); HINT 1 reads X evict-first (__ldcs: each element is used once, so it
// should not push other lines out of L2). Per kernel (the kernels block at the end: a file has one
// kernel per class of row length, and its launch lines pick one by N): TPR threads per row (32: a
// warp per row, shuffles only; more: a block's warps share the row and combine through shared
// memory); RPB rows per block; CACHE accesses each thread holds per chunk of the row; MIN_BLOCKS
// resident blocks per SM asked of ptxas (which caps the registers). A row of N <= TPR * VEC * CACHE
// is read once and stays in registers; a longer row is streamed chunk by chunk and re-read (from
// L2) for each further pass.
// The vector path needs N % VEC == 0 and every pointer aligned to the access; otherwise the same
// code runs one element per access. Rows past M still take part in the barriers. Any M, N.
// Launch: grid=(cdiv(M, RPB)) block=(TPR*RPB) smem=0 args=(X, Y, M, N) (sum, max, softmax,
// log_softmax),
// (X, I, M, N) (argmax), (X, weight, bias, Y, M, N, eps) (layernorm), (X, weight, Y, M, N, eps).
// ---- kgen:params begin (the builtin author replaces this block; these defaults let the file compile alone) ----
typedef float T;
#define KGEN_OP 3
constexpr int VEC = 4, ONLINE = 1, HINT = 0;
// ---- kgen:params end ----
#include "memops.cuh"

constexpr int VW = VEC, WIDTH = VEC * (int)sizeof(T);  // elements, bytes per vector access
constexpr unsigned FULL = 0xffffffffu;
// Also names ONLINE for the ops that do not use it, so their builds carry no "declared but never
// referenced" warning back to the report.
static_assert(ONLINE == 0 || ONLINE == 1, "ONLINE is 0 (two passes) or 1 (online statistics)");
constexpr float L2E = 1.4426950408889634f;  // exp(x) = exp2(x * log2(e))
#if KGEN_OP == 2
typedef long long Out;
#else
typedef T Out;
#endif

// One kernel's shape: TPR threads per row, RPB rows per block, CACHE accesses per thread per chunk.
template <int TPR_, int RPB_, int CACHE_> struct Shape {
  static constexpr int TPR = TPR_, RPB = RPB_, CACHE = CACHE_;
  static constexpr int THREADS = TPR * RPB, WPR = TPR / 32;  // WPR: warps per row
  static_assert(TPR % 32 == 0 && THREADS <= 1024, "whole warps per row, at most 1024 threads");
};

// Reduction states: `none` is the identity, `with` combines two (commutative), `shfl` reads a
// lane's state. Every lane of a row ends with the same combined state.
struct Sum {
  float v;
  static __device__ Sum none() { return {0.f}; }
  __device__ Sum with(Sum o) const { return {v + o.v}; }
  __device__ Sum shfl(int o) const { return {__shfl_xor_sync(FULL, v, o)}; }
};
struct Max {
  float v;
  static __device__ Max none() { return {-INFINITY}; }
  __device__ Max with(Max o) const { return {fmaxf(v, o.v)}; }
  __device__ Max shfl(int o) const { return {__shfl_xor_sync(FULL, v, o)}; }
};
// Value and index; the larger value wins and, on equal values, the smaller index: with each
// thread scanning its elements in increasing index order, that is the row's first maximum.
struct ArgMax {
  float v;
  int i;
  static __device__ ArgMax none() { return {-INFINITY, 0x7fffffff}; }
  __device__ ArgMax with(ArgMax o) const {
    return (o.v > v || (o.v == v && o.i < i)) ? o : *this;
  }
  __device__ ArgMax shfl(int o) const {
    return {__shfl_xor_sync(FULL, v, o), __shfl_xor_sync(FULL, i, o)};
  }
};
// Running max and the sum of exp(x - max), rescaled when the max grows (online softmax).
struct MaxSum {
  float m, s;
  static __device__ MaxSum none() { return {-INFINITY, 0.f}; }
  __device__ MaxSum with(MaxSum o) const {
    const float mx = fmaxf(m, o.m);
    const float a = m == mx ? s : s * exp2f((m - mx) * L2E);
    const float b = o.m == mx ? o.s : o.s * exp2f((o.m - mx) * L2E);
    return {mx, a + b};
  }
  __device__ MaxSum shfl(int o) const {
    return {__shfl_xor_sync(FULL, m, o), __shfl_xor_sync(FULL, s, o)};
  }
};
// Count, mean and sum of squared deviations (Chan et al.'s pairwise merge): a one-pass variance
// that does not cancel when the mean is large against the spread.
struct Welford {
  float n, mean, m2;
  static __device__ Welford none() { return {0.f, 0.f, 0.f}; }
  __device__ Welford with(Welford o) const {
    if (o.n == 0.f) return *this;
    if (n == 0.f) return o;
    const float nn = n + o.n, d = o.mean - mean;
    return {nn, mean + d * (o.n / nn), m2 + o.m2 + d * d * (n * o.n / nn)};
  }
  __device__ Welford shfl(int o) const {
    return {__shfl_xor_sync(FULL, n, o), __shfl_xor_sync(FULL, mean, o),
            __shfl_xor_sync(FULL, m2, o)};
  }
};

template <class S> __device__ __forceinline__ S warp_all(S s) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s = s.with(s.shfl(o));
  return s;
}

// Every thread of a row group gets the group's combined state. With several warps per row the
// warps' states meet in `buf` (room for WPR states per row); the second barrier keeps the next
// call from overwriting them while a slow warp still reads.
template <class Sh, class S> __device__ __forceinline__ S group_all(S s, unsigned char* buf) {
  constexpr int WPR = Sh::WPR;
  s = warp_all(s);
  if constexpr (WPR > 1) {
    S* states = reinterpret_cast<S*>(buf);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) states[warp] = s;
    __syncthreads();
    s = lane < WPR ? states[(warp / WPR) * WPR + lane] : S::none();
    s = warp_all(s);
    __syncthreads();
  }
  return s;
}

// One row as this thread sees it: chunks of TPR * CACHE accesses of V elements; thread t holds
// accesses t, t + TPR, ... of the current chunk in v. `sweep` visits every access of the row in
// increasing index order (per thread), reloading chunks unless the row is resident.
template <class Sh, int V> struct Row {
  static constexpr int TPR = Sh::TPR, CACHE = Sh::CACHE;
  static constexpr int STEP = TPR * CACHE;  // accesses per chunk
  const T* x;
  int nv, t;  // accesses in the row, this thread's index in its row group
  bool live, resident;
  float v[CACHE][V];

  __device__ void load(int c0) {
#pragma unroll
    for (int k = 0; k < CACHE; ++k) {
      const int i = c0 + k * TPR + t;
      if (live && i < nv) load_vec<V, HINT>(x + (size_t)i * V, v[k]);
    }
  }
  template <class F> __device__ __forceinline__ void visit(int c0, F&& f) {
#pragma unroll
    for (int k = 0; k < CACHE; ++k) {
      const int i = c0 + k * TPR + t;
      if (live && i < nv) f(v[k], i * V);
    }
  }
  // f(values[V], first column) for every access of the row this thread owns (f may change the
  // values: a resident row keeps the change, a streamed chunk is reloaded next time).
  template <class F> __device__ __forceinline__ void sweep(F&& f) {
    if (resident) {
      visit(0, f);
      return;
    }
    for (int c0 = 0; c0 < nv; c0 += STEP) {
      load(c0);
      visit(c0, f);
    }
  }
};

template <class Sh, int V>
__device__ __forceinline__ float row_max(Row<Sh, V>& r, unsigned char* red) {
  Max s = Max::none();
  r.sweep([&](const float(&a)[V], int) {
#pragma unroll
    for (int e = 0; e < V; ++e) s.v = fmaxf(s.v, a[e]);
  });
  return group_all<Sh>(s, red).v;
}

// sum over the row of g(x) (x, x - c squared, exp(x - max)...).
template <class Sh, int V, class G>
__device__ __forceinline__ float row_sum(Row<Sh, V>& r, unsigned char* red, G&& g) {
  Sum s = Sum::none();
  r.sweep([&](const float(&a)[V], int) {
#pragma unroll
    for (int e = 0; e < V; ++e) s.v += g(a[e]);
  });
  return group_all<Sh>(s, red).v;
}

// The row's max m and sum of exp(x - m): two passes (the max, then the sum), or with `online`
// one pass that rescales the running sum whenever the max grows.
template <class Sh, int V>
__device__ __forceinline__ void row_max_sum(Row<Sh, V>& r, unsigned char* red, bool online,
                                            float& m, float& total) {
  if (!online) {
    m = row_max(r, red);
    const float mL = m * L2E;
    total = row_sum(r, red, [mL](float a) { return exp2f(fmaf(a, L2E, -mL)); });
    return;
  }
  MaxSum s = MaxSum::none();
  r.sweep([&](const float(&a)[V], int) {
    float mx = a[0];
#pragma unroll
    for (int e = 1; e < V; ++e) mx = fmaxf(mx, a[e]);
    const float mn = fmaxf(s.m, mx), mL = mn * L2E;
    float part = 0.f;
#pragma unroll
    for (int e = 0; e < V; ++e) part += exp2f(fmaf(a[e], L2E, -mL));
    s.s = (s.m == mn ? s.s : s.s * exp2f((s.m - mn) * L2E)) + part;
    s.m = mn;
  });
  s = group_all<Sh>(s, red);
  m = s.m;
  total = s.s;
}

// Y[j] = f(x[j], j) for the whole row (reloaded unless resident).
template <class Sh, int V, class F>
__device__ __forceinline__ void row_write(Row<Sh, V>& r, T* y, F&& f) {
  r.sweep([&](const float(&a)[V], int j0) {
    float out[V];
#pragma unroll
    for (int e = 0; e < V; ++e) out[e] = f(a[e], j0 + e);
    store_vec<V>(y + j0, out);
  });
}

// Column j0..j0+V-1 of a weight vector, as floats.
template <int V> __device__ __forceinline__ void weights(const T* w, int j0, float (&f)[V]) {
  load_vec<V>(w + j0, f);
}

template <class Sh, int V>
__device__ __forceinline__ void process(const T* __restrict__ X, const T* __restrict__ W,
                                        const T* __restrict__ B, Out* __restrict__ Y, int M,
                                        int N, float eps, unsigned char* red) {
  const int row = blockIdx.x * Sh::RPB + threadIdx.x / Sh::TPR;
  Row<Sh, V> r;
  r.live = row < M;
  r.t = threadIdx.x % Sh::TPR;
  r.nv = N / V;
  r.x = X + (size_t)(r.live ? row : 0) * N;
  r.resident = r.nv <= Row<Sh, V>::STEP;
  if (r.resident) r.load(0);
  const bool lead = r.live && r.t == 0;
#if KGEN_OP == 0
  const float s = row_sum(r, red, [](float a) { return a; });
  if (lead) Y[row] = from_f<T>(s);
#elif KGEN_OP == 1
  const float m = row_max(r, red);
  if (lead) Y[row] = from_f<T>(m);
#elif KGEN_OP == 2
  ArgMax s = ArgMax::none();
  r.sweep([&](const float(&a)[V], int j0) {
#pragma unroll
    for (int e = 0; e < V; ++e)
      if (a[e] > s.v) s = {a[e], j0 + e};  // strictly greater: this thread's first maximum
  });
  s = group_all<Sh>(s, red);
  if (lead) Y[row] = s.i < N ? s.i : 0;  // a row of -inf only: index 0, as torch
#elif KGEN_OP == 3
  float m, total;
  if (r.resident) {  // from registers: max, then exp in place (one exp per element), then scale
    m = row_max(r, red);
    const float mL = m * L2E;
    Sum s = Sum::none();
    r.sweep([&](float(&a)[V], int) {
#pragma unroll
      for (int e = 0; e < V; ++e) {
        a[e] = exp2f(fmaf(a[e], L2E, -mL));
        s.v += a[e];
      }
    });
    const float inv = 1.f / group_all<Sh>(s, red).v;
    if (r.live) row_write(r, Y + (size_t)row * N, [inv](float a, int) { return a * inv; });
    return;
  }
  row_max_sum(r, red, ONLINE, m, total);
  const float mL = m * L2E, inv = 1.f / total;
  if (r.live)
    row_write(r, Y + (size_t)row * N,
              [mL, inv](float a, int) { return exp2f(fmaf(a, L2E, -mL)) * inv; });
#elif KGEN_OP == 4
  float mean, var;
  if (r.resident || !ONLINE) {
    mean = row_sum(r, red, [](float a) { return a; }) / N;
    var = row_sum(r, red, [mean](float a) { return (a - mean) * (a - mean); }) / N;
  } else {
    Welford s = Welford::none();
    r.sweep([&](const float(&a)[V], int) {
      float c = 0.f;
#pragma unroll
      for (int e = 0; e < V; ++e) c += a[e];
      c /= V;
      float q = 0.f;
#pragma unroll
      for (int e = 0; e < V; ++e) q += (a[e] - c) * (a[e] - c);
      s = s.with({(float)V, c, q});
    });
    s = group_all<Sh>(s, red);
    mean = s.mean;
    var = s.m2 / N;
  }
  const float rstd = rsqrtf(var + eps);
  if (r.live)
    r.sweep([&](const float(&a)[V], int j0) {
      float w[V], b[V], out[V];
      weights(W, j0, w);
      weights(B, j0, b);
#pragma unroll
      for (int e = 0; e < V; ++e) out[e] = fmaf((a[e] - mean) * rstd, w[e], b[e]);
      store_vec<V>(Y + (size_t)row * N + j0, out);
    });
#elif KGEN_OP == 5
  const float q = row_sum(r, red, [](float a) { return a * a; });
  const float scale = rsqrtf(q / N + eps);
  if (r.live)
    r.sweep([&](const float(&a)[V], int j0) {
      float w[V], out[V];
      weights(W, j0, w);
#pragma unroll
      for (int e = 0; e < V; ++e) out[e] = a[e] * scale * w[e];
      store_vec<V>(Y + (size_t)row * N + j0, out);
    });
#elif KGEN_OP == 6
  float m, total;  // y = x - (m + log(sum of exp(x - m))); a resident row is read from registers
  row_max_sum(r, red, ONLINE && !r.resident, m, total);
  const float shift = m + logf(total);
  if (r.live) row_write(r, Y + (size_t)row * N, [shift](float a, int) { return a - shift; });
#endif
}

// The body of every kernel of the file, for one shape.
template <int TPR, int RPB, int CACHE>
__device__ __forceinline__ void rowwise(const T* __restrict__ X, const T* __restrict__ weight,
                                        const T* __restrict__ bias, Out* __restrict__ Y, int M,
                                        int N, float eps) {
  typedef Shape<TPR, RPB, CACHE> Sh;
  __shared__ __align__(16) unsigned char red[RPB * Sh::WPR * 16];
  bool fast = N % VW == 0 && aligned_to(X, WIDTH);
  if (KGEN_OP >= 3) fast = fast && aligned_to(Y, WIDTH);  // row outputs: vector stores
  if (KGEN_OP >= 4) fast = fast && aligned_to(weight, WIDTH);
  if (KGEN_OP == 4) fast = fast && aligned_to(bias, WIDTH);
  if (fast)
    process<Sh, VW>(X, weight, bias, Y, M, N, eps, red);
  else
    process<Sh, 1>(X, weight, bias, Y, M, N, eps, red);
}

#if KGEN_OP == 4 || KGEN_OP == 5
// Split rows, for few long rows (the launch lines pick it where rows are fewer than a quarter of
// the SMs, so one block per row would leave most of the GPU idle): row `blockIdx.y` is cut into
// S = gridDim.x slices of SLICE = TPR * VEC * CACHE elements, a block of TPR threads each, in two
// launches. row_parts reduces each slice to a state in `parts` (layernorm: count, mean and
// centered squares, two passes over the slice in registers; rmsnorm: the sum of squares).
// row_apply combines the row's S states (every block of the row in the same order, so to the same
// bits) and writes its slice of Y, re-reading it: its blocks run in reverse order, so the first
// find the slices row_parts read last still in L2. `parts` is a static workspace: one file's
// launches on one stream at a time.
#if KGEN_OP == 4
typedef Welford Part;
#else
typedef Sum Part;
#endif
constexpr int MAX_PARTS = 1 << 16;  // the launch lines pick this path only where M * S fits
__device__ Part parts[MAX_PARTS];

// Slice s of row `row`, this block's threads over it (resident where its accesses fit CACHE).
template <class Sh, int V>
__device__ __forceinline__ void slice_of(Row<Sh, V>& r, const T* X, int N, int row, int s) {
  constexpr int SLICE = Sh::TPR * VEC * Sh::CACHE;  // elements, whatever the access width
  const int first = s * SLICE;
  r.live = true;
  r.t = threadIdx.x;
  r.nv = min(SLICE, N - first) / V;
  r.x = X + (size_t)row * N + first;
  r.resident = r.nv <= Row<Sh, V>::STEP;
  if (r.resident) r.load(0);
}

template <class Sh, int V>
__device__ __forceinline__ void parts_of(const T* __restrict__ X, int N, unsigned char* red) {
  const int row = blockIdx.y, s = blockIdx.x;
  Row<Sh, V> r;
  slice_of(r, X, N, row, s);
#if KGEN_OP == 4
  const float n = (float)(r.nv * V);
  const float mean = row_sum(r, red, [](float a) { return a; }) / n;
  const float m2 = row_sum(r, red, [mean](float a) { return (a - mean) * (a - mean); });
  const Part p = {n, mean, m2};
#else
  const Part p = {row_sum(r, red, [](float a) { return a * a; })};
#endif
  if (threadIdx.x == 0) parts[row * gridDim.x + s] = p;
}

template <class Sh, int V>
__device__ __forceinline__ void apply(const T* __restrict__ X, const T* __restrict__ W,
                                      const T* __restrict__ B, Out* __restrict__ Y, int N,
                                      float eps, unsigned char* red) {
  const int last = gridDim.x * gridDim.y - 1;
  const int b = last - (int)(blockIdx.y * gridDim.x + blockIdx.x);  // reverse order
  const int row = b / gridDim.x, s = b % gridDim.x, S = gridDim.x;
  Part p = Part::none();
  for (int i = threadIdx.x; i < S; i += Sh::TPR) p = p.with(parts[row * S + i]);
  p = group_all<Sh>(p, red);
  Row<Sh, V> r;
  slice_of(r, X, N, row, s);
  const int first = s * (Sh::TPR * VEC * Sh::CACHE);
  Out* y = Y + (size_t)row * N + first;
#if KGEN_OP == 4
  const float mean = p.mean, rstd = rsqrtf(p.m2 / N + eps);
  r.sweep([&](const float(&a)[V], int j0) {
    float w[V], c[V], out[V];
    weights(W + first, j0, w);
    weights(B + first, j0, c);
#pragma unroll
    for (int e = 0; e < V; ++e) out[e] = fmaf((a[e] - mean) * rstd, w[e], c[e]);
    store_vec<V>(y + j0, out);
  });
#else
  const float scale = rsqrtf(p.v / N + eps);
  r.sweep([&](const float(&a)[V], int j0) {
    float w[V], out[V];
    weights(W + first, j0, w);
#pragma unroll
    for (int e = 0; e < V; ++e) out[e] = a[e] * scale * w[e];
    store_vec<V>(y + j0, out);
  });
#endif
}

// The two kernels' bodies, for one shape (RPB 1: a block per slice).
template <int TPR, int CACHE>
__device__ __forceinline__ void row_parts(const T* __restrict__ X, const T* __restrict__,
                                          const T* __restrict__, Out* __restrict__, int, int N,
                                          float) {
  typedef Shape<TPR, 1, CACHE> Sh;
  __shared__ __align__(16) unsigned char red[Sh::WPR * 16];
  if (N % VW == 0 && aligned_to(X, WIDTH))
    parts_of<Sh, VW>(X, N, red);
  else
    parts_of<Sh, 1>(X, N, red);
}
template <int TPR, int CACHE>
__device__ __forceinline__ void row_apply(const T* __restrict__ X, const T* __restrict__ weight,
                                          const T* __restrict__ bias, Out* __restrict__ Y, int,
                                          int N, float eps) {
  typedef Shape<TPR, 1, CACHE> Sh;
  __shared__ __align__(16) unsigned char red[Sh::WPR * 16];
  bool fast = N % VW == 0 && aligned_to(X, WIDTH) && aligned_to(Y, WIDTH) &&
              aligned_to(weight, WIDTH);
  if (KGEN_OP == 4) fast = fast && aligned_to(bias, WIDTH);
  if (fast)
    apply<Sh, VW>(X, weight, bias, Y, N, eps, red);
  else
    apply<Sh, 1>(X, weight, bias, Y, N, eps, red);
}
#endif

// Each op's kernel parameters, and the call that fills in the ones it does not have. The sizes
// are M and N themselves unless the parameter block says otherwise: an op bound to another of any
// rank passes X's sizes (ROW_SIZES) and forms M and N from them (ROW_M, ROW_N).
#ifndef ROW_SIZES
#define ROW_SIZES int M, int N
#define ROW_M M
#define ROW_N N
#endif
#if KGEN_OP == 4
#define ROW_PARAMS const T* __restrict__ X, const T* __restrict__ weight, \
    const T* __restrict__ bias, Out* __restrict__ Y, ROW_SIZES, float eps
#define ROW_ARGS X, weight, bias, Y, ROW_M, ROW_N, eps
#elif KGEN_OP == 5
#define ROW_PARAMS const T* __restrict__ X, const T* __restrict__ weight, \
    Out* __restrict__ Y, ROW_SIZES, float eps
#define ROW_ARGS X, weight, nullptr, Y, ROW_M, ROW_N, eps
#else
#define ROW_PARAMS const T* __restrict__ X, Out* __restrict__ Y, ROW_SIZES
#define ROW_ARGS X, nullptr, nullptr, Y, ROW_M, ROW_N, 0.f
#endif
// ---- kgen:kernels begin (one per class of row length: rowwise<TPR, RPB, CACHE>, MIN_BLOCKS) ----
extern "C" __global__ void __launch_bounds__(256, 5) KGEN_KERNEL(ROW_PARAMS) {
  rowwise<256, 1, 4>(ROW_ARGS);
}
// ---- kgen:kernels end ----
