"""The transpose template's parameters and rendering (the CUDA is templates/transpose.cu):
Y[N,M] = X[M,N]^T through a padded shared-memory tile, raw bits (exact in every dtype).

Parameters: tile (TILE x TILE elements per block); rows (thread rows; each thread moves
tile / rows accesses each way); vec elements per global access (16 bytes at most); pad elements
of padding per tile row. `bank_passes` counts the shared-memory wavefronts a warp needs, as the
template indexes the tile, so the model can rank paddings before any profile has run.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgen.arch import Arch
from kgen.author import memcost, memspace
from kgen.author.common import contract_header, fill
from kgen.dtypes import DTYPES

TEMPLATE = "transpose"
OPS = {"transpose": 0}
SIGNATURES = {"transpose": (memspace.MN, (("X", "input", memspace.MN, None),
                                          ("Y", "output", ("N", "M"), None)), ())}


@dataclass(frozen=True)
class TransposeParams:
    tile: int = 32
    rows: int = 16  # thread rows (blockDim.y)
    vec: int = 4  # elements per global access
    pad: int = 1  # elements of padding per tile row

    template = TEMPLATE

    @property
    def threads(self) -> int:
        return self.tile // self.vec * self.rows

    @property
    def smem_bytes(self) -> int:
        """The tile with 4-byte elements (half that for 16-bit dtypes)."""
        return self.tile * (self.tile + self.pad) * 4

    @property
    def choices(self) -> str:
        return memspace.choices_of(TEMPLATE, self)


PARAMS = TransposeParams


def axes(dtype: str, op: str = "transpose") -> dict[str, tuple[int, ...]]:
    size = DTYPES[dtype].size
    return {"tile": (32, 64), "rows": (4, 8, 16, 32),
            "vec": tuple(v for v in (1, 2, 4, 8) if v * size <= 16), "pad": (0, 1, 2)}


def registers(p: TransposeParams) -> int:
    return 20 + p.tile // p.rows


def problems(p: TransposeParams, arch: Arch, dtype: str) -> list[str]:
    out = []
    size = DTYPES[dtype].size
    if p.vec * size > 16:
        out.append(f"{p.vec} x {dtype} is more than one 16-byte access")
    if p.tile % p.vec or p.rows > p.tile:
        out.append("the tile must split into whole accesses and thread rows")
    if not 64 <= p.threads <= 1024:
        out.append(f"{p.threads} threads per block (64 to 1024)")
    if p.tile * (p.tile + p.pad) * size > memcost.STATIC_SMEM_LIMIT:
        out.append("the tile exceeds 48 KiB of static shared memory")
    return out


def bank_passes(p: TransposeParams, dtype: str) -> tuple[int, int]:
    """(wavefronts, conflict-free wavefronts) for one warp's first tile row each way: per shared
    access instruction, the most distinct 4-byte words any one bank must serve."""
    size = DTYPES[dtype].size
    lanes = [(t % (p.tile // p.vec), t // (p.tile // p.vec)) for t in range(32)]
    stride = p.tile + p.pad
    total = 0
    for k in range(p.vec):
        writes = [ty * stride + tx * p.vec + k for tx, ty in lanes]  # tile[r][tx*vec + k]
        reads = [(tx * p.vec + k) * stride + ty for tx, ty in lanes]  # tile[tx*vec + k][r]
        for index in (writes, reads):
            words = {i * size // 4 for i in index}
            per_bank: dict[int, int] = {}
            for w in words:
                per_bank[w % 32] = per_bank.get(w % 32, 0) + 1
            total += max(per_bank.values())
    return total, 2 * p.vec


def first(arch: Arch, dtype: str, n: int, op: str = "transpose"
          ) -> tuple[TransposeParams, str]:
    size = DTYPES[dtype].size
    p = TransposeParams(32, 16, 4, 1)  # 4 elements: 16 bytes of float32, 8 of a 16-bit type
    passes, ideal = bank_passes(p, dtype)
    clean = " (conflict-free)" if passes == ideal else ""
    return p, (f"32x32 tiles padded by one element per row, {p.vec} x {dtype} ({p.vec * size} "
               f"bytes) per global access, 8x16 threads moving 2 accesses each way: both global "
               f"sides coalesced, and a warp's shared-memory accesses take {passes} wavefronts "
               f"for {ideal} instructions{clean}")


def estimate(p: TransposeParams, arch: Arch, dtype: str, n: int, reg_scale: float = 1.0
             ) -> memcost.MemEstimate:
    size = DTYPES[dtype].size
    regs = round(registers(p) * reg_scale)
    passes, ideal = bank_passes(p, dtype)
    smem = p.tile * (p.tile + p.pad) * size
    note = f"{passes} shared wavefronts per {ideal} accesses"
    # Shared memory serves about 4x what DRAM gives an SM, so mild conflicts cost latency more
    # than throughput; a column read that hits one bank 32 times is another matter.
    factor = 1 / (1 + 0.25 * (passes / ideal - 1))
    return memcost.estimate(arch, p.threads, regs, smem, p.vec * size * (p.tile // p.rows),
                            p.vec * size, factor, note)


def render(p: TransposeParams, dtype: str, arch: Arch) -> str:
    """The full .cu source (contract header first) for these parameters, dtype and arch."""
    info = DTYPES[dtype]
    name = f"transpose_tile_{info.short}"
    launch = (f"{name} grid=(cdiv(N, {p.tile}), cdiv(M, {p.tile})) "
              f"block=({p.tile // p.vec}, {p.rows}) smem=0 args=(X, Y, M, N)")
    about = (f"Transpose through a {p.tile}x{p.tile} shared tile padded by {p.pad} element(s) "
             f"per row, {p.tile // p.vec}x{p.rows} threads, {p.vec} x {dtype} per global "
             "access; exact; any M, N.")
    params = ((f"#include <{info.header}>\n" if info.header else "")
              + f"typedef {info.ctype} T;\n"
              f"constexpr int TILE = {p.tile}, ROWS = {p.rows}, VEC = {p.vec}, PAD = {p.pad}, "
              f"MIN_BLOCKS = {memcost.min_blocks(arch, p.threads, registers(p))};\n")
    return (contract_header("transpose", dtype, p.choices, launch, about)
            + fill(TEMPLATE, params, name))
