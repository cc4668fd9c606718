// Builtin author template: Y[N,M] = X[M,N]^T through a shared-memory tile; values are moved as raw
// bits, so the copy is exact in every dtype.
// Parameters (kgen/author/transpose.py): TILE x TILE elements per block; ROWS thread rows (each
// thread moves TILE / ROWS accesses each way); VEC consecutive elements per global access (at
// most 16 bytes: along a row of X when reading, along a row of Y when writing);
// PAD elements of padding per tile row (with 0, reading a tile column hits one bank many times);
// MIN_BLOCKS resident blocks per SM asked of ptxas (which caps the registers).
// A warp reads whole row segments of X and writes whole row segments of Y, so both global sides
// are coalesced; the tile is read back column-wise. Vector accesses need N % VEC == 0 (reads) or
// M % VEC == 0 (writes) and aligned pointers; edge tiles and other sizes go one element at a time.
// Launch: grid=(cdiv(N,TILE), cdiv(M,TILE)) block=(TILE/VEC, ROWS) smem=0 args=(X, Y, M, N).
// ---- kgen:params begin (the builtin author replaces this block; these defaults let the file compile alone) ----
typedef float T;
constexpr int TILE = 32, ROWS = 16, VEC = 4, PAD = 1, MIN_BLOCKS = 16;
#define KGEN_KERNEL transpose_f32
// ---- kgen:params end ----
#include "memops.cuh"

constexpr int V = VEC, WIDTH = VEC * (int)sizeof(T);  // elements, bytes per global access
constexpr int TX = TILE / V;  // threads along a tile row
typedef typename Raw<sizeof(T)>::type Bits;  // one element as raw bits
typedef typename Raw<WIDTH>::type Wide;  // V elements as raw bits

extern "C" __global__ void __launch_bounds__(TX * ROWS, MIN_BLOCKS)
KGEN_KERNEL(const T* __restrict__ X, T* __restrict__ Y, int M, int N) {
  __shared__ Bits tile[TILE][TILE + PAD];
  const Bits* x = reinterpret_cast<const Bits*>(X);
  Bits* y = reinterpret_cast<Bits*>(Y);
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int r0 = blockIdx.y * TILE, c0 = blockIdx.x * TILE;  // the tile's origin in X
  const bool wide_in = N % V == 0 && aligned_to(X, WIDTH);
  const bool wide_out = M % V == 0 && aligned_to(Y, WIDTH);

  const int c = c0 + tx * V;  // first X column this thread reads
#pragma unroll
  for (int r = ty; r < TILE; r += ROWS) {
    const int gr = r0 + r;
    if (gr >= M) break;
    const Bits* src = x + (size_t)gr * N + c;
    if (wide_in && c + V <= N) {
      const Wide w = *reinterpret_cast<const Wide*>(src);
      const Bits* e = reinterpret_cast<const Bits*>(&w);
#pragma unroll
      for (int k = 0; k < V; ++k) tile[r][tx * V + k] = e[k];
    } else {
#pragma unroll
      for (int k = 0; k < V; ++k)
        if (c + k < N) tile[r][tx * V + k] = src[k];
    }
  }
  __syncthreads();

  const int yc = r0 + tx * V;  // first Y column (= X row) this thread writes
#pragma unroll
  for (int r = ty; r < TILE; r += ROWS) {
    const int yr = c0 + r;  // Y row = X column
    if (yr >= N) break;
    Bits* dst = y + (size_t)yr * M + yc;
    if (wide_out && yc + V <= M) {
      Wide w;
      Bits* e = reinterpret_cast<Bits*>(&w);
#pragma unroll
      for (int k = 0; k < V; ++k) e[k] = tile[tx * V + k][r];
      *reinterpret_cast<Wide*>(dst) = w;
    } else {
#pragma unroll
      for (int k = 0; k < V; ++k)
        if (yc + k < M) dst[k] = tile[tx * V + k][r];
    }
  }
}
