// kgen: op=copy2d dtype=float32
// kgen: launch tma_copy grid=(cdiv(N,32), cdiv(M,32)) block=(128) smem=0 args=(tmap(X, box=(32, 32)), Y, M, N)
// A test kernel for tensor-map arguments: each block loads a 32x32 tile of X with one TMA copy
// (cp.async.bulk.tensor, completion on an mbarrier), then writes it to Y with guarded stores.
// Tiles past the matrix edge are zero-filled by TMA and never stored.
#include <cuda.h>

extern "C" __global__ void tma_copy(const __grid_constant__ CUtensorMap tm, float* Y, int M,
                                    int N) {
  __shared__ __align__(128) float tile[32][32];
  __shared__ __align__(8) unsigned long long bar;
  const int col0 = blockIdx.x * 32, row0 = blockIdx.y * 32;
  const unsigned bar_addr = static_cast<unsigned>(__cvta_generic_to_shared(&bar));
  const unsigned tile_addr = static_cast<unsigned>(__cvta_generic_to_shared(tile));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar_addr));
    asm volatile("fence.mbarrier_init.release.cluster;");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 ::"r"(bar_addr), "r"(32 * 32 * 4));
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];"
        ::"r"(tile_addr), "l"(&tm), "r"(col0), "r"(row0), "r"(bar_addr) : "memory");
  }
  unsigned done = 0;
  while (!done) {
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
        : "=r"(done) : "r"(bar_addr) : "memory");
  }
  for (int i = threadIdx.x; i < 32 * 32; i += blockDim.x) {
    const int r = row0 + i / 32, c = col0 + i % 32;
    if (r < M && c < N) Y[(size_t)r * N + c] = tile[i / 32][i % 32];
  }
}
