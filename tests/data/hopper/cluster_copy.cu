// kgen: op=copy2d dtype=float32
// kgen: launch cluster_copy grid=(2 * cdiv(M * N, 512)) block=(256) cluster=(2, 1, 1) args=(X, Y, M, N)
// A test kernel for cluster launches: a cluster of two blocks copies 512 elements. Block rank 1
// writes its 256 into block rank 0's shared memory (distributed shared memory), the cluster syncs,
// and rank 0 stores all 512. Launched without clusters of 2, it writes nothing.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void cluster_copy(const float* X, float* Y, int M, int N) {
  __shared__ float buf[512];
  cg::cluster_group cluster = cg::this_cluster();
  if (cluster.num_blocks() != 2) return;  // not launched as clusters of 2: Y stays unwritten
  const unsigned rank = cluster.block_rank();
  const long long total = (long long)M * N;
  const long long base = (long long)(blockIdx.x / 2) * 512;
  float* target = cluster.map_shared_rank(buf, 0);  // rank 0's buffer, from either block
  const long long i = base + rank * 256 + threadIdx.x;
  target[rank * 256 + threadIdx.x] = i < total ? X[i] : 0.f;
  cluster.sync();
  if (rank == 0) {
    for (int k = threadIdx.x; k < 512; k += blockDim.x)
      if (base + k < total) Y[base + k] = buf[k];
  }
  cluster.sync();  // rank 1 must not exit while rank 0 may still read its writes
}
