"""The Hopper gemm template's parameters and rendering (the CUDA is templates/gemm_wgmma.cu):
wgmma fed by TMA into 128B-swizzled shared memory, an mbarrier ring, a producer warpgroup and
CONSUMERS consumer warpgroups with setmaxnreg, persistent over tiles in grouped order, optional
clusters of 2 along M multicasting B, optional stream-K for a last, partial round of tiles (each
cut along K over about 4 CTAs, partial sums passed through a static workspace), optional
ping-pong consumers (each with whole tiles, taking turns, so one's epilogue overlaps the other's
main loop), float16/bfloat16 on sm_90a only.

Odd shapes (K or N not a multiple of 8, where TMA cannot address the rows) stay in the same
kernel: kgen passes zero tensor maps there (tmap optional=1) and the kernel loads through its
guarded path, so every test size exercises this kernel and its epilogue.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgen.author.common import contract_header, fill
from kgen.dtypes import DTYPES

BK = 64  # one 128-byte swizzle row of K per A row


@dataclass(frozen=True)
class WgmmaParams:
    bm: int = 128
    bn: int = 256
    stages: int = 4
    consumers: int = 2  # consumer warpgroups; each owns bm / consumers rows
    cluster: int = 1  # CTAs per cluster along M, multicasting B (1 or 2)
    group: int = 8  # cluster-tile rows per raster group
    epi: int = 0  # 0: stores from registers; 1: smem tile + TMA store
    sk: int = 0  # 1: stream-K, a last partial round's tiles cut along K (clusters of 1 only)
    pp: int = 0  # 1: ping-pong, the consumers take turns with whole bm x bn tiles

    template = "wgmma"
    bk = BK

    @property
    def threads(self) -> int:
        return 128 * (1 + self.consumers)

    @property
    def smem_bytes(self) -> int:
        """Dynamic shared memory as the template lays it out (1024 B alignment slack, barriers)."""
        epi = self.bm * self.bn * 2 * (self.consumers if self.pp else 1) if self.epi else 0
        return 1024 + self.stages * (self.bm * BK + BK * self.bn) * 2 + epi + 256

    @property
    def acc_per_thread(self) -> int:
        return (self.bm // (1 if self.pp else self.consumers) // 64) * (self.bn // 2)

    @property
    def choices(self) -> str:
        return (f"template=wgmma tile={self.bm}x{self.bn}x{BK} consumers={self.consumers} "
                f"stages={self.stages} cluster={self.cluster} group={self.group} "
                f"epi={self.epi} sk={self.sk}" + (" pp=1" if self.pp else ""))


_TYPES = {
    "float16": ("__half2", '"f16"', "__floats2half2_rn", "__float2half_rn"),
    "bfloat16": ("__nv_bfloat162", '"bf16"', "__floats2bfloat162_rn", "__float2bfloat16_rn"),
}


def launch_line(p: WgmmaParams, name: str) -> str:
    # Persistent: one CTA per SM (rounded to whole clusters), never more than there are tiles.
    tiles = f"{p.cluster} * cdiv(cdiv(M, {p.bm}), {p.cluster}) * cdiv(N, {p.bn})"
    grid = f"min(SMS // {p.cluster} * {p.cluster}, {tiles})"
    maps = (f"tmap(A, box=(64, {p.bm}), swizzle=128, optional=1), "
            "tmap(B, box=(64, 64), swizzle=128, optional=1), "
            "tmap(C, box=(64, 64), swizzle=128, optional=1)")
    return (f"{name} grid=({grid}) block=({p.threads}) smem={p.smem_bytes} "
            f"args=({maps}, A, B, C, M, N, K)")


def render(p: WgmmaParams, dtype: str) -> str:
    """The full .cu source (contract header first) for these parameters and dtype."""
    info = DTYPES[dtype]
    name = f"gemm_wgmma_{info.short}"
    cluster = f"clusters of {p.cluster} along M multicasting B" if p.cluster > 1 else "no cluster"
    about = (f"Hopper gemm: wgmma m64n{p.bn}k16 fed by TMA (128B swizzle), block tile "
             f"{p.bm}x{p.bn}x{BK}, 1 producer + {p.consumers} consumer warpgroups "
             f"({'taking turns with whole tiles (ping-pong), ' if p.pp else ''}"
             f"setmaxnreg), {p.stages}-stage mbarrier ring, persistent grouped tile order "
             f"(group {p.group}), {cluster}, "
             f"{'stream-K for a last partial round, ' if p.sk else ''}"
             f"{'TMA-store' if p.epi else 'register'} epilogue; "
             "float32 accumulation; sm_90a only; any M, N, K (odd K or N: guarded loads).\n"
             "// C[M,N] = A[M,K] @ B[K,N], all row-major.")
    pair, wg_type, pack, from_f = _TYPES[dtype]
    params = (f"#include <{info.header}>\n"
              f"typedef {info.ctype} T;\ntypedef {pair} T2;\n#define WG_TYPE {wg_type}\n"
              f"#define PACK2 {pack}\n#define FROM_F {from_f}\n"
              f"constexpr int BM = {p.bm}, BN = {p.bn}, BK = {BK}, STAGES = {p.stages};\n"
              f"#define WS 1\n#define CLUSTER_M {p.cluster}\n"
              f"constexpr int CONSUMERS = {p.consumers};\nconstexpr int GROUP_M = {p.group};\n"
              f"constexpr int EPI = {p.epi};\n#define SK {p.sk}\n#define PP {p.pp}\n"
              "constexpr int REG_PRODUCER = 40, REG_CONSUMER = 232;\n")
    return (contract_header("gemm", dtype, p.choices, launch_line(p, name), about)
            + fill("gemm_wgmma", params, name))
