// kgen: op=gemv dtype=float32
// kgen: launch gemv_naive_f32 grid=(cdiv(M,128)) block=(128) smem=0 args=(A, x, y, M, K)
//
// Reference 01 (float32): the textbook kernel, one thread per output row, a sequential float32
// dot product of its row of A with x.
// Launch: 128 threads per block, grid covers M (x); any M, K.
// Neighbouring threads read different rows of A (a stride of K floats: uncoalesced), x is a
// broadcast from L1/L2: expect roughly 100-300 GB/s at 16384 x 16384 on an H200 (estimate;
// under a tenth of the warp-per-row kernel).

extern "C" __global__ void gemv_naive_f32(const float* __restrict__ A, const float* __restrict__ x,
                                          float* __restrict__ y, int M, int K) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M) return;
  const float* a = A + (size_t)row * K;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += a[k] * x[k];
  y[row] = acc;
}
