// Builtin author template: the inclusive prefix sum of each row of X[M,N] along its last dim
// (cumsum), float32 accumulation for every dtype, Y[M,N] stored in X's dtype.
// One block of TPR threads per row (grid = M). The row is walked in tiles of TPR * VEC * UNROLL
// elements: UNROLL chunks of TPR * VEC, thread t holding elements [t * VEC, t * VEC + VEC) of
// each chunk (so each chunk is read and written coalesced, and all UNROLL loads of a thread are
// issued before any is used). Per tile: each thread scans its VEC elements in registers; each
// warp scans its lanes' totals with shuffles (the UNROLL chunks side by side) and its last lane
// puts the warp's totals in shared memory; after one barrier every warp scans those UNROLL *
// WARPS totals (at most 32: a lane each, in the row's order) and takes its own prefixes by
// shuffle; every element then gets carry (the tiles before) + its warp's prefix + the lanes
// before it + its own prefix. The totals alternate between two buffers, so one barrier a tile
// suffices: a warp writes a buffer again only after the next barrier, which every warp reaches
// after reading it. HINT 1 reads X and writes Y evict-first (each is touched once). The vector
// path needs N % VEC == 0 and X, Y aligned to the access; otherwise the same code moves one
// element per access. Any M, N.
// Launch: grid=(M) block=(TPR) smem=0 args=(X, Y, M, N).
// ---- kgen:params begin (the builtin author replaces this block; these defaults let the file compile alone) ----
typedef float T;
constexpr int TPR = 256, VEC = 4, UNROLL = 4, HINT = 0, MIN_BLOCKS = 4;
// ---- kgen:params end ----
#include "memops.cuh"

constexpr unsigned FULL = 0xffffffffu;
constexpr int WARPS = TPR / 32;
constexpr int ENTRIES = UNROLL * WARPS;  // warp totals per tile, chunk-major: the row's order
static_assert(TPR % 32 == 0 && ENTRIES <= 32, "TPR is whole warps, UNROLL * warps at most 32");

// The inclusive scan of v over the warp's lanes.
__device__ __forceinline__ float warp_scan(float v, int lane) {
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const float up = __shfl_up_sync(FULL, v, o);
    if (lane >= o) v += up;
  }
  return v;
}

// What the lanes before this one hold in total, from the inclusive scan (exact: no subtraction).
__device__ __forceinline__ float before_lane(float inclusive, int lane) {
  const float up = __shfl_up_sync(FULL, inclusive, 1);
  return lane ? up : 0.f;
}

template <int V>
__device__ __forceinline__ void scan_row(const T* __restrict__ x, T* __restrict__ y, int N,
                                         float (*total)[ENTRIES]) {
  constexpr int CHUNK = TPR * V;  // elements of one chunk
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  float carry = 0.f;  // the sum of the row's tiles before this one
  int buffer = 0;
  for (int c0 = 0; c0 < N; c0 += CHUNK * UNROLL, buffer ^= 1) {
    float f[UNROLL][V];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {  // every load issued before any is used
      const int j = c0 + u * CHUNK + t * V;
      if (V > 1 && j < N) {
        load_vec<V, HINT>(x + j, f[u]);  // N % V == 0: all V are in the row
      } else {
#pragma unroll
        for (int k = 0; k < V; ++k) f[u][k] = j + k < N ? to_f(ld<HINT>(x + j + k)) : 0.f;
      }
    }
    float lanes[UNROLL];  // per chunk, the sum of this warp's lanes before this one
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
      for (int k = 1; k < V; ++k) f[u][k] += f[u][k - 1];
      const float inclusive = warp_scan(f[u][V - 1], lane);
      lanes[u] = before_lane(inclusive, lane);
      if (lane == 31) total[buffer][u * WARPS + warp] = inclusive;
    }
    __syncthreads();
    // Every warp scans the tile's warp totals, lane e holding entry e.
    const float mine = lane < ENTRIES ? total[buffer][lane] : 0.f;
    const float inclusive = warp_scan(mine, lane);
    const float earlier = before_lane(inclusive, lane);  // entries before lane's
    const float tile_sum = __shfl_sync(FULL, inclusive, 31);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int j = c0 + u * CHUNK + t * V;
      const float base = carry + __shfl_sync(FULL, earlier, u * WARPS + warp) + lanes[u];
      float out[V];
#pragma unroll
      for (int k = 0; k < V; ++k) out[k] = base + f[u][k];
      if (V > 1 && j < N) {
        store_vec<V, HINT>(y + j, out);
      } else {
#pragma unroll
        for (int k = 0; k < V; ++k)
          if (j + k < N) st<HINT>(y + j + k, from_f<T>(out[k]));
      }
    }
    carry += tile_sum;
  }
}

extern "C" __global__ void __launch_bounds__(TPR, MIN_BLOCKS)
KGEN_KERNEL(const T* __restrict__ X, T* __restrict__ Y, int M, int N) {
  __shared__ float total[2][ENTRIES];
  const long long row = blockIdx.x;
  if (row >= M) return;
  const T* x = X + (size_t)row * N;
  T* y = Y + (size_t)row * N;
  if (N % VEC == 0 && aligned_to(x, VEC * (int)sizeof(T)) && aligned_to(y, VEC * (int)sizeof(T)))
    scan_row<VEC>(x, y, N, total);
  else
    scan_row<1>(x, y, N, total);
}
