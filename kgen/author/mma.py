"""Tensor-core gemm template for float16/bfloat16 on sm_80+: mma.sync m16n8k16 with ldmatrix and a
multi-stage cp.async pipeline, float32 accumulation, stores in the dtype. Any M, N, K: loads past
the edges are zero-filled (cp.async with src-size 0, or a guarded element path when K or N is not a
multiple of 8) and stores are guarded.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgen.author.common import CTYPE, HEADERS, SHORT, contract_header


@dataclass(frozen=True)
class MmaParams:
    bm: int = 128
    bn: int = 128
    bk: int = 32
    wm: int = 2  # warps along M
    wn: int = 4  # warps along N
    stages: int = 3

    template = "mma"

    @property
    def threads(self) -> int:
        return self.wm * self.wn * 32

    @property
    def smem_bytes(self) -> int:
        """Dynamic shared memory: padded A and B tiles (8 halves per row) for every stage."""
        return self.stages * (self.bm * (self.bk + 8) + self.bk * (self.bn + 8)) * 2

    @property
    def acc_per_thread(self) -> int:
        return (self.bm // self.wm // 16) * (self.bn // self.wn // 8) * 4

    @property
    def choices(self) -> str:
        return (f"template=mma tile={self.bm}x{self.bn}x{self.bk} warps={self.wm}x{self.wn} "
                f"stages={self.stages}")


_BODY = r"""
constexpr int THREADS = WM * WN * 32;
constexpr int WTM = BM / WM, WTN = BN / WN;  // one warp's tile
constexpr int MF = WTM / 16, NF = WTN / 8;   // m16n8k16 fragments per warp
// 16 bytes of padding per row put the 8 row addresses of an ldmatrix on distinct banks.
constexpr int LDA = BK + 8, LDB = BN + 8;
constexpr int A_STAGE = BM * LDA, B_STAGE = BK * LDB;
constexpr int A_CHUNKS = BM * BK / 8 / THREADS, B_CHUNKS = BK * BN / 8 / THREADS;  // 16-byte chunks

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// 16 bytes global -> shared, asynchronously; src_bytes = 0 fills the destination with zeros.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src),
               "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N_>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N_));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned* r, const T* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned* r, const T* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)));
}
__device__ __forceinline__ void mma16816(float* d, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." MMA_TYPE "." MMA_TYPE ".f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ bool aligned16(const void* p) {
  return (reinterpret_cast<unsigned long long>(p) & 15) == 0;
}

// One 8-element chunk of a row: cp.async when whole and aligned, element by element at a ragged
// edge, zeros when the row or the chunk lies outside the matrix.
__device__ __forceinline__ void load_chunk(T* dst, const T* base, int row, int rows, int col,
                                           int cols, bool fast) {
  if (row < rows && col + 7 < cols && fast) {
    cp_async16(dst, base + (size_t)row * cols + col, 16);
  } else if (row < rows && col < cols) {
#pragma unroll
    for (int e = 0; e < 8; ++e)
      dst[e] = col + e < cols ? base[(size_t)row * cols + col + e] : ZERO;
  } else {
    cp_async16(dst, base, 0);
  }
}

extern "C" __global__ void __launch_bounds__(THREADS)
KERNEL_NAME(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,
            int M, int N, int K) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* As = reinterpret_cast<T*>(smem_raw);
  T* Bs = As + STAGES * A_STAGE;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / WN, wn = warp % WN;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const bool fastA = (K % 8 == 0) && aligned16(A);
  const bool fastB = (N % 8 == 0) && aligned16(B);

  auto load_tile = [&](int stage, int kt) {
    const int k0 = kt * BK;
    T* as = As + stage * A_STAGE;
    T* bs = Bs + stage * B_STAGE;
#pragma unroll
    for (int i = 0; i < A_CHUNKS; ++i) {
      const int c = tid + i * THREADS, r = c / (BK / 8), kc = (c % (BK / 8)) * 8;
      load_chunk(as + r * LDA + kc, A, m0 + r, M, k0 + kc, K, fastA);
    }
#pragma unroll
    for (int i = 0; i < B_CHUNKS; ++i) {
      const int c = tid + i * THREADS, r = c / (BN / 8), nc = (c % (BN / 8)) * 8;
      load_chunk(bs + r * LDB + nc, B, k0 + r, K, n0 + nc, N, fastB);
    }
  };

  float acc[MF][NF][4];
#pragma unroll
  for (int i = 0; i < MF; ++i)
#pragma unroll
    for (int j = 0; j < NF; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

  const int tiles = (K + BK - 1) / BK;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < tiles) load_tile(s, s);
    cp_async_commit();
  }
  for (int t = 0; t < tiles; ++t) {
    cp_async_wait<STAGES - 2>();  // tile t has landed (one commit group per tile, empty ones too)
    __syncthreads();              // ... for every thread, and tile t-1's buffer is free again
    const int next = t + STAGES - 1;
    if (next < tiles) load_tile(next % STAGES, next);
    cp_async_commit();
    const T* as = As + (t % STAGES) * A_STAGE;
    const T* bs = Bs + (t % STAGES) * B_STAGE;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      unsigned af[MF][4], bf[NF][2];
#pragma unroll
      for (int i = 0; i < MF; ++i)
        ldmatrix_x4(af[i], as + (wm * WTM + i * 16 + lane % 16) * LDA + kk + (lane / 16) * 8);
#pragma unroll
      for (int j = 0; j < NF; j += 2) {
        unsigned r[4];  // .trans turns the k-major B rows into the col-major mma operand
        ldmatrix_x4_trans(r, bs + (kk + lane % 16) * LDB + wn * WTN + j * 8 + (lane / 16) * 8);
        bf[j][0] = r[0]; bf[j][1] = r[1]; bf[j + 1][0] = r[2]; bf[j + 1][1] = r[3];
      }
#pragma unroll
      for (int i = 0; i < MF; ++i)
#pragma unroll
        for (int j = 0; j < NF; ++j) mma16816(acc[i][j], af[i], bf[j]);
    }
  }
  cp_async_wait<0>();

  const bool pairs = (N % 2 == 0) && (reinterpret_cast<unsigned long long>(C) & 3) == 0;
