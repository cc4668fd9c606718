// Shared by the builtin author's memory-bound templates (elementwise, rowwise, transpose): the
// dtype conversions (all math is float32, whatever the storage type) and moving V consecutive
// elements as one 2-, 4-, 8- or 16-byte access. A template includes this file by name; when kgen
// renders the template it pastes the file in place of the #include, so a rendered kernel is one
// self-contained .cu.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }

template <class E> __device__ __forceinline__ E from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// The plain integer type of one access of BYTES bytes (the compiler emits one ld/st for it).
template <int BYTES> struct Raw;
template <> struct Raw<16> { typedef uint4 type; };
template <> struct Raw<8> { typedef uint2 type; };
template <> struct Raw<4> { typedef unsigned int type; };
template <> struct Raw<2> { typedef unsigned short type; };

__device__ __forceinline__ bool aligned_to(const void* p, int bytes) {
  return (reinterpret_cast<unsigned long long>(p) & (unsigned long long)(bytes - 1)) == 0;
}

// One access: HINT 1 marks it evict-first (__ldcs/__stcs: the data is touched once, so it should
// not push other lines out of L2), 0 is an ordinary cached access.
template <int HINT, class R> __device__ __forceinline__ R ld(const R* p) {
  if constexpr (HINT) return __ldcs(p);
  return *p;
}
template <int HINT, class R> __device__ __forceinline__ void st(R* p, R v) {
  if constexpr (HINT) __stcs(p, v);
  else *p = v;
}

// V elements at p (aligned to V * sizeof(E)) as floats, and back.
template <int V, int HINT = 0, class E>
__device__ __forceinline__ void load_vec(const E* p, float (&f)[V]) {
  typedef typename Raw<V * sizeof(E)>::type R;
  const R r = ld<HINT>(reinterpret_cast<const R*>(p));
  const E* e = reinterpret_cast<const E*>(&r);
#pragma unroll
  for (int k = 0; k < V; ++k) f[k] = to_f(e[k]);
}

template <int V, int HINT = 0, class E>
__device__ __forceinline__ void store_vec(E* p, const float (&f)[V]) {
  typedef typename Raw<V * sizeof(E)>::type R;
  R r;
  E* e = reinterpret_cast<E*>(&r);
#pragma unroll
  for (int k = 0; k < V; ++k) e[k] = from_f<E>(f[k]);
  st<HINT>(reinterpret_cast<R*>(p), r);
}
