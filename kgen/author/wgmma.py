"""The Hopper gemm template's parameters and rendering (the CUDA is templates/gemm_wgmma.cu):
wgmma fed by TMA into 128B-swizzled shared memory, an mbarrier ring, a producer warpgroup and
CONSUMERS consumer warpgroups with setmaxnreg, persistent over tiles in grouped order, optional
clusters of 2 along M multicasting B (always, or chosen per size at launch: cluster=0), optional
stream-K for a last, partial round of tiles (each cut along K over about 4 CTAs, partial sums
passed through a static workspace), optional ping-pong consumers (each with whole tiles, taking
turns, so one's epilogue overlaps the other's main loop), a TMA-store epilogue that stages the C
tile whole or half at a time (cpass=2, which leaves room for a fourth 128x256x64 stage: the
default), float16/bfloat16 on sm_90a only.

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
    # CTAs per cluster along M, multicasting B: 1, 2, or 0 = chosen per size at launch (2 where
    # B's rows are not 32-byte aligned, N % 16 != 0; none elsewhere): see MISALIGNED_B
    cluster: int = 1
    group: int = 8  # cluster-tile rows per raster group
    epi: int = 0  # 0: stores from registers; 1: smem tile + TMA store
    sk: int = 0  # 1: stream-K, a last partial round's tiles cut along K (cluster 1 or 0, not 2)
    pp: int = 0  # 1: ping-pong, the consumers take turns with whole bm x bn tiles
    # epi=1: the C tile staged in shared memory whole (1) or half at a time, in two passes (2;
    # the first pass the larger where bn is 192): half the staging area leaves room for a fourth
    # stage of a 128x256 tile
    cpass: int = 1

    template = "wgmma"
    bk = BK

    @property
    def threads(self) -> int:
        return 128 * (1 + self.consumers)

    @property
    def smem_bytes(self) -> int:
        """Dynamic shared memory as the template lays it out (1024 B alignment slack, barriers)."""
        pass_chunks = -(-self.bn // 64 // self.cpass)  # 64-column blocks a pass stages
        epi = self.bm * 128 * pass_chunks * (self.consumers if self.pp else 1) if self.epi else 0
        return 1024 + self.stages * (self.bm * BK + BK * self.bn) * 2 + epi + 256

    @property
    def acc_per_thread(self) -> int:
        return (self.bm // (1 if self.pp else self.consumers) // 64) * (self.bn // 2)

    @property
    def choices(self) -> str:
        return (f"template=wgmma tile={self.bm}x{self.bn}x{BK} consumers={self.consumers} "
                f"stages={self.stages} cluster={self.cluster} group={self.group} "
                f"epi={self.epi} sk={self.sk}" + (" pp=1" if self.pp else "")
                + (f" cpass={self.cpass}" if self.cpass != 1 else ""))


_TYPES = {
    "float16": ("__half2", '"f16"', "__floats2half2_rn", "__float2half_rn"),
    "bfloat16": ("__nv_bfloat162", '"bf16"', "__floats2bfloat162_rn", "__float2bfloat16_rn"),
}


# cluster=0: where clusters of 2 are launched. With N % 16 != 0 (2-byte elements), every other row
# of B starts mid-sector, so each 128-byte TMA box row reads five 32-byte sectors instead of four;
# multicast halves B's L2 reads. On the H200 (bfloat16, 2026-12-05) N = 5000 cost one CTA 10%
# (3072x5000x2048: 0.1087 ms against 0.0986 at N = 5008) and clusters of 2 won it back (0.1023;
# 3000x5000x2000: 0.1034 against 0.1116), while at aligned sizes they cost 3-4% (4096^3: 0.1875
# against 0.1816) (benchmarks/s14-2026-12-05/).
MISALIGNED_B, ALIGNED_B = "N % 16 != 0", "N % 16 == 0"


def launch_lines(p: WgmmaParams, name: str) -> tuple[str, ...]:
    maps = (f"tmap(A, box=(64, {p.bm}), swizzle=128, optional=1), "
            "tmap(B, box=(64, 64), swizzle=128, optional=1), "
            "tmap(C, box=(64, 64), swizzle=128, optional=1)")

    def line(cluster: int, extra: str = "") -> str:
        # Persistent: one CTA per SM (rounded to whole clusters), never more than there are tiles.
        tiles = f"{cluster} * cdiv(cdiv(M, {p.bm}), {cluster}) * cdiv(N, {p.bn})"
        return (f"{name} grid=(min(SMS // {cluster} * {cluster}, {tiles})) "
                f"block=({p.threads}) smem={p.smem_bytes} args=({maps}, A, B, C, M, N, K){extra}")

    if p.cluster:
        return (line(p.cluster),)
    return (line(2, f" cluster=(2, 1, 1) when=({MISALIGNED_B})"),
            line(1, f" when=({ALIGNED_B})"))


def render(p: WgmmaParams, dtype: str) -> str:
    """The full .cu source (contract header first) for these parameters and dtype."""
    info = DTYPES[dtype]
    name = f"gemm_wgmma_{info.short}"
    cluster = (f"clusters of {p.cluster} along M multicasting B" if p.cluster > 1 else
               "no cluster" if p.cluster else
               f"clusters of 2 along M multicasting B where B's rows are misaligned "
               f"({MISALIGNED_B}), none elsewhere")
    about = (f"Hopper gemm: wgmma m64n{p.bn}k16 fed by TMA (128B swizzle), block tile "
             f"{p.bm}x{p.bn}x{BK}, 1 producer + {p.consumers} consumer warpgroups "
             f"({'taking turns with whole tiles (ping-pong), ' if p.pp else ''}"
             f"setmaxnreg), {p.stages}-stage mbarrier ring, persistent grouped tile order "
             f"(group {p.group}), {cluster}, "
             f"{'stream-K for a last partial round, ' if p.sk else ''}"
             f"{'TMA-store' if p.epi else 'register'} epilogue"
             f"{' in two half-tile passes' if p.cpass == 2 else ''}; "
             "float32 accumulation; sm_90a only; any M, N, K (odd K or N: guarded loads).\n"
             "// C[M,N] = A[M,K] @ B[K,N], all row-major.")
    pair, wg_type, pack, from_f = _TYPES[dtype]
    params = (f"#include <{info.header}>\n"
              f"typedef {info.ctype} T;\ntypedef {pair} T2;\n#define WG_TYPE {wg_type}\n"
              f"#define PACK2 {pack}\n#define FROM_F {from_f}\n"
              f"constexpr int BM = {p.bm}, BN = {p.bn}, BK = {BK}, STAGES = {p.stages};\n"
              f"#define WS 1\n#define CLUSTER_M {p.cluster or 2}\n"
              f"#define CLUSTER_AT_LAUNCH {int(p.cluster == 0)}\n"
              f"constexpr int CONSUMERS = {p.consumers};\nconstexpr int GROUP_M = {p.group};\n"
              f"constexpr int EPI = {p.epi};\nconstexpr int CPASS = {p.cpass};\n"
              f"#define SK {p.sk}\n#define PP {p.pp}\n"
              "constexpr int REG_PRODUCER = 40, REG_CONSUMER = 232;\n")
    return (contract_header("gemm", dtype, p.choices, launch_lines(p, name), about)
            + fill("gemm_wgmma", params, name))
