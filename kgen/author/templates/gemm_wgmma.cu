// gemm_wgmma.cu: Hopper (sm_90a) float16/bfloat16 GEMM with wgmma + TMA + mbarrier pipelines.
//
//   C[M,N] = A[M,K] @ B[K,N]; A, B, C row-major and contiguous, one dtype (f16 or bf16),
//   float32 accumulation, C rounded to the dtype. Any M, N, K >= 1.
//
// WHAT IT DOES
//   A is K-major (wgmma imm-trans-a = 0). B is row-major [K,N], i.e. N-major (MN-major): wgmma
//   reads it with imm-trans-b = 1 from an MN-major, 128B-swizzled smem tile (see "B tile" below).
//   Two kernel shapes, chosen by the WS parameter:
//   WS = 1 (the fast one): 1 producer warpgroup + CONSUMERS consumer warpgroups
//     (__launch_bounds__(128*(1+CONSUMERS), 1)); block tile BM x BN x 64; each consumer owns
//     BM/CONSUMERS rows and issues m64nBNk16 wgmmas (A and B from smem by descriptor); a ring of
//     STAGES smem stages guarded by full[]/empty[] mbarriers with raw parity waits; setmaxnreg
//     moves registers from the producer to the consumers (when CONSUMERS >= 2); persistent over
//     tiles (the kernel loops t = cluster_id, cluster_id + num_clusters, ...), so the grid size is
//     the host's choice: #SMs (persistent) or #tiles (one tile per CTA); grouped tile order
//     (GROUP_M cluster-tile rows per group); optional thread-block cluster of CLUSTER_M = 2 CTAs
//     along M that share the B tile through TMA multicast (each CTA loads half of B's 64-column
//     chunks into both CTAs); consumers release a stage to every CTA of the cluster (with
//     CLUSTER_AT_LAUNCH = 1 the launch decides: kgen's builtin author launches clusters only where
//     B's rows are not 32-byte aligned, where they halve the L2 sectors B costs); with SK = 1
//     (CLUSTER_M = 1, or the cluster chosen at launch), the tiles of a last, partial round are
//     cut along K over about 4 CTAs (or clusters) each, partial sums passed through a static
//     workspace (see "The work of one persistent CTA").
//     PP = 1 (ping-pong): the consumers take turns instead of sharing each tile: each owns whole
//     BM x BN tiles (BM = 64 or 128 with BN = 256 / 128: 128 accumulators), the CTA's units going
//     to consumer 0, 1, 0, ... One consumer's epilogue (stores, stream-K hand-off) then overlaps
//     the other's main loop, where with PP = 0 both stop issuing wgmma for it. The producer is
//     unchanged: it fills the ring with every unit's k-blocks in order, and each consumer steps
//     its ring position over the other's. The main loops take turns in unit order (two "order"
//     mbarriers): a consumer may wait on a stage only once the previous unit's loads into it
//     have been waited for, because an mbarrier's parity tells apart only adjacent phases (one
//     consumer running a whole unit ahead would take a stale phase for the one it needs).
//   WS = 0 (the simple fallback): one warpgroup (128 threads) that both issues TMA (thread 0)
//     and runs the wgmmas; a STAGES-deep ring of full[] mbarriers only; no cluster, no setmaxnreg.
//   Loads: TMA (cp.async.bulk.tensor.2d, SWIZZLE_128B) when the host says so (flags bit 0).
//     TMA needs 16-byte aligned row strides and base addresses, i.e. K % 8 == 0 and N % 8 == 0
//     for 2-byte types. Otherwise the host passes flags bit 0 = 0 and the kernel's guarded
//     non-TMA path fills the same swizzled smem layout with ordinary loads and shared stores
//     (zero fill at the edges) + fence.proxy.async, so every shape is supported by one kernel
//     (slower: that path is meant for odd shapes only). The tensor-map arguments are then unused.
//   Edges: TMA zero-fills out-of-bounds box elements (ragged M, N and the last partial k-block);
//     boxes lying wholly outside the matrix are not issued at all (and not counted in expect_tx).
//   Epilogue: EPI = 0: guarded stores straight from the accumulator registers (per-element
//     guards at the M/N edges, 4-byte pair stores inside). EPI = 1 (when the host also sets flags
//     bit 1): each MMA warpgroup writes its tile into a 128B-swizzled smem staging area, then one
//     thread TMA-stores it (cp.async.bulk.tensor, clipped at the edges by TMA) and goes on with the
//     next tile while the store drains; without flags bit 1 it falls back to the EPI = 0 stores.
//
// LAUNCH CONTRACT (host side)
//   kernel: KGEN_KERNEL(const __grid_constant__ CUtensorMap tmA, const __grid_constant__
//           CUtensorMap tmB, const __grid_constant__ CUtensorMap tmC, const T* A, const T* B,
//           T* C, int M, int N, int K)
//           (a CUtensorMap is 128 bytes, passed by value; an unused one may be all zeros; kgen's
//           contract passes them as tmap(..., optional=1))
//   block : THREADS = 128 * (1 + CONSUMERS) for WS = 1, 128 for WS = 0.
//   grid  : 1-D. WS = 1: a multiple of CLUSTER_M; persistent: min(#SMs rounded down to a
//           multiple of CLUSTER_M, CLUSTER_M * #cluster_tiles); or CLUSTER_M * #cluster_tiles
//           for one cluster-tile per cluster. #cluster_tiles = cdiv(cdiv(M,BM), CLUSTER_M) *
//           cdiv(N,BN). WS = 0: cdiv(M,BM) * cdiv(N,BN) (it loops too, any grid works).
//           The cluster shape is compiled in (__cluster_dims__), so a plain cuLaunchKernel works;
//           with CLUSTER_AT_LAUNCH = 1 it is not: the launch gives clusters of CLUSTER_M (with
//           the extended launch API) or none, and the kernel reads which from %cluster_nctarank
//           (stream-K cuts in both: a cluster's CTAs take the same units).
//   dynamic smem: SMEM_BYTES = 1024 + STAGES * (BM*BK + BK*BN) * 2
//           + (EPI ? BM*128*ceil(BN/64/CPASS) : 0) + 256 (PP = 1 with EPI: as much staging
//           per consumer)
//           (set the function's max dynamic smem attribute first; 197,888 B for 128x256x64 with
//           4 stages and EPI = 0; 214,272 B for 3 stages and EPI = 1; 230,656 B for 4 stages,
//           EPI = 1 and CPASS = 2; the limit is 232,448).
//   flags (computed in the kernel from K, N and the pointers): bit 0 = 1: A and B come through
//           tmA/tmB (TMA); 0: guarded ordinary loads (any shape). bit 1 = 1: tmC is valid (used
//           by EPI = 1); 0: direct stores.
//   tensor maps (cuTensorMapEncodeTiled, rank 2, dims innermost first, interleave NONE,
//           swizzle CU_TENSOR_MAP_SWIZZLE_128B (= 3), L2 promotion 256B (any works),
//           OOB fill NONE (= zeros), element strides {1, 1}, dtype FLOAT16 (6) / BFLOAT16 (9)):
//     tmA: globalDim {K, M}, globalStrides {K*2}, boxDim {64, BM}
//     tmB: globalDim {N, K}, globalStrides {N*2}, boxDim {64, 64}   (64 columns of N x BK rows)
//     tmC: globalDim {N, M}, globalStrides {N*2}, boxDim {64, 64}   (64 columns x 64 rows)
//   Requirements: flags bit 0: K % 8 == 0, N % 8 == 0, A and B 16-byte aligned;
//                 flags bit 1: N % 8 == 0, C 16-byte aligned.
//
// SPEED: on an H200 (bf16, make bench) the default (4 stages, CPASS = 2, EPI = 1, SK = 1,
//   clusters of 2 only where B's rows are misaligned) runs 0.99x / 1.01x / 0.94x of cuBLAS at
//   4096^3 / 8192^3 / 3000x5000x2000. The measurements behind each choice, and the designs that
//   lost, are in kgen's benchmarks/findings.md.
//
// SHARED MEMORY LAYOUT (offsets from a 1024-byte aligned base; each stage 1024-aligned)
//   A stage s: BM rows x 128 bytes (64 K-elements), 128B-swizzled by TMA: the 16-byte chunk c of
//     row r sits at chunk c ^ (r % 8). wgmma descriptor: K-major, SWIZZLE_128B (code 1),
//     SBO = 1024 (8 rows x 128 B), LBO unused (16); consumer w's rows start at w*(BM/CONSUMERS)*128
//     bytes; the k16 step kk adds kk*32 bytes to the start address.
//   B stage s: BN/64 chunks, chunk j = the TMA box {64 columns n0+64j.., BK rows}: BK rows of
//     128 bytes (64 N-elements), same 128B swizzle. MN-major canonical layout
//     Swizzle<3,4,3> o ((8 elems,8,m),(8,k)) : ((1, 8 elems, LBO), (64 elems, SBO)) gives:
//     LBO = byte distance between 64-column chunks = BK*128 = 8192, SBO = byte distance between
//     8-row groups along K = 1024; the k16 step kk adds kk*16 rows*128 B = kk*2048 bytes.
//   EPI = 1: C staging tile, BM*128*ceil(BN/64/CPASS) bytes (per MMA warpgroup MSUB x
//     ceil(BN/64/CPASS) blocks of 64x64).
//   then full[STAGES], empty[STAGES] mbarriers (8 bytes each), and (PP = 1) order[2].
//
// ---- kgen:params begin (replaced by the builtin author; defaults let the file compile alone) ----
#include <cuda_bf16.h>
#include <cuda_fp16.h>
typedef __nv_bfloat16 T;
typedef __nv_bfloat162 T2;
#define WG_TYPE "bf16"
#define PACK2 __floats2bfloat162_rn
#define FROM_F __float2bfloat16_rn
constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4;
#define WS 1                     // 1: producer/consumer warpgroups; 0: simple one-warpgroup kernel
#define CLUSTER_M 1              // CTAs per cluster along M, multicasting B (1 or 2; WS = 1 only)
#define CLUSTER_AT_LAUNCH 0      // 1: the launch sets the cluster (1 or CLUSTER_M), read at run time
constexpr int CONSUMERS = 2;     // consumer warpgroups (WS = 1); each owns BM / CONSUMERS rows
constexpr int GROUP_M = 8;       // cluster-tile rows per raster group (1: row-major tile order)
constexpr int EPI = 0;           // 0: guarded stores from registers; 1: smem tile + TMA store
constexpr int CPASS = 1;         // EPI = 1: the tile staged whole (1) or half at a time (2)
#define SK 0                     // 1: a last, partial round's tiles cut along K (not CLUSTER_M 2)
#define PP 0                     // 1: consumers take turns, each with whole tiles (WS = 1 only)
constexpr int REG_PRODUCER = 40, REG_CONSUMER = 232;  // setmaxnreg (used when CONSUMERS >= 2)
#define KGEN_KERNEL gemm_wgmma_bf16
// ---- kgen:params end ----
#include <cuda.h>  // CUtensorMap
#include <stdint.h>

