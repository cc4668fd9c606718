// kgen: op=gelu dtype=float32
// kgen: launch gelu_naive_f32 grid=(cdiv(M*N,256)) block=(256) smem=0 args=(X, Y, M, N)
//
// Reference 01 (float32): the textbook kernel, one thread per element (flat index over M * N,
// 64-bit), y = 0.5 x (1 + tanhf(sqrt(2/pi) (x + 0.044715 x^3))).
// Launch: 256 threads per block, grid covers M * N (x); any M, N.
// Coalesced scalar loads and stores, one element per thread: expect about 2.5-3 TB/s at
// M=N=16384 on an H200 (estimate; ~0.75 ms for 2 GiB), short of the vectorized kernel because
// each thread has a single 4-byte load in flight.

__device__ __forceinline__ float gelu_tanh(float x) {
  const float k0 = 0.7978845608028654f;  // sqrt(2 / pi)
  const float k1 = 0.044715f;
  return 0.5f * x * (1.f + tanhf(k0 * (x + k1 * x * x * x)));
}

extern "C" __global__ void gelu_naive_f32(const float* __restrict__ X, float* __restrict__ Y,
                                          int M, int N) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < (long long)M * N) Y[i] = gelu_tanh(X[i]);
}
