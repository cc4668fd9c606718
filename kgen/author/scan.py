"""The scan template's parameters and rendering (the CUDA is templates/scan.cu): cumsum, the
inclusive prefix sum of each row of X[M,N] along its last dim, float32 accumulation for every
dtype; also any op whose spec says `same_as: cumsum` (a KernelBench `torch.cumsum(x, dim=1)`).

One block per row, walking it in tiles of tpr x vec x unroll elements with one barrier a tile;
unroll x (tpr / 32), the warp totals of a tile, is at most 32 (a lane each in the scan of them).
Parameters: tpr threads per row (whole warps); vec elements per access (16 bytes at most); unroll
accesses in flight per thread per tile; hint (1: X read and Y written evict-first).
"""

from __future__ import annotations

from dataclasses import dataclass

from kgen.arch import Arch
from kgen.author import memcost, memspace
from kgen.author.common import contract_header, fill
from kgen.dtypes import DTYPES

TEMPLATE = "scan"
OPS = {"cumsum": 0}
SIGNATURES = {"cumsum": (memspace.MN, (("X", "input", memspace.MN, None),
                                       ("Y", "output", memspace.MN, None)), ())}


@dataclass(frozen=True)
class ScanParams:
    tpr: int = 256  # threads per row (the block)
    vec: int = 4  # elements per access
    unroll: int = 4  # accesses in flight per thread per tile
    hint: int = 0  # 1: evict-first loads and stores

    template = TEMPLATE

    @property
    def threads(self) -> int:
        return self.tpr

    @property
    def tile(self) -> int:
        """Elements of a row one pass of the block covers (one barrier each)."""
        return self.tpr * self.vec * self.unroll

    @property
    def entries(self) -> int:
        """Warp totals per tile, which one warp scans a lane each."""
        return self.unroll * self.tpr // 32

    @property
    def smem_bytes(self) -> int:
        """Two buffers of a tile's warp totals (scan.cu's `total`)."""
        return 2 * 4 * self.entries

    @property
    def choices(self) -> str:
        return memspace.choices_of(TEMPLATE, self)


PARAMS = ScanParams


def axes(dtype: str, op: str = "cumsum") -> dict[str, tuple[int, ...]]:
    size = DTYPES[dtype].size
    return {"tpr": (32, 64, 128, 256, 512, 1024),
            "vec": tuple(v for v in (1, 2, 4, 8) if v * size <= 16),
            "unroll": (1, 2, 4, 8, 16), "hint": (0, 1)}


def registers(p: ScanParams) -> int:
    """Napkin: the values held across a tile (each access's elements and its lane prefix),
    addressing and the scans; ptxas 13.0 on sm_90 gave 47 at tpr 256, vec 4, unroll 4 float32
    (napkin 48)."""
    return min(255, 20 + p.unroll * (p.vec + 3))


def problems(p: ScanParams, arch: Arch, dtype: str) -> list[str]:
    out = []
    if p.tpr % 32 or not 32 <= p.tpr <= 1024:
        out.append(f"{p.tpr} threads per row is not whole warps from 32 to 1024")
    if p.entries > 32:
        out.append(f"{p.unroll} accesses x {p.tpr // 32} warps is {p.entries} warp totals a "
                   "tile, over the 32 one warp scans")
    if p.vec * DTYPES[dtype].size > 16:
        out.append(f"{p.vec} x {dtype} is more than one 16-byte access")
    out += memcost.register_problems(arch, p.threads, registers(p))
    return out


def first(arch: Arch, dtype: str, n: int, op: str = "cumsum") -> tuple[ScanParams, str]:
    """4 accesses of 16 bytes in flight per thread (single elements where rows are not whole
    vectors), with the block grown up to 256 threads until a row is one tile: fewer tiles, fewer
    barriers (4096 float32 values a tile at 256 threads)."""
    size = DTYPES[dtype].size
    widest = 16 // size
    vec = widest if n % widest == 0 else 1
    unroll = 4
    tpr = 32
    while tpr < 256 and tpr * vec * unroll < n:
        tpr *= 2
    p = ScanParams(tpr, vec, unroll, 0)
    tiles = -(-n // p.tile)
    return p, (f"rows of {n}: {tpr} threads per row, {vec} x {dtype} per access, {unroll} in "
               f"flight each, so a tile is {p.tile} elements and a row {tiles} tile(s), one "
               "barrier each")


def estimate(p: ScanParams, arch: Arch, dtype: str, n: int, reg_scale: float = 1.0
             ) -> memcost.MemEstimate:
    size = DTYPES[dtype].size
    fast = n % p.vec == 0
    width = p.vec * size if fast else size
    regs = round(registers(p) * reg_scale)
    tiles = -(-n // p.tile)
    used = n / (tiles * p.tile)  # lanes busy in the last tile
    # each tile stops the block at a barrier (before the scan of the warps' totals): a cost
    # that more values per tile spread thinner
    barrier = 1 / (1 + 0.04 * 4096 / max(p.tile, 1))
    return memcost.estimate(arch, p.threads, regs, p.smem_bytes, width * p.unroll, width,
                            used * barrier, f"{used:.0%} of lanes busy, {tiles} tile(s) a row")


def render(p: ScanParams, dtype: str, arch: Arch) -> str:
    """The full .cu source (contract header first) for these parameters, dtype and arch."""
    info = DTYPES[dtype]
    name = f"cumsum_scan_{info.short}"
    launch = f"{name} grid=(M) block=({p.tpr}) smem=0 args=(X, Y, M, N)"
    about = (f"cumsum: the inclusive prefix sum of each row of X along N, float32 accumulation, "
             f"one block of {p.tpr} threads per row in tiles of {p.tile} elements ({p.vec} x "
             f"{dtype} per access, {p.unroll} in flight per thread; warp shuffles, then every "
             f"warp scans the warps' totals){', evict-first' if p.hint else ''}; any M, N.")
    params = ((f"#include <{info.header}>\n" if info.header else "")
              + f"typedef {info.ctype} T;\n"
              f"constexpr int TPR = {p.tpr}, VEC = {p.vec}, UNROLL = {p.unroll}, HINT = "
              f"{p.hint}, MIN_BLOCKS = {memcost.min_blocks(arch, p.threads, registers(p))};\n")
    return contract_header("cumsum", dtype, p.choices, launch, about) + fill(TEMPLATE, params,
                                                                            name)