constexpr int THREADS = WS ? 128 * (1 + CONSUMERS) : 128;
constexpr int MMA_WGS = WS && !PP ? CONSUMERS : 1;  // warpgroups that share one tile
constexpr int WG_M = BM / MMA_WGS;           // rows of the block tile per MMA warpgroup
constexpr int MSUB = WG_M / 64;              // m64 row blocks per MMA warpgroup
constexpr int NCHUNK = BN / 64;              // 64-column (128-byte) chunks of a B stage
constexpr int ACC_N = BN / 2;                // f32 accumulator registers per m64nBN block
constexpr int A_STAGE_BYTES = BM * BK * 2;
constexpr int B_CHUNK_BYTES = BK * 128;
constexpr int B_STAGE_BYTES = NCHUNK * B_CHUNK_BYTES;
// EPI = 1: staging for the TMA store, WG_M x BN per consumer (PP: a whole tile each), or with
// CPASS = 2 the first pass's columns (half of them, rounded up to 64), which leaves room for a
// fourth stage of a 128x256 tile
constexpr int C_PASS_CHUNKS = (NCHUNK + CPASS - 1) / CPASS;  // 64-column blocks a pass stages
constexpr int C_TILE_BYTES = EPI ? (WS ? CONSUMERS : 1) * WG_M * 128 * C_PASS_CHUNKS : 0;
constexpr int SMEM_BYTES = 1024 + STAGES * (A_STAGE_BYTES + B_STAGE_BYTES) + C_TILE_BYTES + 256;

