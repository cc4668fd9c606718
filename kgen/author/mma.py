"""The tensor-core gemm template's parameters and rendering (the CUDA is templates/gemm_mma.cu):
mma.sync m16n8k16 with ldmatrix and a multi-stage cp.async pipeline for float16/bfloat16 on sm_80+.
Options: `group` (grouped block raster for L2 reuse) and `pipe` (double-buffered fragments)."""

from __future__ import annotations

from dataclasses import dataclass

from kgen.author.common import contract_header, fill
from kgen.author.warptile import WarpTiledParams
from kgen.dtypes import DTYPES


@dataclass(frozen=True)
class MmaParams(WarpTiledParams):
    pipe: int = 1  # 1: ldmatrix then mma per k-step; 2: double-buffered fragments

    template = "mma"

    @property
    def smem_bytes(self) -> int:
        """Dynamic shared memory: padded A and B tiles (8 halves per row) for every stage."""
        return self.stages * (self.bm * (self.bk + 8) + self.bk * (self.bn + 8)) * 2

    @property
    def chunks_per_thread(self) -> int:
        """16-byte cp.async loads each thread issues per k-tile (A and B)."""
        return (self.bm + self.bn) * self.bk // 8 // self.threads

    @property
    def choices(self) -> str:
        return f"template=mma {self.tile_choices} pipe={self.pipe}"


_TYPES = {
    "float16": ("__half2", '"f16"', "__floats2half2_rn", "__float2half_rn", "__float2half(0.f)"),
    "bfloat16": ("__nv_bfloat162", '"bf16"', "__floats2bfloat162_rn", "__float2bfloat16_rn",
                 "__float2bfloat16(0.f)"),
}


def render(p: MmaParams, dtype: str) -> str:
    """The full .cu source (contract header first) for these parameters and dtype."""
    info = DTYPES[dtype]
    name = f"gemm_mma_{info.short}"
    frags = "double-buffered" if p.pipe == 2 else "single"
    about = (f"Tensor-core gemm (mma.sync m16n8k16 + ldmatrix), block tile {p.bm}x{p.bn}x{p.bk}, "
             f"{p.wm}x{p.wn} warps, {p.stages}-stage cp.async pipeline, "
             f"{frags} register fragments, {p.raster}, "
             "float32 accumulation; sm_80+, any M, N, K.\n"
             "// C[M,N] = A[M,K] @ B[K,N], all row-major.")
    pair, mma_type, pack, from_f, zero = _TYPES[dtype]
    params = (f"#include <{info.header}>\n"
              f"typedef {info.ctype} T;\ntypedef {pair} T2;\n#define MMA_TYPE {mma_type}\n"
              f"#define PACK2 {pack}\n#define FROM_F {from_f}\n#define ZERO {zero}\n"
              + p.constants() + f"constexpr int STAGES = {p.stages}, GROUP = {p.group}, "
              f"PIPE = {p.pipe};\n")
    return (contract_header("gemm", dtype, p.choices, p.launch(name), about)
            + fill("gemm_mma", params, name))