#pragma unroll
  for (int i = 0; i < MF; ++i)
#pragma unroll
    for (int j = 0; j < NF; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // c0,c1 on row lane/4; c2,c3 eight rows below
        const int row = m0 + wm * WTM + i * 16 + lane / 4 + h * 8;
        const int col = n0 + wn * WTN + j * 8 + (lane % 4) * 2;
        if (row >= M) continue;
        T* out = C + (size_t)row * N + col;
        if (pairs && col + 1 < N) {
          *reinterpret_cast<T2*>(out) = PACK2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
        } else {
          if (col < N) out[0] = FROM_F(acc[i][j][2 * h]);
          if (col + 1 < N) out[1] = FROM_F(acc[i][j][2 * h + 1]);
        }
      }
}
"""

_TYPES = {
    "float16": ("__half2", '"f16"', "__floats2half2_rn", "__float2half_rn", "__float2half(0.f)"),
    "bfloat16": ("__nv_bfloat162", '"bf16"', "__floats2bfloat162_rn", "__float2bfloat16_rn",
                 "__float2bfloat16(0.f)"),
}


def render(p: MmaParams, dtype: str) -> str:
    """The full .cu source (contract header first) for these parameters and dtype."""
    name = f"gemm_mma_{SHORT[dtype]}"
    launch = (f"{name} grid=(cdiv(N,{p.bn}), cdiv(M,{p.bm})) block=({p.threads}) "
              f"smem={p.smem_bytes} args=(A, B, C, M, N, K)")
    about = (f"Tensor-core gemm (mma.sync m16n8k16 + ldmatrix), block tile {p.bm}x{p.bn}x{p.bk}, "
             f"{p.wm}x{p.wn} warps, {p.stages}-stage cp.async pipeline, float32 accumulation; "
             "sm_80+, any M, N, K.")
    pair, mma_type, pack, from_f, zero = _TYPES[dtype]
    consts = (f"typedef {CTYPE[dtype]} T;\ntypedef {pair} T2;\n#define MMA_TYPE {mma_type}\n"
              f"#define PACK2 {pack}\n#define FROM_F {from_f}\n#define ZERO {zero}\n"
              f"constexpr int BM = {p.bm}, BN = {p.bn}, BK = {p.bk}, WM = {p.wm}, WN = {p.wn};\n"
              f"constexpr int STAGES = {p.stages};\n")
    body = _BODY.replace("KERNEL_NAME", name)
    return contract_header(dtype, p.choices, launch, about) + HEADERS[dtype] + consts + body
