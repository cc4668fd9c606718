// Builtin author template: elementwise ops over a flat M x N tensor, float32 math for every dtype.
// KGEN_OP 0: GELU, tanh form (gelu); 1: SiLU (silu); 2: relu(X + bias[column]) (bias_relu);
// 3: KGEN_EXPR, a float expression in x that the params block defines (a spec's `pointwise`).
// Parameters (kgen/author/elementwise.py): THREADS per block; VEC elements per access (one load
// or store of VEC * sizeof(T) <= 16 bytes); EPT accesses each thread has in
// flight per step (its loads are all issued before any result is computed); HINT 1 makes loads
// and stores evict-first (streamed, never reused); MIN_BLOCKS resident blocks per SM asked of
// ptxas (which caps the registers). The grid either covers the tensor once or is
// capped at SMS * waves blocks that stride over it (the cap lives in the launch line).
// The vector path needs X, Y (and bias) aligned to the access and, for the bias, N % VEC == 0
// (so a vector never crosses a row); the last M*N % VEC elements, or all of them when the vector
// path is off, go one at a time. Any M, N.
// Launch: grid=(cdiv(M*N, VEC*THREADS*EPT)) or (min(cdiv(M*N, VEC*THREADS*EPT), SMS*waves))
// block=(THREADS) smem=0 args=(X, Y, M, N) or (X, bias, Y, M, N). For a spec's `pointwise` the
// params block may define KGEN_DIMS (X's dims as int arguments after Y, each with a leading
// comma) and KGEN_TOTAL (their product): X of any rank, seen flat.
// ---- kgen:params begin (the builtin author replaces this block; these defaults let the file compile alone) ----
typedef float T;
#define KGEN_OP 0
constexpr int THREADS = 256, VEC = 4, EPT = 2, HINT = 0, MIN_BLOCKS = 6;
#define KGEN_KERNEL elementwise_f32
// ---- kgen:params end ----
#include "memops.cuh"
#ifndef KGEN_DIMS  // the shipped ops' X[M, N]
#define KGEN_DIMS , int M, int N
#define KGEN_TOTAL ((long long)M * N)
#define KGEN_COLS N  // a row's length: bias_relu's bias index
#else
#define KGEN_COLS 1  // only bias_relu reads it, and it takes X[M, N]
#endif

constexpr int V = VEC, WIDTH = VEC * (int)sizeof(T);  // elements and bytes per access
constexpr int STEP = THREADS * EPT;  // accesses a block makes per step

__device__ __forceinline__ float apply(float x, float b) {
#if KGEN_OP == 0
  // 0.5 x (1 + tanh(u)) == x * sigmoid(2u): the same function without the cancellation of
  // 1 + tanh(u) in the negative tail; u = sqrt(2/pi) (x + 0.044715 x^3).
  // __fdividef: one reciprocal and a multiply (2 ulp); x / inf in the far tail is 0 either way.
  const float u = 0.7978845608028654f * fmaf(0.044715f * x, x * x, x);
  return __fdividef(x, 1.f + __expf(-2.f * u));
#elif KGEN_OP == 1
  return __fdividef(x, 1.f + __expf(-x));
#elif KGEN_OP == 3
  return KGEN_EXPR;
#else
  return fmaxf(x + b, 0.f);
#endif
}

// Column of flat element e: 32-bit division when the tensor is small enough (it is far cheaper).
__device__ __forceinline__ int column(long long e, int N, bool narrow) {
  return narrow ? (int)((unsigned)e % (unsigned)N) : (int)(e % N);
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
KGEN_KERNEL(const T* __restrict__ X,
#if KGEN_OP == 2
            const T* __restrict__ bias,
#endif
            T* __restrict__ Y KGEN_DIMS) {
#if KGEN_OP != 2
  const T* bias = nullptr;
#endif
  const long long total = KGEN_TOTAL;
  const int cols = KGEN_COLS;
  const bool narrow = total <= 0xffffffffLL;
  bool vec = aligned_to(X, WIDTH) && aligned_to(Y, WIDTH);
  if (KGEN_OP == 2) vec = vec && aligned_to(bias, WIDTH) && cols % V == 0;
  const long long nvec = vec ? total / V : 0;
  for (long long base = (long long)blockIdx.x * STEP; base < nvec;
       base += (long long)gridDim.x * STEP) {
    float v[EPT][V];
#pragma unroll
    for (int e = 0; e < EPT; ++e) {
      const long long i = base + e * THREADS + threadIdx.x;
      if (i < nvec) load_vec<V, HINT>(X + i * V, v[e]);
    }
#pragma unroll
    for (int e = 0; e < EPT; ++e) {
      const long long i = base + e * THREADS + threadIdx.x;
      if (i >= nvec) continue;
      float b[V] = {};
      if (KGEN_OP == 2) load_vec<V>(bias + column(i * V, cols, narrow), b);
      float out[V];
#pragma unroll
      for (int k = 0; k < V; ++k) out[k] = apply(v[e][k], b[k]);
      store_vec<V, HINT>(Y + i * V, out);
    }
  }
  // The tail past the last whole vector (everything when the vector path is off).
  for (long long j = nvec * V + (long long)blockIdx.x * THREADS + threadIdx.x; j < total;
       j += (long long)gridDim.x * THREADS) {
    const float b = KGEN_OP == 2 ? to_f(bias[column(j, cols, narrow)]) : 0.f;
    Y[j] = from_f<T>(apply(to_f(X[j]), b));
  }
}