static_assert(sizeof(T) == 2, "16-bit types only");
static_assert(BK == 64, "BK must be 64: one 128-byte swizzle row of K per A row");
static_assert(BN % 64 == 0 && BN >= 64 && BN <= 256, "BN: 64, 128, 192 or 256");
static_assert(BM % MMA_WGS == 0 && WG_M % 64 == 0 && BM <= 256, "BM / MMA warpgroups: multiple of 64");
static_assert(MSUB * ACC_N <= 128, "at most 128 accumulator registers per thread");
static_assert(STAGES >= 2, "at least 2 stages");
static_assert(CLUSTER_M == 1 || CLUSTER_M == 2, "cluster of 1 or 2 CTAs along M");
static_assert(WS == 1 || CLUSTER_M == 1, "clusters need the warp-specialized kernel");
static_assert(CLUSTER_AT_LAUNCH == 0 || (CLUSTER_AT_LAUNCH == 1 && CLUSTER_M == 2),
              "CLUSTER_AT_LAUNCH: 0, or 1 with CLUSTER_M = 2 (launched with clusters of 2 or none)");
static_assert(CLUSTER_M == 1 || NCHUNK % CLUSTER_M == 0, "B chunks split evenly over the cluster");
// setmaxnreg moves registers within the CTA's allocation at launch (ptxas's count times THREADS),
// and a request beyond it waits forever (REG_PRODUCER = 48 with 2 x 232 hung on an H200). The
// count is at most what __launch_bounds__(THREADS, 1) allows, the register file's share per
// thread rounded down to 8 (168 for 384 threads), which is checked here; that ptxas uses all of
// it is checked in tests/test_author.py.
static_assert(WS == 0 || CONSUMERS < 2 ||
                  128 * REG_PRODUCER + 128 * CONSUMERS * REG_CONSUMER <=
                      THREADS * (65536 / THREADS / 8 * 8),
              "setmaxnreg budget exceeds the CTA's register allocation");
static_assert(REG_PRODUCER % 8 == 0 && REG_CONSUMER % 8 == 0 && REG_PRODUCER >= 24 &&
                  REG_CONSUMER <= 256, "setmaxnreg values: multiples of 8 in [24, 256]");
static_assert(SMEM_BYTES <= 232448, "dynamic shared memory above the 227 KB per-block limit");
static_assert(EPI == 0 || EPI == 1, "EPI: 0 or 1");
static_assert(CPASS == 1 || (CPASS == 2 && EPI == 1 && NCHUNK >= 2),
              "CPASS: 1, or 2 with EPI = 1 and at least two 64-column chunks");
static_assert(SK == 0 || SK == 1, "SK: 0 or 1");
static_assert(PP == 0 || (PP == 1 && WS == 1 && CONSUMERS == 2), "PP: two consumers of WS = 1");

// ------------------------------------------------------------------------------------------
// PTX wrappers
// ------------------------------------------------------------------------------------------
// ---- kgen:ptx begin (tests/emulate.py puts tests/emu/hopper.h here: the CPU emulator) ----
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Makes the mbarrier inits visible to the other threads of the cluster (and to the async proxy).
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// One arrival plus `bytes` expected transaction bytes for the current phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Arrive on the mbarrier at the same smem offset in CTA `cta` of this cluster (itself included).
// The default semantics (release at CTA scope), not .release.cluster: what the arrival hands back
// is a stage whose wgmma reads have completed (wgmma.wait_group), so there is nothing for a
// cluster-scope fence to order, and that fence cost every k-block's release: with it (and the
// matching .acquire.cluster wait in the producer), clusters of 2 ran at half the speed of single
// CTAs on the H200 (0.51x of cuBLAS at 4096^3, 0.96x without; one CTA 0.99x).
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t cta) {
  asm volatile(
      "{\n.reg .b32 ra;\n"
      "mapa.shared::cluster.u32 ra, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" ::"r"(bar),
      "r"(cta)
      : "memory");
}
// Spin until the phase with parity `parity` of the mbarrier has completed. A fresh barrier is in
// phase 0, so waiting for parity 1 returns at once (the "preceding phase" counts as complete).
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  do {
    asm volatile(
        "{\n.reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}
__device__ __forceinline__ void tma_prefetch(const CUtensorMap* tm) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(tm) : "memory");
}
// 2-D tile load global -> this CTA's smem; completes `bytes` on the mbarrier `bar`.
// c0 is the innermost (contiguous) coordinate, in elements.
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap* tm, int c0, int c1,
                                         uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(tm), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
// The same tile written to the same smem offset of every CTA in `mask`, each CTA's mbarrier at
// offset `bar` receiving the bytes.
__device__ __forceinline__ void tma_load_mc(uint32_t dst, const CUtensorMap* tm, int c0, int c1,
                                            uint32_t bar, uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(tm), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
      : "memory");
}
// Generic-proxy smem writes -> visible to the async proxy (wgmma operand reads).
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void st_shared_v4(uint32_t addr, uint4 v) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(v.x), "r"(v.y),
               "r"(v.z), "r"(v.w)
               : "memory");
}
__device__ __forceinline__ void st_shared_b32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
// 2-D tile store smem -> global (bulk async group); out-of-bounds box elements are not written.
__device__ __forceinline__ void tma_store(const CUtensorMap* tm, uint32_t src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(tm),
               "r"(src), "r"(c0), "r"(c1)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
// The smem sources of all committed bulk stores have been read (the smem may be rewritten).
__device__ __forceinline__ void bulk_wait_read0() {
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
// All committed bulk stores are complete.
__device__ __forceinline__ void bulk_wait0() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
__device__ __forceinline__ void named_bar_sync(int id, int nthreads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(nthreads) : "memory");
}
__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ uint32_t cluster_nctarank() {  // CTAs in this CTA's cluster (1: none)
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
template <int R>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(R));
}
template <int R>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(R));
}
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N_>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N_) : "memory");
}
// Keeps the compiler from moving accumulator reads/writes across the (volatile) wgmma fences
// and waits: each register looks read and rewritten here.
__device__ __forceinline__ void fence_acc(float (&acc)[MSUB][ACC_N]) {
#pragma unroll
  for (int i = 0; i < MSUB; ++i)
#pragma unroll
    for (int j = 0; j < ACC_N; ++j) asm volatile("" : "+f"(acc[i][j])::"memory");
}

