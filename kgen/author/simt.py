"""The SIMT gemm template's parameters and rendering (the CUDA is templates/gemm_simt.cu): block
tile BMxBNxBK, thread tile TMxTN, float4 when it can. float32, and the float16/bfloat16 fallback
where tensor cores are not used.

sk=1 adds a second kernel to the file, persistent (one CTA per SM) with stream-K
(templates/streamk.cuh): the last tiles are dealt evenly over all CTAs along K, so a partial last
round leaves no SM idle. Per tile it runs about 7% slower than the one-tile kernel, so the launch
lines choose it by size (`stream_k_when`): only where the partial round costs more."""

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
    sk: int = 0  # 1: also a persistent stream-K kernel, chosen by size (see above)

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


# The stream-K kernel ran about 7% slower per tile than the one-tile kernel on the H200 (it is
# persistent and holds its tile origin in registers), so it pays where the one-tile grid's
# partial last round costs more than that: with T tiles on G SMs, where 1.07 * T / G <
# ceil(T / G). On the H200 that held at every size where it measured faster (1.04x against
# 0.59x of cuBLAS at 2432x1792x4096, 0.96x against 0.95x at 3000x5000x2000) and failed at 4096^3
# and 8192^3, where it was 5% slower (benchmarks/h200-2026-12-04-s11/f32-sk-final.log).
STREAM_K_COST_PERCENT = 107


def stream_k_when(p: SimtParams) -> str:
    """The launch condition under which the stream-K kernel runs instead of the one-tile one."""
    tiles = f"cdiv(M,{p.bm}) * cdiv(N,{p.bn})"
    return (f"{tiles} > SMS and {STREAM_K_COST_PERCENT} * {tiles} < "
            f"100 * SMS * cdiv({tiles}, SMS)")


# Conversion helpers the template switches on for the 16-bit dtypes.
_SWITCH = {"float16": "#define KGEN_HALF 1\n", "bfloat16": "#define KGEN_BF16 1\n"}


def render(p: SimtParams, dtype: str) -> str:
    """The full .cu source (contract header first) for these parameters and dtype."""
    info = DTYPES[dtype]
    name = f"gemm_simt_{info.short}"
    rest = f"block=({p.threads}) smem={p.smem_bytes} args=(A, B, C, M, N, K)"
    launch: tuple[str, ...] = (f"{name} grid=(cdiv(N,{p.bn}), cdiv(M,{p.bm})) {rest}",)
    if p.sk:
        when = stream_k_when(p)
        launch = (f"{launch[0]} when=(not ({when}))", f"{name}_sk grid=(SMS) {rest} when=({when})")
    about = (f"SIMT gemm, block tile {p.bm}x{p.bn}x{p.bk}, thread tile {p.tm}x{p.tn}, "
             f"{p.stages}-stage shared memory{', swizzled A tile' * p.swz}"
             f"{', and a persistent stream-K kernel where a partial last round costs more' * p.sk}"
             ", float32 "
             "accumulation; any M, N, K.\n"
             "// C[M,N] = A[M,K] @ B[K,N], all row-major.")
    params = ((f"#include <{info.header}>\n" if info.header else "") + _SWITCH.get(dtype, "")
              + f"typedef {info.ctype} T;\n"
              f"constexpr int BM = {p.bm}, BN = {p.bn}, BK = {p.bk}, TM = {p.tm}, TN = {p.tn};\n"
              f"constexpr int STAGES = {p.stages}, VEC = {p.vec}, SWZ = {p.swz};\n"
              f"#define SK {p.sk}\n")
    return contract_header("gemm", dtype, p.choices, launch, about) + fill("gemm_simt", params,
                                                                           name)
