"""The SIMT gemm template's parameters and rendering (the CUDA is templates/gemm_simt.cu): block
tile BMxBNxBK, thread tile TMxTN, float4 when it can. float32, and the float16/bfloat16 fallback
where tensor cores are not used.

sk=1 makes it persistent (one CTA per SM) with stream-K (templates/streamk.cuh): the last tiles
are dealt evenly over all CTAs along K, so a partial last round leaves no SM idle. It is a
searched step, not the default: its first version ran 7% slower per tile than the one-tile grid,
and the current one, whose main loop reads as the one-tile grid's in SASS, is not yet timed."""

from __future__ import annotations

from dataclasses import dataclass

from kgen.author.common import contract_header, fill
from kgen.dtypes import DTYPES


@dataclass(frozen=True)
class SimtParams:
    bm: int = 128
    bn: int = 128
    bk: int = 8
    tm: int = 8
    tn: int = 8
    stages: int = 2  # 2: the next tile is fetched into registers while this one is computed
    vec: int = 4  # width of the global loads/stores on the fast path (4 = float4, 1 = scalar)
    swz: int = 0  # 1: the A tile unpadded and XOR-swizzled (chosen when a profile shows bank
    #               conflicts; not part of the searched space otherwise)
    sk: int = 0  # 1: persistent, stream-K spread over every CTA (a searched step, see above)

    template = "simt"

    @property
    def threads(self) -> int:
        return (self.bm // self.tm) * (self.bn // self.tn)

    @property
    def smem_bytes(self) -> int:
        """Dynamic shared memory: A is stored transposed, with 4 floats of padding per row unless
        swizzled."""
        return self.stages * self.bk * ((self.bm + (0 if self.swz else 4)) + self.bn) * 4

    @property
    def choices(self) -> str:
        return (f"template=simt tile={self.bm}x{self.bn}x{self.bk} thread={self.tm}x{self.tn} "
                f"stages={self.stages} vec={self.vec}" + (" swz=1" if self.swz else "")
                + (f" sk={self.sk}" if self.sk else ""))


# Conversion helpers the template switches on for the 16-bit dtypes.
_SWITCH = {"float16": "#define KGEN_HALF 1\n", "bfloat16": "#define KGEN_BF16 1\n"}


def render(p: SimtParams, dtype: str) -> str:
    """The full .cu source (contract header first) for these parameters and dtype."""
    info = DTYPES[dtype]
    name = f"gemm_simt_{info.short}"
    # Stream-K is persistent: one CTA per SM at most, never more than there are tiles.
    grid = (f"min(SMS, cdiv(M,{p.bm}) * cdiv(N,{p.bn}))" if p.sk
            else f"cdiv(N,{p.bn}), cdiv(M,{p.bm})")
    launch = (f"{name} grid=({grid}) block=({p.threads}) smem={p.smem_bytes} "
              "args=(A, B, C, M, N, K)")
    about = (f"SIMT gemm, block tile {p.bm}x{p.bn}x{p.bk}, thread tile {p.tm}x{p.tn}, "
             f"{p.stages}-stage shared memory{', swizzled A tile' * p.swz}"
             f"{', persistent with stream-K for a last partial round' * bool(p.sk)}, float32 "
             "accumulation; any M, N, K.\n"
             "// C[M,N] = A[M,K] @ B[K,N], all row-major.")
    params = ((f"#include <{info.header}>\n" if info.header else "") + _SWITCH.get(dtype, "")
              + f"typedef {info.ctype} T;\n"
              f"constexpr int BM = {p.bm}, BN = {p.bn}, BK = {p.bk}, TM = {p.tm}, TN = {p.tn};\n"
              f"constexpr int STAGES = {p.stages}, VEC = {p.vec}, SWZ = {p.swz};\n"
              f"#define SK {p.sk}\n")
    return contract_header("gemm", dtype, p.choices, launch, about) + fill("gemm_simt", params,
                                                                           name)