// ---- generated wgmma wrappers begin (python3 gen_wgmma.py) ----
// D[64 x 64] (+)= A[64 x 16] (smem, K-major) * B[16 x 64] (smem, N-major: imm-trans-b = 1)
__device__ __forceinline__ void wgmma_n64(float (&d)[32], uint64_t da, uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." WG_TYPE "." WG_TYPE " "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, "
      "%32, %33, p, 1, 1, 0, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(da), "l"(db), "r"(1)
      : "memory");
}
// D[64 x 128] (+)= A[64 x 16] (smem, K-major) * B[16 x 128] (smem, N-major: imm-trans-b = 1)
__device__ __forceinline__ void wgmma_n128(float (&d)[64], uint64_t da, uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." WG_TYPE "." WG_TYPE " "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, "
      "%64, %65, p, 1, 1, 0, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(1)
      : "memory");
}
// D[64 x 192] (+)= A[64 x 16] (smem, K-major) * B[16 x 192] (smem, N-major: imm-trans-b = 1)
__device__ __forceinline__ void wgmma_n192(float (&d)[96], uint64_t da, uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n192k16.f32." WG_TYPE "." WG_TYPE " "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
      "}, "
      "%96, %97, p, 1, 1, 0, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
      : "l"(da), "l"(db), "r"(1)
      : "memory");
}
// D[64 x 256] (+)= A[64 x 16] (smem, K-major) * B[16 x 256] (smem, N-major: imm-trans-b = 1)
__device__ __forceinline__ void wgmma_n256(float (&d)[128], uint64_t da, uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32." WG_TYPE "." WG_TYPE " "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, "
      "%128, %129, p, 1, 1, 0, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(da), "l"(db), "r"(1)
      : "memory");
}
// ---- generated wgmma wrappers end ----
// ---- kgen:ptx end ----

// m64nBNk16 (a template so that only the BN in use is instantiated).
template <int N_>
__device__ __forceinline__ void wgmma_bn(float (&d)[N_ / 2], uint64_t da, uint64_t db) {
  if constexpr (N_ == 256) wgmma_n256(d, da, db);
  else if constexpr (N_ == 192) wgmma_n192(d, da, db);
  else if constexpr (N_ == 128) wgmma_n128(d, da, db);
  else wgmma_n64(d, da, db);
}

