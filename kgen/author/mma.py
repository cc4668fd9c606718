"""The tensor-core gemm template's parameters and rendering (the CUDA is templates/gemm_mma.cu):
mma.sync m16n8k16 with ldmatrix and a multi-stage cp.async pipeline for float16/bfloat16 on sm_80+.
Options: `group` (grouped block raster for L2 reuse) and `pipe` (double-buffered fragments)."""

from __future__ import annotations

from dataclasses import dataclass

from kgen.author.common import contract_header, fill
from kgen.dtypes import DTYPES


@dataclass(frozen=True)
class MmaParams:
    bm: int = 128
    bn: int = 128
    bk: int = 32
    wm: int = 2  # warps along M
    wn: int = 4  # warps along N
    stages: int = 3
    group: int = 1  # block rows per raster group (1: plain row-major block order)
    pipe: int = 1  # 1: ldmatrix then mma per k-step; 2: double-buffered fragments

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
    def chunks_per_thread(self) -> int:
        """16-byte cp.async loads each thread issues per k-tile (A and B)."""
        return (self.bm + self.bn) * self.bk // 8 // self.threads

    @property
    def choices(self) -> str:
        return (f"template=mma tile={self.bm}x{self.bn}x{self.bk} warps={self.wm}x{self.wn} "
                f"stages={self.stages} group={self.group} pipe={self.pipe}")


_TYPES = {
    "float16": ("__half2", '"f16"', "__floats2half2_rn", "__float2half_rn", "__float2half(0.f)"),
    "bfloat16": ("__nv_bfloat162", '"bf16"', "__floats2bfloat162_rn", "__float2bfloat16_rn",
                 "__float2bfloat16(0.f)"),
}


def render(p: MmaParams, dtype: str) -> str:
    """The full .cu source (contract header first) for these parameters and dtype."""
    info = DTYPES[dtype]
    name = f"gemm_mma_{info.short}"
    launch = (f"{name} grid=(cdiv(N,{p.bn}), cdiv(M,{p.bm})) block=({p.threads}) "
              f"smem={p.smem_bytes} args=(A, B, C, M, N, K)")
    frags = "double-buffered" if p.pipe == 2 else "single"
    raster = f"grouped raster of {p.group} block rows" if p.group > 1 else "row-major raster"
    about = (f"Tensor-core gemm (mma.sync m16n8k16 + ldmatrix), block tile {p.bm}x{p.bn}x{p.bk}, "
             f"{p.wm}x{p.wn} warps, {p.stages}-stage cp.async pipeline, "
             f"{frags} register fragments, {raster}, "
             "float32 accumulation; sm_80+, any M, N, K.\n"
             "// C[M,N] = A[M,K] @ B[K,N], all row-major.")
    pair, mma_type, pack, from_f, zero = _TYPES[dtype]
    params = (f"#include <{info.header}>\n"
              f"typedef {info.ctype} T;\ntypedef {pair} T2;\n#define MMA_TYPE {mma_type}\n"
              f"#define PACK2 {pack}\n#define FROM_F {from_f}\n#define ZERO {zero}\n"
              f"constexpr int BM = {p.bm}, BN = {p.bn}, BK = {p.bk}, WM = {p.wm}, WN = {p.wn};\n"
              f"constexpr int STAGES = {p.stages}, GROUP = {p.group}, PIPE = {p.pipe};\n")
    return contract_header("gemm", dtype, p.choices, launch, about) + fill("gemm_mma", params,
                                                                           name)