// ------------------------------------------------------------------------------------------
// wgmma shared-memory matrix descriptors (PTX "matrix descriptor"): bits 0-13 start address
// >> 4, 16-29 LBO >> 4, 32-45 SBO >> 4, 49-51 base offset (0: stages are 1024-aligned),
// 62-63 layout: 1 = 128-byte swizzle (the TMA enum for the same swizzle is 3).
// ------------------------------------------------------------------------------------------
__device__ __forceinline__ uint64_t make_desc(uint32_t saddr, uint32_t lbo, uint32_t sbo) {
  return static_cast<uint64_t>((saddr & 0x3FFFF) >> 4) |
         (static_cast<uint64_t>((lbo & 0x3FFFF) >> 4) << 16) |
         (static_cast<uint64_t>((sbo & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}
// A: K-major, rows of 128 B, 8-row swizzle atoms 1024 B apart (SBO); LBO unused when swizzled.
__device__ __forceinline__ uint64_t desc_a(uint32_t saddr) { return make_desc(saddr, 16, 1024); }
// B: N-major (transposed), 64-column chunks BK*128 B apart (LBO), 8-row K groups 1024 B apart (SBO).
#ifndef KGEN_DIAG_SWAP_B
#define KGEN_DIAG_SWAP_B 0  // diagnostics only (-DKGEN_DIAG_SWAP_B=1): B's LBO and SBO swapped
#endif
__device__ __forceinline__ uint64_t desc_b(uint32_t saddr) {
  return KGEN_DIAG_SWAP_B ? make_desc(saddr, 1024, B_CHUNK_BYTES)
                          : make_desc(saddr, B_CHUNK_BYTES, 1024);
}

// All wgmmas of one k-block (BK = 64 = 4 x k16) for one MMA warpgroup. sa: its first A row.
__device__ __forceinline__ void mma_kblock(float (&acc)[MSUB][ACC_N], uint32_t sa, uint32_t sb) {
#pragma unroll
  for (int kk = 0; kk < BK / 16; ++kk) {
    const uint64_t db = desc_b(sb + kk * 16 * 128);
#pragma unroll
    for (int i = 0; i < MSUB; ++i) wgmma_bn<BN>(acc[i], desc_a(sa + i * 64 * 128 + kk * 32), db);
  }
}

__device__ __forceinline__ void zero_acc(float (&acc)[MSUB][ACC_N]) {
#pragma unroll
  for (int i = 0; i < MSUB; ++i)
#pragma unroll
    for (int j = 0; j < ACC_N; ++j) acc[i][j] = 0.f;
}

// Grouped tile order: tile t -> (cluster-tile row, tile column); walks GROUP_M rows down
// before moving right. A bijection on [0, tiles_m * tiles_n).
__device__ __forceinline__ void tile_coords(int t, int tiles_m, int tiles_n, int& tm, int& tn) {
  const int per_group = GROUP_M * tiles_n;
  const int g = t / per_group, first = g * GROUP_M;
  const int rows = min(tiles_m - first, GROUP_M);
  const int r = t - g * per_group;
  tm = first + r % rows;
  tn = r / rows;
}

// Diagnostics only (-DKGEN_DIAG_TIMES=1; benchmarks/s22-2026-12-06/wgmma_phases.py): thread 0 of
// each consumer warpgroup stamps clock64() at five points of each of its first DIAG_UNITS units
// (the unit's start, its first stage ready, its last wgmma issued, its accumulators drained, its
// epilogue issued) into a static buffer, so the fixed cost of a tile can be read apart. Off in
// every kernel kgen renders.
#ifndef KGEN_DIAG_TIMES
#define KGEN_DIAG_TIMES 0
#endif
#if KGEN_DIAG_TIMES
constexpr int DIAG_CTAS = 160, DIAG_UNITS = 64, DIAG_POINTS = 5;
__device__ long long kgen_diag_t[DIAG_CTAS * 2 * DIAG_UNITS * DIAG_POINTS];
#define DIAG_STAMP(unit, point)                                                             \
  do {                                                                                     \
    if (lt == 0 && (unit) < DIAG_UNITS && blockIdx.x < DIAG_CTAS && wg < 2)                \
      kgen_diag_t[((blockIdx.x * 2 + wg) * DIAG_UNITS + (unit)) * DIAG_POINTS + (point)] = \
          clock64();                                                                       \
  } while (0)
#else
#define DIAG_STAMP(unit, point) \
  do {                          \
  } while (0)
#endif

// ------------------------------------------------------------------------------------------
// The work of one persistent CTA (streamk.cuh): units (tile t, k-blocks [kb0, kb1)), identical
// for the producer and the consumers. With SK = 0 every tile comes whole, one per CTA per round
// (t = c, c + G, ...). SK = 1 (stream-K, with CLUSTER_M = 1 or the cluster chosen at launch)
// cuts the tiles of a last, partial round along K where few are left over (SK_SPREAD 0: about
// SK_PIECES CTAs each), partial sums passed between CTAs through a static workspace: slot = the
// contributor's CTA, one slot per consumer warpgroup (PP = 1: one, the whole tile, whichever
// consumer had the piece). In a cluster launch the schedule's units are cluster tiles dealt to
// clusters; each CTA of a cluster does its own rows of them and has its own slot. The
// workspace is a static __device__ array (zero at module load; 128 KB per
// CTA slot for 128x256, 20 MiB in all), so the launch contract needs no extra buffer, and every
// flag is down again when a launch ends. Two launches of one module must not run at once (they
// would share the workspace); kgen launches one at a time.
// ------------------------------------------------------------------------------------------
#if WS && SK && (CLUSTER_M == 1 || CLUSTER_AT_LAUNCH)
#define KGEN_STREAM_K 1
constexpr int SK_PIECES = 4;   // CTAs per cut tile, on average, where few tiles are left over
#define SK_SPREAD 0  // see streamk.cuh
constexpr int SK_SLOTS = 160;  // CTAs (SMs) the workspace serves; more SMs: no cut tiles
constexpr int SK_SUBS = PP ? 1 : CONSUMERS;  // partial tiles per slot, WG_M x BN each
__device__ float4 kgen_sk_work[SK_SLOTS * BM * BN / 4];
__device__ unsigned kgen_sk_flag[SK_SLOTS * SK_SUBS];
#else
#define KGEN_STREAM_K 0
constexpr int SK_SLOTS = 0;  // nothing is cut
#endif
#include "streamk.cuh"

#if KGEN_STREAM_K
// Contributor: this warpgroup's partial accumulators -> workspace slot `slot`, part `sub`, then
// its flag up. Each thread writes its own registers in order, so the owner's same thread reads
// them back without any fragment arithmetic (and every access is a coalesced 16-byte one).
// wg: the calling warpgroup (for its named barrier).
__device__ __forceinline__ void sk_publish(const float (&acc)[MSUB][ACC_N], int slot, int sub,
                                           int wg, int lt) {
  float4* w =
      kgen_sk_work + static_cast<size_t>(slot * SK_SUBS + sub) * (MSUB * ACC_N / 4) * 128 + lt;
#pragma unroll
  for (int i = 0; i < MSUB; ++i)
#pragma unroll
    for (int q = 0; q < ACC_N / 4; ++q)
      __stcg(w + (i * ACC_N / 4 + q) * 128,
             make_float4(acc[i][4 * q], acc[i][4 * q + 1], acc[i][4 * q + 2], acc[i][4 * q + 3]));
  __threadfence();  // each thread's stores are visible device-wide before the flag goes up
  named_bar_sync(3 + wg, 128);
  if (lt == 0) sk_raise(&kgen_sk_flag[slot * SK_SUBS + sub]);
}
// Owner: wait for one contributor's flag (and lower it for the next launch), add its partial.
__device__ __forceinline__ void sk_absorb(float (&acc)[MSUB][ACC_N], int slot, int sub, int wg,
                                          int lt) {
  if (lt == 0) sk_wait(&kgen_sk_flag[slot * SK_SUBS + sub]);
  named_bar_sync(3 + wg, 128);
  const float4* w =
      kgen_sk_work + static_cast<size_t>(slot * SK_SUBS + sub) * (MSUB * ACC_N / 4) * 128 + lt;
#pragma unroll
  for (int i = 0; i < MSUB; ++i)
#pragma unroll
    for (int q = 0; q < ACC_N / 4; ++q) {
      const float4 v = __ldcg(w + (i * ACC_N / 4 + q) * 128);  // L2: written by another SM
      acc[i][4 * q] += v.x;
      acc[i][4 * q + 1] += v.y;
      acc[i][4 * q + 2] += v.z;
      acc[i][4 * q + 3] += v.w;
    }
}
#endif

// ------------------------------------------------------------------------------------------
// Guarded non-TMA loads (flags bit 0 = 0): 8 elements (16 bytes) of row `row`, columns
// col..col+7 of a row-major rows x cols matrix, zeros outside it.
// ------------------------------------------------------------------------------------------
__device__ __forceinline__ uint4 load8(const T* __restrict__ P, int row, int col, int rows,
                                       int cols) {
  uint4 v = make_uint4(0u, 0u, 0u, 0u);
  if (row >= rows || col >= cols) return v;
  const T* p = P + static_cast<size_t>(row) * cols + col;
  if (col + 8 <= cols && (reinterpret_cast<uintptr_t>(p) & 15) == 0)
    return __ldg(reinterpret_cast<const uint4*>(p));
  const unsigned short* q = reinterpret_cast<const unsigned short*>(p);
  uint32_t w[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const uint32_t lo = col + 2 * e < cols ? q[2 * e] : 0u;
    const uint32_t hi = col + 2 * e + 1 < cols ? q[2 * e + 1] : 0u;
    w[e] = lo | (hi << 16);
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}
// One stage (A tile and B tile at k0) into the exact layout TMA's 128B swizzle produces.
// NT threads, tid in [0, NT).
template <int NT>
__device__ __forceinline__ void load_stage_manual(uint32_t sa, uint32_t sb,
                                                  const T* __restrict__ A,
                                                  const T* __restrict__ B, int m0, int n0,
                                                  int k0, int M, int N, int K, int tid) {
  for (int q = tid; q < BM * 8; q += NT) {
    const int r = q >> 3, c = q & 7;  // A row r, 16-byte chunk c (K elements 8c..8c+7)
    st_shared_v4(sa + r * 128 + ((c ^ (r & 7)) << 4), load8(A, m0 + r, k0 + 8 * c, M, K));
  }
  for (int q = tid; q < NCHUNK * BK * 8; q += NT) {
    const int j = q / (BK * 8), rem = q - j * (BK * 8);
    const int r = rem >> 3, c = rem & 7;  // chunk j, K row r, 16-byte chunk c of its 64 columns
    st_shared_v4(sb + j * B_CHUNK_BYTES + r * 128 + ((c ^ (r & 7)) << 4),
                 load8(B, k0 + r, n0 + 64 * j + 8 * c, K, N));
  }
}

// ------------------------------------------------------------------------------------------
// Epilogue: an MMA warpgroup's MSUB x (64 x BN) f32 accumulators -> C (rows row0.., cols n0..).
// m64nNk16 D fragment: thread lt (warp w = lt/32, lane l): register 4j+2h+e holds
// row 16w + l/4 + 8h, column 8j + 2(l%4) + e.
// ------------------------------------------------------------------------------------------
__device__ __forceinline__ void store_tile(const float (&acc)[MSUB][ACC_N], T* __restrict__ C,
                                           int row0, int n0, int M, int N, int lt) {
  const int w = lt >> 5, l = lt & 31;
  const int r_base = row0 + 16 * w + (l >> 2);
  const int c_base = n0 + 2 * (l & 3);
  const bool pairs = (N % 2 == 0) && (reinterpret_cast<uintptr_t>(C) & 3) == 0;
  const bool whole = pairs && row0 + WG_M <= M && n0 + BN <= N;
#pragma unroll
  for (int i = 0; i < MSUB; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = r_base + 64 * i + 8 * h;
      T* out = C + static_cast<size_t>(row) * N + c_base;
      if (whole) {
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
          *reinterpret_cast<T2*>(out + 8 * j) = PACK2(acc[i][4 * j + 2 * h], acc[i][4 * j + 2 * h + 1]);
      } else if (row < M) {
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
          const int col = c_base + 8 * j;
          const float v0 = acc[i][4 * j + 2 * h], v1 = acc[i][4 * j + 2 * h + 1];
          if (pairs && col + 1 < N) {
            *reinterpret_cast<T2*>(out + 8 * j) = PACK2(v0, v1);
          } else {
            if (col < N) out[8 * j] = FROM_F(v0);
            if (col + 1 < N) out[8 * j + 1] = FROM_F(v1);
          }
        }
      }
    }
}

// EPI = 1: the same fragment -> this warpgroup's smem staging area `sc` (MSUB x NCHUNK blocks of
// 64 rows x 64 columns, 8 KB each, in the TMA 128B-swizzle layout: 16-byte chunk c of row r at
// chunk c ^ (r % 8), which also keeps the 4-byte stores of a warp on distinct banks), then one
// thread TMA-stores the blocks that touch C (TMA clips rows >= M and columns >= N). The store runs
// asynchronously; the next pass waits until it has read the staging area. With CPASS = 2 the area
// holds half the columns, rounded up to a block (MSUB x C_PASS_CHUNKS blocks), and the tile goes
// out in two passes, the second waiting for the first's store to have read the area. bar_id: a
// named barrier for this warpgroup's 128 threads.
__device__ __forceinline__ void store_tile_tma(const float (&acc)[MSUB][ACC_N], uint32_t sc,
                                               const CUtensorMap* tmC, int row0, int n0, int M,
                                               int N, int lt, int bar_id) {
  constexpr int PASS_CHUNKS = C_PASS_CHUNKS;  // 64-column blocks per pass (the last: the rest)
  const int w = lt >> 5, l = lt & 31;
#pragma unroll
  for (int pass = 0; pass < CPASS; ++pass) {
    if (lt == 0) bulk_wait_read0();  // the previous pass's (or tile's) store has read `sc`
    named_bar_sync(bar_id, 128);
#pragma unroll
    for (int i = 0; i < MSUB; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = 16 * w + (l >> 2) + 8 * h;  // row within the 64-row block
        const uint32_t row_addr = sc + i * PASS_CHUNKS * 8192 + r * 128 + (l & 3) * 4;
#pragma unroll
        for (int jj = 0; jj < PASS_CHUNKS * 8; ++jj) {
          const int j = pass * PASS_CHUNKS * 8 + jj;  // 8-column group of the accumulators
          if (j >= BN / 8) break;  // an uneven last pass (BN = 192)
          const T2 v = PACK2(acc[i][4 * j + 2 * h], acc[i][4 * j + 2 * h + 1]);
          st_shared_b32(row_addr + (jj >> 3) * 8192 + (((jj & 7) ^ (r & 7)) << 4),
                        *reinterpret_cast<const uint32_t*>(&v));
        }
      }
    fence_proxy_async();  // the generic-proxy smem writes -> visible to the TMA engine
    named_bar_sync(bar_id, 128);
    if (lt == 0) {
#pragma unroll
      for (int i = 0; i < MSUB; ++i)
#pragma unroll
        for (int c = 0; c < PASS_CHUNKS; ++c) {
          const int col = n0 + 64 * (pass * PASS_CHUNKS + c);
          if (pass * PASS_CHUNKS + c < NCHUNK && row0 + 64 * i < M && col < N)
            tma_store(tmC, sc + (i * PASS_CHUNKS + c) * 8192, col, row0 + 64 * i);
        }
      bulk_commit();
    }
  }
}

// ------------------------------------------------------------------------------------------
// The kernel
// ------------------------------------------------------------------------------------------
#if WS && CLUSTER_M > 1 && !CLUSTER_AT_LAUNCH
#define KGEN_CLUSTER_ATTR __cluster_dims__(CLUSTER_M, 1, 1)
#else
#define KGEN_CLUSTER_ATTR
#endif

// The whole kernel for clusters of CM CTAs (CLUSTER_M; with CLUSTER_AT_LAUNCH, each cluster size
// the launch may choose gets its own copy, so a launch without a cluster runs the same code as a
// kernel built for none). The tensor maps are the kernel's __grid_constant__ parameters.
template <int CM>
__device__ __forceinline__ void gemm_body(const CUtensorMap& tmA, const CUtensorMap& tmB,
                                          const CUtensorMap& tmC, const T* __restrict__ A,
                                          const T* __restrict__ B, T* __restrict__ C, int M,
                                          int N, int K) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // TMA needs 16-byte aligned bases and row strides. Where it cannot, kgen passes zero maps
  // (tmap optional=1) and the kernel loads through its guarded path instead (flags bit 0 = 0).
  const bool tma_ok = K % 8 == 0 && N % 8 == 0 &&
      ((reinterpret_cast<uintptr_t>(A) | reinterpret_cast<uintptr_t>(B) |
        reinterpret_cast<uintptr_t>(C)) & 15) == 0;
  const int flags = tma_ok ? 3 : 0;
  // Round the base up to 1024 B (the 128B-swizzle atom); SMEM_BYTES has 1024 bytes of slack.
  // Every CTA computes the same offset, so multicast's "same offset in each CTA" holds.
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t sA0 = base;
  const uint32_t sB0 = base + STAGES * A_STAGE_BYTES;
  const uint32_t sC0 = sB0 + STAGES * B_STAGE_BYTES;  // EPI = 1 staging tile (1024-aligned)
  const uint32_t bar0 = sC0 + C_TILE_BYTES;
  auto sA = [&](int s) { return sA0 + s * A_STAGE_BYTES; };
  auto sB = [&](int s) { return sB0 + s * B_STAGE_BYTES; };
  auto full = [&](int s) { return bar0 + 8 * s; };
  [[maybe_unused]] auto empty = [&](int s) { return bar0 + 8 * (STAGES + s); };
  // PP = 1: order(c) completes a phase when the other consumer's main loop has passed its last
  // full-stage wait; consumer c waits on it before each of its main loops but the CTA's first.
  [[maybe_unused]] auto order = [&](int c) { return bar0 + 8 * (2 * STAGES + c); };

  const bool use_tma = (flags & 1) != 0;
  const bool tma_epi = EPI == 1 && (flags & 2) != 0;
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int nkb = (K + BK - 1) / BK;

#if WS
  // ====================== warp-specialized persistent kernel ======================
  constexpr int cm = CM;  // CTAs in this CTA's cluster
  const uint32_t rank = cm > 1 ? cluster_ctarank() : 0u;
  const int ctiles_m = (tiles_m + cm - 1) / cm;  // cluster-tile rows
  const int ntiles = ctiles_m * tiles_n;
  const int cid = blockIdx.x / cm, ncl = gridDim.x / cm;
  // Stream-K works in clusters: the schedule deals cluster tiles to clusters, the CTAs of a
  // cluster take the same units (each its own rows of the cluster tile), and each CTA has its
  // own workspace slot, cid * cm + rank.
  const bool cut_ok = cm * ncl <= SK_SLOTS;

  if (threadIdx.x == 0) {
#pragma unroll 1
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full(s), use_tma ? 1u : 128u);  // non-TMA: all producer threads arrive
      mbar_init(empty(s), (PP ? 1 : CONSUMERS) * cm);  // PP: one consumer per stage
    }
    if (PP)
#pragma unroll 1
      for (int c = 0; c < CONSUMERS; ++c) mbar_init(order(c), 128);
    fence_mbarrier_init();
  }
  if constexpr (cm > 1) cluster_sync();
  else __syncthreads();

  const int wgi = threadIdx.x >> 7;  // warpgroup index, uniform per warp
  if (wgi == 0) {
    // ---------------------------------- producer ----------------------------------
    if constexpr (CONSUMERS >= 2) setmaxnreg_dec<REG_PRODUCER>();
    if (use_tma) {
      if (threadIdx.x == 0) {
        tma_prefetch(&tmA);
        tma_prefetch(&tmB);
        int s = 0;
        uint32_t ph = 0;
        Schedule work(ntiles, nkb, cid, ncl, cut_ok);
        int t, kb0, kb1;
#pragma unroll 1
        while (work.next(t, kb0, kb1)) {
          int tmc, tn;
          tile_coords(t, ctiles_m, tiles_n, tmc, tn);
          const int m0 = (tmc * cm + static_cast<int>(rank)) * BM, n0 = tn * BN;
          const bool a_in = m0 < M;  // else this CTA's rows are all past M (cluster edge)
          const int nb = min(NCHUNK, (N - n0 + 63) / 64);  // B chunks that touch the matrix
          const uint32_t bytes = (a_in ? A_STAGE_BYTES : 0) + nb * B_CHUNK_BYTES;
#pragma unroll 1
          for (int kb = kb0; kb < kb1; ++kb) {
            mbar_wait(empty(s), ph ^ 1);  // remote consumers arrive on it too
            mbar_arrive_expect_tx(full(s), bytes);
            if (a_in) tma_load(sA(s), &tmA, kb * BK, m0, full(s));
#pragma unroll
            for (int j = 0; j < NCHUNK; ++j) {
              if (j >= nb) break;
              if constexpr (cm == 1) {
                tma_load(sB(s) + j * B_CHUNK_BYTES, &tmB, n0 + 64 * j, kb * BK, full(s));
              } else {
                if (j % cm == static_cast<int>(rank))
                  tma_load_mc(sB(s) + j * B_CHUNK_BYTES, &tmB, n0 + 64 * j, kb * BK, full(s),
                              static_cast<uint16_t>((1u << cm) - 1u));
              }
            }
            if (++s == STAGES) { s = 0; ph ^= 1; }
          }
        }
      }
    } else {
      // Guarded non-TMA path: the whole producer warpgroup fills each stage.
      const int pt = threadIdx.x;
      int s = 0;
      uint32_t ph = 0;
      Schedule work(ntiles, nkb, cid, ncl, cut_ok);
      int t, kb0, kb1;
#pragma unroll 1
      while (work.next(t, kb0, kb1)) {
        int tmc, tn;
        tile_coords(t, ctiles_m, tiles_n, tmc, tn);
        const int m0 = (tmc * cm + static_cast<int>(rank)) * BM, n0 = tn * BN;
#pragma unroll 1
        for (int kb = kb0; kb < kb1; ++kb) {
          mbar_wait(empty(s), ph ^ 1);  // remote consumers arrive on it too
          load_stage_manual<128>(sA(s), sB(s), A, B, m0, n0, kb * BK, M, N, K, pt);
          fence_proxy_async();
          mbar_arrive(full(s));
          if (++s == STAGES) { s = 0; ph ^= 1; }
        }
      }
    }
  } else {
    // ---------------------------------- consumers ----------------------------------
    if constexpr (CONSUMERS >= 2) setmaxnreg_inc<REG_CONSUMER>();
    const int wg = wgi - 1, lt = threadIdx.x & 127;
    const int row_off = PP ? 0 : wg * WG_M;  // this warpgroup's first row of the tile
    float acc[MSUB][ACC_N];
    int s = 0;
    uint32_t ph = 0;
    Schedule work(ntiles, nkb, cid, ncl, cut_ok);
    int t, kb0, kb1;
    [[maybe_unused]] int unit = 0, turn = 0;  // PP: the CTA's units so far; this consumer's
    [[maybe_unused]] int diag_unit = -1;
#pragma unroll 1
    while (work.next(t, kb0, kb1)) {
      ++diag_unit;
      DIAG_STAMP(diag_unit, 0);
      if (PP) {
        if (unit++ % CONSUMERS != wg) {
          // The other consumer's unit: step over its k-blocks' stages.
          const int at = s + (kb1 - kb0);
          ph ^= (at / STAGES) & 1;
          s = at % STAGES;
          continue;
        }
        const int waits = turn++ - (wg == 0);  // consumer 0's first main loop goes first
        if (waits >= 0) mbar_wait(order(wg), waits & 1);
      }
      int tmc, tn;
      tile_coords(t, ctiles_m, tiles_n, tmc, tn);
      const int m0 = (tmc * cm + static_cast<int>(rank)) * BM, n0 = tn * BN;
      zero_acc(acc);
      fence_acc(acc);
      int prev = 0;
#pragma unroll 1
      for (int kb = kb0; kb < kb1; ++kb) {
        mbar_wait(full(s), ph);
        if (kb == kb0) DIAG_STAMP(diag_unit, 1);
        wgmma_fence();
        mma_kblock(acc, sA(s) + row_off * 128, sB(s));
        wgmma_commit();
        if (kb > kb0) {
          // The previous k-block's wgmmas are done: hand its stage back to the producer(s).
          wgmma_wait<1>();
          if (lt == 0) {
            if constexpr (cm == 1) mbar_arrive(empty(prev));
            else {
#pragma unroll
              for (int c = 0; c < cm; ++c) mbar_arrive_cluster(empty(prev), c);
            }
          }
        }
        prev = s;
        if (++s == STAGES) { s = 0; ph ^= 1; }
      }
      if (PP) mbar_arrive(order(wg ^ 1));  // the other consumer's main loop may start
      DIAG_STAMP(diag_unit, 2);
      wgmma_wait<0>();
      fence_acc(acc);
      DIAG_STAMP(diag_unit, 3);
      if (lt == 0) {
        if constexpr (cm == 1) mbar_arrive(empty(prev));
        else {
#pragma unroll
          for (int c = 0; c < cm; ++c) mbar_arrive_cluster(empty(prev), c);
        }
      }
#if KGEN_STREAM_K
      if (kb1 - kb0 < nkb) {  // a piece of a cut tile: slots are named by the contributor's CTA
        // A CTA publishes at most one piece (its first cut unit), so with PP the slot's one
        // part is the tile's, whichever consumer had it.
        if (kb0 > 0) {
          sk_publish(acc, cid * cm + static_cast<int>(rank), PP ? 0 : wg, wg, lt);
          continue;
        }
        const int last = work.contributors_end(t, cid);
#pragma unroll 1
        for (int from = cid + 1; from < last; ++from)
          sk_absorb(acc, from * cm + static_cast<int>(rank), PP ? 0 : wg, wg, lt);
      }
#endif
      if (tma_epi)
        store_tile_tma(acc, sC0 + wg * (WG_M * 128 * C_PASS_CHUNKS), &tmC, m0 + row_off, n0, M, N,
                       lt, 1 + wg);
      else
        store_tile(acc, C, m0 + row_off, n0, M, N, lt);
      DIAG_STAMP(diag_unit, 4);
    }
    if (tma_epi && lt == 0) bulk_wait0();  // stores done before the CTA (and its smem) goes away
  }
  // No CTA may leave while its cluster peer can still arrive on its barriers or write its smem.
  if constexpr (cm > 1) cluster_sync();

#else
  // ====================== simple one-warpgroup kernel (fallback) ======================
  const int tid = threadIdx.x;
  const int ntiles = tiles_m * tiles_n;
  if (tid == 0) {
#pragma unroll 1
    for (int s = 0; s < STAGES; ++s) mbar_init(full(s), 1);
    fence_mbarrier_init();
  }
  __syncthreads();
  if (use_tma && tid == 0) {
    tma_prefetch(&tmA);
    tma_prefetch(&tmB);
  }
  float acc[MSUB][ACC_N];
  uint32_t g0 = 0;  // k-blocks issued before this tile (stage = g % STAGES, parity = g / STAGES)
#pragma unroll 1
  for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
    int tm, tn;
    tile_coords(t, tiles_m, tiles_n, tm, tn);
    const int m0 = tm * BM, n0 = tn * BN;
    const int nb = min(NCHUNK, (N - n0 + 63) / 64);
    const uint32_t bytes = A_STAGE_BYTES + nb * B_CHUNK_BYTES;
    auto issue = [&](int kb) {  // thread 0 only: k-block kb of this tile into its stage
      const int s = static_cast<int>((g0 + kb) % STAGES);
      mbar_arrive_expect_tx(full(s), bytes);
      tma_load(sA(s), &tmA, kb * BK, m0, full(s));
#pragma unroll
      for (int j = 0; j < NCHUNK; ++j)
        if (j < nb) tma_load(sB(s) + j * B_CHUNK_BYTES, &tmB, n0 + 64 * j, kb * BK, full(s));
    };
    zero_acc(acc);
    fence_acc(acc);
    if (use_tma) {
      if (tid == 0)
#pragma unroll 1
        for (int p = 0; p < STAGES - 1 && p < nkb; ++p) issue(p);
#pragma unroll 1
      for (int kb = 0; kb < nkb; ++kb) {
        // Refill the stage that k-block kb-1 used: every thread finished it (wait + barrier).
        if (tid == 0 && kb + STAGES - 1 < nkb) issue(kb + STAGES - 1);
        const uint32_t g = g0 + kb;
        mbar_wait(full(g % STAGES), (g / STAGES) & 1u);
        wgmma_fence();
        mma_kblock(acc, sA(g % STAGES), sB(g % STAGES));
        wgmma_commit();
        wgmma_wait<0>();
        __syncthreads();
      }
      g0 += nkb;
    } else {
#pragma unroll 1
      for (int kb = 0; kb < nkb; ++kb) {
        load_stage_manual<128>(sA(0), sB(0), A, B, m0, n0, kb * BK, M, N, K, tid);
        fence_proxy_async();
        __syncthreads();
        wgmma_fence();
        mma_kblock(acc, sA(0), sB(0));
        wgmma_commit();
        wgmma_wait<0>();
        __syncthreads();
      }
    }
    fence_acc(acc);
    if (tma_epi) store_tile_tma(acc, sC0, &tmC, m0, n0, M, N, tid, 1);
    else store_tile(acc, C, m0, n0, M, N, tid);
  }
  if (tma_epi && tid == 0) bulk_wait0();
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS, 1) KGEN_CLUSTER_ATTR
KGEN_KERNEL(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
            const __grid_constant__ CUtensorMap tmC, const T* __restrict__ A,
            const T* __restrict__ B, T* __restrict__ C, int M, int N, int K) {
#if CLUSTER_AT_LAUNCH
  const uint32_t cluster = cluster_nctarank();  // 1: launched without a cluster
  if (cluster == 1) gemm_body<1>(tmA, tmB, tmC, A, B, C, M, N, K);
  else if (cluster == CLUSTER_M) gemm_body<CLUSTER_M>(tmA, tmB, tmC, A, B, C, M, N, K);
  else __trap();  // a cluster size this kernel was not built for
#else
  gemm_body<CLUSTER_M>(tmA, tmB, tmC, A, B, C, M, N, K);
#endif
}
